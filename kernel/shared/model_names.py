"""A model's name as a person reads it: "Claude Sonnet 4.6" for `claude-sonnet-4-6`, the
demo as the demo, any other model (a local server's) by its own id.

Anthropic's ids come in two spellings, the family first (`claude-sonnet-4-5-20250929`) or
the version first (`claude-3-5-haiku-latest`); both give the same words, without the date
or `latest` (the chat names the model on each answer: the words must stay short). A pure
leaf: the UI imports it.
"""

from __future__ import annotations

import re

from kernel.shared.demo import DEMO_SHORT, is_demo

_FAMILY = r"(?P<{}>opus|sonnet|haiku|instant)"
_CLAUDE = re.compile(
    r"claude-(?:" + _FAMILY.format("family") + r"-(?P<major>\d+)(?:-(?P<minor>\d{1,2}))?"
    r"|(?P<major2>\d+)(?:-(?P<minor2>\d{1,2}))?-" + _FAMILY.format("family2") + r")"
    r"(?:-(?:\d{8}|latest))?")


def friendly_name(model: str) -> str:
    """How `model` is named on an answer ("" stays "": no model known)."""
    if is_demo(model):
        return DEMO_SHORT
    found = _CLAUDE.fullmatch(model.strip().lower())
    if found is None:
        return model.strip()
    family = found["family"] or found["family2"]
    major = found["major"] or found["major2"]
    minor = found["minor"] if found["family"] else found["minor2"]
    version = f"{int(major)}.{int(minor)}" if minor is not None else str(int(major))
    return f"Claude {family.title()} {version}"
