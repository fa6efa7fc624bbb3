"""A server that fails to start says why: every class, several spellings, real processes;
and `reins exec` reports every configured server's outcome (`mcp_server` events in --json,
stored; a line on stderr with the reason and the tail of its stderr in human mode)."""

from __future__ import annotations

import asyncio
import errno
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from kernel.agent.store import SessionStore
from kernel.events import McpServerEvent, event_from_dict
from kernel.fakemodel import reply
from kernel.mcp.failures import exit_hint, shebang_interpreter, start_error
from kernel.mcp.manager import ServerState, ServerStatus
from kernel.mcp.report import server_event, server_line
from tests.cli.conftest import Cli, cli, events
from tests.mcp.conftest import edge, harness

__all__ = ["cli"]
WAIT = 60.0


@pytest.mark.parametrize(("code", "hint"), [
    (127, "code 127: a program it runs was not found"),
    (126, "code 126: a program it runs is not executable"),
    (0, ""), (1, ""), (3, ""), (-9, ""), (None, ""),
])
def test_exit_hints(code: int | None, hint: str) -> None:
    assert exit_hint(code).startswith(hint) and (hint or exit_hint(code) == "")


@pytest.mark.parametrize(("line", "interpreter"), [
    (b"#!/usr/bin/env node\n", "/usr/bin/env"),
    (b"#! /opt/py/bin/python3 -u\n", "/opt/py/bin/python3"),
    (b"#!/bin/sh", "/bin/sh"),
    (b"#!\n", ""),
    (b"\x7fELF\x02\x01", ""),
    (b"", ""),
    (b"#!/b\xffad\n", "/b\ufffdad"),
])
def test_shebang_interpreter(line: bytes, interpreter: str) -> None:
    assert shebang_interpreter(line) == interpreter


@pytest.mark.parametrize(("program", "error", "first_line", "cwd", "expected"), [
    ("npx", FileNotFoundError(errno.ENOENT, "No such file"), None, None,
     "the command 'npx' is not on the server's PATH (/usr/bin:/bin)"),
    ("uvx", OSError(errno.ENOENT, "No such file"), None, None, "is not on the server's PATH"),
    ("/opt/x/server", FileNotFoundError(errno.ENOENT, "x"), None, None,
     "the command '/opt/x/server' does not exist (No such file or directory)"),
    ("/srv/run.js", FileNotFoundError(errno.ENOENT, "x"), b"#!/usr/local/bin/node\n", None,
     "exists but its interpreter '/usr/local/bin/node' (from its #! line) does not"),
    ("/srv/bin", FileNotFoundError(errno.ENOENT, "x"), b"\x7fELF", None,
     "the command '/srv/bin' exists but its interpreter (from its #! line) does not"),
    ("/srv/run", PermissionError(errno.EACCES, "denied"), b"", None,
     "the command '/srv/run' is not executable (permission denied)"),
    ("/srv/run", OSError(errno.ENOEXEC, "Exec format error"), b"text", None,
     "is not a program this system can run"),
    ("/srv/run", OSError(errno.E2BIG, "Argument list too long"), b"", None,
     "cannot start '/srv/run': Argument list too long"),
    ("npx", FileNotFoundError(errno.ENOENT, "x"), None, "/gone/folder",
     "its folder '/gone/folder' does not exist (\"cwd\" in its mcpServers entry)"),
])
def test_start_errors_say_what_to_fix(program: str, error: OSError, first_line: bytes | None,
                                      cwd: str | None, expected: str) -> None:
    text = start_error(program, error, search_path="/usr/bin:/bin", first_line=first_line,
                       missing_cwd=cwd)
    assert expected in text


def test_an_empty_path_is_named_empty() -> None:
    text = start_error("npx", FileNotFoundError(errno.ENOENT, "x"), search_path="",
                       first_line=None)
    assert "PATH (empty)" in text


