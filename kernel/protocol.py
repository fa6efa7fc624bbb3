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
import enum
import json
import logging
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeVar

from kernel.events import (
    CHOICES,
    Choice,
    Event,
    EventDecodeError,
    FormAction,
    GrantScope,
    ServerStatus,
    event_from_dict,
    field_types,
    json_text,
)
from kernel.modes import Mode

# Carried here, defined apart so that loading the settings does not load the protocol.
from kernel.setting_records import RULE_LISTS as RULE_LISTS
from kernel.setting_records import RuleList as RuleList
from kernel.setting_records import SettingChange as SettingChange
from kernel.setting_records import SettingsProblem as SettingsProblem

PROTOCOL_VERSION = 1
_T = TypeVar("_T")
log = logging.getLogger(__name__)
EXIT_STORE_UNUSABLE = 3
"""The kernel worker's exit code when the session database cannot be used (damaged, not
Reins', or from a newer Reins; its stderr says which): restarting cannot help."""

DECISIONS: tuple[Choice, ...] = CHOICES
"""What the UI can answer to an approval request."""
McpAction = Literal["enable", "disable", "restart"]
RunState = Literal["running", "idle", "interrupted"]
GRANT_SCOPES: tuple[GrantScope, ...] = typing.get_args(GrantScope)
MCP_ACTIONS: tuple[McpAction, ...] = typing.get_args(McpAction)


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
    mode: Mode = Mode.ASK
    model: str = ""
    updated_at: float = 0.0


@dataclass(frozen=True)
class GrantInfo:
    """One grant as the permissions page shows it."""

    rule: str
    words: str
    """The rule said in words (kernel.policy.grants.describe)."""
    scope: GrantScope
    """session (this session only, until revoked) | always (an allow rule in settings.json)"""
    network: bool = False
    session_id: str = ""
    """The session a `session` grant belongs to (ListAllGrants lists every session's)."""
    session_title: str = ""


@dataclass(frozen=True)
class McpServerInfo:
    """One MCP server's state (kernel.mcp.manager.ServerState.to_dict())."""

    name: str
    status: ServerStatus
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
            name=str(state["name"]), status=ServerStatus(state["status"]),
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
class GetSettings(Message):
    """Read settings.json again (a hand edit applies from here on) and answer with
    SettingsSnapshot. The kernel owns the file: the UI never reads or writes it."""

    kind: ClassVar[str] = "get_settings"


@_message
@dataclass(frozen=True)
class UpdateSettings(Message):
    """Change these keys of settings.json (the kernel validates, then writes atomically,
    keeping every other key); answered with SettingsSnapshot carrying `request_id` and,
    when nothing was written, every problem. `check_only`: validate, never write."""

    kind: ClassVar[str] = "update_settings"
    changes: tuple[SettingChange, ...]
    request_id: str = ""
    check_only: bool = False


@_message
@dataclass(frozen=True)
class GetDiagnostics(Message):
    """Ask for `reins doctor`'s facts (answered with Diagnostics; it starts bubblewrap)."""

    kind: ClassVar[str] = "get_diagnostics"


@_message
@dataclass(frozen=True)
class ImportMcpServers(Message):
    """Import the `mcpServers` of a Claude Desktop configuration file: with `write` false
    only say what would be added (McpImportPlan); with `write` add the servers not already
    configured (an existing entry is never overwritten)."""

    kind: ClassVar[str] = "import_mcp_servers"
    path: str
    write: bool = False


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
    mode: Mode = Mode.ASK
    title: str = ""
    confirm_broad_workspace: bool = False
    """The user confirmed a workspace that `kernel.shared.workspace.broad_workspace_reason` calls
    too broad (the home folder, `/`, a system folder) after being told what it exposes;
    without it such a session is refused."""
    scratch: bool = False
    """Start in a new scratch workspace the kernel makes (AppPaths.scratch); `workspace` is
    then ignored. A real folder can be given later (SetWorkspace)."""
    model: str = ""
    """The session's model ("": settings.json's); `kernel.demo.DEMO_MODEL` for the demo."""


