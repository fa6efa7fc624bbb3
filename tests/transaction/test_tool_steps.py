"""The file tools and run_command change the workspace as checkpoint steps: one judge, one
store, every step undoable (real files, real SQLite, real bubblewrap and overlay)."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from kernel.paths import AppPaths
from kernel.sandbox.detect import detect_sandbox
from kernel.sandbox.executor import CommandExecutor
from kernel.tools.builtin.command import make_run_command
from kernel.tools.builtin.files import edit_file, write_file
from kernel.tools.externalize import OutputStore
from kernel.tools.pathpolicy import PathPolicy
from kernel.tools.spec import Review, ToolContext, ToolResult
from kernel.transaction.checkpoints import Checkpoints


class Reviewer:
    """Answers every review with `keep` and remembers what it was shown."""

    def __init__(self, keep: bool) -> None:
        self.keep = keep
        self.shown: list[Review] = []

    async def __call__(self, review: Review) -> bool:
        self.shown.append(review)
        return self.keep


def _context(tmp_path: Path, call_id: str, checkpoints: Checkpoints,
             review: Reviewer | None = None) -> ToolContext:
    ws = tmp_path / "ws"
    paths = AppPaths(data=tmp_path / "data", config=tmp_path / "config")
    return ToolContext(session_id="s", call_id=call_id, workspace=ws,
                       path_policy=PathPolicy(ws, app_paths=paths),
                       outputs=OutputStore(paths.tool_results_dir("s")),
                       review=review or Reviewer(False), checkpoints=checkpoints)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("one\ntwo\n")
    return ws


def test_write_and_edit_are_steps_that_undo(tmp_path: Path, workspace: Path) -> None:
    with Checkpoints(tmp_path / "cp") as checkpoints:
        wrote = write_file.handler(ctx=_context(tmp_path, "w1", checkpoints),
                                   path="deep/new.txt", content="a\nb\n")
        edited = edit_file.handler(ctx=_context(tmp_path, "e1", checkpoints),
                                   path="notes.txt", old_string="two", new_string="2")
        assert isinstance(wrote, ToolResult) and isinstance(edited, ToolResult)
        assert wrote.changes is not None and edited.changes is not None
        assert [(c.path, c.kind, c.added) for c in wrote.changes] == [
            ("deep/new.txt", "created", 2)]
        assert [(c.path, c.kind, c.added, c.removed) for c in edited.changes] == [
            ("notes.txt", "modified", 1, 1)]
        assert [s.call_id for s in checkpoints.steps("s")] == ["w1", "e1"]
        assert checkpoints.undo("s", "e1").ok
        assert (workspace / "notes.txt").read_text() == "one\ntwo\n"
        assert checkpoints.undo("s", "w1").ok
        assert not (workspace / "deep").exists()


def test_an_undo_stops_when_the_user_changed_the_file_since(tmp_path: Path,
                                                             workspace: Path) -> None:
    with Checkpoints(tmp_path / "cp") as checkpoints:
        write_file.handler(ctx=_context(tmp_path, "w1", checkpoints), path="notes.txt",
                           content="model\n")
        (workspace / "notes.txt").write_text("the user's\n")
        result = checkpoints.undo("s", "w1")
        assert not result.ok
        assert [b.path for b in result.blocked] == ["notes.txt"]
        assert (workspace / "notes.txt").read_text() == "the user's\n"


needs_bwrap = pytest.mark.skipif(not detect_sandbox().available, reason="no bubblewrap")


@needs_bwrap
@pytest.mark.parametrize("keep", [False, True])
def test_a_command_is_a_transaction(tmp_path: Path, workspace: Path, keep: bool) -> None:
    """Ordinary changes are applied as a step; a hook is held, shown as a diff, and in the
    workspace only when kept; undo puts everything back."""
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    paths = AppPaths(data=tmp_path / "data", config=tmp_path / "config")
    executor = CommandExecutor(paths, transactions=True, ahead=False)
    reviewer = Reviewer(keep)
    spec = make_run_command(executor)
    try:
        with Checkpoints(tmp_path / "cp") as checkpoints:
            ctx = _context(tmp_path, "c1", checkpoints, reviewer)
            result = asyncio.run(spec.handler(
                command="echo three >> notes.txt && echo x > .git/hooks/pre-commit "
                        "&& test ! -e /tmp/.reins-transaction && sleep 0.2",
                ctx=ctx))
            assert isinstance(result, ToolResult) and not result.is_error, result.content
            assert (workspace / "notes.txt").read_text() == "one\ntwo\nthree\n"
            [shown] = reviewer.shown
            assert shown.preview.splitlines()[:2] == [
                "Every changed path (1: 1 held):",
                "HELD created  file        2 B  .git/hooks/pre-commit  (held: git reads it "
                "as code or configuration)"]
            assert ("# .git/hooks/pre-commit: created — held because git reads it as code "
                    "or configuration") in shown.preview
            assert "+x" in reviewer.shown[0].preview
            assert (workspace / ".git/hooks/pre-commit").exists() == keep
            assert result.changes is not None
            assert (".git/hooks/pre-commit" in {c.path for c in result.changes}) == keep
            assert not list((paths.data / "transactions").iterdir())
            assert checkpoints.undo("s", "c1").ok
            assert (workspace / "notes.txt").read_text() == "one\ntwo\n"
            assert not (workspace / ".git/hooks/pre-commit").exists()
    finally:
        executor.shutdown()
