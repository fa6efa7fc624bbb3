"""The versioned message protocol between the desktop UI and the kernel worker process.

It is the only thing the two processes share. Every message is a frozen dataclass with a
`kind` tag; `encode` turns it into JSON bytes for the pipe and `decode` turns bytes back into
a message. Commands travel from the UI to the kernel; replies travel back. Facts about a
session travel as `EventMessage`, which wraps the one event type per fact of
`kernel.events` — this module never redefines an event.

`decode` is strict and never raises: a malformed, unknown or wrong-version message is logged
and dropped (it returns None), so neither side can be crashed by the other.

Versioning: new kinds and new fields with defaults are added within a version (the two
processes always ship together, and a kind one side does not know is dropped); changing or
removing an existing field bumps PROTOCOL_VERSION.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kernel.events import Event, EventDecodeError, event_from_dict, json_text

PROTOCOL_VERSION = 1
log = logging.getLogger(__name__)

DECISIONS = ("allow_once", "allow_session", "allow_always", "deny")
GRANT_SCOPES = ("session", "always")
MCP_ACTIONS = ("enable", "disable", "restart")


class ProtocolError(ValueError):
    """A message that does not follow the protocol."""


@dataclass(frozen=True)
class Message:
    kind: ClassVar[str] = ""

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}
        return {"v": PROTOCOL_VERSION, "kind": self.kind, **data}


_KINDS: dict[str, type[Message]] = {}


def _message(cls: type[Message]) -> type[Message]:
    if cls.kind in _KINDS:
        raise RuntimeError(f"duplicate message kind {cls.kind!r}")
    _KINDS[cls.kind] = cls
    return cls


# ---- shared records ---------------------------------------------------------------------


@dataclass(frozen=True)
class SessionInfo:
    """One session as the sidebar lists it."""

    session_id: str
    title: str
    workspace: str
    mode: str = "ask"
    model: str = ""
    updated_at: float = 0.0


@dataclass(frozen=True)
class GrantInfo:
    """One grant as the permissions page shows it."""

    rule: str
    words: str
    """The rule said in words (kernel.policy.grants.describe)."""
    scope: str
    """session (this session only, until revoked) | always (an allow rule in settings.json)"""
    network: bool = False


@dataclass(frozen=True)
class McpServerInfo:
    """One MCP server's state (kernel.mcp.manager.ServerState.to_dict())."""

    name: str
    status: str
    """starting | ready | failed | disabled"""
    summary: str = ""
    target: str = ""
    tools: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()
    error: str = ""
    stderr_tail: tuple[str, ...] = ()
    failures: int = 0
    retry_in_s: float = -1.0
    """Seconds until the next automatic restart; negative when none is planned."""
    pid: int = 0
    """0 when no process is running."""

    @classmethod
    def from_state(cls, state: Mapping[str, Any]) -> McpServerInfo:
        """From `ServerState.to_dict()`."""
        retry = state.get("retry_in_s")
        return cls(
            name=str(state["name"]), status=str(state["status"]),
            summary=str(state.get("summary", "")), target=str(state.get("target", "")),
            tools=tuple(state.get("tools", ())), skipped=tuple(state.get("skipped", ())),
            error=str(state.get("error", "")),
            stderr_tail=tuple(state.get("stderr_tail", ())),
            failures=int(state.get("failures", 0)),
            retry_in_s=-1.0 if retry is None else float(retry),
            pid=int(state.get("pid") or 0))


# ---- commands: UI → kernel ----------------------------------------------------------------


@_message
@dataclass(frozen=True)
class SetApiKey(Message):
    """The key, read from the keyring by the UI; the kernel keeps it in memory only."""

    kind: ClassVar[str] = "set_api_key"
    api_key: str = field(repr=False)


@_message
@dataclass(frozen=True)
class Configure(Message):
    kind: ClassVar[str] = "configure"
    model: str = ""
    base_url: str = ""


@_message
@dataclass(frozen=True)
class ListSessions(Message):
    kind: ClassVar[str] = "list_sessions"
    query: str = ""


@_message
@dataclass(frozen=True)
class NewSession(Message):
    kind: ClassVar[str] = "new_session"
    workspace: str
    mode: str = "ask"
    title: str = ""
    confirm_broad_workspace: bool = False
    """The user confirmed a workspace that `kernel.workspace.broad_workspace_reason` calls
    too broad (the home folder, `/`, a system folder) after being told what it exposes;
    without it such a session is refused."""


@_message
@dataclass(frozen=True)
class OpenSession(Message):
    """Load a session's history (also used to reload it after a kernel restart)."""

    kind: ClassVar[str] = "open_session"
    session_id: str


