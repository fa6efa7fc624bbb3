"""The UI ↔ kernel protocol: every message round-trips; nothing malformed gets through."""

from __future__ import annotations

import json
import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel import events as ev
from kernel import protocol as p

INFO = p.SessionInfo("s1", "Fix the build", "/tmp/ws", "auto-edit", "claude-x", 12.5)
SAMPLES: list[p.Message] = [
    p.SetApiKey("sk-secret"),
    p.GetSettings(),
    p.UpdateSettings((p.SettingChange(("model",), "claude-x"),
                      p.SettingChange(("permissions", "allow"), ["run_command(git status)"]),
                      p.SettingChange(("base_url",), remove=True)), "r1", check_only=True),
    p.SettingsSnapshot("/c/settings.json", {"model": "m", "exec": {"env": ["A"]}}, "", 0,
                       "m", "auto", True, "", "/h/claude_desktop_config.json", "r1",
                       (p.SettingsProblem(("permissions", "allow", "1"), "bad rule"),
                        p.SettingsProblem(("default_mode",), "no", 3))),
    p.GetDiagnostics(),
    p.Diagnostics("sandbox: bwrap\nAPI key: found"),
    p.ImportMcpServers("/h/claude_desktop_config.json", write=True),
    p.McpImportPlan("/h/c.json", ("time",), ("uvx mcp-server-time",), ("a",), ("git",)),
    p.McpImportPlan("/h/c.json", error="not valid JSON at line 4", written=False),
    p.ListAllGrants(),
    p.ListSessions(query="build"),
    p.NewSession(workspace="/tmp/ws", mode="auto", title="t"),
    p.OpenSession("s1"),
    p.RenameSession("s1", "New title"),
    p.DeleteSession("s1"),
    p.SetMode("s1", "read-only"),
    p.SetSessionModel("s1", "claude-opus-4-1"),
    p.NewSession("", "ask", title="Demo", scratch=True, model="reins-demo"),
    p.SetWorkspace("s1", "/home/me/project", confirm_broad_workspace=True),
    p.CheckConnection("check-1", "sk-ant-typed", "http://localhost:8080", "claude-x"),
    p.ConnectionChecked("check-1", False, "http://localhost:8080 refused the key (HTTP 401)"),
    p.ListModels(),
    p.ModelList(models=("claude-a", "claude-b"), default="claude-a"),
    p.ModelList(error="the endpoint answered 404"),
    p.StartRun("s1", "hello ünïcode"),
    p.StartRun("s1", "see", (p.AttachmentData("a.png", "iVBORw0KGgo="),)),
    p.EditLastMessage("s1", "better", (p.AttachmentData("n.txt", "aGk="),), keep=(0, 2)),
    p.RegenerateAnswer("s1"),
    p.RestoreVersion("s1", 0),
    p.GetPromptImages("s1", 3, 1, (1, 2), 192),
    p.PromptImages("s1", 3, 1, ("iVBORw0KGgo=", "")),
    p.ResumeRun("s1"),
    p.CompactSession("s1"),
    p.ExportSession("s1"),
    p.CancelRun("s1"),
    p.CancelCall("s1", "call_1"),
    p.ApprovalAnswer("s1", "call_1", "deny", message="not that", confirmed=True),
    p.Shutdown(),
    p.KernelReady(p.PROTOCOL_VERSION, 123, "bwrap", "", True, "claude-x"),
    p.EventMessage(ev.AssistantDelta("s1", "hi")),
    p.EventMessage(ev.RunFinished("s1", "end_turn", 2, {"input_tokens": 5}, 0.01)),
    p.SessionList((INFO, INFO), query="x"),
    p.SessionLoaded(INFO, (ev.UserMessage("s1", "q"), ev.AssistantText("s1", "a")), True),
    p.SessionDeleted("s1"),
    p.SessionExport("s1", '{"type": "session"}\n', "# A title\n"),
    p.RunStatus("s1", "running"),
    p.CommandFailed("start_run", "no key", "s1"),
    p.ListGrants("s1"),
    p.RevokeGrant("s1", "run_command(git status)", "session"),
    p.ListMcpServers(),
    p.McpServerAction("git", "disable"),
    p.McpFormAnswer("form-1", "accept", {"color": "red", "count": 2}),
    p.ListMcpPrompts(),
    p.GetMcpPrompt("every", "args-prompt", {"city": "Paris"}),
    p.McpFormRequest("form-1", "every", "Pick", [{"name": "color", "type": "string",
                                                  "required": True}],
                     {"type": "object", "properties": {"color": {"type": "string"}}}),
    p.McpPromptList((p.McpPromptInfo("every", "args-prompt", "Weather", ("city", "state"),
                                     ("city",)),)),
    p.McpPromptText("every", "args-prompt", "What's weather in Paris?"),
    p.McpSamplingRequest("smp-1", "s1", "every", "claude-x", 100, "Be brief.",
                         (p.SampledMessage("user", "Say hi\x1b[31m"),)),
    p.McpSamplingAnswer("smp-1", True),
    p.GrantList("s1", (p.GrantInfo("run_command(git status)", "the command `git status`",
                                   "session", network=True),
                       p.GrantInfo("write_file(docs/**)", "paths matching docs/**", "always"))),
    p.GrantList("", (p.GrantInfo("run_command(ls)", "the command `ls`", "session",
                                 session_id="s2", session_title="Other"),)),
    p.McpServerStates((p.McpServerInfo("git", "ready", "ready with 2 tools", "uvx git",
                                       ("mcp__git__log", "mcp__git__diff"), pid=42),
                       p.McpServerInfo("bad", "failed", "failed: exit 1", "x", error="exit 1",
                                       stderr_tail=("Traceback", "boom"), failures=2,
                                       retry_in_s=4.0)), error=""),
    p.ListSteps("s1"),
    p.StepList("s1", (p.StepInfo("call_1", undone=True, undoable=False),
                      p.StepInfo("call_2"),
                      p.StepInfo("call_1", undone=False, undoable=False, undoes="call_1"))),
    p.UndoCall("s1", "call_1"),
    p.RewindTo("s1", "call_1"),
    p.UndoOutcome("s1", "call_2", "undo", ("call_2",), ("a.txt", "new/b.txt")),
    p.UndoOutcome("s1", "call_1", "rewind", ("call_3",), ("c.txt",),
                  (p.BlockedPath("a.txt", "changed by call call_2", "call_2"),
                   p.BlockedPath("b\udcff.txt", "changed outside Reins")),
                  stopped_at="call_2"),
    p.UndoOutcome("s1", "call_1", "undo", refused="call call_1 is already undone",
                  stopped_at="call_1"),
    p.GetStepDiff("s1", "call_1"),
    p.StepDiff("s1", "call_1", "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+b"),
    p.StepDiff("s1", "call_9", error="session 's1' has no step of call 'call_9'"),
]


