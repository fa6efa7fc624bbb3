"""Why a command was not run, in the sandbox's own words (the tool that runs it turns these
into tool errors: the sandbox knows nothing of tools).

Also the one thing the executor needs of where output goes (`OutputSink`)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Protocol

RefusalKind = Literal["sandbox_unavailable", "not_started", "permission_denied"]
"""sandbox_unavailable: no sandbox (or no pasta for a command allowed the network);
not_started: the command could not be started; permission_denied: never in a command's reach
(a workspace inside a secret location)."""


class CommandRefused(Exception):
    """The command was not run; `message` says why, `hint` what to do."""

    def __init__(self, message: str, *, hint: str = "", kind: RefusalKind = "not_started"
                 ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.kind: RefusalKind = kind


class OutputSink(Protocol):
    """Where a command's output goes as it arrives (kernel.tools.externalize.SpoolWriter)."""

    path: Path
    bytes_written: int

    @property
    def last_line(self) -> str: ...

    def write(self, data: bytes | memoryview) -> None: ...
