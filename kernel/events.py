"""One event type per fact. The store, `reins exec --json` and the UI protocol carry these.

Every event is a frozen dataclass with a `type` tag; `to_dict`/`from_dict` map it to and from
plain JSON-able dicts. `from_dict` is strict: an unknown type or a bad field raises
`EventDecodeError`, which receivers log and drop.

`json_text(value)` is how events (and everything else Reins writes as JSON: the store, the
`--json` lines, the UI pipe) become text: see there for why it is not plain `json.dumps`.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import re
import time
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from kernel.modes import Mode


class EventDecodeError(ValueError):
    """A dict that is not a valid event."""


_UNSAFE_IN_JSON = re.compile("[\x85\u2028\u2029\ud800-\udfff]")
"""What `json.dumps(ensure_ascii=False)` leaves raw although some reader breaks on it: the
line separators `str.splitlines()` (and JavaScript) split on beyond the C0 controls, which
`json.dumps` escapes itself, and lone surrogates."""


def json_text(value: Any, *, compact: bool = False) -> str:
    """`value` as JSON text that is one line for every line splitter and valid UTF-8.

    Like `json.dumps(value, ensure_ascii=False)` (so other text stays readable), but U+2028,
    U+2029 and U+0085 (which `str.splitlines()` splits on; `json.dumps` already escapes the
    C0 controls) are written as `\\uXXXX` escapes, and so are lone surrogates (text decoded
    from JSON can hold them, and no UTF-8 encoder accepts them). These characters can only
    stand inside JSON strings, so the escapes are valid JSON and `json.loads` gives back the
    same strings: nothing is dropped or replaced (a high surrogate directly followed by a
    low one reads back as the one character the pair encodes, as in any JSON)."""
    separators = (",", ":") if compact else None
    text = json.dumps(value, ensure_ascii=False, separators=separators)
    return _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


CallStatus = Literal[
    "queued", "awaiting_approval", "running", "ok", "error", "denied", "timeout", "stopped"]
"""A tool call's status, as every view shows it: announced and not started (queued), waiting
for a person (awaiting_approval), running, then one of the finished statuses: ok, error,
denied (by a person or the rules), timeout, stopped (cancelled). Decided by `call_status`
alone; the tool-call events carry it."""
CALL_STATUSES: tuple[CallStatus, ...] = typing.get_args(CallStatus)
FINISHED_STATUSES: frozenset[CallStatus] = frozenset(
    {"ok", "error", "denied", "timeout", "stopped"})

Choice = Literal["allow_once", "allow_session", "allow_always", "allow_review", "deny"]
"""What a person can answer to an approval request (the protocol's `approval_answer`, the
approval channels). allow_review is *Run and review*: the command runs without the network
and nothing it changes is applied until the person keeps it (offered only where that is
true: kernel.policy.choices). A request carries the answers it offers (`offered`)."""
Decided = Literal[Choice, "allow", "unavailable"]
"""What an `approval_decision` records: a person's answer, the rules' verdict (allow or
deny, decided_by "policy"), or that no answer could be had (unavailable: never a denial)."""
CHOICES: tuple[Choice, ...] = typing.get_args(Choice)
GrantScope = Literal["session", "always"]
"""A grant's reach: this session until revoked, or an allow rule in settings.json."""
SamplingAction = Literal["accept", "decline"]
"""How a person answered an MCP server's request for a model answer (sampling)."""
FormAction = Literal[SamplingAction, "cancel"]
"""How a person answered an MCP server's form (elicitation)."""
FORM_ACTIONS: tuple[FormAction, ...] = typing.get_args(FormAction)


def is_form_action(word: str) -> typing.TypeGuard[FormAction]:
    return word in FORM_ACTIONS
DecisionScope = Literal["once", "call", GrantScope]
"""What an approval decision covers: this call (once: allowed; call: denied or decided by the
rules), or a grant."""


class Risk(enum.StrEnum):
    """How much a tool can change. The approval policy starts from this; the tool-call
    events carry it (the risk a person is shown)."""

    READ = "read"
    WRITE = "write"
    EXECUTE = "execute"
    DESTRUCTIVE = "destructive"


RiskLevel = Literal["harmless", "ordinary", "network", "privilege", "destructive"]
"""What an approval shows a person, from the least to the most alarming: a call that only
reads (`date`, `ls`, `git status`, a read tool), an ordinary one, one using the network,
one running as another user (`sudo`), one that may destroy data. Computed by the kernel
(kernel.policy.decide.risk_level, from kernel.shell.classify for commands)."""
RISK_LEVELS: tuple[RiskLevel, ...] = typing.get_args(RiskLevel)