@_message
@dataclass(frozen=True)
class RenameSession(Message):
    kind: ClassVar[str] = "rename_session"
    session_id: str
    title: str


@_message
@dataclass(frozen=True)
class DeleteSession(Message):
    kind: ClassVar[str] = "delete_session"
    session_id: str


@_message
@dataclass(frozen=True)
class SetMode(Message):
    kind: ClassVar[str] = "set_mode"
    session_id: str
    mode: str


@_message
@dataclass(frozen=True)
class SetSessionModel(Message):
    """The model this session's next runs send to (a run in progress keeps its model)."""

    kind: ClassVar[str] = "set_session_model"
    session_id: str
    model: str


@_message
@dataclass(frozen=True)
class ListModels(Message):
    """Ask for the models the endpoint offers (answered with ModelList)."""

    kind: ClassVar[str] = "list_models"


@_message
@dataclass(frozen=True)
class StartRun(Message):
    kind: ClassVar[str] = "start_run"
    session_id: str
    prompt: str
    attachments: tuple[AttachmentData, ...] = ()
    """Files and images after the prompt's text (checked by kernel.attachments)."""


@dataclass(frozen=True)
class AttachmentData:
    """One attached file as the UI read it (or an image pasted from the clipboard)."""

    name: str
    data: str = field(repr=False)
    """Its bytes, base64."""


@_message
@dataclass(frozen=True)
class EditLastMessage(Message):
    """Replace the session's last prompt and run it: the old prompt and its answer are
    superseded (kept in a `messages_superseded` event, no longer sent to the model).
    `keep`: the old prompt's attachments (by position) that stay, before `attachments`.
    Refused (CommandFailed) while a run is in progress or when there is no prompt."""

    kind: ClassVar[str] = "edit_last_message"
    session_id: str
    prompt: str
    attachments: tuple[AttachmentData, ...] = ()
    keep: tuple[int, ...] = ()


@_message
@dataclass(frozen=True)
class RegenerateAnswer(Message):
    """Ask for the last prompt's answer again (the old answer is superseded, kept in a
    `messages_superseded` event). Refused while a run is in progress or with no prompt."""

    kind: ClassVar[str] = "regenerate_answer"
    session_id: str


@_message
@dataclass(frozen=True)
class ResumeRun(Message):
    """Continue a session whose last run was interrupted (pending approval, crash)."""

    kind: ClassVar[str] = "resume_run"
    session_id: str


@_message
@dataclass(frozen=True)
class CompactSession(Message):
    """Summarize the session's oldest turns for its next requests now (the app's Compact);
    it runs like a run (RunStatus running, then idle) and is answered by a
    `context_compacted` event, or an `error` event saying why not. The stored history and
    the timeline keep every turn."""

    kind: ClassVar[str] = "compact_session"
    session_id: str


@_message
@dataclass(frozen=True)
class CancelRun(Message):
    kind: ClassVar[str] = "cancel_run"
    session_id: str


@_message
@dataclass(frozen=True)
class CancelCall(Message):
    """Stop one running (or approval-waiting) tool call; the run goes on and the model gets
    a `cancelled` result for it."""

    kind: ClassVar[str] = "cancel_call"
    session_id: str
    call_id: str


@_message
@dataclass(frozen=True)
class ApprovalAnswer(Message):
    kind: ClassVar[str] = "approval_answer"
    session_id: str
    call_id: str
    decision: str
    """allow_once | allow_session | allow_always | deny"""
    message: str = ""
    """For a denial: an optional message passed to the model."""
    confirmed: bool = False
    """True when the user gave the second confirmation a destructive call needs."""


@_message
@dataclass(frozen=True)
class Shutdown(Message):
    kind: ClassVar[str] = "shutdown"


@_message
@dataclass(frozen=True)
class ListGrants(Message):
    """Ask for a session's grants: its session grants and the always-allow rules (answered
    with GrantList, also sent again after every revocation)."""

    kind: ClassVar[str] = "list_grants"
    session_id: str


@_message
@dataclass(frozen=True)
class RevokeGrant(Message):
    """Take back a session grant (scope `session`) or remove an always-allow rule from
    settings.json (scope `always`); recorded as a `grant_revoked` event of the session."""

    kind: ClassVar[str] = "revoke_grant"
    session_id: str
    rule: str
    scope: str
    """session | always"""


@_message
@dataclass(frozen=True)
class ListMcpServers(Message):
    """Ask for the MCP servers' states (answered with McpServerStates)."""

    kind: ClassVar[str] = "list_mcp_servers"


