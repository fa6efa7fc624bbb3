"""The app's side of MCP requests that need the user: server forms (elicitation) go to the UI
like approvals and wait for the user's answer; the servers' prompts are listed and fetched
for the prompt box (`/`; a chosen one is fetched with kernel.mcp.prompts.get_prompt).

`ElicitationChannel.ask` sends each form out (`send`) and waits at most `timeout_s` for
`answer`; no answer in time, or the app closing, cancels it (the server hears `cancel`,
never an accept). An answer is checked against the requested schema (`check_answer`, pure):
one that does not fit is refused with a message and the form stays open.

`SamplingChannel.approve` does the same for a sampling request (kernel.mcp.sampling): it is
shown as it would be sent, with the session whose run it is billed to; no answer in time,
or the app closing, declines it.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

import jsonschema
import mcp_types

from kernel.events import FORM_ACTIONS, is_form_action
from kernel.mcp.asks import form_fields
from kernel.mcp.manager import McpManager
from kernel.mcp.sampling import SamplingTarget, SamplingVerdict, message_text
from kernel.protocol import McpFormRequest, McpPromptInfo, McpSamplingRequest, SampledMessage

ELICITATION_TIMEOUT_S = 600.0


def check_answer(schema: Mapping[str, Any], action: str, content: Any,
                 *, url: bool = False) -> mcp_types.ElicitResult:
    """The user's answer as the server gets it; ValueError when it does not fit (pure)."""
    if not is_form_action(action):
        raise ValueError(f"unknown answer {action!r}; answers are {', '.join(FORM_ACTIONS)}")
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


R = TypeVar("R")
Q = TypeVar("Q")


class _Waiting(Generic[Q, R]):
    """Requests sent to the user and the futures of their answers, by request id."""

    def __init__(self, prefix: str, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._prefix = prefix
        self._ids = itertools.count(1)
        self.pending: dict[str, tuple[Q, asyncio.Future[R]]] = {}

    def next_id(self) -> str:
        return f"{self._prefix}-{next(self._ids)}"

    async def wait(self, request_id: str, request: Q, send: Callable[[Q], None],
                   unanswered: R) -> R:
        """Send `request` and wait for its answer; `unanswered` after `timeout_s`."""
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self.pending[request_id] = (request, future)
        try:
            send(request)
            async with asyncio.timeout(self.timeout_s):
                return await future
        except TimeoutError:
            return unanswered
        finally:
            self.pending.pop(request_id, None)

    def waiting(self, request_id: str, what: str) -> tuple[Q, asyncio.Future[R]]:
        pending = self.pending.get(request_id)
        if pending is None:
            raise ValueError(f"no {what} {request_id!r} is waiting for an answer")
        return pending

    def close(self, answer: R) -> None:
        for _, future in list(self.pending.values()):
            if not future.done():
                future.set_result(answer)


class ElicitationChannel:
    """Forms from servers to the user of the app, and the answers back."""

    def __init__(self, send: Callable[[McpFormRequest], None],
                 timeout_s: float = ELICITATION_TIMEOUT_S) -> None:
        self.send = send
        self._waiting: _Waiting[McpFormRequest, mcp_types.ElicitResult] = _Waiting(
            "form", timeout_s)

    async def ask(self, server: str, params: mcp_types.ElicitRequestParams
                  ) -> mcp_types.ElicitResult:
        schema = getattr(params, "requested_schema", None)
        schema = schema if isinstance(schema, dict) else {}
        request = McpFormRequest(self._waiting.next_id(), server, params.message,
                                 form_fields(schema), schema, getattr(params, "url", "") or "")
        return await self._waiting.wait(request.request_id, request, self.send,
                                        mcp_types.ElicitResult(action="cancel"))

    def answer(self, request_id: str, action: str, content: Any) -> None:
        """The user's answer to one form (ValueError: no such form, or it does not fit)."""
        request, future = self._waiting.waiting(request_id, "form")
        result = check_answer(request.schema or {}, action, content, url=bool(request.url))
        if not future.done():
            future.set_result(result)

    def close(self) -> None:
        """Cancel every open form (the app is closing)."""
        self._waiting.close(mcp_types.ElicitResult(action="cancel"))


UNANSWERED_SAMPLING = "nobody answered the sampling request within 10 minutes"
CLOSED_SAMPLING = "Reins closed before the sampling request was answered"


def sampled_messages(request: Mapping[str, Any]) -> tuple[SampledMessage, ...]:
    """A Messages API request's messages as the user is shown them (pure)."""
    return tuple(SampledMessage(str(m["role"]), message_text(m)) for m in request["messages"])


class SamplingChannel:
    """Sampling requests from servers to the user of the app, and the answers back."""

    def __init__(self, send: Callable[[McpSamplingRequest], None],
                 timeout_s: float = ELICITATION_TIMEOUT_S) -> None:
        self.send = send
        self._waiting: _Waiting[McpSamplingRequest, SamplingVerdict] = _Waiting("sampling",
                                                                                timeout_s)

    async def approve(self, server: str, target: SamplingTarget, request: Mapping[str, Any]
                      ) -> SamplingVerdict:
        """Ask the user (kernel.mcp.sampling.Approve)."""
        shown = McpSamplingRequest(self._waiting.next_id(), target.session_id, server,
                                   str(request["model"]), int(request["max_tokens"]),
                                   str(request.get("system", "")), sampled_messages(request))
        return await self._waiting.wait(shown.request_id, shown, self.send,
                                        SamplingVerdict(False, "timeout", UNANSWERED_SAMPLING))

    def answer(self, request_id: str, approve: bool) -> None:
        """The user's answer to one request (ValueError: no such request is waiting)."""
        _, future = self._waiting.waiting(request_id, "sampling request")
        if not future.done():
            future.set_result(SamplingVerdict(True, "user", "approved in the app") if approve else
                              SamplingVerdict(False, "user", "the user declined it in the app"))

    def close(self) -> None:
        """Decline every open request (the app is closing)."""
        self._waiting.close(SamplingVerdict(False, "user", CLOSED_SAMPLING))


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