@_message
@dataclass(frozen=True)
class SetWorkspace(Message):
    """Move a session to another folder (a scratch session given a real one): its later
    runs and commands work there; what is in the old folder stays there. Refused while it
    runs, for a folder that does not exist, and for a broad one unless confirmed
    (as NewSession). Answered with SessionList (and a notice event in the session)."""

    kind: ClassVar[str] = "set_workspace"
    session_id: str
    workspace: str
    confirm_broad_workspace: bool = False


@_message
@dataclass(frozen=True)
class CheckConnection(Message):
    """Check a key and base URL against the server with one small real request (as typed
    in Settings, before they are saved; an empty key: the one the kernel has). Answered
    with ConnectionChecked."""

    kind: ClassVar[str] = "check_connection"
    request_id: str
    api_key: str = field(default="", repr=False)
    base_url: str = ""
    model: str = ""
    """The model to try a one-token message with, when the server lists no models."""


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
    mode: Mode


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
    """Files and images after the prompt's text (checked by kernel.shared.attachments)."""


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
class RestoreVersion(Message):
    """Make an earlier answer to the last prompt the one the conversation goes on from (the
    chat's ‹ 1/2 ›): `version` is the `messages_superseded` event keeping it, by its place
    among the session's (0: the first). The answer now current is kept in a new one
    (reason `restore`). Refused while a run is in progress or approvals wait, and for a
    version that is not an earlier answer to the last prompt."""

    kind: ClassVar[str] = "restore_version"
    session_id: str
    version: int


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
class ExportSession(Message):
    """The session written out (the app's Export): answered by `SessionExport`."""

    kind: ClassVar[str] = "export_session"
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
    decision: Choice
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
class ListAllGrants(Message):
    """Ask for every session's grants and the always-allow rules (answered with a GrantList
    whose `session_id` is empty, each grant naming its session)."""

    kind: ClassVar[str] = "list_all_grants"


@_message
@dataclass(frozen=True)
class RevokeGrant(Message):
    """Take back a session grant (scope `session`) or remove an always-allow rule from
    settings.json (scope `always`); recorded as a `grant_revoked` event of the session."""

    kind: ClassVar[str] = "revoke_grant"
    session_id: str
    rule: str
    scope: GrantScope


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
    action: McpAction


@_message
@dataclass(frozen=True)
class McpFormAnswer(Message):
    """The user's answer to an McpFormRequest: accept (with `content`, the fields as an
    object that fits the form's schema), decline or cancel."""

    kind: ClassVar[str] = "mcp_form_answer"
    request_id: str
    action: FormAction
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
class ListSteps(Message):
    """Ask for a session's applied steps (kernel.transaction.checkpoints): answered with
    StepList, also sent after each undo or rewind."""

    kind: ClassVar[str] = "list_steps"
    session_id: str


@_message
@dataclass(frozen=True)
class UndoCall(Message):
    """Undo one call's applied changes (answered with UndoOutcome, then StepList); refused
    while a run of the session is in progress."""

    kind: ClassVar[str] = "undo_call"
    session_id: str
    call_id: str


@_message
@dataclass(frozen=True)
class RewindTo(Message):
    """Undo every step after this call's, newest first, stopping at the first that cannot
    be undone (answered as UndoCall is)."""

    kind: ClassVar[str] = "rewind_to"
    session_id: str
    call_id: str


@_message
@dataclass(frozen=True)
class GetStepDiff(Message):
    """Ask for what a call's applied steps changed, as a unified diff (StepDiff)."""

    kind: ClassVar[str] = "get_step_diff"
    session_id: str
    call_id: str


