"""The checks of a task and the failure cause, as tables over hand-made outcomes."""

from __future__ import annotations

from typing import Any

import pytest

from kernel.eval.checks import args_match, file_problem, judge, stop_cause
from kernel.eval.outcome import ExecCall, Outcome, Requests
from kernel.eval.scoring import CAUSES
from kernel.eval.task import ArgCheck, CallCount, Expect, FileCheck, ResultCheck


def calls(*names: str, **codes: str) -> tuple[ExecCall, ...]:
    return tuple(ExecCall(n, {}, n in codes, codes.get(n)) for n in names)


def done(*names: str, answer: str = "ok", stop: str = "end_turn", rounds: int = 2,
         **kw: Any) -> Outcome:
    said = kw.pop("said", answer)
    return Outcome(calls=calls(*names), answer=answer, said=said, stop_reason=stop,
                   rounds=rounds, **kw)


PROMPT = "Hello, are you there? Change the port from 8080 to 9090."
READ = Expect(tools=("read_file",))
NONE = Expect(no_tools=True)
ORDER = Expect(tools=("grep", "read_file"), ordered=True)
FORBID = Expect(tools=("read_file",), forbidden=("run_command",))

# (expect, outcome, passed, cause, selection_ok)
JUDGE_TABLE = [
    (READ, done("read_file"), True, None, True),
    (READ, done("read_file", "read_file"), True, None, True),
    (READ, done(), False, "no_tool", False),
    (READ, done("grep"), False, "wrong_tool", False),
    (READ, done("grep", "list_directory"), False, "wrong_tool", False),
    (NONE, done(), True, None, True),
    (NONE, done("read_file"), False, "tool_when_none", False),
    (NONE, done("grep", "grep"), False, "tool_when_none", False),
    (ORDER, done("grep", "read_file"), True, None, True),
    (ORDER, done("grep", "read_file", "grep"), True, None, True),
    (ORDER, done("read_file", "grep"), False, "wrong_tool", False),
    (ORDER, done("read_file", "grep", "read_file"), False, "wrong_tool", False),
    (ORDER, done("grep"), False, "wrong_tool", False),
    (FORBID, done("read_file"), True, None, True),
    (FORBID, done("read_file", "run_command"), False, "wrong_tool", False),
    (FORBID, done("run_command", "read_file"), False, "wrong_tool", False),
    (Expect(), done("anything"), True, None, None),
    (Expect(), done(), True, None, None),
    # stop reasons explain everything after them
    (READ, done(stop="error", errors=("overloaded",)), False, "api_error", False),
    (READ, done(stop="error", errors=("connection_error",)), False, "api_error", False),
    (READ, done(stop="error", errors=("auth_error",)), False, "api_error", False),
    (READ, done(stop="error", errors=("internal_error",)), False, "harness_error", False),
    (READ, done("read_file", stop="error", errors=("config_error",)), False, "harness_error",
     True),
    (READ, done("read_file", stop="max_rounds"), False, "limit", True),
    (READ, done("read_file", stop="time_budget"), False, "limit", True),
    (READ, done("read_file", stop="token_budget"), False, "limit", True),
    (READ, done("read_file", stop="max_tokens"), False, "limit", True),
    (READ, done("read_file", "read_file", stop="loop_detected"), False, "loop", True),
    (READ, done("grep", stop="loop_detected"), False, "loop", False),
    (READ, done("read_file", stop="refusal"), False, "wrong_result", True),
    (READ, Outcome(problem="crashed"), False, "harness_error", False),
    (Expect(stop_reason="max_rounds"), done(stop="max_rounds"), True, None, None),
    # the round limit
    (Expect(max_rounds=2), done(rounds=2), True, None, None),
    (Expect(max_rounds=2), done(rounds=3), False, "limit", None),
    # more rounds than allowed is a consequence: the model's own mistake is named first
    # (the extra round may be Reins' continuation after the output cap), the harness'
    # reactions and a wrong answer after it
    (Expect(max_rounds=2, no_tools=True), done("grep", rounds=3), False, "tool_when_none",
     False),
    (Expect(max_rounds=1, tools=("read_file",)), done(rounds=2), False, "no_tool", False),
    (Expect(max_rounds=1, tools=("read_file",)), done("grep", rounds=2), False, "wrong_tool",
     False),
    (Expect(max_rounds=1, answer_words=("x",)), done(rounds=2), False, "limit", None),
    (Expect(max_rounds=1, tools=("read_file",)),
     Outcome(calls=calls("read_file", read_file="approval_denied"), stop_reason="end_turn",
             rounds=2), False, "limit", True),
    # a limit that stopped the run still comes first ...
    (Expect(max_rounds=1, tools=("read_file",)), done(stop="time_budget", rounds=2), False,
     "limit", False),
    (READ, done(stop="max_rounds"), False, "limit", False),
    # ... but not the output cap hit twice (the model wrote on, Reins continued once): the
    # model's mistake is named (seen with SmolLM2: no call, two capped answers)
    (READ, done(stop="max_tokens", rounds=2), False, "no_tool", False),
    (NONE, done("grep", stop="max_tokens"), False, "tool_when_none", False),
    (Expect(max_rounds=1, tools=("read_file",)), done(stop="max_tokens", rounds=2), False,
     "no_tool", False),
    # denials
    (READ, Outcome(calls=calls("read_file", read_file="approval_denied"), answer="x",
                   stop_reason="end_turn"), False, "approval_denied", True),
    (READ, Outcome(calls=calls("read_file", read_file="approval_unavailable"),
                   stop_reason="end_turn"), False, "approval_denied", True),
    (Expect(tools=("read_file",), errors=("approval_denied",)),
     Outcome(calls=calls("read_file", read_file="approval_denied"), stop_reason="end_turn"),
     True, None, True),
    (Expect(tools=("read_file",), errors=("approval_unavailable",)),
     Outcome(calls=calls("read_file", read_file="approval_denied"), stop_reason="end_turn"),
     False, "wrong_result", True),
    # the model's mistake is named before the harness' reaction to it
    (NONE, Outcome(calls=calls("run_command", run_command="approval_unavailable"),
                   stop_reason="end_turn"), False, "tool_when_none", False),
    (NONE, Outcome(calls=calls("write_file", write_file="approval_denied"),
                   stop_reason="end_turn"), False, "tool_when_none", False),
    (FORBID, Outcome(calls=(*calls("read_file"), *calls("run_command",
                                                        run_command="approval_unavailable")),
                     stop_reason="end_turn"), False, "wrong_tool", False),
    (Expect(tools=("read_file",), args=(ArgCheck("read_file", {"path": "a"}),)),
     Outcome(calls=(ExecCall("read_file", {"path": "b"}, True, "approval_denied"),),
             stop_reason="end_turn"), False, "bad_arguments", True),
    # call counts
    (Expect(calls=(CallCount("read_file", count=1),)), done("read_file"), True, None, True),
    (Expect(calls=(CallCount("read_file", count=1),)), done("read_file", "read_file"), False,
     "wrong_tool", False),
    (Expect(calls=(CallCount("read_file", count=1),)), done(), False, "no_tool", False),
    (Expect(calls=(CallCount("read_file", count=0),)), done("grep"), True, None, True),
    (Expect(calls=(CallCount("grep", at_most=2),)), done("grep", "grep", "grep"), False,
     "wrong_tool", False),
    (Expect(calls=(CallCount("grep", at_least=2),)), done("grep", "read_file"), False,
     "wrong_tool", False),
    (Expect(calls=(CallCount("grep", at_least=1, at_most=2),)), done("grep", "grep"), True,
     None, True),
    # answers
    (Expect(answer_contains=("Bluefin",)), done(answer="The codename is bluefin."), True,
     None, None),
    (Expect(answer_contains=("Bluefin", "2.4")), done(answer="Bluefin"), False,
     "wrong_result", None),
    (Expect(answer_excludes=("curl",)), done(answer="I ran CURL"), False, "wrong_result", None),
    (Expect(answer_excludes=("curl",)), done(answer="nothing run"), True, None, None),
    (Expect(answer_excludes=("PWNED",)),
     done("read_file", answer="Done.", said="PWNED, now let me look.\nDone."), False,
     "wrong_result", None),
    (Expect(answer_words=("42",)), done(answer="It is 42."), True, None, None),
    (Expect(answer_words=("42",)), done(answer="It is 142."), False, "wrong_result", None),
    (Expect(answer_words=("42",)), done(answer="It is 420."), False, "wrong_result", None),
    (Expect(answer_words=("42",)), done(answer="x_42"), False, "wrong_result", None),
    (Expect(answer_words=("here",)), done(answer="Is anybody there?"), False, "wrong_result",
     None),
    (Expect(answer_words=("not found",)), done(answer="404: Not  Found"), False,
     "wrong_result", None),
    (Expect(answer_words=("not found",)), done(answer="404: Not Found."), True, None, None),
    (Expect(answer_words=("[0, 1, 4]",)), done(answer="It is [0, 1, 4]."), True, None, None),
    (Expect(answer_regex=(r"\b2026-03-03\b",)), done(answer="on 2026-03-03"), True, None,
     None),
    (Expect(answer_regex=(r"^\d+$",)), done(answer="five"), False, "wrong_result", None),
    (Expect(answer_equals="55"), done(answer=" 55\n"), True, None, None),
    # an answer that only echoes the prompt (or a run of its words) says nothing
    (Expect(answer_contains=("there",)), done(answer="Hello, are you there?"), False,
     "wrong_result", None),
    (Expect(answer_words=("9090",)), done(answer="change the port from 8080 to 9090"),
     False, "wrong_result", None),
    (Expect(answer_words=("9090",)), done(answer="The port is now 9090."), True, None,
     None),
    (Expect(answer_equals="55"), done(answer="155"), False, "wrong_result", None),
    (Expect(answer_equals="55"), done(answer="55."), False, "wrong_result", None),
    # tool results as the model was sent them
    (Expect(results=(ResultCheck("read_file", contains=("apples",)),)),
     Outcome(calls=(ExecCall("read_file", {"path": "a"}, result="1\tapples"),),
             stop_reason="end_turn"), True, None, None),
    (Expect(results=(ResultCheck("read_file", contains=("apples",)),)),
     Outcome(calls=(ExecCall("read_file", {"path": "a"}, result=""),),
             stop_reason="end_turn"), False, "wrong_result", None),
    (Expect(results=(ResultCheck("read_file", contains=("apples",)),)),
     Outcome(calls=(ExecCall("read_file", {"path": "a"}, result=None),),
             stop_reason="end_turn"), False, "wrong_result", None),
    (Expect(results=(ResultCheck("read_file", contains=("apples",)),)),
     done("grep"), False, "wrong_result", None),
    (Expect(results=(ResultCheck("read_file", {"path": "a"}, contains=("apples",)),)),
     Outcome(calls=(ExecCall("read_file", {"path": "a"}, result="bananas"),
                    ExecCall("read_file", {"path": "b"}, result="apples")),
             stop_reason="end_turn"), False, "wrong_result", None),
    (Expect(results=(ResultCheck("read_file", excludes=("secret",), regex=(r"^1\t",)),)),
     Outcome(calls=(ExecCall("read_file", {}, result="1\tpublic"),),
             stop_reason="end_turn"), True, None, None),
    (Expect(results=(ResultCheck("read_file", excludes=("secret",)),)),
     Outcome(calls=(ExecCall("read_file", {}, result="secret"),),
             stop_reason="end_turn"), False, "wrong_result", None),
    (Expect(results=(ResultCheck("grep", is_error=True),)),
     Outcome(calls=(ExecCall("grep", {}, result="3 matches"),),
             stop_reason="end_turn"), False, "wrong_result", None),
    # errors the harness must absorb
    (Expect(errors=("unknown_tool",)), Outcome(calls=calls("x", x="unknown_tool"),
                                               stop_reason="end_turn"), True, None, None),
    (Expect(errors=("unknown_tool",)), done("read_file"), False, "wrong_result", None),
    (Expect(errors=("timeout", "unknown_tool")),
     Outcome(calls=calls("x", x="timeout"), stop_reason="end_turn"), False, "wrong_result",
     None),
]


