"""An MCP server in plain Python (no SDK), for interpreters that do not have the `mcp` package.

It speaks just enough of MCP over stdio: `initialize`, `tools/list`, `tools/call`, `ping`.
Tools: `environment` (its environment, `sys.path` and working folder, as JSON) and
`git_status` (runs `git status` in a folder, as a git MCP server's first tool would).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

NO_ARGS: dict[str, Any] = {"type": "object", "properties": {}}
TOOLS = [
    {"name": "environment", "description": "The server's environment, as JSON.",
     "inputSchema": NO_ARGS},
    {"name": "git_status", "description": "Run git status in a folder.",
     "inputSchema": {"type": "object", "properties": {"repo": {"type": "string"}},
                     "required": ["repo"]}},
]


def call(name: str, args: dict[str, Any]) -> str:
    if name == "environment":
        return json.dumps({"env": dict(os.environ), "sys_path": sys.path, "cwd": os.getcwd()})
    if name == "git_status":
        done = subprocess.run(["git", "status"], cwd=args["repo"], capture_output=True,
                              text=True, check=False)
        return done.stdout + done.stderr
    raise KeyError(name)


def answer(message: dict[str, Any]) -> dict[str, Any]:
    method, params = message.get("method"), message.get("params") or {}
    if method == "initialize":
        return {"protocolVersion": params.get("protocolVersion"),
                "capabilities": {"tools": {}}, "serverInfo": {"name": "plain", "version": "1"}}
    if method == "tools/list":
        return {"tools": TOOLS}
    if method == "tools/call":
        text = call(params["name"], params.get("arguments") or {})
        return {"content": [{"type": "text", "text": text}], "isError": False}
    if method == "ping":
        return {}
    raise LookupError(method)


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        try:
            reply["result"] = answer(message)
        except LookupError as exc:
            reply["error"] = {"code": -32601, "message": f"unknown: {exc}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
