"""Programs that write files run in auto mode: what they write is judged after they ran, by
the transaction (a protected change is held: tests/security/test_transaction_boundary.py), not
guessed from their options. Through the real shell reader, the real path policy and
`decide()`."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel.policy.decide import Decision, Mode, Verdict
from tests.policy.worldkit import PolicyWorld


@pytest.fixture
def hooks_world(tmp_path: Path) -> PolicyWorld:
    world = PolicyWorld(tmp_path)
    (world.workspace / ".git" / "hooks").mkdir(parents=True)
    return world


def _decide(world: PolicyWorld, command: str) -> Decision:
    return world.decide_command(command, Mode.AUTO)


HARMLESS = [
    "git status", "git diff --stat", "git log --oneline", "git checkout main",
    "git apply --check x.diff", "git apply --cached x.diff", "git archive -o out.zip HEAD",
    "git diff --output=changes.diff", "git restore --staged a.txt", "git rm --cached a",
    "tar -tf a.tar", "tar -xOf a.tar", "tar -cf out.tar src", "unzip -l x.zip",
    "gzip -k notes.txt", "gunzip -c x.gz", "zip -r out.zip src", "sort -o out.txt x",
    "awk '{print $1}' data.txt", "gawk -i inplace 1 data.txt", "python3 -m venv .venv",
    "gcc -o build/app x.c", "pandoc -o out.html x.md", "sqlite3 db.sqlite 'select 1'",
    "xxd x", "convert a.png b.png",
    "sed -n '/x/p' notes.txt", "sed -i 's/a/b/' notes.txt",
    "ffmpeg -i in.mp4 -c copy out.mkv",
    "javac -d out X.java", "tsc -p .",
    "crontab -l",
    # the same programs writing protected paths: they run, and their change is held
    "git checkout-index --prefix=.git/hooks/ pre-commit", "tar -x -C .git/hooks -f a.tar",
    "unzip -o x.zip -d .git/hooks", "patch -p1 < x.diff", "gcc -o .git/hooks/pre-commit x.c",
    "sed -i s/a/b/ .git/config", "tee .envrc", "cp x .vscode/settings.json",
]


@pytest.mark.parametrize("command", HARMLESS)
def test_programs_that_write_files_run_in_auto_mode(hooks_world: PolicyWorld,
                                                         command: str) -> None:
    decision = _decide(hooks_world, command)
    assert decision.verdict is Verdict.ALLOW, (command, decision)
