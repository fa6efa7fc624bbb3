"""`reins exec` and the model API: --max-tokens (never an abbreviation), per-model limits from
settings.json, settings refused before sending, --tool-choice on the first round only,
retries and waiting told on stderr, the empty-answer warning."""

from __future__ import annotations

import json

import pytest

from kernel.agent.compact import SUMMARY_SYSTEM
from kernel.cli.main import build_parser
from kernel.fakemodel import Reply, Text, ToolUse, reply
from tests.cli.conftest import Cli, events


def _settings(cli: Cli, data: dict[str, object]) -> None:
    cli.paths.settings_file.parent.mkdir(parents=True, exist_ok=True)
    cli.paths.settings_file.write_text(json.dumps(data))


@pytest.mark.parametrize("argv", [
    ["exec", "--max-tok", "5", "x"], ["exec", "--max-tokens-b", "5", "x"],
    ["exec", "--work", ".", "x"], ["exec", "--json-", "x"], ["exec", "--thinking", "2000", "x"],
    ["exec", "--sess", "s1"], ["exec", "--tool", "any", "x"],
])
def test_no_option_is_taken_as_an_abbreviation(argv, capsys):
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(argv)
    assert exited.value.code == 2
    assert "unrecognized arguments" in capsys.readouterr().err


def test_max_tokens_and_its_budget_are_two_options():
    args = build_parser().parse_args(["exec", "--max-tokens", "1234", "x"])
    assert (args.max_tokens, args.max_tokens_budget) == (1234, None)
    args = build_parser().parse_args(["exec", "--max-tokens-budget", "99", "x"])
    assert (args.max_tokens, args.max_tokens_budget) == (None, 99)


def test_max_tokens_reaches_the_request(cli: Cli):
    cli.server.add(reply("ok"))
    code, _, err = cli.call("exec", "--json", "--max-tokens", "1234", "hi")
    assert code == 0, err
    assert cli.server.requests[0].body["max_tokens"] == 1234


def test_a_models_entry_in_settings_sets_the_limits(cli: Cli):
    _settings(cli, {"model": "local-coder",
                    "models": {"local-*": {"context_window": 16384, "max_tokens": 2048}}})
    cli.server.add(reply("ok"))
    code, _, err = cli.call("exec", "--json", "hi")
    assert code == 0, err
    assert cli.server.requests[0].body["max_tokens"] == 2048
    _settings(cli, {"models": {"x": {"context_window": 100}}})
    code, _, err = cli.call("exec", "hi")
    assert code == 2 and "models/x/context_window" in err


def test_settings_the_api_would_refuse_are_refused_before_sending(cli: Cli):
    code, out, _ = cli.call("exec", "--json", "--thinking-budget", "4096", "--tool-choice", "any",
                            "go")
    assert code == 1
    (error,) = [e for e in events(out) if e["type"] == "error"]
    assert error["code"] == "config_error" and "--tool-choice" in error["message"]
    code, _, err = cli.call("exec", "--thinking-budget", "4096", "--max-tokens", "4096", "go")
    assert code == 1 and "raise max_tokens" in err
    assert cli.server.requests == []


def test_tool_choice_any_forces_the_first_round_only(cli: Cli):
    cli.server.add(reply(ToolUse("read_file", {"path": "a.txt"})), reply("Alpha."))
    code, _, err = cli.call("exec", "--json", "--mode", "auto", "--tool-choice", "any", "read")
    assert code == 0, err
    assert [r.body["tool_choice"] for r in cli.server.requests] == [
        {"type": "any"}, {"type": "auto"}]


def test_a_retry_and_an_empty_answer_are_told_on_stderr(cli: Cli):
    cli.server.add(Reply((Text("void"),), error_after=3), reply())
    code, out, err = cli.call("exec", "hi")
    assert code == 0
    assert "attempt 1 of 3" in err and "overloaded_error" in err and "void" not in out[-50:]
    assert "empty answer" in err


def test_waiting_is_printed_on_stderr_in_human_mode_only():
    import io

    from kernel.cli.cmd_exec import HumanPrinter, JsonPrinter
    from kernel.events import ModelWaiting

    out, err = io.StringIO(), io.StringIO()
    HumanPrinter(out, err)(ModelWaiting("s", waited_s=10.0, timeout_s=120.0))
    assert out.getvalue() == ""
    assert "no answer yet after 10 s (gives up at 120 s)" in err.getvalue()
    lines = io.StringIO()
    JsonPrinter(lines)(ModelWaiting("s", waited_s=10.0, timeout_s=120.0))
    assert json.loads(lines.getvalue())["type"] == "model_waiting"


def test_compact_on_resume_summarizes_then_goes_on(cli: Cli):
    cli.server.add(reply("one"), reply("two"))
    code, out, _ = cli.call("exec", "--json", "first question")
    sid = events(out)[0]["session_id"]
    cli.call("exec", "--json", "--session", sid, "second question")
    cli.server.add(reply("Two questions so far, answered one and two."), reply("three"))
    code, out, err = cli.call("exec", "--json", "--session", sid, "--compact", "third")
    assert code == 0, err
    (compacted,) = [e for e in events(out) if e["type"] == "context_compacted"]
    assert compacted["reason"] == "user" and compacted["first_kept"] == 3
    sent = cli.server.requests[-1].body["messages"]
    assert "Two questions so far" in sent[0]["content"][0]["text"]
    cli.server.add(reply("Three questions, answered one to three."))
    code, out, err = cli.call("exec", "--session", sid, "--compact")
    assert code == 0, err
    assert "earlier turns summarized for the next requests (user" in out
    last = cli.server.requests[-1].body
    assert last["system"] == SUMMARY_SYSTEM and "User: third" in str(last["messages"])
    assert not cli.server.problems


def test_compact_needs_a_session(cli: Cli):
    code, _, err = cli.call("exec", "--compact", "hi")
    assert code == 2 and "--session" in err


def test_a_16k_local_model_through_reins_exec_keeps_going(cli: Cli):
    from tests.agent.test_compact import Script, writes

    _settings(cli, {"model": "local-coder",
                    "models": {"local-coder": {"context_window": 16384, "max_tokens": 2048}}})
    cli.server.context_limit_tokens = 16384 - 2048
    script = Script(writes(16, 6000))
    cli.server.add(*[script] * 40)
    done = cli.run("exec", "--json", "--mode", "auto", "write the parts", timeout=120)
    assert done.returncode == 0, done.stderr
    out = events(done.stdout)
    assert out[-1]["type"] == "run_finished" and out[-1]["rounds"] == 17
    assert any(e["type"] == "context_compacted" for e in out)
    assert cli.server.problems == []
    assert {r.body["max_tokens"] for r in cli.server.requests} == {2048}