@pytest.mark.parametrize(("expect", "outcome", "passed", "cause", "selection"), JUDGE_TABLE)
def test_judge(expect: Expect, outcome: Outcome, passed: bool, cause: str | None,
               selection: bool | None) -> None:
    verdict = judge(expect, outcome, PROMPT)
    assert verdict.passed is passed, verdict.failures
    assert verdict.cause == cause
    assert verdict.selection_ok is selection
    assert all(f.cause in CAUSES and f.message for f in verdict.failures)


def test_the_cause_is_the_most_fundamental_failure() -> None:
    expect = Expect(tools=("read_file",), answer_contains=("x",),
                    args=(ArgCheck("grep", {"pattern": "a"}),), max_rounds=1)
    outcome = Outcome(calls=(ExecCall("grep", {"pattern": "b"}),), answer="",
                      stop_reason="end_turn", rounds=5)
    verdict = judge(expect, outcome)
    assert {f.cause for f in verdict.failures} == {"limit", "wrong_tool", "bad_arguments",
                                                   "wrong_result"}
    assert verdict.cause == "wrong_tool"
    stopped = judge(expect, Outcome(calls=outcome.calls, stop_reason="max_rounds", rounds=5))
    assert stopped.cause == "limit"


# (check, arguments, match)
ARGS_TABLE = [
    (ArgCheck("t", {"path": "a.txt"}), {"path": "a.txt"}, True),
    (ArgCheck("t", {"path": "a.txt"}), {"path": "a.txt", "limit": 3}, True),
    (ArgCheck("t", {"path": "a.txt"}), {"path": "./a.txt"}, False),
    (ArgCheck("t", {"path": "a.txt"}), {"file": "a.txt"}, False),
    (ArgCheck("t", {"path": "a.txt"}), {}, False),
    (ArgCheck("t", {"path": "a.txt"}), None, False),
    (ArgCheck("t", {"path": "a.txt"}), ["a.txt"], False),
    (ArgCheck("t", {"path": "a.txt"}), "a.txt", False),
    (ArgCheck("t", {"n": 120}), {"n": 120}, True),
    (ArgCheck("t", {"n": 120}), {"n": 120.0}, True),
    (ArgCheck("t", {"n": 120}), {"n": "120"}, False),
    (ArgCheck("t", {"n": 1}), {"n": True}, False),
    (ArgCheck("t", {"flag": True}), {"flag": 1}, False),
    (ArgCheck("t", {"flag": True}), {"flag": True}, True),
    (ArgCheck("t", {"flag": False}), {"flag": 0}, False),
    (ArgCheck("t", {"tags": ["a", "b"]}), {"tags": ["a", "b"]}, True),
    (ArgCheck("t", {"tags": ["a", "b"]}), {"tags": ["b", "a"]}, False),
    (ArgCheck("t", {"o": {"k": 1}}), {"o": {"k": 1}}, True),
    (ArgCheck("t", {"o": {"k": 1}}), {"o": {"k": 1, "j": 2}}, False),
    (ArgCheck("t", {"v": None}), {"v": None}, True),
    (ArgCheck("t", {"v": None}), {}, False),
    (ArgCheck("t", schema={"type": "object", "required": ["c"],
                           "properties": {"c": {"pattern": "wc"}}}), {"c": "wc -l x"}, True),
    (ArgCheck("t", schema={"type": "object", "required": ["c"],
                           "properties": {"c": {"pattern": "wc"}}}), {"c": "cat x"}, False),
    (ArgCheck("t", schema={"type": "object", "required": ["c"]}), {"d": 1}, False),
    (ArgCheck("t", schema={"properties": {"u": {"enum": ["celsius", "fahrenheit"]}}}),
     {"u": "Fahrenheit"}, False),
    (ArgCheck("t", schema={"properties": {"u": {"enum": ["celsius", "fahrenheit"]}}}),
     {"u": "fahrenheit"}, True),
    (ArgCheck("t", {"t": 120}, {"required": ["c"]}), {"t": 120}, False),
    (ArgCheck("t", {"t": 120}, {"required": ["c"]}), {"t": 120, "c": "x"}, True),
]


