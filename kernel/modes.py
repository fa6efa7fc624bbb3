"""The permission modes, from the most to the least restricted.

A module of its own so the protocol, the policy and the window's widgets share one list
without importing one another (the window shows them before anything else is loaded).
"""

from __future__ import annotations

MODES = ("read-only", "ask", "auto-edit", "auto")