@_message
@dataclass(frozen=True)
class GetPromptImages(Message):
    """Ask for small pictures of a sent prompt's images (PromptImages), for the chat: the
    prompt's `at_message`/`at_block` (its user_message event's), each attachment's number
    of history blocks in order (its summary's `blocks`), and the longest side wanted in
    pixels (the kernel keeps it within 16…512)."""

    kind: ClassVar[str] = "get_prompt_images"
    session_id: str
    at_message: int
    at_block: int
    blocks: tuple[int, ...] = ()
    side: int = 192


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
class SessionExport(Message):
    """A session's trace as JSON lines (what `reins export` writes) and its conversation
    as Markdown (kernel/agent/export.py)."""

    kind: ClassVar[str] = "session_export"
    session_id: str
    trace: str
    markdown: str


@_message
@dataclass(frozen=True)
class SettingsSnapshot(Message):
    """settings.json as the kernel reads it: sent after KernelReady, after every change,
    after SetApiKey, when a run finds the file changed, and on GetSettings."""

    kind: ClassVar[str] = "settings"
    path: str
    values: Any = None
    """The file's JSON object ({} when it is missing or cannot be used)."""
    error: str = ""
    """Why the file cannot be used, naming the line; nothing runs until it is fixed."""
    line: int = 0
    model: str = ""
    """The model new sessions get."""
    default_mode: Mode = Mode.ASK
    can_run: bool = False
    """A run can start: the settings load and there is an API key or a base URL
    (settings.json's `base_url` or ANTHROPIC_BASE_URL)."""
    cannot_run: str = ""
    """Why not, in words."""
    claude_config: str = ""
    """Claude Desktop's configuration file on this machine ("" when there is none)."""
    request_id: str = ""
    """The UpdateSettings this answers ("" for any other reason)."""
    problems: tuple[SettingsProblem, ...] = ()
    """Why that update was not written (empty: it was written, or passed its check)."""


@_message
@dataclass(frozen=True)
class ConnectionChecked(Message):
    """What CheckConnection found: `ok`, and in words what answered or what went wrong
    (the key refused, nothing listening, no such page, a TLS failure, …)."""

    kind: ClassVar[str] = "connection_checked"
    request_id: str
    ok: bool
    message: str


@_message
@dataclass(frozen=True)
class Diagnostics(Message):
    """`reins doctor`'s report, as the kernel sees it."""

    kind: ClassVar[str] = "diagnostics"
    text: str


@_message
@dataclass(frozen=True)
class McpImportPlan(Message):
    """What importing a Claude Desktop file adds (`runs`: each added server's command line
    or URL), what is already there identically, and the names already used by a different
    definition (those keep the user's). `error`: why the file cannot be imported (bad JSON
    names the line). `written`: the added servers are in settings.json now."""

    kind: ClassVar[str] = "mcp_import_plan"
    path: str
    added: tuple[str, ...] = ()
    runs: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()
    error: str = ""
    written: bool = False


@_message
@dataclass(frozen=True)
class RunStatus(Message):
    """running | idle | interrupted (a run was cut short and can be resumed)."""

    kind: ClassVar[str] = "run_status"
    session_id: str
    state: RunState


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


@dataclass(frozen=True)
class StepInfo:
    """One applied step as the timeline needs it (kernel.transaction.checkpoints.Step)."""

    call_id: str
    undone: bool = False
    undoable: bool = True
    """False once undone, for an undo step, or when its kept bytes were dropped."""
    undoes: str = ""
    """For an undo step: the call it undid."""


@_message
@dataclass(frozen=True)
class StepList(Message):
    """A session's applied steps, oldest first."""

    kind: ClassVar[str] = "step_list"
    session_id: str
    steps: tuple[StepInfo, ...] = ()


@dataclass(frozen=True)
class BlockedPath:
    """A path that stopped an undo: what changed it (a later call's id, or none: the
    reason says "changed outside Reins")."""

    path: str
    reason: str
    by_call: str = ""


UndoAction = Literal["undo", "rewind"]


@_message
@dataclass(frozen=True)
class UndoOutcome(Message):
    """What an UndoCall or RewindTo did (kernel.transaction.checkpoints.UndoResult): the
    calls undone and the paths put back, or where it stopped and why (`blocked` paths, or
    `refused` in words); a stopped undo changed nothing of the call it stopped at."""

    kind: ClassVar[str] = "undo_outcome"
    session_id: str
    call_id: str
    action: UndoAction
    undone: tuple[str, ...] = ()
    restored: tuple[str, ...] = ()
    blocked: tuple[BlockedPath, ...] = ()
    refused: str = ""
    stopped_at: str = ""

    @property
    def ok(self) -> bool:
        return not self.blocked and not self.refused