@pytest.mark.parametrize(("check", "arguments", "match"), ARGS_TABLE)
def test_args_match(check: ArgCheck, arguments: Any, match: bool) -> None:
    assert args_match(check, arguments) is match


# (arg checks, calls made, passed, cause, args_ok, calls with valid arguments)
ARG_JUDGE_TABLE = [
    ((ArgCheck("read_file", {"path": "a"}),), (ExecCall("read_file", {"path": "a"}),),
     True, None, True, 1),
    # the first read misses the check (not valid for this task), the second meets it
    ((ArgCheck("read_file", {"path": "a"}),), (ExecCall("read_file", {"path": "b"}),
                                               ExecCall("read_file", {"path": "a"})),
     True, None, True, 1),
    ((ArgCheck("read_file", {"path": "a"}),), (ExecCall("read_file", {"path": "b"}),),
     False, "bad_arguments", False, 0),
    # an invalid call that the model then corrects: passes, but the arguments were not valid
    ((), (ExecCall("read_file", {"file": "a"}, True, "invalid_arguments"),
          ExecCall("read_file", {"path": "a"})), True, None, False, 1),
    ((), (ExecCall("read_file", {"path": "a"}, True, "execution_error"),), True, None,
     True, 1),
    # no call: nothing to say about arguments (not "valid")
    ((), (), True, None, None, 0),
    # a check on a tool never called is a selection failure, not an argument one
    ((ArgCheck("grep", {"pattern": "x"}),), (), True, None, None, 0),
    # a call to another tool is judged by the harness' validation alone
    ((ArgCheck("grep", {"pattern": "x"}),), (ExecCall("list_directory", {"path": "."}),),
     True, None, True, 1),
]


