"""Real MCP servers through THE registry and the real dispatcher.

The PyPI servers `mcp-server-time` and `mcp-server-git` (on a repository made here), and
tests/mcp/servers/edge.py (FastMCP) for the edge cases: slow start, exit at start, crash in
the middle of a call, a huge result, an invalid schema, a tool changed after it was granted,
tools/list_changed, a child process left behind, streamable HTTP.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import psutil
import pytest

from kernel.mcp.fingerprint import check_grant, spec_fingerprint
from kernel.mcp.manager import Backoff, ServerState, ServerStatus
from kernel.tools.spec import ErrorCode
from tests.mcp.conftest import base_env, edge, free_port, gone, harness, http_server

WAIT = 60.0
"""A safety bound so a broken build fails instead of hanging; never a speed assertion."""


def ready(state: ServerState) -> bool:
    return state.status is ServerStatus.READY


def failed(state: ServerState) -> bool:
    return state.status is ServerStatus.FAILED


def group_members(pgid: int) -> list[int]:
    members = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if os.getpgid(proc.pid) == pgid and not gone(proc.pid):
                members.append(proc.pid)
        except (ProcessLookupError, psutil.Error):
            continue
    return members


def _git_repo(path: Path) -> Path:
    path.mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "T", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "T", "GIT_COMMITTER_EMAIL": "t@example.com"}
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True, env=env)
    (path / "notes.txt").write_text("first\n")
    subprocess.run(["git", "-C", str(path), "add", "notes.txt"], check=True, env=env)
    subprocess.run(["git", "-C", str(path), "commit", "-q", "-m", "Add the notes"], check=True,
                   env=env)
    (path / "notes.txt").write_text("first\nsecond\n")
    return path


def test_pypi_time_and_git_servers(tmp_path: Path) -> None:
    repo = _git_repo(tmp_path / "repo")

    async def main() -> None:
        servers = {"time": {"command": "mcp-server-time"},
                   "git": {"command": "mcp-server-git", "args": ["--repository", str(repo)]}}
        async with harness(tmp_path, servers) as h:
            states = {s.name: s for s in await h.manager.wait_settled(WAIT)}
            assert states["time"].summary == "ready with 2 tools"
            assert ready(states["git"]) and "mcp__git__git_status" in states["git"].tools
            assert {"mcp__time__get_current_time", "mcp__time__convert_time",
                    "mcp__git__git_log", "mcp__git__git_diff_unstaged"} <= set(h.registry.names())
            assert h.registry.get("mcp__git__git_status").origin == "mcp:git"

            now = await h.call("mcp__time__get_current_time", {"timezone": "UTC"})
            assert not now.is_error, now.content
            assert json.loads(now.text)["timezone"] == "UTC"

            status = await h.call("mcp__git__git_status", {"repo_path": str(repo)})
            assert not status.is_error, status.content
            assert "notes.txt" in status.text and "modified" in status.text
            diff = await h.call("mcp__git__git_diff_unstaged", {"repo_path": str(repo)})
            assert "+second" in diff.text
            log = await h.call("mcp__git__git_log", {"repo_path": str(repo)})
            assert "Add the notes" in log.text

            bad = await h.call("mcp__time__get_current_time", {"timezone": "Mars/Olympus"})
            assert bad.is_error and bad.error_code is ErrorCode.EXECUTION_ERROR
            assert "Mars/Olympus" in bad.text
            invalid = await h.call("mcp__git__git_status", {"repo": str(repo)})
            assert invalid.error_code is ErrorCode.INVALID_ARGUMENTS
            assert "repo_path" in invalid.text

    asyncio.run(main())


def test_slow_and_broken_servers_delay_nobody(tmp_path: Path) -> None:
    async def main() -> None:
        servers = {
            "edge": edge(),
            "slow": edge("--slow-start", "60", startup_timeout_s=120),
            "dead": edge("--die-at-start"),
            "missing": {"command": "/nonexistent/mcp-server"},
            "invalid": edge("--invalid-schema"),
        }
        async with harness(tmp_path, servers, backoff=Backoff(60.0, 60.0, 5)) as h:
            assert {s.status for s in h.manager.states()} == {ServerStatus.STARTING}

            await h.manager.wait_for("edge", ready, WAIT)
            assert h.manager.state("slow").status is ServerStatus.STARTING
            echo = await h.call("mcp__edge__echo", {"text": "while slow starts"})
            assert echo.text == "while slow starts"

            dead = await h.manager.wait_for("dead", failed, WAIT)
            assert dead.error == "the server process exited with code 3 before it was ready"
            assert dead.stderr_tail[-1] == "edge: fatal: cannot open the database"
            assert "retrying in 60 s" in dead.summary

            missing = await h.manager.wait_for("missing", failed, WAIT)
            assert "No such file" in missing.error
            shown = json.loads(json.dumps(missing.to_dict()))
            assert shown["status"] == "failed" and shown["summary"] == missing.summary

            invalid = await h.manager.wait_for("invalid", ready, WAIT)
            assert invalid.summary == "ready with 20 tools (1 skipped)"
            (skipped,) = invalid.skipped
            assert skipped.startswith("broken: ") and "meta-schema" in skipped
            assert "$.properties.x.type" in skipped
            assert "mcp__invalid__broken" not in h.registry
            assert "mcp__invalid__echo" in h.registry

            unknown = await h.call("mcp__dead__echo", {"text": "x"})
            assert unknown.error_code is ErrorCode.UNKNOWN_TOOL
            assert h.manager.state("slow").status is ServerStatus.STARTING

    asyncio.run(main())


def test_a_server_that_does_not_answer_in_time_fails(tmp_path: Path) -> None:
    async def main() -> None:
        async with harness(tmp_path, {"slow": edge("--slow-start", "60", startup_timeout_s=1)},
                           backoff=Backoff(60.0, 60.0, 5)) as h:
            slow = await h.manager.wait_for("slow", failed, WAIT)
            assert slow.error == ("no answer within 1 s of starting (a first `npx -y` or `uvx` "
                                  "start downloads the package: raise \"startup_timeout_s\" in "
                                  "its mcpServers entry if it needs longer)")
            assert slow.retry_in_s == 60.0 and slow.failures == 1

    asyncio.run(main())


def test_crash_mid_call_is_an_error_result_and_the_server_restarts(tmp_path: Path) -> None:
    async def main() -> None:
        async with harness(tmp_path, {"edge": edge(tool_timeout_s=5)},
                           backoff=Backoff(60.0, 60.0, 5)) as h:
            first = await h.manager.wait_for("edge", ready, WAIT)
            live = h.manager.connection("edge")
            assert live is not None and live.session is not None and live.pid == first.pid
            crash = await h.call("mcp__edge__crash")
            assert crash.is_error and crash.error_code is ErrorCode.EXECUTION_ERROR
            assert "stopped while running 'crash'" in crash.text
            assert "it was running when the call started and died during it" in crash.text
            assert "exited with code 7" in crash.text

            state = await h.manager.wait_for("edge", failed, WAIT)
            assert "exited with code 7" in state.error
            assert "edge: crashing on purpose" in state.stderr_tail
            assert state.retry_in_s == 60.0
            assert live.session is None and not live.ready

            # Its tools stay registered: calls say why they cannot run instead of
            # "unknown tool"; a restart later than the call's timeout is not waited for.
            during = await h.call("mcp__edge__echo", {"text": "x"})
            assert during.error_code is ErrorCode.EXECUTION_ERROR
            assert "is not available" in during.text and "retrying in 60 s" in during.text
            assert "it was already gone before this call" in during.text
            assert "comes after this call's 5 s timeout" in during.text
            assert during.duration_ms < 4000

            await h.manager.restart("edge")
            again = await h.manager.wait_for("edge", ready, WAIT)
            assert again.pid != first.pid and gone(first.pid)
            echo = await h.call("mcp__edge__echo", {"text": "back"})
            assert not echo.is_error and echo.text == "back"

    asyncio.run(main())


def test_exited_server_is_restarted_with_backoff(tmp_path: Path) -> None:
    async def main() -> None:
        async with harness(tmp_path, {"edge": edge()}, backoff=Backoff(0.2, 1.0, 5)) as h:
            first = await h.manager.wait_for("edge", ready, WAIT)
            os.kill(first.pid, 9)
            again = await h.manager.wait_for("edge", lambda s: ready(s) and s.pid != first.pid,
                                             WAIT)
            failures = [s for s in h.seen("edge") if failed(s)]
            assert failures and "killed by signal 9" in failures[0].error
            assert failures[0].retry_in_s == 0.2
            echo = await h.call("mcp__edge__echo", {"text": "restarted"})
            assert echo.text == "restarted" and again.failures == 1

    asyncio.run(main())


def test_gives_up_after_repeated_failures_until_restarted(tmp_path: Path) -> None:
    async def main() -> None:
        servers = {"missing": {"command": "/nonexistent/mcp-server"}}
        async with harness(tmp_path, servers, backoff=Backoff(0.01, 0.02, 3)) as h:
            state = await h.manager.wait_for(
                "missing", lambda s: failed(s) and s.retry_in_s is None, WAIT)
            assert state.failures == 3
            assert "gave up after 3 failures in a row; restart it from settings" in state.error
            delays = [s.retry_in_s for s in h.seen("missing") if failed(s)]
            assert delays == [0.01, 0.02, None]
            await h.manager.restart("missing")
            again = await h.manager.wait_for(
                "missing", lambda s: failed(s) and s.retry_in_s is None, WAIT)
            assert again.failures == 3

    asyncio.run(main())


def test_results_map_to_tool_result_content_and_huge_ones_are_externalized(
        tmp_path: Path) -> None:
    chars = 200_000
    expected = ("界" * 63 + "\n") * (chars // 64) + "界" * (chars % 64)

    async def main() -> None:
        async with harness(tmp_path, {"edge": edge()}) as h:
            await h.manager.wait_for("edge", ready, WAIT)
            picture = await h.call("mcp__edge__picture")
            assert [b["type"] for b in picture.content] == ["text", "image"]
            assert picture.content[1]["source"]["media_type"] == "image/png"
            document = await h.call("mcp__edge__document")
            assert document.content == "[resource file:///notes.txt (text/plain)]\nthe notes"
            work = await h.call("mcp__edge__work", {"steps": 3})
            assert work.text == "worked 3 steps"
            assert [p.last_line for p in h.progress] == [
                "step 1 (1/3)", "step 2 (2/3)", "step 3 (3/3)"]
            assert {p.call_id for p in h.progress} == {work.call_id}
            noise = await h.call("mcp__edge__noise")
            assert not noise.is_error and noise.text == "after the noise"
            assert (await h.call("mcp__edge__echo", {"text": "still fine"})).text == "still fine"
            fail = await h.call("mcp__edge__fail", {"reason": "nope"})
            assert fail.is_error and fail.error_code is ErrorCode.EXECUTION_ERROR
            assert fail.text.startswith("The MCP server 'edge' reported an error:")

            huge = await h.call("mcp__edge__huge", {"chars": chars})
            assert not huge.is_error and huge.externalized_path is not None
            assert Path(huge.externalized_path).read_text(encoding="utf-8") == expected
            assert len(huge.text) <= 31_000 and "omitted; full output at" in huge.text
            assert huge.output_bytes == len(expected.encode())

    asyncio.run(main())


def test_list_changed_reregisters_only_that_servers_tools(tmp_path: Path) -> None:
    async def main() -> None:
        async with harness(tmp_path, {"edge": edge(), "time": {"command": "mcp-server-time"}},
                           ) as h:
            await h.manager.wait_settled(WAIT)
            version = h.registry.version
            peek = h.registry.get("mcp__edge__peek")
            clock = h.registry.get("mcp__time__get_current_time")
            assert (await h.call("mcp__edge__grow")).text == "grown"
            state = await h.manager.wait_for("edge", lambda s: "mcp__edge__extra" in s.tools,
                                             WAIT)
            assert len(state.tools) == 21
            assert h.registry.version > version
            assert h.registry.get("mcp__edge__peek") is peek
            assert h.registry.get("mcp__time__get_current_time") is clock
            assert any(s["name"] == "mcp__edge__extra" for s in h.registry.schemas())
            assert (await h.call("mcp__edge__extra", {"n": 21})).text == "42"

    asyncio.run(main())


def test_a_tool_changed_after_it_was_granted_suspends_the_grant(tmp_path: Path) -> None:
    async def main() -> None:
        async with harness(tmp_path, {"edge": edge()}) as h:
            await h.manager.wait_for("edge", ready, WAIT)
            echo = h.registry.get("mcp__edge__echo")
            grant = {"mcp__edge__echo": spec_fingerprint(echo)}
            assert check_grant(echo, grant).valid

            assert (await h.call("mcp__edge__swap")).text == "swapped"
            await h.manager.wait_for(
                "edge", lambda s: h.registry.get("mcp__edge__echo") is not echo, WAIT)
            swapped = h.registry.get("mcp__edge__echo")
            assert "target" in swapped.input_schema["properties"]
            verdict = check_grant(swapped, grant)
            assert not verdict.valid and "changed since it was granted" in verdict.reason

    asyncio.run(main())


def test_environment_is_built_and_the_whole_process_group_ends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REINS_TEST_CANARY_SECRET", "canary-7f3a")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-canary")

    async def main() -> tuple[int, int]:
        servers = {"edge": edge(env={"EXPLICIT_SETTING": "from-config"})}
        async with harness(tmp_path, servers) as h:
            state = await h.manager.wait_for("edge", ready, WAIT)
            env = json.loads((await h.call("mcp__edge__environment")).text)
            env.pop("LC_CTYPE", None)  # Python's own locale coercion in the child
            assert env == {**base_env(tmp_path), "EXPLICIT_SETTING": "from-config"}
            child = int((await h.call("mcp__edge__spawn")).text)
            assert os.getpgid(child) == state.pid
            assert set(group_members(state.pid)) == {state.pid, child}
            return state.pid, child

    pid, child = asyncio.run(main())
    assert gone(pid) and gone(child)
    assert group_members(pid) == []


def test_disable_enable_restart(tmp_path: Path) -> None:
    async def main() -> None:
        async with harness(tmp_path, {"edge": edge(), "off": edge(disabled=True)}) as h:
            first = await h.manager.wait_for("edge", ready, WAIT)
            assert h.manager.state("off").status is ServerStatus.DISABLED
            assert not any(n.startswith("mcp__off__") for n in h.registry.names())

            await h.manager.disable("edge")
            assert h.manager.state("edge").summary == "disabled"
            assert not any(n.startswith("mcp__edge__") for n in h.registry.names())
            assert gone(first.pid)

            await h.manager.enable("edge")
            second = await h.manager.wait_for("edge", ready, WAIT)
            assert second.summary == "ready with 20 tools" and second.pid != first.pid

            await h.manager.restart("edge")
            third = await h.manager.wait_for("edge", ready, WAIT)
            assert third.pid != second.pid and gone(second.pid)
            assert (await h.call("mcp__edge__echo", {"text": "ok"})).text == "ok"

    asyncio.run(main())


def test_name_collisions_between_servers_name_both_origins(tmp_path: Path) -> None:
    async def main() -> None:
        async with harness(tmp_path, {"a.b": edge(), "a_b": edge()}) as h:
            states = {s.name: s for s in await h.manager.wait_settled(WAIT)}
            owner, other = sorted(states.values(), key=lambda s: -len(s.tools))
            assert len(owner.tools) == 20 and other.tools == ()
            assert len(other.skipped) == 20
            assert "mcp:a.b tool 'echo'" in "".join(other.skipped)
            assert "mcp:a_b tool 'echo'" in "".join(other.skipped)
            assert h.registry.get("mcp__a_b__echo").origin == f"mcp:{owner.name}"

    asyncio.run(main())


def test_streamable_http_server(tmp_path: Path) -> None:
    port = free_port()
    server = http_server(port)
    try:

        async def main() -> None:
            servers = {"web": {"url": f"http://127.0.0.1:{port}/mcp",
                               "headers": {"X-Test": "1"}}}
            async with harness(tmp_path, servers) as h:
                state = await h.manager.wait_for("web", ready, WAIT)
                assert state.target == f"http://127.0.0.1:{port}/mcp"
                assert (await h.call("mcp__web__echo", {"text": "over http"})).text == (
                    "over http")
                picture = await h.call("mcp__web__picture")
                assert picture.content[1]["type"] == "image"

        asyncio.run(main())
    finally:
        server.terminate()
        server.wait(10)


def test_new_settings_restart_only_what_changed(tmp_path: Path) -> None:
    from kernel.mcp.config import parse_mcp_servers

    async def main() -> None:
        async with harness(tmp_path, {"a": edge(), "b": edge()}) as h:
            await h.manager.wait_settled(WAIT)
            a, b = h.manager.state("a"), h.manager.state("b")
            await h.manager.apply(parse_mcp_servers({
                "a": edge(), "b": edge(env={"CHANGED": "1"}), "c": {"command": "/nonexistent"}}))
            await h.manager.wait_for("b", lambda s: ready(s) and s.pid != b.pid, WAIT)
            await h.manager.wait_for("c", failed, WAIT)
            assert h.manager.state("a").pid == a.pid
            assert gone(b.pid)
            await h.manager.apply(parse_mcp_servers({"b": edge(env={"CHANGED": "1"})}))
            assert [s.name for s in h.manager.states()] == ["b"]
            assert gone(a.pid)
            assert not any(n.startswith(("mcp__a__", "mcp__c__")) for n in h.registry.names())
            assert (await h.call("mcp__b__echo", {"text": "still"})).text == "still"

    asyncio.run(main())


def test_an_http_server_that_goes_away_while_idle_is_noticed_and_reconnected(
        tmp_path: Path) -> None:
    """No call needs to fail first: the idle connection is pinged."""
    port = free_port()
    server = http_server(port)
    try:
        async def main() -> None:
            servers = {"web": {"url": f"http://127.0.0.1:{port}/mcp", "tool_timeout_s": 0.5}}
            async with harness(tmp_path, servers, ping_interval_s=0.3,
                               backoff=Backoff(0.2, 1.0, 100)) as h:
                await h.manager.wait_for("web", ready, WAIT)
                await asyncio.sleep(1.0)  # idle, several pings answered
                assert ready(h.manager.state("web"))
                server.kill()
                server.wait(10)
                down = await h.manager.wait_for("web", failed, WAIT)
                assert down.error.startswith(f"the server at http://127.0.0.1:{port}/mcp"), down
                during = await h.call("mcp__web__echo", {"text": "lost"})
                assert during.is_error and "is not available" in during.text
                assert "already gone before this call" in during.text
                again = http_server(port)
                try:
                    await h.manager.wait_for("web", ready, WAIT)
                    assert (await h.call("mcp__web__echo", {"text": "back"})).text == "back"
                finally:
                    again.terminate()
                    again.wait(10)

        asyncio.run(main())
    finally:
        if server.poll() is None:
            server.terminate()
            server.wait(10)