@_message
@dataclass(frozen=True)
class McpServerAction(Message):
    """enable | disable | restart one configured MCP server. Enabling and disabling are
    saved in settings.json (`"disabled": true`); a restart is not."""

    kind: ClassVar[str] = "mcp_server_action"
    name: str
    action: str


@_message
@dataclass(frozen=True)
class McpFormAnswer(Message):
    """The user's answer to an McpFormRequest: accept (with `content`, the fields as an
    object that fits the form's schema), decline or cancel."""

    kind: ClassVar[str] = "mcp_form_answer"
    request_id: str
    action: str
    content: Any = None


@_message
@dataclass(frozen=True)
class ListMcpPrompts(Message):
    """Ask for the ready servers' prompts (answered with McpPromptList), for `/`."""

    kind: ClassVar[str] = "list_mcp_prompts"


@_message
@dataclass(frozen=True)
class GetMcpPrompt(Message):
    """Fetch one server prompt with its arguments (answered with McpPromptText, or
    CommandFailed saying what is missing)."""

    kind: ClassVar[str] = "get_mcp_prompt"
    server: str
    name: str
    arguments: Any = None
    """An object of argument name → text."""


@_message
@dataclass(frozen=True)
class McpSamplingAnswer(Message):
    """The user's answer to an McpSamplingRequest: send it to the model, or decline."""

    kind: ClassVar[str] = "mcp_sampling_answer"
    request_id: str
    approve: bool


# ---- replies: kernel → UI -------------------------------------------------------------------


@_message
@dataclass(frozen=True)
class KernelReady(Message):
    kind: ClassVar[str] = "kernel_ready"
    protocol_version: int
    pid: int
    sandbox: str = "none"
    sandbox_reason: str = ""
    has_api_key: bool = False
    model: str = ""


@_message
@dataclass(frozen=True)
class EventMessage(Message):
    """One fact about a session, as stored: the events of `kernel.events`."""

    kind: ClassVar[str] = "event"
    event: Event


@_message
@dataclass(frozen=True)
class SessionList(Message):
    kind: ClassVar[str] = "session_list"
    sessions: tuple[SessionInfo, ...] = ()
    query: str = ""


@_message
@dataclass(frozen=True)
class SessionLoaded(Message):
    """A session's stored history, replayed in order; `interrupted` marks a run to retry."""

    kind: ClassVar[str] = "session_loaded"
    info: SessionInfo
    events: tuple[Event, ...] = ()
    interrupted: bool = False
    created: bool = False
    """The answer to this UI's NewSession: the new session, to be selected and shown."""


@_message
@dataclass(frozen=True)
class ModelList(Message):
    """The endpoint's models (`GET /v1/models`) and the model new sessions get; `error`: why
    the endpoint listed none (the app then takes a typed name)."""

    kind: ClassVar[str] = "model_list"
    models: tuple[str, ...] = ()
    default: str = ""
    error: str = ""


@_message
@dataclass(frozen=True)
class SessionDeleted(Message):
    kind: ClassVar[str] = "session_deleted"
    session_id: str


@_message
@dataclass(frozen=True)
class RunStatus(Message):
    """running | idle | interrupted (a run was cut short and can be resumed)."""

    kind: ClassVar[str] = "run_status"
    session_id: str
    state: str


@_message
@dataclass(frozen=True)
class CommandFailed(Message):
    kind: ClassVar[str] = "command_failed"
    command: str
    message: str
    session_id: str = ""


@_message
@dataclass(frozen=True)
class GrantList(Message):
    """What is granted in a session: its session grants, then the always-allow rules."""

    kind: ClassVar[str] = "grant_list"
    session_id: str
    grants: tuple[GrantInfo, ...] = ()


@_message
@dataclass(frozen=True)
class McpServerStates(Message):
    """Every configured MCP server's state; sent on request and whenever one changes.
    `error`: why no server could be started (an unusable `mcpServers` entry)."""

    kind: ClassVar[str] = "mcp_server_states"
    servers: tuple[McpServerInfo, ...] = ()
    error: str = ""


@_message
@dataclass(frozen=True)
class McpFormRequest(Message):
    """An MCP server asks the user to fill in a form (elicitation), shown like an approval;
    answered with McpFormAnswer (no answer within 10 minutes cancels it). `fields` are
    name/type/title/description/required/default per field, `schema` the requested JSON
    Schema; a `url` form asks the user to open that page instead."""

    kind: ClassVar[str] = "mcp_form_request"
    request_id: str
    server: str
    message: str
    fields: Any = None
    schema: Any = None
    url: str = ""


