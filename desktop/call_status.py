"""How a tool call's status looks, in the chat and on the timeline alike: its icon (from
resources/icons/ui) and its colour, one table for both views (its words are
`desktop.words.STATUS_WORDS`). Green is done, red failed or timed out, amber waits for the
user, blue runs, grey queued or stopped, violet denied."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (the first window loads no kernel vocabulary: a name only)
    from kernel.events import CallStatus

STATUS_COLOURS: Mapping[CallStatus, str] = {
    "ok": "#2da44e",
    "error": "#cf222e",
    "denied": "#a04fc7",
    "stopped": "#6e7781",
    "timeout": "#cf222e",
    "awaiting_approval": "#bf8700",
    "running": "#0969da",
    "queued": "#6e7781",
}
STATUS_ICONS: Mapping[CallStatus, str] = {
    "ok": "status-ok",
    "error": "status-error",
    "denied": "status-denied",
    "stopped": "status-stopped",
    "timeout": "status-error",
    "awaiting_approval": "status-waiting",
    "running": "status-running",
    "queued": "status-queued",
}