@pytest.mark.parametrize(("state", "expected"), [
    (ServerState("a", ServerStatus.READY, "x --y", tools=("t1", "t2")),
     {"state": "ready", "reason": "ready with 2 tools", "tools": 2, "stderr_tail": []}),
    (ServerState("b", ServerStatus.FAILED, "b", error="boom", stderr_tail=("l1", "l2")),
     {"state": "failed", "reason": "boom", "tools": 0, "stderr_tail": ["l1", "l2"]}),
    (ServerState("c", ServerStatus.DISABLED, "c"),
     {"state": "disabled", "reason": "disabled in settings", "tools": 0}),
    (ServerState("d", ServerStatus.STARTING, "d"),
     {"state": "failed", "reason": "it did not finish starting"}),
])
def test_server_events(state: ServerState, expected: dict[str, Any]) -> None:
    event = server_event("s1", state)
    data = event.to_dict()
    assert data["type"] == "mcp_server" and data["server"] == state.name
    assert data["target"] == state.target
    assert {k: data[k] for k in expected} == expected
    assert event_from_dict(json.loads(json.dumps(data))) == event


def test_a_failed_servers_line_names_it_its_reason_and_the_tail_of_its_stderr() -> None:
    event = McpServerEvent("s", "git", "failed", "exited with code 1\nbefore",
                           stderr_tail=[f"line {i}" for i in range(9)] + ["\x1b[31mred"],
                           target="uvx mcp-server-git")
    text = server_line(event)
    first, *rest = text.split("\n")
    assert first.startswith("reins: MCP server 'git' (uvx mcp-server-git) failed: ")
    assert "exited with code 1\\x0abefore" in first and "\x1b" not in text
    assert rest[0] == "  its stderr ended with:"
    assert rest[1:] == ["  | line 5", "  | line 6", "  | line 7", "  | line 8",
                        "  | \\x1b[31mred"]
    ready = server_line(McpServerEvent("s", "t", "ready", "ready with 1 tool", 1))
    assert ready == "── MCP server 't': ready with 1 tool"


def _script(path: Path, text: str, mode: int = 0o755) -> str:
    path.write_text(text)
    path.chmod(mode)
    return str(path)


def _failing_servers(tmp_path: Path) -> dict[str, tuple[dict[str, Any], list[str]]]:
    """name → (entry, fragments its failure must name)."""
    env_missing = _script(tmp_path / "env-missing.js",
                          "#!/usr/bin/env nodez-not-installed\nconsole.log(1)\n")
    abs_missing = _script(tmp_path / "abs-missing.py", "#!/nonexistent/bin/python3\n")
    not_exec = _script(tmp_path / "not-exec.sh", "#!/bin/sh\nexit 0\n", 0o644)
    return {
        "bare-missing": ({"command": "no-such-mcp-server-8f2"},
                         ["'no-such-mcp-server-8f2' is not on the server's PATH"]),
        "abs-missing": ({"command": "/nonexistent/mcp-server"},
                        ["'/nonexistent/mcp-server' does not exist"]),
        "env-interp": ({"command": env_missing}, ["exited with code 127", "interpreter"]),
        "abs-interp": ({"command": abs_missing},
                       ["interpreter '/nonexistent/bin/python3' (from its #! line) does not"]),
        "sh-interp": ({"command": "sh", "args": ["-c", "exec nodez-missing server.js"]},
                      ["exited with code 127"]),
        "not-exec": ({"command": not_exec}, ["is not executable"]),
        "folder": ({"command": str(tmp_path)}, ["is not executable"]),
        "dies": (edge("--die-at-start"), ["exited with code 3 before it was ready"]),
        "exits-0": ({"command": "true"}, ["exited with code 0 before it was ready"]),
        "shell-exit": ({"command": "sh", "args": ["-c", "echo boom >&2; exit 4"]},
                       ["exited with code 4"]),
        "killed": ({"command": "sh", "args": ["-c", "kill -9 $$"]}, ["killed by signal 9"]),
        "bad-cwd": ({"command": "sh", "cwd": str(tmp_path / "gone")},
                    [f"its folder '{tmp_path / 'gone'}' does not exist"]),
        "slow": (edge("--slow-start", "60", startup_timeout_s=1),
                 ["no answer within 1 s of starting", "startup_timeout_s"]),
        "silent": ({"command": "sleep", "args": ["60"], "startup_timeout_s": 0.5},
                   ["no answer within 0.5 s of starting"]),
    }