@dataclass(frozen=True)
class McpPromptInfo:
    server: str
    name: str
    description: str = ""
    arguments: tuple[str, ...] = ()
    required: tuple[str, ...] = ()


@_message
@dataclass(frozen=True)
class McpPromptList(Message):
    kind: ClassVar[str] = "mcp_prompt_list"
    prompts: tuple[McpPromptInfo, ...] = ()


@_message
@dataclass(frozen=True)
class McpPromptText(Message):
    """A fetched server prompt: the text for the prompt box."""

    kind: ClassVar[str] = "mcp_prompt_text"
    server: str
    name: str
    text: str


@dataclass(frozen=True)
class SampledMessage:
    role: str
    text: str
    """The message's text (an image or other content named in brackets)."""


@_message
@dataclass(frozen=True)
class McpSamplingRequest(Message):
    """An MCP server asks the session's model for an answer (sampling) during a call of one
    of its tools in that session's run; shown like an approval with the prompt as it would
    be sent, answered with McpSamplingAnswer (no answer within 10 minutes declines it). Its
    tokens and cost count against that run's budgets."""

    kind: ClassVar[str] = "mcp_sampling_request"
    request_id: str
    session_id: str
    server: str
    model: str
    max_tokens: int
    system: str = ""
    messages: tuple[SampledMessage, ...] = ()


MESSAGE_KINDS: Mapping[str, type[Message]] = _KINDS


# ---- encoding --------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    if isinstance(value, Event):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def encode(message: Message) -> bytes:
    """JSON bytes (`kernel.events.json_text`: a lone surrogate from the model cannot make
    the encoding fail)."""
    return json_text(message.to_dict(), compact=True).encode()


def message_from_dict(data: Any) -> Message:
    """Build a message from a plain dict; raises ProtocolError naming what is wrong."""
    if not isinstance(data, Mapping):
        raise ProtocolError(f"message must be an object, got {type(data).__name__}")
    version = data.get("v")
    if version != PROTOCOL_VERSION or isinstance(version, bool):
        raise ProtocolError(f"unsupported protocol version {version!r}")
    kind = data.get("kind")
    cls = _KINDS.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ProtocolError(f"unknown message kind {kind!r}")
    return _build(cls, data, kind)


def decode(raw: bytes | str) -> Message | None:
    """The message in `raw`, or None (logged) when it is malformed, unknown or too new."""
    try:
        data = json.loads(raw)
        return message_from_dict(data)
    except (ProtocolError, ValueError, RecursionError) as exc:
        log.warning("dropped a malformed protocol message: %s", _short(exc))
        return None


def _short(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text if len(text) <= 300 else text[:299] + "…"


@functools.cache
def _type_hints(cls: type) -> dict[str, Any]:
    """A message class's resolved field types (resolving costs ~100 µs; decoding happens
    for every message, thousands a second while a run streams)."""
    return typing.get_type_hints(cls)


@functools.cache
def _fields(cls: type) -> tuple[dataclasses.Field[Any], ...]:
    return dataclasses.fields(cls)


def _build(cls: type, data: Mapping[str, Any], tag: str) -> Any:
    hints = _type_hints(cls)
    kwargs: dict[str, Any] = {}
    for f in _fields(cls):
        if f.name in data:
            kwargs[f.name] = _convert(hints[f.name], data[f.name], f"{tag}.{f.name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ProtocolError(f"{tag}: missing field {f.name!r}")
    return cls(**kwargs)


def _convert(hint: Any, value: Any, where: str) -> Any:
    """Check `value` against a field's type, building nested records and events."""
    if hint is Any:
        return value
    if hint is Event:
        try:
            return event_from_dict(value)
        except EventDecodeError as exc:
            raise ProtocolError(f"{where}: {exc}") from exc
    origin = typing.get_origin(hint)
    if origin is tuple:
        (item,) = typing.get_args(hint)[:1]
        if not isinstance(value, list):
            raise ProtocolError(f"{where}: expected a list, got {type(value).__name__}")
        return tuple(_convert(item, v, f"{where}[{i}]") for i, v in enumerate(value))
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, Mapping):
            raise ProtocolError(f"{where}: expected an object, got {type(value).__name__}")
        return _build(hint, value, where)
    if _scalar_ok(hint, value):
        return float(value) if hint is float else value
    raise ProtocolError(f"{where}: expected {getattr(hint, '__name__', hint)}, "
                        f"got {type(value).__name__}")


def _scalar_ok(hint: Any, value: Any) -> bool:
    if hint is bool:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if hint is float:
        return isinstance(value, int | float)
    return hint in (int, str) and isinstance(value, hint)
