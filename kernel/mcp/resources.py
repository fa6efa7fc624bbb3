"""The servers' resources for the model: one tool, `mcp_resources`, lists and reads them.

Registered while at least one ready server declares the `resources` capability (the
manager keeps it in step). Without `uri` it lists a server's resources and resource
templates; with `uri` it reads one (text as text, images and PDFs as blocks, other binary
data described). A resource link in a tool result names its server and this tool
(`kernel.mcp.tools.content_block`), so the model can open what a result points at. Like
every outside tool it asks before it runs (its origin is not builtin).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import mcp_types
from mcp import ClientSession
from mcp.shared.dispatcher import ProgressFnT

from kernel.mcp.client import McpConnection
from kernel.mcp.manager import McpManager
from kernel.mcp.tools import resource_block
from kernel.tools.spec import Content, Risk, ToolContext, ToolError, ToolSpec

TOOL_NAME = "mcp_resources"
ORIGIN = "mcp"
MAX_LISTED = 200
"""Resources (and templates) listed per call; `cursor` gives the next page."""

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "server": {"type": "string", "minLength": 1,
                   "description": "The MCP server's name (as in the tool names mcp__SERVER__…)."},
        "uri": {"type": "string", "minLength": 1,
                "description": "The resource to read; leave out to list the server's."},
        "cursor": {"type": "string", "description": "From a listing that said there is more."},
    },
    "required": ["server"],
    "additionalProperties": False,
}


def listing_text(server: str, resources: Sequence[mcp_types.Resource],
                 templates: Sequence[mcp_types.ResourceTemplate], next_cursor: str | None) -> str:
    """A server's resources and templates, one line each (pure)."""
    lines = [f"Resources of the MCP server {server!r} ({len(resources)}"
             f"{', more with the cursor below' if next_cursor else ''}):"]
    for res in resources[:MAX_LISTED]:
        kind = f" ({res.mime_type})" if res.mime_type else ""
        about = f": {res.description}" if res.description else ""
        lines.append(f"- {res.name} <{res.uri}>{kind}{about}")
    if not resources:
        lines.append("- (none)")
    if templates:
        lines.append("Resource templates (fill in the {placeholders} to get a URI):")
        for tpl in templates[:MAX_LISTED]:
            about = f": {tpl.description}" if tpl.description else ""
            lines.append(f"- {tpl.name} <{tpl.uri_template}>{about}")
    if next_cursor:
        lines.append(f"More: call {TOOL_NAME} again with cursor {next_cursor!r}.")
    return "\n".join(lines)


def read_content(result: mcp_types.ReadResourceResult) -> Content:
    """A read resource as tool_result content: one string when all of it is text."""
    blocks = [resource_block(item) for item in result.contents]
    if not blocks:
        return "(the resource is empty)"
    if all(b["type"] == "text" for b in blocks):
        return "\n".join(b["text"] for b in blocks)
    return tuple(blocks)


def _with_resources(manager: McpManager) -> list[str]:
    return [name for name, caps in manager.live_servers() if caps.resources is not None]


def make_resources_tool(manager: McpManager) -> ToolSpec:
    """The one tool over every server's resources (the manager registers it while a live
    server declares resources: `McpManager.resources_tool`)."""

    async def handler(_reins_ctx: ToolContext, server: str, uri: str | None = None,
                      cursor: str | None = None) -> Content:
        if server not in _with_resources(manager):
            offered = ", ".join(map(repr, _with_resources(manager))) or "none"
            raise ToolError(f"The MCP server {server!r} offers no resources now (servers "
                            f"with resources: {offered}).")
        if uri is None:
            listing: str = await manager.request(server, "the listing of its resources",
                                                 _lister(server, cursor))
            return listing
        result: mcp_types.ReadResourceResult = await manager.request(
            server, f"the read of {uri!r}",
            lambda connection, timeout_s: connection.request(
                lambda session, _p: session.read_resource(uri), timeout_s=timeout_s))
        return read_content(result)

    return ToolSpec(
        name=TOOL_NAME,
        description=("List the resources of a connected MCP server (give only `server`), or "
                     "read one (give `server` and its `uri`, e.g. from a resource link in a "
                     "tool result)."),
        input_schema=INPUT_SCHEMA, handler=handler, risk=Risk.READ, origin=ORIGIN,
        annotations={"display_risk": Risk.READ.value},
        summarize=lambda args: f"{args.get('server', '')} {args.get('uri', '(list)')}",
    )


def _lister(server: str, cursor: str | None
            ) -> Callable[[McpConnection, float], Awaitable[str]]:
    async def send(connection: McpConnection, timeout_s: float) -> str:
        async def both(session: ClientSession, _progress: ProgressFnT) -> str:
            params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
            listed = await session.list_resources(params=params)
            templates: list[mcp_types.ResourceTemplate] = []
            if cursor is None:
                with_templates = await session.list_resource_templates()
                templates = list(with_templates.resource_templates)
            return listing_text(server, listed.resources, templates, listed.next_cursor)

        text: str = await connection.request(both, timeout_s=timeout_s)
        return text

    return send
