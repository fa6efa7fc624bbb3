"""Break 4 of issue 28 (the window before the undo) and the class behind it: a command
makes a git repository whose config names a program (`core.fsmonitor`, `core.pager`), which
the user's prompt or IDE would run at its next git command there. Attacked through the
run_command tool with transactions on, as root and as nobody: while the command runs,
nothing of it is in the real workspace (a `git status` from outside sees nothing, and runs
nothing); after it, every layout git takes for a git directory (`git init`, `git init
--bare`, one made by hand, a HEAD that is a link, `objects`/`refs` that are links, a
`commondir` naming where they are, one finished over two commands) is held, not applied."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.security.conftest import Confined
from tests.security.txnkit import GIT, Outcome, run_txn

MARK = "$(cd .. && pwd)/pwned-{name}"
"""Where a payload leaves its mark: the folder above the workspace (the sandbox cannot
write it; the user's git outside can)."""
CONFIG = ("printf '[core]\\n\\tpager = touch {mark}; cat\\n"
          "\\tfsmonitor = \"touch {mark}; false\"\\n'")


def _config(name: str) -> str:
    return CONFIG.format(mark=MARK.format(name=name))


def _host_git(ws: Path, folder: str, *args: str) -> str:
    done = subprocess.run(["git", "-c", "safe.directory=*", "-C", str(ws / folder), *args],
                          capture_output=True, text=True, check=False, timeout=30)
    return done.stdout + done.stderr


def test_a_new_repository_is_invisible_while_the_command_runs_and_held_after(
        confined: Confined) -> None:
    command = (f"git init -q repo && git -C repo config core.fsmonitor "
               f"\"touch {MARK.format(name='fsmonitor')}; false\" && echo x > repo/f && "
               f"git -C repo config core.fsmonitor && echo MADE && sleep 4")
    bare = f"git init -q --bare bare && {_config('bare')} > bare/config && sleep 3"
    probe = {"at": 0, "after_s": 2.0,
             "command": "ls -a; echo PROBED; cd repo && git -c safe.directory=* status"}

    def inspect(folder: Path, outcomes: list[Outcome]) -> None:
        ws = folder / "workspace"
        assert not (ws / "repo").exists() and not (ws / "bare").exists()
        assert not list(folder.glob("pwned-*"))
        assert "fsmonitor" not in _host_git(ws, ".", "status", "--short")

    outcomes, report = run_txn(confined, [{"command": command}, {"command": bare}],
                               inspect=inspect, probe=probe)
    assert "MADE" in outcomes[0].content and "pwned-fsmonitor" in outcomes[0].content
    seen = report["probe"]["output"]
    listed = seen.split("PROBED")[0].split()
    assert "repo" not in listed and "a.txt" in listed, seen
    for made, config in zip(outcomes, ("repo/.git/config", "bare/config"), strict=True):
        assert made.held and "made a git repository" in made.shown(), made.content
        assert config in made.shown() and "pwned-" in made.shown(), made.shown()[:3000]
        assert not any(path.startswith(("repo", "bare")) for _kind, path in made.applied)


LAYOUTS: list[tuple[str, str]] = [
    ("b1", f"git init -q --bare b1 && {_config('b1')} > b1/config"),
    ("b2", "mkdir -p b2/objects b2/refs && echo 'ref: refs/heads/main' > b2/HEAD && "
           f"{_config('b2')} > b2/config"),
    ("b3", "mkdir -p b3/objects b3/refs && ln -s refs/heads/main b3/HEAD && "
           f"{_config('b3')} > b3/config"),
    ("b4", f"mkdir -p store/objects store/refs && {_config('b4')} > store/config && "
           "mkdir b4 && echo 'ref: refs/heads/main' > b4/HEAD && echo ../store > b4/commondir"),
    ("b5", "mkdir -p st/o st/r b5 && ln -s ../st/o b5/objects && ln -s ../st/r b5/refs && "
           f"echo 'ref: refs/heads/main' > b5/HEAD && {_config('b5')} > b5/config"),
]
PROOF = " && cd {name} && git -c safe.directory=* config core.pager && echo GIT-READS-IT"


def test_every_layout_git_takes_for_a_repository_is_held(confined: Confined) -> None:
    commands = [{"command": command + PROOF.format(name=name)} for name, command in LAYOUTS]
    commands += [  # finished over two commands: the HEAD first (ordinary), then the rest
        {"command": "mkdir b6 && echo 'ref: refs/heads/main' > b6/HEAD"},
        {"command": f"mkdir b6/objects b6/refs && {_config('b6')} > b6/config"
                    + PROOF.format(name="b6")},
    ]

    def inspect(folder: Path, outcomes: list[Outcome]) -> None:
        ws = folder / "workspace"
        for name in ("b1", "b2", "b3", "b4", "b5", "b6"):
            assert "pwned" not in _host_git(ws, name, "config", "core.pager"), name
        assert not (ws / "b6/config").exists()
        assert not list(folder.glob("pwned-*"))

    outcomes, _ = run_txn(confined, commands, inspect=inspect)
    *layouts, head_only, finished = outcomes
    for (name, _command), outcome in zip(LAYOUTS, layouts, strict=True):
        assert "GIT-READS-IT" in outcome.content, outcome.content  # git takes it for a repo
        assert outcome.held, (name, outcome.content)
        assert f"{name}/HEAD" in outcome.shown(), outcome.shown()
        assert not any(path.startswith(name) for _kind, path in outcome.applied), name
    assert not head_only.held and ("created", "b6/HEAD") in head_only.applied
    assert "GIT-READS-IT" in finished.content
    assert finished.held and "b6/config" in finished.shown()
    assert finished.applied == []


def _plain_workspace(folder: Path) -> None:
    (folder / "workspace/notes.txt").write_text("notes\n")


def test_a_workspace_made_a_repository_itself_is_held(confined: Confined) -> None:
    command = (f"echo 'ref: refs/heads/main' > HEAD && mkdir objects refs && "
               f"{_config('root')} > config && echo x > notes.txt" + PROOF.format(name="."))

    def inspect(folder: Path, outcomes: list[Outcome]) -> None:
        ws = folder / "workspace"
        assert sorted(p.name for p in ws.iterdir()) == ["notes.txt"]
        assert (ws / "notes.txt").read_text() == "notes\n"

    outcomes, _ = run_txn(confined, [{"command": command}], prepare=_plain_workspace,
                          inspect=inspect)
    [made] = outcomes
    assert "GIT-READS-IT" in made.content, made.content
    assert made.held and "config" in made.shown() and made.applied == []


def test_a_commit_in_the_existing_repository_is_not_held(confined: Confined) -> None:
    def inspect(folder: Path, outcomes: list[Outcome]) -> None:
        ws = folder / "workspace"
        assert "two" in _host_git(ws, ".", "log", "--oneline")
        assert _host_git(ws, ".", "status", "--short").split() == ["??", ".env", "??",
                                                                  ".husky/", "??",
                                                                  ".vscode/", "??", "sub/"]

    command = f"echo more >> a.txt && git add a.txt && {GIT} commit -qm two && git log --oneline"
    outcomes, _ = run_txn(confined, [{"command": command}], inspect=inspect)
    [commit] = outcomes
    assert not commit.held, commit.shown()
    applied = {path for _kind, path in commit.applied}
    assert {"a.txt", ".git/index", ".git/refs/heads/main"} <= applied, applied
    assert any(path.startswith(".git/objects/") for path in applied)
