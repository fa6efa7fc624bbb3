"""Issue 15 §1–3 end to end: the real `reins exec` console script, the real SDK against the
fake Messages API server, the real settings file, store and sandboxed run_command. What the
policy cannot see asks (and, denied, does not run); what the shell can read runs. A
redirection is words of the command (issue 29): what it wrote is judged after it ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from kernel.fakemodel import FakeAnthropicServer
from kernel.fakemodel.script import ToolUse, reply
from kernel.paths import AppPaths

REINS = Path(sys.executable).with_name("reins")


def _run(workspace: Path, paths: AppPaths, mode: str, commands: dict[str, str],
         allow: list[str]) -> dict[str, dict[str, Any]]:
    """Each call's facts by id: was it asked, how was it decided, its result."""
    paths.settings_file.parent.mkdir(parents=True, exist_ok=True)
    paths.settings_file.write_text(json.dumps({"permissions": {"allow": allow}}))
    calls = [ToolUse("run_command", {"command": c}, id=i) for i, c in commands.items()]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    with FakeAnthropicServer([reply("on it", *calls), reply("done")],
                             api_key="test-key") as server:
        env.update(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="test-key")
        done = subprocess.run(
            [str(REINS), "exec", "--json", "--workspace", str(workspace), "--mode", mode,
             "--approve", "deny", "run them"], env=env, capture_output=True, text=True,
            timeout=180, stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    out: dict[str, dict[str, Any]] = {i: {"asked": False} for i in commands}
    for event in events:
        call = out.get(event.get("call_id", ""))
        if call is None:
            continue
        if event["type"] == "approval_request":
            call["asked"] = True
            call["reason"] = event["reason"]
        elif event["type"] == "tool_result":
            call["error_code"] = event["error_code"]
            call["text"] = event["preview"]
    return out


def test_ask_mode_an_allow_rule_matches_only_what_it_can_see(workspace: Path,
                                                              reins_home: AppPaths) -> None:
    calls = _run(workspace, reins_home, "ask", {
        "arith": "echo hello $(( $(id > f; echo 1) ))",
        "pth": "echo hello > x.pth",
        "pth_code": "echo hello '\\nimport os' > y.pth",
        "param": "echo hello ${X:=$(touch g)}",
        "plain": "echo hello world",
        "comment": "echo hello # it's fine",
        "continued": "echo hello \\\n  again",
    }, allow=["run_command(echo hello *)"])
    for name in ("arith", "param"):
        assert calls[name]["asked"], name
        assert calls[name]["error_code"] == "approval_denied", name
    for name in ("f", "g"):
        assert not (workspace / name).exists(), name
    assert (workspace / "x.pth").read_text() == "hello\n" and (workspace / "y.pth").exists()
    for name in ("plain", "comment", "continued", "pth", "pth_code"):
        assert not calls[name]["asked"], name
        assert calls[name]["error_code"] is None, calls[name]
    assert "hello world" in calls["plain"]["text"]
    assert "hello again" in calls["continued"]["text"]


def test_auto_mode_asks_about_wrapped_destructive_commands(workspace: Path,
                                                            reins_home: AppPaths) -> None:
    (workspace / "precious.txt").write_text("keep me\n")
    calls = _run(workspace, reins_home, "auto", {
        "sh_c": "sh -c 'rm -rf ~'",
        "pipe": "echo rm -rf . | sh",
        "heredoc": "bash <<EOF\nrm -rf .\nEOF",
        "xargs": "echo . | xargs rm -rf",
        "var": "X=rm; $X -rf .",
        "glob": "rm -rf ?*",
        "outside": "echo hello > ~/x.pth",
        "comment": "echo hi # it's fine",
        "apostrophe": "cat <<EOF\nit's \"here\nEOF",
        "dollar_quote": "printf '%s\\n' $'tab\\there'",
    }, allow=[])
    for name in ("sh_c", "pipe", "heredoc", "xargs", "var", "glob"):
        assert calls[name]["asked"], name
        assert calls[name]["error_code"] == "approval_denied", name
    assert (workspace / "precious.txt").read_text() == "keep me\n"
    assert not (Path.home() / "x.pth").exists()  # `~` is the sandbox home
    for name in ("comment", "apostrophe", "outside"):
        assert not calls[name]["asked"], name
        assert calls[name]["error_code"] is None, calls[name]
    assert "hi" in calls["comment"]["text"] and "it's \"here" in calls["apostrophe"]["text"]
    assert calls["dollar_quote"]["error_code"] != "invalid_arguments"


def test_what_cannot_be_read_is_refused_before_anyone_is_asked(workspace: Path,
                                                                reins_home: AppPaths) -> None:
    calls = _run(workspace, reins_home, "ask", {
        "quote": "touch ran.txt; echo 'oops",
        "subst": "touch ran.txt; echo $(ls",
    }, allow=["run_command"])
    for name, what in (("quote", "unterminated single quote starting at column 21"),
                       ("subst", "unterminated $( … ) substitution")):
        assert not calls[name]["asked"], name
        assert calls[name]["error_code"] == "invalid_arguments", name
        assert what in calls[name]["text"], calls[name]["text"]
    assert not (workspace / "ran.txt").exists()