class ServerStatus(enum.StrEnum):
    """An MCP server's status (kernel.mcp.manager, the protocol's McpServerInfo)."""

    STARTING = "starting"
    READY = "ready"
    FAILED = "failed"
    DISABLED = "disabled"


ServerState = Literal["ready", "failed", "disabled"]
"""How a server settled for a run (an `mcp_server` event): a ServerStatus other than starting
(a test checks the two agree)."""
DECIDED: tuple[Decided, ...] = typing.get_args(Decided)


def allows(decision: Decided) -> bool:
    """The decision lets the call run."""
    return decision.startswith("allow")


@dataclass(frozen=True)
class Event:
    type: ClassVar[str] = ""
    stored: ClassVar[bool] = True
    """False for what is only shown while it happens (streamed text, waiting progress)."""
    session_id: str
    at: float = field(default_factory=time.time, compare=False, kw_only=True)
    """When it happened (Unix time, seconds): set when the event is made, stored with it,
    so a reloaded session shows when each thing happened."""

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {"type": self.type, **data}


_EVENT_TYPES: dict[str, type[Event]] = {}


def _event(cls: type[Event]) -> type[Event]:
    _EVENT_TYPES[cls.type] = cls
    return cls


@_event
@dataclass(frozen=True)
class SessionStarted(Event):
    type: ClassVar[str] = "session_started"
    workspace: str
    model: str
    sandbox: str
    mode: Mode = Mode.ASK


@_event
@dataclass(frozen=True)
class UserMessage(Event):
    type: ClassVar[str] = "user_message"
    text: str
    attachments: list[dict[str, Any]] = field(default_factory=list)
    """What was attached (kernel.shared.attachments.Attachment.summary: name, kind, media type,
    bytes, and the history blocks it became), in order after the text."""
    at_message: int = -1
    """Where the prompt went in the API history: the message's index and the block its text
    starts at (-1: not recorded, sessions from before edits existed)."""
    at_block: int = 0


@_event
@dataclass(frozen=True)
class MessagesSuperseded(Event):
    """The last prompt was edited (`edit`: it and what followed) or its answer is asked for
    again (`regenerate`: what followed it), or an earlier answer was made current again
    (`restore`: what followed the prompt): those messages leave the history the model is
    sent, and are kept here exactly as they were. The events that showed them stay (the
    timeline, the trace); the chat shows the current branch and offers the others as
    versions (‹ 1/2 ›)."""

    type: ClassVar[str] = "messages_superseded"
    reason: str
    """edit | regenerate | restore"""
    first_index: int
    """The first history message changed: it keeps its blocks before `first_block` (none:
    it is removed), and every later one is removed."""
    first_block: int = 0
    messages: list[dict[str, Any]] = field(default_factory=list)
    """The superseded part: the first message's blocks from `first_block` on, then the rest."""
    restores: int = -1
    """For `restore`: the event whose messages are the history's again, by its place among
    the session's messages_superseded events (0: the first)."""


@_event
@dataclass(frozen=True)
class AssistantDelta(Event):
    """A piece of streamed text; not stored (the finished block is)."""

    type: ClassVar[str] = "assistant_delta"
    stored: ClassVar[bool] = False
    text: str


@_event
@dataclass(frozen=True)
class AssistantText(Event):
    type: ClassVar[str] = "assistant_text"
    text: str


@dataclass(frozen=True)
class CallEvent(Event):
    """An event about one tool call; `status` is the call's status after it, decided by
    `call_status` when the event is made (never given: a decoded event decides it anew)."""

    call_id: str
    status: CallStatus = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", call_status(self))


@_event
@dataclass(frozen=True)
class ToolCallStarted(CallEvent):
    type: ClassVar[str] = "tool_call"
    name: str
    input: Any
    summary: str = ""
    risk: Risk = Risk.READ
    parent_call_id: str = ""
    """Set for a call Reins made for another (a step of a composite call, a fallback):
    that call's id. Views show it under its parent; the model never saw it."""