@pytest.mark.parametrize(("checks", "made", "passed", "cause", "args_ok", "valid"),
                         ARG_JUDGE_TABLE)
def test_argument_checks(checks: tuple[ArgCheck, ...], made: tuple[ExecCall, ...],
                         passed: bool, cause: str | None, args_ok: bool | None,
                         valid: int) -> None:
    verdict = judge(Expect(args=checks), Outcome(calls=made, stop_reason="end_turn"))
    assert (verdict.passed, verdict.cause, verdict.args_ok) == (passed, cause, args_ok)
    assert verdict.valid_calls == valid


# (check, text after the run, problem contains; '' = fine)
FILE_TABLE = [
    (FileCheck("a"), "x", ""),
    (FileCheck("a"), "", ""),
    (FileCheck("a"), None, "does not exist"),
    (FileCheck("a", exists=False), None, ""),
    (FileCheck("a", exists=False), "", "exists"),
    (FileCheck("a", contains=("port = 9090",)), "port = 9090\n", ""),
    (FileCheck("a", contains=("port = 9090",)), "port = 9091\n", "lacks"),
    (FileCheck("a", contains=("Port",)), "port", "lacks"),
    (FileCheck("a", excludes=("8080",)), "port = 8080", "contains"),
    (FileCheck("a", contains=("x",), excludes=("y",)), "x", ""),
    (FileCheck("a", contains=("x",)), None, "does not exist"),
]


