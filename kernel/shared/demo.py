"""The built-in demo model: a short script that shows what Reins does (an answer, a tool
call, an approval, the timeline) before the user has an API key.

This module only names it (the UI imports it, so it loads nothing): the script is
`kernel.demo.script`, and `kernel.demo.server` runs it on the loopback fake of the Messages
API (kernel.fakemodel), which the kernel's real provider talks to like any endpoint.
"""

from __future__ import annotations

DEMO_MODEL = "reins-demo"
"""The model name a demo session sends to; the kernel routes it to the demo server."""
DEMO_LABEL = "Demo model (scripted, not an AI; no key needed)"
DEMO_SHORT = "Demo model (scripted)"
DEMO_TITLE = "Demo — scripted model, no key"
"""A demo session's title."""


def is_demo(model: str) -> bool:
    return model == DEMO_MODEL