@_event
@dataclass(frozen=True)
class ApprovalRequest(CallEvent):
    type: ClassVar[str] = "approval_request"
    name: str
    input: Any
    risk: Risk
    reason: str
    preview: str = ""
    rule: str = ""
    can_always: bool = True
    risk_level: RiskLevel = "ordinary"
    """How alarming the call is (RiskLevel); what the badge and its colour follow."""
    always_rules: list[dict[str, str]] = field(default_factory=list)
    """What "always allow" would save, one `{"rule": text, "words": description}` per rule
    (empty when the call cannot be always allowed). Not part of `preview`: each asker shows
    it with `always_text`."""
    choices: list[str] = field(default_factory=list)
    """The answers this request offers, in order (kernel.policy.choices): what every asker
    shows, each in `choice_words`. Read through `offered`."""
    full_preview: str = ""
    """A file holding the whole of what `preview` shows cut (the full diff of a change set
    whose diff is over its line cap), '' when nothing is cut."""

    def offered(self) -> tuple[Choice, ...]:
        """The answers offered: `choices` (words outside the vocabulary left out), or for a
        request stored before requests carried them, what was offered then."""
        carried = tuple(c for c in CHOICES if c in self.choices)
        if carried:
            return carried
        if self.rule == HELD_RULE:
            return ("allow_once", "deny")
        return tuple(c for c in CHOICES if c != "allow_review"
                     and (c != "allow_always" or self.can_always))

    def choice_words(self, choice: Choice) -> str:
        """The label of an answer to this request, as a person reads it (a request about
        held changes keeps or discards them)."""
        words = HELD_CHOICE_WORDS if self.rule == HELD_RULE else CHOICE_WORDS
        return words.get(choice, CHOICE_WORDS[choice])
    steps: list[dict[str, Any]] = field(default_factory=list)
    """For a composite call, every step it will take (kernel.policy.composite.StepVerdict
    .to_json: tool, arguments or where they come from, risk, risk_level, verdict); the
    preview lists them too."""

    def always_text(self) -> str:
        """The rules "always allow" would save, each with its words ('' when none). Entries
        that are not `{"rule": str, "words": str}` (a decoded message is only checked to be
        a list) are left out."""
        shown = []
        for entry in self.always_rules:
            rule = entry.get("rule") if isinstance(entry, dict) else None
            if not isinstance(rule, str) or not rule:
                continue
            words = entry.get("words")
            words = words.removeprefix(f"{self.name}: ") if isinstance(words, str) else ""
            shown.append(f"{rule} — {words}")
        return "; ".join(shown)


@_event
@dataclass(frozen=True)
class ApprovalDecision(CallEvent):
    type: ClassVar[str] = "approval_decision"
    decision: Decided
    decided_by: str = "user"
    scope: DecisionScope = "once"
    rule: str = ""
    message: str = ""
    network: bool = False
    """The approved call (and a session grant made from it) gets the network."""
    decided_at: float = 0.0
    """When (Unix time, seconds) the decision was taken."""


@_event
@dataclass(frozen=True)
class GrantRevoked(Event):
    """The user took back a session grant or an always-allow rule."""

    type: ClassVar[str] = "grant_revoked"
    rule: str
    scope: GrantScope
    revoked_by: str = "user"
    revoked_at: float = 0.0
    """When (Unix time, seconds)."""


@_event
@dataclass(frozen=True)
class ToolProgress(CallEvent):
    type: ClassVar[str] = "tool_progress"
    bytes_so_far: int = 0
    last_line: str = ""
    elapsed_s: float = 0.0
    output_path: str = ""
    """Where the kernel writes the call's whole output while it runs ("" if not a file)."""


@_event
@dataclass(frozen=True)
class ToolResultEvent(CallEvent):
    type: ClassVar[str] = "tool_result"
    name: str
    is_error: bool
    error_code: str | None = None
    duration_ms: float = 0.0
    output_bytes: int = 0
    externalized_path: str | None = None
    preview: str = ""
    """The start of the result's text, at most RESULT_PREVIEW_CHARS characters."""
    changes: list[dict[str, Any]] = field(default_factory=list)
    """What the call changed in the workspace, applied as one undoable step: each change as
    `kernel.transaction.changeset.Change.to_json` gives it (a reader decodes them with
    `ChangeSet.from_json`, which refuses a malformed one)."""
    parent_call_id: str = ""
    """As the call's `tool_call` event's."""


HELD_RULE = "held changes"
"""The rule of an approval request that asks whether to keep changes a call made that are
held for the user (kernel.transaction.judge): allowing keeps them, denying discards them."""
CHOICE_WORDS: Mapping[Choice, str] = {
    "allow_once": "Allow once", "allow_session": "Allow for this session",
    "allow_always": "Always allow", "allow_review": "Run and review", "deny": "Deny"}
"""Each answer's label on an approval (the dialog's buttons, the terminal's keys)."""
HELD_CHOICE_WORDS: Mapping[Choice, str] = {"allow_once": "Keep these changes",
                                           "deny": "Discard them"}
