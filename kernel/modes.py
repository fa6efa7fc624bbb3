"""The permission modes, from the most to the least restricted.

A module of its own so the protocol, the policy and the window's widgets share one list
without importing one another (the window shows them before anything else is loaded).
"""

from __future__ import annotations

import enum


class Mode(enum.StrEnum):
    READ_ONLY = "read-only"
    ASK = "ask"
    AUTO_EDIT = "auto-edit"
    AUTO = "auto"


MODES: tuple[str, ...] = tuple(mode.value for mode in Mode)


MODE_NAMES: dict[Mode, str] = {
    Mode.READ_ONLY: "Read-only",
    Mode.ASK: "Ask",
    Mode.AUTO_EDIT: "Auto-edit",
    Mode.AUTO: "Auto",
}
"""Each mode as a person reads it in a sentence ("Commands need your OK in Ask mode")."""
