"""A stdlib-only MCP server (any python3 runs it, as any user) whose own thread writes its
workspace between calls (kernel.sandbox.workspace_gate's tests): newline-delimited JSON-RPC
on stdin and stdout, each tool call in a thread of its own."""

from __future__ import annotations

import errno
import json
import os
import sys
import threading
import time
from typing import Any

_out = threading.Lock()
_held: list[Any] = []
_seen: dict[str, str] = {}
STRING = {"type": "string"}
NUMBER = {"type": "number"}
TOOLS = {
    "write": {"path": STRING, "text": STRING},
    "write_after": {"path": STRING, "seconds": NUMBER},
    "hold": {"path": STRING},
    "begin": {"paths": {"type": "array", "items": STRING}, "after": NUMBER},
    "report": {},
}


def _write(path: str, text: str = "x") -> str:
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(path, "w") as file:
        file.write(text)
    return f"wrote {path}"


def _outcome(path: str) -> str:
    try:
        _write(path, "from the server's own thread")
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, str(exc))
    return "written"


def _between_calls(paths: list[str], after: float) -> None:
    time.sleep(after)
    for path in paths:
        _seen[path] = _outcome(path)


def _run(name: str, args: dict[str, Any]) -> str:
    if name == "write":
        return _write(args["path"], args.get("text", "x"))
    if name == "write_after":
        time.sleep(args["seconds"])
        return _write(args["path"])
    if name == "hold":
        _held.append(open(args["path"], "w"))  # noqa: SIM115 - kept open on purpose
        return "holding"
    if name == "begin":
        threading.Thread(target=_between_calls, args=(args["paths"], args["after"]),
                         daemon=True).start()
        return "begun"
    return json.dumps(_seen)


def _send(message: dict[str, Any]) -> None:
    with _out:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def _call(ident: Any, params: dict[str, Any]) -> None:
    try:
        text, error = _run(params["name"], params.get("arguments") or {}), False
    except Exception as exc:
        text, error = f"{type(exc).__name__}: {exc}", True
    _send({"jsonrpc": "2.0", "id": ident, "result": {
        "content": [{"type": "text", "text": text}], "isError": error}})


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        if ident is None or method is None:
            continue
        params = message.get("params") or {}
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": params["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "gate", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": name, "inputSchema": {
                "type": "object", "properties": props, "required": list(props)}}
                for name, props in TOOLS.items()]}
        elif method == "tools/call":
            threading.Thread(target=_call, args=(ident, params), daemon=True).start()
            continue
        elif method == "ping":
            result = {}
        else:
            _send({"jsonrpc": "2.0", "id": ident,
                   "error": {"code": -32601, "message": f"no method {method}"}})
            continue
        _send({"jsonrpc": "2.0", "id": ident, "result": result})


if __name__ == "__main__":
    main()
