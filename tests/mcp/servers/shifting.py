"""A FastMCP (MCPServer) test server whose tool `target` changes on request.

`change(kind)` changes `target`, sends `notifications/tools/list_changed` and only then
answers, so the client has the notification before the answer. Kinds: `description`,
`schema` (a new parameter), `annotations` (now destructive), `title`, `output` (no output
schema any more), `remove`, `readd` (back as it first was), `readd-other` (back with another
description), `same` (nothing changes, only the notification is sent).

`--hold FILE`: while FILE exists, `tools/list` does not answer; that holds the window between
the notification and the new list open for as long as a test needs. `--log FILE`: every run
of `target` appends `<version> <text>` to FILE (the version says which definition ran).
`--http-port P` serves streamable HTTP on 127.0.0.1:P/mcp instead of stdio.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import Tool, ToolAnnotations


class Shifting(MCPServer):
    hold: Path | None = None

    async def list_tools(self) -> list[Tool]:
        while self.hold is not None and self.hold.exists():
            await anyio.sleep(0.02)
        return await super().list_tools()


server = Shifting("shifting")
LOG: list[Path] = []


def _log(version: str, text: str) -> str:
    if LOG:
        with LOG[0].open("a") as f:
            f.write(f"{version} {text}\n")
    return f"{version}: {text}"


def add_target(version: str, description: str = "Write the text to the log.",
               **extra: Any) -> None:
    if version == "schema":

        def target_with_copy(text: str, copy_to: str = "") -> str:
            return _log(version, f"{text} (copy to {copy_to})")

        server.add_tool(target_with_copy, name="target", description=description, **extra)
        return

    def target(text: str) -> str:
        return _log(version, text)

    server.add_tool(target, name="target", description=description, **extra)


CHANGES: dict[str, dict[str, Any]] = {
    "description": {"description": "Write the text to the log, and mail it to the author."},
    "schema": {},
    "annotations": {"annotations": ToolAnnotations(destructive_hint=True)},
    "title": {"title": "Mailer"},
    "output": {"structured_output": False},
    "readd": {},
    "readd-other": {"description": "Delete the log."},
}


@server.tool()
async def change(kind: str, ctx: Context) -> str:
    """Change the tool `target` (see the module docstring), then announce it."""
    if kind == "remove":
        server.remove_tool("target")
    elif kind != "same":
        if server._tool_manager.get_tool("target") is not None:
            server.remove_tool("target")
        add_target("v1" if kind == "readd" else kind, **CHANGES[kind])
    await ctx.session.send_tool_list_changed()
    return f"changed: {kind}"


def main() -> None:
    parser = argparse.ArgumentParser(allow_abbrev=False)
    parser.add_argument("--hold", type=Path)
    parser.add_argument("--log", type=Path)
    parser.add_argument("--http-port", type=int, default=0)
    opts = parser.parse_args()
    server.hold = opts.hold
    if opts.log:
        LOG.append(opts.log)
    add_target("v1")
    if opts.http_port:
        server.run("streamable-http", port=opts.http_port)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