"""The labels on a request about held changes (HELD_RULE)."""
RESULT_PREVIEW_CHARS = 2_000
"""How much of a result's text a `tool_result` event carries (`ToolResultEvent.preview`)."""


@_event
@dataclass(frozen=True)
class RunFinished(Event):
    type: ClassVar[str] = "run_finished"
    stop_reason: str
    rounds: int = 0
    usage: Mapping[str, int] = field(default_factory=dict)
    cost_usd: float = 0.0
    empty_answer: bool = False
    """The run ended (end_turn) with a final answer that has no text."""
    context_tokens: int = 0
    """What the run's last model request held (input tokens, cache reads and writes)."""
    context_window: int = 0
    """The model's context window, in tokens (0: not known)."""


@_event
@dataclass(frozen=True)
class ModelRetry(Event):
    """A model request failed in a way worth retrying (overloaded, rate limited, an error
    event mid-stream, a lost connection) and is sent again after `delay_s`."""

    type: ClassVar[str] = "model_retry"
    attempt: int
    """The attempt that failed (1 = the first)."""
    of: int
    delay_s: float
    reason: str
    discarded: bool = False
    """The failed attempt had already shown text: that text is void, the retry answers anew."""


@_event
@dataclass(frozen=True)
class ModelWaiting(Event):
    """No answer has started yet (shown while waiting, not stored)."""

    type: ClassVar[str] = "model_waiting"
    stored: ClassVar[bool] = False
    waited_s: float
    timeout_s: float


@_event
@dataclass(frozen=True)
class ContextCompacted(Event):
    """The oldest turns were summarized for the requests (the stored history keeps them):
    requests send `summary`, then the history from message `first_kept` on."""

    type: ClassVar[str] = "context_compacted"
    summary: str
    first_kept: int
    """Index (in the stored message history) of the first message sent as it is."""
    tokens_before: int = 0
    tokens_after: int = 0
    """Estimated request size before and after."""
    reason: str = ""
    """auto (near the window), prompt_too_long (the API refused), or user (asked for)."""


@_event
@dataclass(frozen=True)
class McpServerEvent(Event):
    """How a configured MCP server came up for this run (kernel.mcp.report)."""

    type: ClassVar[str] = "mcp_server"
    server: str
    state: ServerState
    reason: str = ""
    """Why it failed, or its one-line summary ("ready with 3 tools")."""
    tools: int = 0
    """How many of its tools are registered."""
    stderr_tail: list[str] = field(default_factory=list)
    """The last lines it wrote to stderr (a failed server)."""
    target: str = ""
    """Its command line or URL."""


@_event
@dataclass(frozen=True)
class McpElicitation(Event):
    """A server asked the user to fill in a form; what was answered (kernel.mcp.asks)."""

    type: ClassVar[str] = "mcp_elicitation"
    server: str
    message: str
    fields: list[dict[str, Any]] = field(default_factory=list)
    """The requested form: name, type, title, description, required, default per field."""
    action: FormAction = "decline"
    decided_by: str = "user"
    reason: str = ""


@_event
@dataclass(frozen=True)
class McpSampling(Event):
    """A server asked for a model answer (kernel.mcp.sampling): what it would send, whether
    it was approved, the tokens it used and the answer."""

    type: ClassVar[str] = "mcp_sampling"
    server: str
    prompt: str
    """The request as shown to the user (system prompt and messages)."""
    max_tokens: int = 0
    action: SamplingAction = "decline"
    decided_by: str = "user"
    reason: str = ""
    usage: Mapping[str, int] = field(default_factory=dict)
    answer: str = ""


@_event
@dataclass(frozen=True)
class ErrorEvent(Event):
    type: ClassVar[str] = "error"
    code: str
    message: str


@_event
@dataclass(frozen=True)
class Notice(Event):
    """Something the user must know that no run reported: what a command left when Reins
    stopped while it ran, kept aside and never applied (kernel.transaction.folders)."""

    type: ClassVar[str] = "notice"
    code: str
    message: str
    call_id: str = ""
    """The call it is about ('' when none)."""
    path: str = ""
    """Where what it is about is kept ('' when nowhere)."""


AnyEvent = (
    SessionStarted | UserMessage | MessagesSuperseded | AssistantDelta | AssistantText
    | ToolCallStarted | ApprovalRequest | ApprovalDecision | GrantRevoked | ToolProgress
    | ToolResultEvent | RunFinished | ModelRetry | ModelWaiting | ContextCompacted
    | McpServerEvent | McpElicitation | McpSampling | ErrorEvent | Notice)