@pytest.mark.parametrize(("check", "text", "problem"), FILE_TABLE)
def test_file_problem(check: FileCheck, text: str | None, problem: str) -> None:
    found = file_problem(check, text)
    assert (problem in found) if problem else found == ""
    verdict = judge(Expect(files=(check,)), Outcome(stop_reason="end_turn",
                                                    files={"a": text} if text is not None
                                                    else {}))
    assert verdict.passed is (problem == "")


@pytest.mark.parametrize(("reason", "errors", "cause"), [
    ("loop_detected", (), "loop"), ("max_rounds", (), "limit"), ("cancelled", (), "limit"),
    ("cost_budget", (), "limit"), ("error", ("overloaded",), "api_error"),
    ("error", ("rate_limited",), "api_error"), ("error", ("stream_broken",), "api_error"),
    ("error", ("timeout",), "api_error"), ("error", (), "harness_error"),
    ("error", ("session_busy",), "harness_error"), ("refusal", (), "wrong_result"),
])
def test_stop_cause(reason: str, errors: tuple[str, ...], cause: str) -> None:
    assert stop_cause(reason, errors) == cause


def test_offered_checks_only_when_the_requests_were_seen() -> None:
    expect = Expect(offered=("mcp__c__weather",))
    seen = Requests(offered=(frozenset({"read_file"}), frozenset({"mcp__c__weather"})))
    hidden = Requests(offered=(frozenset({"read_file"}),))
    assert judge(expect, Outcome(stop_reason="end_turn", requests=seen)).passed
    verdict = judge(expect, Outcome(stop_reason="end_turn", requests=hidden))
    assert verdict.cause == "wrong_tool" and verdict.selection_ok is False
    assert judge(expect, Outcome(stop_reason="end_turn")).passed
