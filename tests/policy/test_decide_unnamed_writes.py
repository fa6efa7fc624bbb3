"""A command whose program writes files it names through options the writer table newly
reads (git's own commands, archives, compressors, editors' scripts, gawk -i inplace, …),
or files only its data names (an archive's, a patch's), is asked about in auto mode
whatever the allow rules say, and can be granted neither for the session nor always;
the same programs writing plain files in the workspace still run. Through the real shell
reader, the real path policy and `decide()`."""

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


def _decide(world: PolicyWorld, command: str, *allow: str) -> Decision:
    return world.decide_command(command, Mode.AUTO, allow=allow)


TO_HOOKS = [
    "git checkout-index --prefix=.git/hooks/ pre-commit",
    "git -C . checkout-index -f --prefix .git/hooks/ pre-commit",
    "git archive -o .git/hooks/pre-commit HEAD:hook",
    "git archive --out=.git/hooks/pre-commit HEAD",
    "git bundle create .git/hooks/pre-commit --all",
    "git diff --output=.git/hooks/pre-commit",
    "git merge-file .git/hooks/pre-commit base other",
    "git mv hook .git/hooks/pre-commit",
    "git apply --directory=.git/hooks x.diff",
    "git apply x.diff", "git apply -p1 < x.diff", "git -C .git/hooks apply x.diff",
    "git am --dir=.git < mbox", "git init --template=evil", "git init",
    "git format-patch -o .git/hooks HEAD~1",
    "tar -xf a.tar", "tar xzf a.tgz", "tar -x -C .git/hooks -f a.tar", "tar -xPf a.tar",
    "bsdtar -xf a.zip", "unzip x.zip", "unzip -o x.zip -d .git/hooks", "busybox unzip x.zip",
    "cpio -i < a.cpio", "cpio -id --no-absolute-filenames < a.cpio", "7z x a.7z",
    "7z x a.7z -o.git/hooks", "ar x lib.a", "pax -r < a.pax", "jar xf a.jar",
    "python3 -m tarfile -e a.tar", "python -m zipfile -e a.zip .git/hooks",
    "find . -name '*.tar' -exec tar -xf {} \\;", "sh -c 'unzip -q x.zip'",
    "env LC_ALL=C tar -x -f a.tar", "patch -p1 < x.diff", "patch -d .git/hooks < x.diff",
    "patch -b -B .git/hooks/ pre-commit x.diff", "gunzip .git/hooks/pre-commit.gz",
    "gzip -dN x.gz", "xz -d .git/hooks/pre-commit.xz", "zstd -o .git/hooks/pre-commit x",
    "zip -O .git/hooks/pre-commit a.zip x", "split x .git/hooks/pre-commit",
    "csplit -f .git/hooks/pre- x /a/", "rename 's/x/pre-commit/' .git/hooks/x",
    "vim -es -c 'w .git/hooks/pre-commit' -c q x", "ex -sc 'w! .git/hooks/pre-commit' x",
    "printf 'w .git/hooks/pre-commit\\n' | ed -s x", "gawk -i inplace 1 .git/hooks/pre-commit",
    "awk -iinplace 1 -- .git/hooks/pre-commit", "gawk -d.git/hooks/pre-commit 'BEGIN{}'",
    "sqlite3 .git/hooks/pre-commit 'create table t(a)'",
    "sqlite3 :memory: \"select writefile('.git/hooks/pre-commit', 'x')\"",
    "pip install --target=.git/hooks x.whl", "npm install --prefix .git/hooks x",
    "python3 -m venv .git/hooks", "convert in.png png:.git/hooks/pre-commit",
    "pandoc -o .git/hooks/pre-commit x.md", "exiftool -o .git/hooks/pre-commit x.jpg",
    "gcc -o .git/hooks/pre-commit x.c", "go build -o .git/hooks/pre-commit .",
    "cp --parents hooks/pre-commit .git",
    "xxd -r hex .git/hooks/pre-commit", "sort x | sponge .git/hooks/pre-commit",
    "curl -OJ --output-dir .git/hooks https://x/y", "wget -r -P .git/hooks https://x/",
    "git clone https://x/r .vscode", "git worktree add .vscode",
    "gzip .envrc", "sqlite3 db '.output .bashrc'",
    "sed -f fix.sed x", "sed '1e touch x' x", "sed \"s/a/$X/\" x", "sed s/a*/b/ x",
    "awk '{print > $1}' x", "awk '{print | \"sh\"}' x", "awk -f prog.awk x",
    "mogrify @list.txt", "convert in.gif .git/hooks/pre-commit%d",
    "ffmpeg -i in -vf metadata=print:file=x -f null -", "ffmpeg -i in -vf \"$VF\" out.mp4",
    "ffmpeg -i in -/vf graph.txt out.mp4", "ffmpeg -dump_attachment:t '' -i in.mkv",
    "gcc @args.rsp x.c", "gcc -dumpdir .git/hooks/ -save-temps -c x.c",
    "rustc -C incremental=.git/hooks x.rs", "javac -d .git/hooks X.java", "javac @args",
    "tsc --outDir .git/hooks x.ts", "go mod vendor -o .git/hooks",
    "crontab evil.cron", "crontab -", "echo '* * * * * sh x' | crontab", "crontab -e",
    "crontab -u root x", "at now -f job.sh", "echo x | batch", "atrm 3",
]

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
]


@pytest.mark.parametrize("command", TO_HOOKS)
def test_a_program_writing_a_protected_or_unnamed_file_asks_in_auto_mode(
        hooks_world: PolicyWorld, command: str) -> None:
    decision = _decide(hooks_world, command, "run_command", "write_file")
    assert decision.verdict is Verdict.ASK, (command, decision)
    assert decision.decided_by == "always ask", decision
    assert ("protected path or a secret location" in decision.reason
            or "cannot be named before it runs" in decision.reason), decision.reason
    assert not decision.can_session and not decision.can_always, decision


@pytest.mark.parametrize("command", HARMLESS)
def test_the_same_programs_writing_plain_files_still_run(hooks_world: PolicyWorld,
                                                         command: str) -> None:
    decision = _decide(hooks_world, command)
    assert decision.verdict is Verdict.ALLOW, (command, decision)
