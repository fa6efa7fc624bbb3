"""The app's side of MCP requests that need the user: server forms (elicitation) go to the UI
like approvals and wait for the user's answer; the servers' prompts are listed and fetched
for the prompt box (`/`; a chosen one is fetched with kernel.mcp.prompts.get_prompt).

`ElicitationChannel.ask` sends each form out (`send`) and waits at most `timeout_s` for
`answer`; no answer in time, or the app closing, cancels it (the server hears `cancel`,
never an accept). An answer is checked against the requested schema (`check_answer`, pure):
one that does not fit is refused with a message and the form stays open.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Mapping
from typing import Any

import jsonschema
import mcp_types

from kernel.mcp.asks import form_fields
from kernel.mcp.manager import McpManager
from kernel.protocol import McpFormRequest, McpPromptInfo

ACTIONS = ("accept", "decline", "cancel")
ELICITATION_TIMEOUT_S = 600.0


def check_answer(schema: Mapping[str, Any], action: str, content: Any,
                 *, url: bool = False) -> mcp_types.ElicitResult:
    """The user's answer as the server gets it; ValueError when it does not fit (pure)."""
    if action not in ACTIONS:
        raise ValueError(f"unknown answer {action!r}; answers are {', '.join(ACTIONS)}")
    if action != "accept" or url:
        if content is not None:
            raise ValueError(f"a {action!r} answer carries no content")
        return mcp_types.ElicitResult(action=action)
    if not isinstance(content, dict):
        raise ValueError("an accepted form needs its fields as an object")
    errors = sorted(jsonschema.Draft202012Validator(dict(schema)).iter_errors(content),
                    key=lambda e: list(e.absolute_path))
    if errors:
        where = ".".join(str(p) for p in errors[0].absolute_path) or "the form"
        raise ValueError(f"{where}: {errors[0].message}")
    return mcp_types.ElicitResult(action="accept", content=content)


class ElicitationChannel:
    """Forms from servers to the user of the app, and the answers back."""

    def __init__(self, send: Callable[[McpFormRequest], None],
                 timeout_s: float = ELICITATION_TIMEOUT_S) -> None:
        self.send = send
        self.timeout_s = timeout_s
        self._ids = itertools.count(1)
        self._pending: dict[str, tuple[McpFormRequest,
                                       asyncio.Future[mcp_types.ElicitResult]]] = {}

    async def ask(self, server: str, params: mcp_types.ElicitRequestParams
                  ) -> mcp_types.ElicitResult:
        schema = getattr(params, "requested_schema", None)
        schema = schema if isinstance(schema, dict) else {}
        request = McpFormRequest(f"form-{next(self._ids)}", server, params.message,
                                 form_fields(schema), schema, getattr(params, "url", "") or "")
        future: asyncio.Future[mcp_types.ElicitResult] = (
            asyncio.get_running_loop().create_future())
        self._pending[request.request_id] = (request, future)
        try:
            self.send(request)
            async with asyncio.timeout(self.timeout_s):
                return await future
        except TimeoutError:
            return mcp_types.ElicitResult(action="cancel")
        finally:
            self._pending.pop(request.request_id, None)

    def answer(self, request_id: str, action: str, content: Any) -> None:
        """The user's answer to one form (ValueError: no such form, or it does not fit)."""
        pending = self._pending.get(request_id)
        if pending is None:
            raise ValueError(f"no form {request_id!r} is waiting for an answer")
        request, future = pending
        result = check_answer(request.schema or {}, action, content, url=bool(request.url))
        if not future.done():
            future.set_result(result)

    def close(self) -> None:
        """Cancel every open form (the app is closing)."""
        for _, future in list(self._pending.values()):
            if not future.done():
                future.set_result(mcp_types.ElicitResult(action="cancel"))


async def list_prompts(manager: McpManager) -> tuple[McpPromptInfo, ...]:
    """Every ready server's prompts (a server that fails to list them is left out)."""
    out: list[McpPromptInfo] = []
    for server, caps in manager.live_servers():
        if caps.prompts is None:
            continue
        connection = manager.connection(server)
        if connection is None:
            continue
        try:
            listed = await connection.request(lambda s, _p: s.list_prompts(),
                                              timeout_s=10.0)
        except Exception:  # one server's failure hides only its prompts
            continue
        for prompt in listed.prompts:
            args = prompt.arguments or []
            out.append(McpPromptInfo(server, prompt.name, prompt.description or "",
                                     tuple(a.name for a in args),
                                     tuple(a.name for a in args if a.required)))
    return tuple(out)