def test_every_start_failure_class_says_why(tmp_path: Path) -> None:
    cases = _failing_servers(tmp_path)

    async def main() -> dict[str, ServerState]:
        async with harness(tmp_path, {n: e for n, (e, _) in cases.items()}) as h:
            return {name: await h.manager.wait_for(
                name, lambda s: s.status is ServerStatus.FAILED, WAIT) for name in cases}

    states = asyncio.run(main())
    for name, (_, fragments) in cases.items():
        for fragment in fragments:
            assert fragment in states[name].error, (name, states[name].error)
    assert "nodez-not-installed" in " ".join(states["env-interp"].stderr_tail)
    assert states["shell-exit"].stderr_tail == ("boom",)
    assert states["dies"].stderr_tail[-1] == "edge: fatal: cannot open the database"


def _settings(cli: Cli, servers: dict[str, Any]) -> None:
    cli.paths.config.mkdir(parents=True, exist_ok=True)
    cli.paths.settings_file.write_text(json.dumps({"mcpServers": servers}))


def test_exec_reports_every_servers_outcome_as_a_stored_event(cli: Cli,
                                                               tmp_path: Path) -> None:
    cases = _failing_servers(tmp_path)
    chosen = ["bare-missing", "env-interp", "dies", "slow"]
    _settings(cli, {"edge": edge(), **{n: cases[n][0] for n in chosen},
                    "off": edge(disabled=True)})
    cli.server.add(reply("Done."))
    done = cli.run("exec", "--json", "hello")
    assert done.returncode == 0, done.stderr
    out = events(done.stdout)
    reported = [e for e in out if e["type"] == "mcp_server"]
    assert [e["server"] for e in reported] == ["edge", *chosen, "off"]
    assert out.index(reported[-1]) < [e["type"] for e in out].index("session_started")
    by_name = {e["server"]: e for e in reported}
    assert by_name["edge"] == {**by_name["edge"], "state": "ready", "tools": 20,
                               "reason": "ready with 20 tools"}
    assert by_name["off"]["state"] == "disabled"
    for name in chosen:
        event = by_name[name]
        assert event["state"] == "failed" and event["tools"] == 0
        for fragment in cases[name][1]:
            assert fragment in event["reason"], (name, event["reason"])
    assert "edge: fatal: cannot open the database" in by_name["dies"]["stderr_tail"]
    assert "mcp__edge__echo" in [t["name"] for t in cli.server.requests[0].body["tools"]]

    session_id = reported[0]["session_id"]
    with SessionStore(cli.paths.database) as store:
        stored = [e for _, e in store.events(session_id) if isinstance(e, McpServerEvent)]
    assert [e.to_dict() for e in stored] == reported


def test_exec_in_human_mode_says_on_stderr_which_server_failed_and_why(cli: Cli) -> None:
    _settings(cli, {"edge": edge(), "dies": edge("--die-at-start"),
                    "gone": {"command": "no-such-mcp-server-8f2"}})
    cli.server.add(reply("Done."))
    done = cli.run("exec", "hello")
    assert done.returncode == 0, done.stderr
    err = done.stderr.splitlines()
    dies = err.index(next(line for line in err if line.startswith("reins: MCP server 'dies'")))
    assert "failed: the server process exited with code 3 before it was ready" in err[dies]
    assert err[dies + 1] == "  its stderr ended with:"
    assert "  | edge: fatal: cannot open the database" in err[dies + 2:dies + 4]
    gone = next(line for line in err if line.startswith("reins: MCP server 'gone'"))
    assert "'no-such-mcp-server-8f2' is not on the server's PATH" in gone
    assert "its tools are not available" in gone
    assert "MCP server 'edge'" not in done.stderr
    assert f"── MCP server 'edge' ({sys.executable}" in done.stdout
    assert "ready with 20 tools" in done.stdout

