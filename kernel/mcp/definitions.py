"""What one MCP server lists now: the fingerprint of each of its tools, and whether that is
still known.

A grant is checked against the definition current at call time, not against the ToolSpec a
call happened to be dispatched with: between a server's `notifications/tools/list_changed`
and the re-listing the registry still holds the old specs, and a call made then must not run
on the grant of the old definition. So each server has one `ToolDefinitions`:

- the transport reports the notification the moment it is read, before anything that
  follows it on the wire (`announce_change`): from then on the server's definitions are
  *suspended*, every grant of its tools asks, and no call is sent to it;
- a listing takes a token when it starts (`listing_started`) and, once its tools are
  registered, records what it saw (`listed`); the suspension ends only with a listing that
  started after the last notification (one already under way may predate the change);
- a re-listing that fails leaves the definitions suspended (`listing_failed`): the server
  said its tools changed, and nobody knows into what.

The MCP ToolSpecs of the server carry this object in `annotations[ANNOTATION_KEY]`, so the
gate (through `kernel.mcp.grants`) and the call itself read the same state.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ANNOTATION_KEY = "mcp_definitions"


@dataclass(frozen=True)
class Current:
    """The definition of one tool as the server lists it now, or why that is not known."""

    fingerprint: str | None
    why_unknown: str = ""


class ToolDefinitions:
    """The current definitions of one server's tools (see the module docstring)."""

    def __init__(self, server: str) -> None:
        self.server = server
        self._fingerprints: dict[str, str] = {}
        self._announced = 0
        self._listed = 0
        self._failed = False
        self._settled: asyncio.Event | None = None

    @property
    def suspended(self) -> bool:
        """A change was announced and no listing made since has come in."""
        return self._listed < self._announced

    def announce_change(self) -> None:
        """The server sent `notifications/tools/list_changed`: suspend until re-listed."""
        self._announced += 1
        self._failed = False
        if self._settled is not None and self._settled.is_set():
            self._settled = asyncio.Event()

    def listing_started(self) -> int:
        """A token for the listing about to be asked for."""
        return self._announced

    def listed(self, token: int, fingerprints: Mapping[str, str]) -> None:
        """A listing that started with `token` came in (tool name → fingerprint)."""
        self._fingerprints = dict(fingerprints)
        self._listed = max(self._listed, token)
        if not self.suspended:
            self._settle()

    def listing_failed(self) -> None:
        """The re-listing failed: the definitions stay suspended until a listing succeeds."""
        self._failed = True
        self._settle()

    def current(self, tool: str) -> Current:
        """The fingerprint of `tool` as listed now (by its MCP name)."""
        if self.suspended:
            state = ("its tools could not be listed again" if self._failed
                     else "it has not listed them again yet")
            return Current(None, f"the MCP server {self.server!r} announced that its tools "
                                 f"changed and {state}")
        fingerprint = self._fingerprints.get(tool)
        if fingerprint is None:
            return Current(None, f"the MCP server {self.server!r} no longer offers {tool!r}")
        return Current(fingerprint)

    async def settled(self, timeout_s: float) -> None:
        """Wait (at most `timeout_s`) until the definitions are no longer being re-listed."""
        if not self.suspended or self._failed:
            return
        if self._settled is None or self._settled.is_set():
            self._settled = asyncio.Event()
        try:
            async with asyncio.timeout(timeout_s):
                await self._settled.wait()
        except TimeoutError:
            pass

    def _settle(self) -> None:
        if self._settled is not None:
            self._settled.set()


def definitions_of(spec: Any) -> ToolDefinitions | None:
    """The live definitions behind an MCP ToolSpec; None for other tools."""
    value = spec.annotations.get(ANNOTATION_KEY) if spec.annotations else None
    return value if isinstance(value, ToolDefinitions) else None


def current_of(spec: Any, fallback: str | None) -> Current:
    """The current definition behind `spec` (`fallback`, its own fingerprint, for a spec
    without live definitions)."""
    definitions = definitions_of(spec)
    if definitions is None:
        return Current(fallback)
    return definitions.current(spec.annotations.get("mcp_tool", spec.name))