def test_every_kind_has_a_sample() -> None:
    assert {type(m).kind for m in SAMPLES} == set(p.MESSAGE_KINDS)


@pytest.mark.parametrize("message", SAMPLES, ids=lambda m: m.kind)
def test_round_trip(message: p.Message) -> None:
    raw = p.encode(message)
    assert json.loads(raw)["v"] == p.PROTOCOL_VERSION
    assert p.decode(raw) == message


def test_event_messages_reuse_kernel_events() -> None:
    decoded = p.decode(p.encode(p.EventMessage(ev.ToolCallStarted("s", "c", "read_file", {}))))
    assert isinstance(decoded, p.EventMessage)
    assert type(decoded.event) is ev.ToolCallStarted


def test_an_undo_outcome_says_whether_it_stopped() -> None:
    done = p.UndoOutcome("s1", "c1", "undo", ("c1",), ("a.txt",))
    blocked = p.UndoOutcome("s1", "c1", "undo", blocked=(p.BlockedPath("a", "x"),))
    refused = p.UndoOutcome("s1", "c1", "undo", refused="already undone")
    assert (done.ok, blocked.ok, refused.ok) == (True, False, False)
    assert "ok" not in json.loads(p.encode(done)), "derived, never sent"


@pytest.mark.parametrize("data", [
    {"kind": "undo_outcome", "session_id": "s1", "call_id": "c1", "action": "redo"},
    {"kind": "undo_outcome", "session_id": "s1", "call_id": "c1", "action": "undo",
     "blocked": [{"path": "a"}]},
    {"kind": "step_list", "session_id": "s1", "steps": [{"call_id": "c", "undone": "yes"}]},
    {"kind": "undo_call", "session_id": "s1"},
])
def test_a_malformed_undo_message_is_dropped(data: dict) -> None:
    assert p.decode(json.dumps({"v": p.PROTOCOL_VERSION, **data})) is None


def test_api_key_never_in_repr() -> None:
    assert "sk-secret" not in repr(p.SetApiKey("sk-secret"))