"""The closed union of the event types (each registered in EVENT_TYPES by its tag; a test
checks the two agree)."""

EVENT_TYPES: Mapping[str, type[Event]] = _EVENT_TYPES

_RESULT_STATUS: Mapping[str, CallStatus] = {
    "approval_denied": "denied",
    "permission_denied": "denied",
    "timeout": "timeout",
    "cancelled": "stopped",
}
"""A failed result's status by its error code (kernel.tools.errors.ErrorCode); every other
code is an error."""


def call_status(event: CallEvent) -> CallStatus:
    """The status of the call `event` tells about, once it has happened: the one place a
    call's status is decided (the chat, the timeline and `--json` show what it says)."""
    if isinstance(event, ToolCallStarted):
        return "queued"
    if isinstance(event, ApprovalRequest):
        return "awaiting_approval"
    if isinstance(event, ApprovalDecision):
        if allows(event.decision):
            return "running"
        return "denied" if event.decision == "deny" else "error"
    if isinstance(event, ToolResultEvent):
        if not event.is_error:
            return "ok"
        return _RESULT_STATUS.get(event.error_code or "", "error")
    return "running"


def next_status(current: CallStatus | None, event: CallEvent) -> CallStatus:
    """The status a view shows after `event`: the event's, except that a finished call
    changes only with its result (a late request or progress only adds facts)."""
    if current in FINISHED_STATUSES and not isinstance(event, ToolResultEvent):
        return current
    return event.status


def call_statuses(events: Iterable[Event]) -> dict[str, CallStatus]:
    """Each call's status after a history's events, in order (pure; `next_status`)."""
    status: dict[str, CallStatus] = {}
    for event in events:
        if isinstance(event, CallEvent):
            status[event.call_id] = next_status(status.get(event.call_id), event)
    return status


def pending_requests(events: Iterable[Event]) -> list[ApprovalRequest]:
    """The approval requests of a history that still wait for a person (pure): each call's
    latest request, while the call's status is still awaiting_approval. A call stopped,
    cancelled or finished while it was asked (a result and no decision) waits for nothing:
    it is never offered again."""
    history = list(events)
    status = call_statuses(history)
    latest = {e.call_id: e for e in history if isinstance(e, ApprovalRequest)}
    return [request for call_id, request in latest.items()
            if status[call_id] == "awaiting_approval"]


def event_from_dict(data: Any) -> Event:
    """Build an event from a plain dict, checking the type tag and every field."""
    if not isinstance(data, Mapping):
        raise EventDecodeError(f"event must be an object, got {type(data).__name__}")
    tag = data.get("type")
    cls = _EVENT_TYPES.get(tag) if isinstance(tag, str) else None
    if cls is None:
        raise EventDecodeError(f"unknown event type {tag!r}")
    hints = field_types(cls)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        if f.name in data:
            kwargs[f.name] = _checked(cls.type, f.name, hints[f.name], data[f.name])
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise EventDecodeError(f"{tag}: missing field {f.name!r}")
    return cls(**kwargs)


_FIELD_TYPES: dict[type[Any], dict[str, Any]] = {}


def field_types(cls: type[Any]) -> dict[str, Any]:
    """A dataclass's resolved field types, cached (resolving them costs 50-100 µs, and an
    event or message is decoded thousands of times a second while a run streams)."""
    hints = _FIELD_TYPES.get(cls)
    if hints is None:
        hints = _FIELD_TYPES[cls] = typing.get_type_hints(cls)
    return hints


def _checked(tag: str, name: str, hint: Any, value: Any) -> Any:
    """`value` if it fits the field's type (a closed vocabulary's word as its enum member),
    else EventDecodeError."""
    if hint is Any:
        return value
    origin = typing.get_origin(hint)
    options = typing.get_args(hint) if origin in (typing.Union, _UnionType) else (hint,)
    for option in options:
        if option is type(None) and value is None:
            return value
        base = typing.get_origin(option) or option
        if base is Literal:
            if isinstance(value, str) and value in typing.get_args(option):
                return value
            continue
        if isinstance(base, type) and issubclass(base, enum.Enum):
            if isinstance(value, str) and value in base._value2member_map_:
                return base(value)
            continue
        if base is Mapping:
            base = dict
        if base is float and isinstance(value, int) and not isinstance(value, bool):
            return value
        if base in (int, float) and isinstance(value, bool):
            continue
        if isinstance(base, type) and isinstance(value, base):
            return value
    raise EventDecodeError(f"{tag}: field {name!r} has the wrong type or value "
                           f"({type(value).__name__} {_shown(value)})")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


_UnionType = type(int | None)
