"""Qt tests run offscreen, also when pytest is run directly."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
