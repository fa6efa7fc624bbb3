"""The view in a real sandbox: the tool folders of PATH and the folders of the settings are
shown read-only with their secrets hidden, and a workspace under a folder that is absent
(/var/tmp) is shown alone. Real bubblewrap (the unprivileged runs are in
tests/security/test_sandbox_view.py)."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernel.paths import AppPaths
from kernel.sandbox.detect import SandboxStatus
from kernel.sandbox.executor import CommandExecutor
from kernel.sandbox.settings import ExecSettings
from kernel.tools.externalize import OutputStore
from tests.sandbox.sandbox_helpers import make_runner

CANARY = "CANARY-VIEW-TOOL"


def test_tool_folders_and_settings_folders_are_shown_without_their_secrets(
    tmp_path: Path, reins_home: AppPaths, outputs: OutputStore, workspace: Path,
    sandbox_status: SandboxStatus, monkeypatch: pytest.MonkeyPatch,
) -> None:
    tool = tmp_path / "tools" / "node-v20"
    (tool / "bin").mkdir(parents=True)
    (tool / "lib").mkdir()
    (tool / "lib" / "runtime.js").write_text("runtime-visible")
    (tool / "bin" / "hello").write_text("#!/bin/sh\necho hello-from-tool\n")
    (tool / "bin" / "hello").chmod(0o755)
    (tool / ".env").write_text(CANARY)
    (tool / ".aws").mkdir()
    (tool / ".aws" / "credentials").write_text(CANARY)
    data = tmp_path / "datasets"
    data.mkdir()
    (data / "table.csv").write_text("data-visible")
    (data / ".netrc").write_text(CANARY)
    beside = tmp_path / "tools" / "other"
    beside.mkdir()
    (beside / "file").write_text(CANARY)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    executor = CommandExecutor(reins_home, ExecSettings(
        grace_s=0.5, extra_path=(str(tool / "bin"),), read_only_paths=(str(data),)))
    try:
        run = make_runner(executor, workspace, outputs)
        _, text = run(f"hello; cat {tool}/lib/runtime.js {data}/table.csv; "
                      f"cat {tool}/.env {tool}/.aws/credentials {data}/.netrc 2>&1; "
                      f"grep -r CANARY {tmp_path / 'tools'} {data}; "
                      f"touch {tool}/new {data}/new 2>&1")
    finally:
        executor.shutdown()
    assert "hello-from-tool" in text and "runtime-visible" in text and "data-visible" in text
    assert CANARY not in text, text
    assert text.count("Read-only file system") == 2, text


@pytest.fixture
def var_tmp_workspace() -> Iterator[Path]:
    base = Path("/var/tmp") / f"reins-view-{uuid.uuid4().hex[:8]}"
    (base / "ws").mkdir(parents=True)
    (base / "ws" / "mine.txt").write_text("mine-visible")
    (base / "neighbour").mkdir()
    (base / "neighbour" / "theirs.txt").write_text(CANARY)
    try:
        yield base / "ws"
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_a_workspace_under_an_absent_folder_is_shown_alone(
    run_cmd, var_tmp_workspace: Path,
) -> None:
    base = var_tmp_workspace.parent
    _, text = run_cmd(f"cat mine.txt; echo; echo var: $(ls -A /var); "
                      f"echo var-tmp: $(ls -A /var/tmp); echo base: $(ls -A {base}); "
                      f"cat {base}/neighbour/theirs.txt 2>&1; touch made && echo made-ok",
                      workspace=var_tmp_workspace)
    assert "mine-visible" in text and "made-ok" in text and CANARY not in text
    lines = dict(line.split(":", 1) for line in text.splitlines() if ":" in line
                 and line.split(":", 1)[0] in ("var", "var-tmp", "base"))
    # /var holds the workspace's path (and a file a link in /etc names, if any: /var/lib)
    assert set(lines["var"].split()) <= {"tmp", "lib"}, text
    assert lines["var-tmp"].split() == [base.name] and lines["base"].split() == ["ws"], text
    assert (var_tmp_workspace / "made").exists()


def test_a_folder_the_settings_show_hides_its_secrets_at_any_depth(
    tmp_path: Path, reins_home: AppPaths, outputs: OutputStore, workspace: Path,
    sandbox_status: SandboxStatus,
) -> None:
    """`exec.read_only_paths` showing a folder of projects is no route to a project's
    `.env` or `.ssh/` deep inside it, nor to one made after the first command (the folder's
    index follows it with inotify); the projects' other files are read."""
    projects = tmp_path / "srv" / "projects"
    app = projects / "team" / "app"
    (app / ".ssh").mkdir(parents=True)
    (app / "README").write_text("readme-visible")
    (app / ".env").write_text(CANARY)
    (app / ".ssh" / "id_ed25519").write_text(CANARY)
    executor = CommandExecutor(reins_home, ExecSettings(
        grace_s=0.5, read_only_paths=(str(projects),)))
    try:
        run = make_runner(executor, workspace, outputs)
        _, first = run(f"cat {app}/README; cat {app}/.env {app}/.ssh/id_ed25519 2>&1; "
                       f"grep -r {CANARY} {projects} 2>&1")
        (app / "later").mkdir()
        (app / "later" / ".netrc").write_text(CANARY)
        _, second = run(f"cat {app}/later/.netrc 2>&1; grep -r {CANARY} {projects} 2>&1")
    finally:
        executor.shutdown()
    assert "readme-visible" in first
    assert CANARY not in first and CANARY not in second, (first, second)


def test_a_settings_folder_that_holds_the_home_is_not_shown_nor_walked(
    tmp_path: Path, reins_home: AppPaths, outputs: OutputStore, workspace: Path,
    sandbox_status: SandboxStatus,
) -> None:
    """`exec.read_only_paths` naming `/` or the home would show every socket and secret the
    view leaves out, and indexing it for its secrets would walk the machine before each
    command: it is refused (reins doctor says so), not walked. The command sees what it
    sees without the setting (of the home, only the login PATH's tool folders)."""
    home = Path.home().resolve()
    seen, walked = [], []
    for named in (("/", str(home), str(home.parent)), ()):
        executor = CommandExecutor(reins_home, ExecSettings(grace_s=0.5,
                                                            read_only_paths=named))
        try:
            run = make_runner(executor, workspace, outputs)
            _, text = run(f"ls -A /run /srv 2>/dev/null | wc -l; ls -A {home} 2>&1; echo done")
            seen.append(text)
            walked.append(dict(executor._guards._shown))
        finally:
            executor.shutdown()
    assert seen[0] == seen[1] and seen[0].split()[0] == "0", seen
    assert walked == [{}, {}]
