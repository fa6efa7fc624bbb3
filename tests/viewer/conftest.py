"""Qt runs offscreen in these tests."""

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
