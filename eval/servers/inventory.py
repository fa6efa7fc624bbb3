"""An MCP server whose main tool hangs and whose mirror answers, for the fallback task
(eval/tasks/fallback-after-timeout: run with `tool_timeout_s = 1`).

`lookup` sleeps longer than any tool timeout the task sets; `mirror_lookup` takes the same
arguments and answers at once, so a declared fallback from one to the other is taken after
the timeout and its answer reaches the model.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent, Tool

SCHEMA = {"type": "object", "required": ["host"],
          "properties": {"host": {"type": "string", "description": "The host name."}}}
OWNERS = {"db-7": "Ada Quist", "web-2": "Lin Moreau"}
HANG_S = 60.0


class Inventory(MCPServer):
    async def list_tools(self) -> list[Tool]:
        return [Tool(name="lookup", description="Look up who owns a host in the inventory.",
                     input_schema=SCHEMA),
                Tool(name="mirror_lookup", description="The inventory's read-only mirror.",
                     input_schema=SCHEMA)]

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Any = None) -> CallToolResult:
        if name == "lookup":
            await asyncio.sleep(HANG_S)
        host = str(arguments.get("host"))
        text = f"{host} is owned by {OWNERS.get(host, 'nobody on record')}"
        return CallToolResult(content=[TextContent(type="text", text=text)])


if __name__ == "__main__":
    Inventory("inventory").run()
