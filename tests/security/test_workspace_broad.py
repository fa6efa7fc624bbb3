"""The home folder, `/`, a folder holding the home folder and system folders cannot be a
session's workspace without an explicit confirmation that says what it exposes: the pure
rule as a table, `reins exec` (exit 2, the flag named, nothing created, no model request),
the kernel worker's NewSession over the real pipe, and the issue's scenario (home as the
workspace in read-only mode: secrets still ask, and with --approve deny never leak)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from kernel import protocol as p
from kernel.fakemodel import FakeAnthropicServer
from kernel.fakemodel.script import ToolUse, reply
from kernel.paths import AppPaths
from kernel.shared.workspace import broad_reason, broad_workspace_reason

REINS = Path(sys.executable).with_name("reins")
HOME = PurePosixPath("/home/alice")
ROOT_HOME = PurePosixPath("/root")

BROAD: list[tuple[str, PurePosixPath, str]] = [
    ("/home/alice", HOME, "home folder"),
    ("/root", ROOT_HOME, "home folder"),
    ("/", HOME, "root of the file system"),
    ("/", ROOT_HOME, "root of the file system"),
    ("/home", HOME, "holds your home folder"),
    ("/Users", PurePosixPath("/Users/alice"), "holds your home folder"),
    ("/data", PurePosixPath("/data/users/alice"), "holds your home folder"),
    ("/data/users", PurePosixPath("/data/users/alice"), "holds your home folder"),
    ("/etc", HOME, "system folder"),
    ("/etc/nginx", HOME, "system folder"),
    ("/proc", HOME, "system folder"),
    ("/proc/self/root", HOME, "system folder"),
    ("/sys/fs/cgroup", HOME, "system folder"),
    ("/dev", HOME, "system folder"),
    ("/dev/shm", HOME, "system folder"),
    ("/boot", HOME, "system folder"),
    ("/boot/efi", HOME, "system folder"),
    ("/bin", HOME, "system folder"),
    ("/sbin", HOME, "system folder"),
    ("/lib", HOME, "system folder"),
    ("/lib64", HOME, "system folder"),
    ("/run", HOME, "system folder"),
    ("/run/user/1000", HOME, "system folder"),
    ("/usr", HOME, "system or shared folder"),
    ("/usr/lib", HOME, "system or shared folder"),
    ("/usr/local", HOME, "system or shared folder"),
    ("/var", HOME, "system or shared folder"),
    ("/var/lib", HOME, "system or shared folder"),
    ("/var/log", HOME, "system or shared folder"),
    ("/opt", HOME, "system or shared folder"),
    ("/srv", HOME, "system or shared folder"),
    ("/mnt", HOME, "system or shared folder"),
    ("/media", HOME, "system or shared folder"),
    ("/tmp", HOME, "system or shared folder"),
    ("/var/tmp", HOME, "system or shared folder"),
    ("/root", HOME, "system or shared folder"),
    ("/home", ROOT_HOME, "system or shared folder"),
    ("/snap", HOME, "system or shared folder"),
    ("/nix/store", HOME, "system or shared folder"),
]

PROJECTS: list[tuple[str, PurePosixPath]] = [
    ("/home/alice/code/app", HOME),
    ("/home/alice/.config/nvim", HOME),
    ("/home/alicebob", HOME),
    ("/home/bob/project", HOME),
    ("/root/project", ROOT_HOME),
    ("/opt/app", HOME),
    ("/srv/site", HOME),
    ("/usr/local/src/tool", HOME),
    ("/var/www/site", HOME),
    ("/tmp/build", HOME),
    ("/mnt/data/repo", HOME),
    ("/workspace", HOME),
    ("/etcetera", HOME),
    ("/devel/app", HOME),
    ("/data/users/bob", PurePosixPath("/data/users/alice")),
]


@pytest.mark.parametrize(("workspace", "home", "words"), BROAD)
def test_broad_workspaces_are_named_with_what_they_expose(workspace: str, home: PurePosixPath,
                                                          words: str) -> None:
    reason = broad_reason(PurePosixPath(workspace), home)
    assert reason is not None and reason.startswith(workspace) and words in reason, reason
    assert "reaches" in reason


@pytest.mark.parametrize(("workspace", "home"), PROJECTS)
def test_project_folders_are_not_broad(workspace: str, home: PurePosixPath) -> None:
    assert broad_reason(PurePosixPath(workspace), home) is None


def test_spellings_and_links_are_resolved(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "code").mkdir(parents=True)
    (tmp_path / "to-home").symlink_to(home)
    (home / "code" / "up").symlink_to(home)
    (tmp_path / "to-root").symlink_to("/")
    for spelling in (home, f"{home}/", f"{home}/./", f"{home}/code/..", tmp_path / "to-home",
                     home / "code" / "up", tmp_path / "to-home" / "code" / ".."):
        assert broad_workspace_reason(spelling, home=home) is not None, spelling
    assert broad_workspace_reason(tmp_path / "to-root", home=home) is not None
    assert broad_workspace_reason(tmp_path, home=home) is not None, "a folder above home"
    assert broad_workspace_reason(home / "code", home=home) is None
    assert broad_workspace_reason(tmp_path / "to-home" / "code", home=tmp_path / "to-home") \
        is None


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder with the secrets the issue found sent to the model."""
    folder = (tmp_path / "home").resolve()
    for rel, text in {".ssh/id_rsa": "KEY-CANARY-51", ".aws/credentials": "AWS-CANARY-51",
                      ".local/share/keyrings/login.keyring": "RING-CANARY-51",
                      "project/readme.md": "hello"}.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text + "\n")
    monkeypatch.setenv("HOME", str(folder))
    return folder


