"""Task files (tables of good and bad spellings) and reading an outcome from exec's events."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from kernel.eval.outcome import ExecCall, Requests, outcome_from_lines, sent_results
from kernel.eval.runner import ScriptPlayer, expand, offered_names, read_checked_files
from kernel.eval.task import (
    ArgCheck,
    CallCount,
    ResultCheck,
    ScriptedCall,
    ScriptedTurn,
    TaskError,
    discover,
    load_task,
    parse_task,
)
from kernel.fakemodel import Failure, Reply, Text, ToolUse

GOOD = """
description = "d"
category = "c"
prompt = "Read a.txt"
mode = "auto"
approve = "deny"
max_rounds = 5

[settings]
permissions = { deny = ["run_command(rm *)"] }

[expect]
tools = ["read_file"]
ordered = true
forbidden = ["run_command"]
answer_contains = ["alpha"]
errors = ["unknown_tool"]
max_rounds = 3

[[expect.args]]
tool = "read_file"
equals = { path = "a.txt" }
schema = { type = "object" }

[[expect.files]]
path = "out/b.txt"
exists = false

[[script]]
text = "Reading."
tools = [{ name = "read_file", input = { path = "a.txt" }, id = "c1" }]

[[script]]
error = 529

[[script]]
unless_offered = "x"
tools = [{ name = "find_tools", input = { query = "q" } }]
"""


def write(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "task.toml").write_text(text)
    return folder


def test_a_complete_task_file(tmp_path: Path) -> None:
    task = load_task(write(tmp_path / "my-task", GOOD))
    assert (task.name, task.prompt, task.mode, task.approve, task.max_rounds) == (
        "my-task", "Read a.txt", "auto", "deny", 5)
    assert task.settings == {"permissions": {"deny": ["run_command(rm *)"]}}
    assert task.expect.tools == ("read_file",) and task.expect.ordered
    assert task.expect.args == (ArgCheck("read_file", {"path": "a.txt"}, {"type": "object"}),)
    assert task.expect.files[0].exists is False and task.expect.max_rounds == 3
    assert task.script == (
        ScriptedTurn("Reading.", (ScriptedCall("read_file", {"path": "a.txt"}, "c1"),)),
        ScriptedTurn(error=529),
        ScriptedTurn(calls=(ScriptedCall("find_tools", {"query": "q"}),), unless_offered="x"),
    )
    assert task.workspace == tmp_path / "my-task" / "workspace"


def test_the_stronger_checks_are_read() -> None:
    task = parse_task({"prompt": "x", "expect": {
        "answer_words": ["42"], "answer_regex": [r"\d+"], "answer_equals": "42",
        "results": [{"tool": "read_file", "args": {"path": "a"}, "contains": ["a"],
                     "excludes": ["b"], "regex": ["^1"], "is_error": False}],
        "calls": [{"tool": "read_file", "count": 1}, {"tool": "grep", "at_most": 2}]}},
        Path("/x/t"))
    assert (task.expect.answer_words, task.expect.answer_regex, task.expect.answer_equals) == (
        ("42",), (r"\d+",), "42")
    assert task.expect.results == (ResultCheck("read_file", {"path": "a"}, ("a",), ("b",),
                                               ("^1",), False),)
    assert task.expect.calls == (CallCount("read_file", count=1), CallCount("grep", at_most=2))


def test_defaults() -> None:
    task = parse_task({"prompt": "hi"}, Path("/x/t"))
    assert (task.mode, task.approve, task.max_rounds, task.script) == ("ask", None, 20, ())
    assert task.expect.stop_reason == "end_turn" and not task.expect.no_tools


# (the data of a task file, the message must contain)
BAD = [
    ({}, "prompt: required"),
    ({"prompt": ""}, "prompt: must not be empty"),
    ({"prompt": "   "}, "prompt: must not be empty"),
    ({"prompt": 3}, "prompt: must be a string"),
    ({"prompt": "x", "promt": "y"}, "promt: unknown key"),
    ({"prompt": "x", "mode": "yolo"}, "mode: 'yolo'"),
    ({"prompt": "x", "mode": "Auto"}, "mode: 'Auto'"),
    ({"prompt": "x", "approve": "yes"}, "approve: 'yes'"),
    ({"prompt": "x", "max_rounds": 0}, "max_rounds: must be a positive integer"),
    ({"prompt": "x", "max_rounds": -1}, "max_rounds"),
    ({"prompt": "x", "max_rounds": True}, "max_rounds"),
    ({"prompt": "x", "max_rounds": "5"}, "max_rounds"),
    ({"prompt": "x", "settings": []}, "settings: must be a table"),
    ({"prompt": "x", "expect": []}, "expect: must be a table"),
    ({"prompt": "x", "expect": {"tool": ["a"]}}, "expect.tool: unknown key"),
    ({"prompt": "x", "expect": {"answer_regex": ["(unclosed"]}},
     "expect.answer_regex: '(unclosed' is not a valid regular expression"),
    ({"prompt": "x", "expect": {"answer_words": "42"}}, "expect.answer_words: must be an array"),
    ({"prompt": "x", "expect": {"answer_equals": 55}}, "expect.answer_equals: must be a string"),
    ({"prompt": "x", "expect": {"results": [{"tool": "grep"}]}},
     "expect.results[0].: give contains, excludes, regex or is_error"),
    ({"prompt": "x", "expect": {"results": [{"contains": ["a"]}]}},
     "expect.results[0].tool: required"),
    ({"prompt": "x", "expect": {"results": [{"tool": "g", "regex": ["["]}]}},
     "expect.results[0].regex"),
    ({"prompt": "x", "expect": {"results": [{"tool": "g", "contain": ["a"]}]}},
     "expect.results[0].contain: unknown key"),
    ({"prompt": "x", "expect": {"results": [{"tool": "g", "is_error": 1}]}},
     "expect.results[0].is_error: must be true or false"),
    ({"prompt": "x", "expect": {"results": [{"tool": "g", "args": [], "is_error": True}]}},
     "expect.results[0].args: must be a table"),
    ({"prompt": "x", "expect": {"no_tools": True, "results": [{"tool": "g", "is_error": True}]}},
     "no_tools contradicts"),
    ({"prompt": "x", "expect": {"calls": [{"tool": "g"}]}}, "expect.calls[0].: give count"),
    ({"prompt": "x", "expect": {"calls": [{"tool": "g", "count": 1, "at_most": 2}]}},
     "expect.calls[0].: give count"),
    ({"prompt": "x", "expect": {"calls": [{"tool": "g", "at_least": 3, "at_most": 2}]}},
     "at_least is above at_most"),
    ({"prompt": "x", "expect": {"calls": [{"tool": "g", "count": -1}]}},
     "expect.calls[0].count: must be a whole number"),
    ({"prompt": "x", "expect": {"calls": [{"tool": "g", "count": True}]}},
     "expect.calls[0].count"),
    ({"prompt": "x", "expect": {"tools": "read_file"}}, "expect.tools: must be an array"),
    ({"prompt": "x", "expect": {"tools": [1]}}, "expect.tools: must be an array"),
    ({"prompt": "x", "expect": {"ordered": "yes"}}, "expect.ordered: must be true or false"),
    ({"prompt": "x", "expect": {"no_tools": True, "tools": ["a"]}}, "no_tools contradicts"),
    ({"prompt": "x", "expect": {"max_rounds": 0}}, "expect.max_rounds"),
    ({"prompt": "x", "expect": {"args": {"tool": "a"}}}, "expect.args: must be an array"),
    ({"prompt": "x", "expect": {"args": [{"tool": "a"}]}}, "give equals or schema"),
    ({"prompt": "x", "expect": {"args": [{"equals": {"a": 1}}]}}, "expect.args[0].tool"),
    ({"prompt": "x", "expect": {"args": [{"tool": "a", "equals": 1}]}}, "must be tables"),
    ({"prompt": "x", "expect": {"args": [{"tool": "a", "schema": {"type": "objekt"}}]}},
     "not a valid JSON Schema"),
    ({"prompt": "x", "expect": {"args": [{"tool": "a", "equal": {}}]}},
     "expect.args[0].equal: unknown key"),
    ({"prompt": "x", "expect": {"files": [{"path": "/etc/passwd"}]}}, "must be relative"),
    ({"prompt": "x", "expect": {"files": [{"path": "../outside"}]}}, "without '..'"),
    ({"prompt": "x", "expect": {"files": [{"path": "a/../../b"}]}}, "without '..'"),
    ({"prompt": "x", "expect": {"files": [{"path": "a", "exist": True}]}}, "exist: unknown"),
    ({"prompt": "x", "expect": {"files": [{"path": "a", "contains": "x"}]}},
     "contains: must be an array"),
    ({"prompt": "x", "script": {"text": "a"}}, "script: must be an array of tables"),
    ({"prompt": "x", "script": [{}]}, "script[0].: a turn needs text, tools or error"),
    ({"prompt": "x", "script": [{"text": "a"}, {"txt": "b"}]}, "script[1].txt: unknown key"),
    ({"prompt": "x", "script": [{"error": 200}]}, "script[0].error: must be an HTTP error"),
    ({"prompt": "x", "script": [{"error": "529"}]}, "script[0].error"),
    ({"prompt": "x", "script": [{"tools": [{"input": {}}]}]}, "script[0].tools[0].name"),
    ({"prompt": "x", "script": [{"tools": [{"name": "a", "args": {}}]}]},
     "script[0].tools[0].args: unknown key"),
]


@pytest.mark.parametrize(("data", "message"), BAD)
def test_bad_task_data_is_refused_naming_the_key(data: dict[str, Any], message: str) -> None:
    with pytest.raises(TaskError) as caught:
        parse_task(data, Path("/x/t"))
    assert message in str(caught.value)


@pytest.mark.parametrize(("text", "message"), [
    ("prompt = ", "not valid TOML"),
    ('prompt = "a"\nprompt = "b"\n', "not valid TOML"),
    ("\xff", "not valid TOML"),
])
def test_bad_task_files_name_the_file(tmp_path: Path, text: str, message: str) -> None:
    folder = write(tmp_path / "t", text)
    with pytest.raises(TaskError) as caught:
        load_task(folder)
    assert message in str(caught.value) and str(folder / "task.toml") in str(caught.value)


def test_discover_a_task_a_folder_a_glob_and_nothing(tmp_path: Path) -> None:
    for name in ("b-task", "a-task", "c-other"):
        write(tmp_path / "suite" / name, 'prompt = "x"\n')
    (tmp_path / "suite" / "not-a-task").mkdir()
    assert [t.name for t in discover([str(tmp_path / "suite")])] == ["a-task", "b-task",
                                                                   "c-other"]
    assert [t.name for t in discover([str(tmp_path / "suite" / "b-task")])] == ["b-task"]
    assert [t.name for t in discover([str(tmp_path / "suite" / "*-task")])] == ["a-task",
                                                                             "b-task"]
    for missing in (tmp_path / "nothing", tmp_path / "suite" / "not-a-task",
                    tmp_path / "suite" / "z*"):
        with pytest.raises(TaskError, match="no tasks"):
            discover([str(missing)])
    write(tmp_path / "more" / "e-task", 'prompt = "x"\n')
    both = discover([str(tmp_path / "suite" / "b-task"), str(tmp_path / "more"),
                     str(tmp_path / "suite" / "*-task")])
    assert [t.name for t in both] == ["b-task", "e-task", "a-task"]  # each once, in order
    with pytest.raises(TaskError, match="no tasks"):
        discover([str(tmp_path / "more"), str(tmp_path / "nothing")])
    write(tmp_path / "other" / "a-task", 'prompt = "y"\n')
    with pytest.raises(TaskError, match="two tasks are named a-task"):
        discover([str(tmp_path / "suite"), str(tmp_path / "other")])
    write(tmp_path / "suite" / "d-broken", 'prompt = "x"\nmode = "yolo"\n')
    with pytest.raises(TaskError, match="d-broken"):
        discover([str(tmp_path / "suite")])


def line(kind: str, **fields: Any) -> str:
    return json.dumps({"type": kind, "session_id": "s", **fields})


RUN = [
    line("session_started", workspace="/w", model="m", sandbox="bwrap", mode="auto"),
    line("user_message", text="go"),
    line("assistant_text", text="Let me look."),
    line("tool_call", call_id="c1", name="read_file", input={"path": "a"}),
    line("approval_decision", call_id="c1", decision="allow", decided_by="policy"),
    line("tool_result", call_id="c1", name="read_file", is_error=False),
    line("tool_call", call_id="c2", name="write_file", input={"path": "b"}),
    line("approval_decision", call_id="c2", decision="deny", decided_by="user"),
    line("tool_result", call_id="c2", name="write_file", is_error=True,
         error_code="approval_denied"),
    line("assistant_text", text="Denied."),
    line("assistant_text", text="Done."),
    line("run_finished", stop_reason="end_turn", rounds=3,
         usage={"input_tokens": 300, "output_tokens": 60, "cache_read_input_tokens": 40},
         cost_usd=0.5),
]


def test_an_outcome_from_exec_events() -> None:
    outcome = outcome_from_lines(RUN, exit_code=0, seconds=1.5, files={"b": None})
    assert outcome.calls == (
        ExecCall("read_file", {"path": "a"}, id="c1", result=""),
        ExecCall("write_file", {"path": "b"}, True, "approval_denied", "c2", ""))
    assert outcome.answer == "Denied.\nDone."
    assert outcome.said == "Let me look.\nDenied.\nDone."
    assert (outcome.stop_reason, outcome.rounds, outcome.tokens, outcome.cost_usd) == (
        "end_turn", 3, 400, 0.5)
    assert outcome.problem == "" and outcome.files == {"b": None}


@pytest.mark.parametrize(("lines", "problem"), [
    ([], "without run_finished"),
    (RUN[:5], "without run_finished"),
    (["not json", *RUN], "unreadable event line"),
    ([line("no_such_event"), *RUN], "unreadable event line"),
    ([line("tool_call", call_id=1, name="x", input={}), *RUN], "unreadable event line"),
])
def test_an_unusable_run_is_a_problem(lines: list[str], problem: str) -> None:
    assert problem in outcome_from_lines(lines, exit_code=1, seconds=0, stderr="boom").problem


def test_an_error_and_a_result_without_its_call() -> None:
    outcome = outcome_from_lines([
        line("tool_result", call_id="x", name="grep", is_error=True, error_code="timeout"),
        line("error", code="overloaded", message="529"),
        line("run_finished", stop_reason="error"),
    ], exit_code=1, seconds=0)
    assert outcome.calls == (ExecCall("grep", None, True, "timeout", "x", ""),)
    assert outcome.errors == ("overloaded",) and outcome.stop_reason == "error"


def body(*names: str) -> dict[str, Any]:
    return {"tools": [{"name": n} for n in names], "messages": []}


def test_the_script_player_plays_turns_in_order_and_skips_what_is_not_needed() -> None:
    player = ScriptPlayer([
        ScriptedTurn(calls=(ScriptedCall("find_tools", {"query": "w"}),), unless_offered="w"),
        ScriptedTurn("text", (ScriptedCall("w", {"a": 1}, "id1"),)),
        ScriptedTurn(error=529),
        ScriptedTurn(error=429),
        ScriptedTurn("bye"),
    ])
    first = player(body("read_file", "w"))
    assert first == Reply((Text("text"), ToolUse("w", {"a": 1}, "id1")))
    overloaded = player(body())
    assert isinstance(overloaded, Failure)
    assert (overloaded.status, overloaded.error_type) == (529, "overloaded_error")
    limited = player(body())
    assert isinstance(limited, Failure) and limited.error_type == "rate_limit_error"
    assert player(body()) == Reply((Text("bye"),))
    done = player(body())
    assert isinstance(done, Failure) and done.status == 400 and "no more turns" in done.message
    hidden = ScriptPlayer([ScriptedTurn(calls=(ScriptedCall("find_tools", {}),),
                                        unless_offered="w")])
    assert hidden(body("read_file")) == Reply((ToolUse("find_tools", {}),))


def test_offered_names_and_placeholders() -> None:
    assert offered_names({"tools": [{"name": "a"}, {"name": "b"}, "junk"]}) == {"a", "b"}
    assert offered_names({}) == frozenset()
    settings = {"mcpServers": {"s": {"command": "{python}", "args": ["{task}/x.py", 3]}},
                "flag": True}
    assert expand(settings, {"python": "/py", "task": "/t"}) == {
        "mcpServers": {"s": {"command": "/py", "args": ["/t/x.py", 3]}}, "flag": True}


def test_checked_files_are_read_without_following_or_blocking(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "plain.txt").write_text("port = 9090\n")
    (ws / "sub" / "bad.txt").write_bytes(b"caf\xff")
    (ws / "link.txt").symlink_to(outside)
    (ws / "dir").mkdir()
    os.mkfifo(ws / "fifo")
    paths = ["plain.txt", "sub/bad.txt", "link.txt", "dir", "fifo", "missing.txt",
             "plain.txt/below"]
    task = parse_task({"prompt": "x", "expect": {"files": [{"path": p} for p in paths]}},
                      tmp_path / "t")
    assert read_checked_files(task, ws) == {
        "plain.txt": "port = 9090\n", "sub/bad.txt": "caf\ufffd", "link.txt": None,
        "dir": None, "fifo": None, "missing.txt": None, "plain.txt/below": None}


def test_the_results_the_model_was_sent_are_read_from_the_requests() -> None:
    bodies = [
        {"messages": [{"role": "user", "content": "go"}]},
        {"messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "x"}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "a", "content": "plain"},
                {"type": "tool_result", "tool_use_id": "b", "content": [
                    {"type": "text", "text": "one"}, {"type": "image", "source": {}},
                    {"type": "text", "text": "two"}]},
                {"type": "tool_result", "tool_use_id": "c"},
                {"type": "text", "text": "not a result"}]}]},
        {"messages": "not a list"}, {},
    ]
    assert sent_results(bodies) == {"a": "plain", "b": "one\ntwo", "c": ""}
    events = [line("tool_call", call_id="a", name="x", input={}),
              line("tool_result", call_id="a", name="x", is_error=False, preview="event"),
              line("tool_call", call_id="z", name="x", input={}),
              line("tool_result", call_id="z", name="x", is_error=False, preview="event"),
              line("run_finished", stop_reason="end_turn")]
    scripted = outcome_from_lines(events, exit_code=0, seconds=0,
                                  requests=Requests(results=sent_results(bodies)))
    assert [c.result for c in scripted.calls] == ["plain", None] and scripted.scripted
    real = outcome_from_lines(events, exit_code=0, seconds=0)
    assert [c.result for c in real.calls] == ["event", "event"] and not real.scripted