@_message
@dataclass(frozen=True)
class StepDiff(Message):
    kind: ClassVar[str] = "step_diff"
    session_id: str
    call_id: str
    text: str = ""
    error: str = ""


@_message
@dataclass(frozen=True)
class PromptImages(Message):
    """The answer to GetPromptImages: per attachment, in order, a PNG (base64) no larger
    than asked, or "" for one that is no image or could not be read."""

    kind: ClassVar[str] = "prompt_images"
    session_id: str
    at_message: int
    at_block: int
    images: tuple[str, ...] = field(default=(), repr=False)


MESSAGE_KINDS: Mapping[str, type[Message]] = _KINDS

Command = (
    SetApiKey | GetSettings | UpdateSettings | GetDiagnostics | ImportMcpServers | ListSessions
    | NewSession | OpenSession | RenameSession | DeleteSession | SetMode | SetSessionModel
    | ListModels | StartRun | EditLastMessage | RegenerateAnswer | RestoreVersion
    | ResumeRun | CompactSession
    | CancelRun | CancelCall | ApprovalAnswer | Shutdown | ListGrants | ListAllGrants
    | RevokeGrant | ListMcpServers | McpServerAction | McpFormAnswer | ListMcpPrompts
    | GetMcpPrompt | McpSamplingAnswer | ExportSession | ListSteps | UndoCall | RewindTo
    | GetStepDiff | SetWorkspace | CheckConnection | GetPromptImages)
"""Every message the UI sends the kernel: a closed union (a test checks that each registered
kind is a Command or a Reply, and that the worker handles every Command)."""
Reply = (
    KernelReady | EventMessage | SessionList | SessionLoaded | ModelList | SessionDeleted
    | SettingsSnapshot | Diagnostics | McpImportPlan | RunStatus | CommandFailed | GrantList
    | McpServerStates | McpFormRequest | McpPromptList | McpPromptText | McpSamplingRequest
    | SessionExport | StepList | UndoOutcome | StepDiff | ConnectionChecked | PromptImages)
"""Every message the kernel sends the UI (a test checks the UI handles each)."""
COMMANDS: frozenset[type[Message]] = frozenset(typing.get_args(Command))
REPLIES: frozenset[type[Message]] = frozenset(typing.get_args(Reply))


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
    return _build(cls, data, cls.kind)


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


_FIELDS: dict[type[Any], tuple[dataclasses.Field[Any], ...]] = {}


def _fields(cls: type[Any]) -> tuple[dataclasses.Field[Any], ...]:
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = _FIELDS[cls] = dataclasses.fields(cls)
    return fields


def _build(cls: type[_T], data: Mapping[str, Any], tag: str) -> _T:
    hints = field_types(cls)
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
    if origin is Literal:
        words = typing.get_args(hint)
        if isinstance(value, str) and value in words:
            return value
        raise ProtocolError(f"{where}: expected one of {', '.join(words)}, got {_value(value)}")
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        if isinstance(value, str) and value in hint._value2member_map_:
            return hint(value)
        raise ProtocolError(f"{where}: expected one of {', '.join(m.value for m in hint)}, "
                            f"got {_value(value)}")
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if not isinstance(value, Mapping):
            raise ProtocolError(f"{where}: expected an object, got {type(value).__name__}")
        return _build(hint, value, where)
    if _scalar_ok(hint, value):
        return float(value) if hint is float else value
    raise ProtocolError(f"{where}: expected {getattr(hint, '__name__', hint)}, "
                        f"got {type(value).__name__}")


def _value(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _scalar_ok(hint: Any, value: Any) -> bool:
    if hint is bool:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if hint is float:
        return isinstance(value, int | float)
    return hint in (int, str) and isinstance(value, hint)