def _exec(server: FakeAnthropicServer, *args: str, cwd: Path | None = None
          ) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="test-key")
    return subprocess.run([str(REINS), "exec", "--json", *args, "look"], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL, check=False)


@pytest.mark.parametrize("spelling", ["~", "~/", "HOME", "HOME/project/..", "LINK", "/", "/etc",
                                      "/usr", "CWD"])
def test_reins_exec_refuses_a_broad_workspace_without_the_flag(
        home: Path, reins_home: AppPaths, tmp_path: Path, spelling: str) -> None:
    (tmp_path / "link").symlink_to(home)
    workspace = spelling.replace("HOME", str(home)).replace("LINK", str(tmp_path / "link"))
    args = [] if spelling == "CWD" else ["--workspace", workspace]
    with FakeAnthropicServer([reply("hi")], api_key="test-key") as server:
        done = _exec(server, *args, cwd=home)
        assert server.requests == []
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "--allow-broad-workspace" in done.stderr and "reaches" in done.stderr
    assert done.stdout == ""
    assert _session_count(reins_home) == 0


def _session_count(paths: AppPaths) -> int:
    """Sessions in the store (0 when the store was never created)."""
    import sqlite3

    if not paths.database.exists():
        return 0
    with sqlite3.connect(paths.database) as conn:
        return int(conn.execute("select count(*) from sessions").fetchone()[0])


def test_a_project_folder_inside_home_needs_no_flag(home: Path, reins_home: AppPaths) -> None:
    with FakeAnthropicServer([reply("hi")], api_key="test-key") as server:
        done = _exec(server, "--workspace", str(home / "project"))
    assert done.returncode == 0, done.stderr
    assert _session_count(reins_home) == 1


def test_home_as_workspace_with_the_flag_still_asks_for_every_secret(
        home: Path, reins_home: AppPaths) -> None:
    calls = [ToolUse("read_file", {"path": rel}, id=f"r{i}") for i, rel in enumerate(
        [".ssh/id_rsa", "~/.aws/credentials", ".local/share/keyrings/login.keyring"])]
    calls.append(ToolUse("grep", {"pattern": r"CANARY-\d+"}, id="g"))
    with FakeAnthropicServer([reply("reading", *calls), reply("done")],
                             api_key="test-key") as server:
        done = _exec(server, "--workspace", "~", "--allow-broad-workspace", "--mode",
                     "read-only", "--approve", "deny")
        sent = json.dumps([r.body for r in server.requests])
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    asked = [e["call_id"] for e in events if e["type"] == "approval_request"]
    assert asked == ["r0", "r1", "r2"]
    assert "CANARY-51" not in sent and "CANARY-51" not in done.stdout
    grep = json.dumps(server.requests[-1].body["messages"][-1])
    assert "secret location(s) not searched" in grep and ".ssh/" in grep


class Worker:
    """The real kernel worker process, spoken to over its pipe."""

    def __init__(self) -> None:
        from kernel.worker.service import start_worker

        self.process, self.conn = start_worker()
        self.received: list[p.Message] = []

    def send(self, message: p.Message) -> None:
        self.conn.send_bytes(p.encode(message))

    def wait_for(self, kind: type[p.Message], count: int = 1, timeout: float = 60) -> Any:
        deadline = time.monotonic() + timeout
        while len([m for m in self.received if isinstance(m, kind)]) < count:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {kind.__name__}; got {self.received}")
            if self.conn.poll(left):
                message = p.decode(self.conn.recv_bytes())
                if message is not None:
                    self.received.append(message)
        return [m for m in self.received if isinstance(m, kind)][count - 1]

    def close(self) -> None:
        self.send(p.Shutdown())
        self.process.join(10)
        if self.process.is_alive():
            self.process.kill()


@pytest.fixture
def worker(home: Path, reins_home: AppPaths) -> Iterator[Worker]:
    w = Worker()
    yield w
    w.close()


def test_the_kernel_refuses_a_broad_new_session_unless_confirmed(worker: Worker,
                                                                 home: Path) -> None:
    worker.send(p.NewSession(str(home), "read-only"))
    failed = worker.wait_for(p.CommandFailed)
    assert failed.command == "new_session"
    assert f"{home} is your home folder" in failed.message and "confirm" in failed.message
    worker.send(p.NewSession("/", "ask"))
    assert "root of the file system" in worker.wait_for(p.CommandFailed, 2).message
    worker.send(p.NewSession(str(home / "project"), "ask"))
    loaded = worker.wait_for(p.SessionLoaded)
    assert loaded.info.workspace == str(home / "project")
    worker.send(p.NewSession(str(home), "read-only", confirm_broad_workspace=True))
    confirmed = worker.wait_for(p.SessionLoaded, 2)
    assert confirmed.info.workspace == str(home)
    assert len([m for m in worker.received if isinstance(m, p.CommandFailed)]) == 2


def test_the_confirmation_field_defaults_to_false_and_round_trips() -> None:
    assert p.NewSession("/w").confirm_broad_workspace is False
    message = p.decode(p.encode(p.NewSession("/w", confirm_broad_workspace=True)))
    assert isinstance(message, p.NewSession) and message.confirm_broad_workspace is True
    old = p.decode(json.dumps({"v": p.PROTOCOL_VERSION, "kind": "new_session",
                               "workspace": "/w", "mode": "ask", "title": ""}))
    assert isinstance(old, p.NewSession) and old.confirm_broad_workspace is False
