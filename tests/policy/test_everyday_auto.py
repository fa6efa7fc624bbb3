"""Everyday shell runs without asking in auto mode (issue 29 §3).

Each line goes through what the gate does for a run_command call: the real shell reader,
classifier and path policy (`PolicyWorld.decide_command`), then `decide()`.
A policy that asks for `[ -f x ]` or a loop teaches people to click Allow unread; the attack
tables (tests/security/test_redteam_*.py, tests/shell) keep what must still ask.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel.policy.decide import Mode, Verdict
from tests.policy.worldkit import PolicyWorld

EVERYDAY = [
    # tests: `[`, `[[`, `test`
    "[ -f setup.py ] && echo yes",
    'if [ -n "$X" ]; then echo set; fi',
    '[ "$(uname)" = Linux ] && echo linux',
    "[[ -d src ]] || mkdir src",
    "[[ $x == *.py ]] && echo py",
    "[[ -n $a && -f b ]] && echo both",
    "[[ $v =~ ^(a|b)$ ]] && echo m",
    "[[ ( -f a ) || ! -d b ]] && echo grouped",
    '[[ "$a" < "$b" ]] && echo less',
    "test -f Makefile && make",
    "test -d build || mkdir -p build",
    # loops, case, functions, subshells, arithmetic
    "i=0; while [ $i -lt 3 ]; do echo $i; i=$((i+1)); done",
    "until [ -f done.flag ]; do sleep 1; done",
    'for f in *.py; do echo "$f"; done',
    "for i in 1 2 3; do echo $i; done",
    "for i do echo $i; done",
    "for ((i=0; i<3; i++)); do echo $i; done",
    'case "$1" in a) echo a;; *) echo other;; esac',
    "case $x in\n  -h|--help) echo usage ;;\n  (*) echo run ;;\nesac",
    "(( n = 3 + 4 )); echo $n",
    "echo $((1 + 2))",
    "f() { echo hi; }; f",
    'function greet { echo "hello $1"; }; greet you',
    "(cd src && ls)",
    'x=$(ls | wc -l); echo "$x files"',
    'while read -r line; do echo "$line"; done < input.txt',
    'read -r a b <<< "x y"; echo $a',
    "diff <(sort a) <(sort b)",
    "set -e; echo ok",
    # here-documents into workspace files, scripts written and then run
    "cat > notes.txt <<EOF\nhello\nEOF",
    "cat <<'EOF' > script.sh\n#!/bin/sh\necho hi\nEOF\nchmod +x script.sh && ./script.sh",
    "echo 'print(1)' > t.py && python3 t.py",
    "python3 - <<'EOF'\nprint('hi')\nEOF",
    "{ echo a; echo b; } > out.txt",
    "sort data.txt | uniq -c > counts.txt",
    "echo done 2>&1 | tee log.txt",
    # builds and test runners
    "make",
    "make test",
    "make -j2 all",
    "pytest -q",
    "python -m pytest tests/ -x",
    "npm test",
    "cargo test",
    "go test ./...",
    "python setup.py build",
    # git
    "git status",
    "git add -A",
    "git add src/main.py",
    'git commit -m "fix: a bug"',
    "git checkout -b feature",
    "git checkout main",
    "git diff HEAD~1",
    "git log --oneline | head -5",
    "git stash",
    # in-place edits and files in the workspace
    "sed -i 's/foo/bar/g' src/main.py",
    "sed -i.bak -e 's/a/b/' README.md",
    "perl -pi -e 's/x/y/' file.txt",
    "cp src/a.py src/b.py",
    "mv old.txt new.txt",
    "rm -f build/*.o",
    "rm -rf build",
    "ln -s target link",
    "chmod 755 script.sh",
    "gzip -d data.gz",
    "find . -name '*.pyc' -delete",
    # reads, and the sandbox's own /tmp
    "date",
    "ls",
    "ls -la /tmp",
    "grep -rn TODO src | wc -l",
    "cat ~/.gitconfig",
    "echo hi > /tmp/x",
    "mktemp && echo hi > /tmp/scratch/out.log",
    "cp x /tmp/y",
    "sed -i s/a/b/ /tmp/f",
    "install -d /tmp/d",
    "export PATH=$PATH:./bin; which foo",
    "true",
]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> PolicyWorld:
    return PolicyWorld(Path(tmp_path_factory.mktemp("everyday")))


def test_the_table_is_large_enough() -> None:
    assert len(EVERYDAY) >= 50
    assert len(set(EVERYDAY)) == len(EVERYDAY)


@pytest.mark.parametrize("line", EVERYDAY)
def test_everyday_line_runs_in_auto_mode(world: PolicyWorld, line: str) -> None:
    decision = world.decide_command(line, Mode.AUTO)
    assert decision.verdict is Verdict.ALLOW, f"{line!r}: {decision.reason}"


@pytest.mark.parametrize("line", ["[ -f setup.py ] && echo yes", "for i in 1 2; do :; done",
                                  'case "$1" in *) echo x;; esac'])
def test_everyday_tests_can_be_allowed_for_the_session_and_always(world: PolicyWorld,
                                                                  line: str) -> None:
    """Not destructive, so the user may allow them beyond this call (asked in ask mode)."""
    decision = world.decide_command(line, Mode.ASK)
    assert decision.verdict is Verdict.ASK
    assert decision.can_session and decision.can_always


@pytest.mark.parametrize("line", ["echo hi > /tmp/x", "cp x /tmp/y"])
def test_tmp_is_private_only_with_a_sandbox(world: PolicyWorld, line: str) -> None:
    """Without a sandbox `/tmp` is the machine's: the write asks as before."""
    decision = world.decide_command(line, Mode.AUTO, sandboxed=False)
    assert decision.verdict is Verdict.ASK


@pytest.mark.parametrize("line", ["touch ~/.bashrc", "echo 'alias ls=rm' >> ~/.bashrc",
                                  "ln -sf x ~/.bashrc", "echo x > ~/.gitconfig",
                                  "cat key.pub >> ~/.ssh/authorized_keys"])
def test_start_up_files_in_the_sandbox_home_are_the_sandbox_s_own(world: PolicyWorld,
                                                                   line: str) -> None:
    """`~` in a command is the workspace's sandbox home, not the user's (which the sandbox
    hides): no guess of the write asks; that the real home is never written is shown by the
    boundary table (tests/security/test_transaction_boundary.py)."""
    decision = world.decide_command(line, Mode.AUTO)
    assert decision.verdict is Verdict.ALLOW, decision.reason