@pytest.mark.parametrize(
    "data, reason",
    [
        ({"v": 2, "kind": "shutdown"}, "version"),
        ({"kind": "shutdown"}, "version"),
        ({"v": True, "kind": "shutdown"}, "version"),
        ({"v": 1, "kind": "launch_missiles"}, "unknown message kind"),
        ({"v": 1, "kind": "start_run", "session_id": "s"}, "missing field 'prompt'"),
        ({"v": 1, "kind": "start_run", "session_id": 3, "prompt": "x"}, "expected str"),
        ({"v": 1, "kind": "kernel_ready", "protocol_version": True, "pid": 1}, "expected int"),
        ({"v": 1, "kind": "event", "event": {"type": "nope", "session_id": "s"}}, "unknown"),
        ({"v": 1, "kind": "session_list", "sessions": [{"title": "x"}]}, "session_id"),
        ({"v": 1, "kind": "session_list", "sessions": {"a": 1}}, "expected a list"),
    ],
)
def test_malformed_is_rejected_with_a_reason(data: dict, reason: str) -> None:
    with pytest.raises(p.ProtocolError, match=reason):
        p.message_from_dict(data)


def test_decode_logs_and_drops(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="kernel.protocol"):
        assert p.decode(b'{"v": 1, "kind": "nope"}') is None
        assert p.decode(b"\xff\xfe not json") is None
        assert p.decode(b"[" * 100_000) is None
    assert len([r for r in caplog.records if "dropped" in r.message]) == 3


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300))
def test_fuzz_arbitrary_bytes_never_raise(raw: bytes) -> None:
    result = p.decode(raw)
    assert result is None or isinstance(result, p.Message)


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(SAMPLES),
    st.dictionaries(st.text(max_size=15), json_values, max_size=4),
)
def test_fuzz_mutated_messages_decode_or_drop(base: p.Message, mutation: dict) -> None:
    data = {**base.to_dict(), **mutation}
    result = p.decode(json.dumps(data))
    if result is not None:
        # Whatever gets through is a well-typed message that encodes again identically.
        assert p.decode(p.encode(result)) == result


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(p.MESSAGE_KINDS)), st.dictionaries(st.text(max_size=15),
                                                                  json_values, max_size=6))
def test_fuzz_random_fields_for_every_kind(kind: str, fields: dict) -> None:
    result = p.decode(json.dumps({**fields, "v": 1, "kind": kind}))
    assert result is None or result.kind == kind


def test_mcp_server_info_is_built_from_the_managers_state() -> None:
    from kernel.mcp.manager import ServerState, ServerStatus

    failed = ServerState("git", ServerStatus.FAILED, "uvx mcp-server-git", error="exit 1",
                         stderr_tail=("boom",), failures=1, retry_in_s=2.0)
    info = p.McpServerInfo.from_state(failed.to_dict())
    assert info == p.McpServerInfo("git", "failed", "failed: exit 1; retrying in 2 s",
                                   "uvx mcp-server-git", error="exit 1", stderr_tail=("boom",),
                                   failures=1, retry_in_s=2.0)
    ready = ServerState("t", ServerStatus.READY, "t", tools=("mcp__t__now",), pid=7)
    info = p.McpServerInfo.from_state(ready.to_dict())
    assert (info.summary, info.tools, info.retry_in_s, info.pid) == (
        "ready with 1 tool", ("mcp__t__now",), -1.0, 7)
    assert p.decode(p.encode(p.McpServerStates((info,)))) == p.McpServerStates((info,))


def test_a_grant_list_with_a_bad_record_is_dropped(caplog: pytest.LogCaptureFixture) -> None:
    raw = {"v": p.PROTOCOL_VERSION, "kind": "grant_list", "session_id": "s1",
           "grants": [{"rule": "x", "words": 3, "scope": "session"}]}
    with caplog.at_level(logging.WARNING):
        assert p.decode(json.dumps(raw)) is None
    assert "grant_list.grants[0].words" in caplog.text


def test_a_decoded_approval_request_with_odd_always_rules_still_renders() -> None:
    """Decoding checks that always_rules is a list, not what is in it: the text leaves out
    what is not a rule instead of raising in the UI."""
    request = ev.ApprovalRequest("s", call_id="c", name="write_file", input={}, risk="write",
                                 reason="ask mode")
    raw = json.loads(p.encode(p.EventMessage(request)))
    (event,) = (v for v in raw.values() if isinstance(v, dict))
    event["always_rules"] = [5, {"rule": 3}, {"rule": ""},
                             {"rule": "write_file(a.py)", "words": None},
                             {"rule": "write_file(b.py)", "words": "write_file: paths b.py"}]
    message = p.decode(json.dumps(raw))
    assert isinstance(message, p.EventMessage)
    request = message.event
    assert isinstance(request, ev.ApprovalRequest)
    assert request.always_text() == "write_file(a.py) — ; write_file(b.py) — paths b.py"
