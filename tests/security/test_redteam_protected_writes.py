"""Red team: a command that writes a protected path or a secret location through a writing
program (`tee .git/hooks/pre-commit`, `dd of=.envrc`, `cp x .vscode/settings.json`,
`sed -i … .envrc`, …) runs as a transaction: what it wrote is held and shown for the user's
keep, in every mode, and never reaches the workspace without it (issue 29: the policy no
longer guesses writes from a program's options; the boundary table over real programs is
tests/security/test_transaction_boundary.py). The same programs writing plain files run in
auto mode. Through the real shell reader, path policy and `decide()`, and end to end through
`reins exec`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernel.events import HELD_RULE
from kernel.fakemodel import FakeAnthropicServer
from kernel.fakemodel.script import ToolUse, reply
from kernel.paths import AppPaths
from kernel.policy.decide import Mode, Verdict
from tests.policy.worldkit import PolicyWorld


@pytest.fixture
def world(tmp_path: Path) -> PolicyWorld:
    world = PolicyWorld(tmp_path)
    (world.workspace / ".git" / "hooks").mkdir(parents=True)
    (world.workspace / "sub").mkdir()
    return world


HARMLESS = [
    "tee out.txt", "tee -a log.txt", "cp a b", "cp -r src dst", "mv a b", "cp -T .bashrc bak",
    "cat .bashrc > backup", "cp -r src/. dst/", "rsync -a src/ dst",
    "dd if=/dev/zero of=out.bin count=1", "sed -i s/a/b/ notes.txt", "sed -n p .bashrc",
    "sed s/x/y/ .git/config", "grep x .bashrc", "cat .git/config", "install -d build",
    "ln -s target link", "truncate -s 0 log.txt", "touch a.txt",
    "tar -cf out.tar .git", "rsync -a .git/ backup/", "sort -o sorted.txt x",
    "chmod +x script.sh", "mkdir build", "rm build.log", "sed -i s/a/b/ src/*.py",
    "cp x/*.py sub/", "tee /dev/null", "dd if=x of=/dev/null", "cp x /dev/null",
    "echo x | tee -a notes.md", "find . -name '*.o' -exec touch stamp \\;",
    "git config --get user.name", "git config --list", "git config -l", "git config get a.b",
    "git config list", "git config --get-regexp alias", "git status", "git log -1",
    "git -c core.pager=cat log", "git branch -a", "git diff",
    "sed -n 's/x/y/p' notes.txt", "sed -n 'w out.txt' notes.txt", "sed 's/a/b/w log.txt' x",
    "awk '{print $1}' data.txt", "awk '{print > \"out.txt\"}' data.txt",
    "prettier --write src", "black .", "ruff format", "yq -i '.a = 1' config.yaml",
    "lz4 x x.lz4", "zstd -o out.zst x",
    "mogrify -resize 50% a.png", "mogrify -path thumbs -format jpg a.png",
    "ffmpeg -i in.mp4 -c:v libx264 -crf 23 out.mp4", "ffmpeg -i in.mp4 -vf scale=640:-1 o.mp4",
    "gcc -o build/app x.c", "gcc -Wl,-Map=app.map x.c", "rustc x.rs",
    "rustc --out-dir target x.rs", "javac -d out X.java", "tsc x.ts", "go build -o bin/app .",
    "crontab -l",
]


@pytest.mark.parametrize("command", HARMLESS)
def test_a_plain_write_in_the_workspace_still_runs_in_auto_mode(world: PolicyWorld,
                                                                command: str) -> None:
    decision = world.decide_command(command, Mode.AUTO)
    assert decision.verdict is Verdict.ALLOW, decision


def test_reins_exec_in_auto_mode_holds_what_a_program_writes_to_a_protected_path(
        workspace: Path, reins_home: AppPaths) -> None:
    """End to end through the real `reins exec` (auto mode, `--approve allow`, bubblewrap,
    transactions): each command runs, what it wrote to a protected path is held and asked
    about (the request's rule is `held changes`) and, since a flag given before the run has
    seen none of it, discarded, saying why: it changes nothing; an existing
    protected file is read-only in the sandbox (`sed -i` fails); a plain copy inside the
    workspace is applied without a question."""
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    (workspace / "hook.sh").write_text("#!/bin/sh\necho pwned\n")
    (workspace / ".envrc").write_text("export A=1\n")
    commands = {
        "tee": "echo pwned | tee -a .git/hooks/pre-commit",
        "cp": "cp hook.sh .git/hooks/pre-commit",
        "sed": "sed -i s/A=1/A=2/ .envrc",
        "dd": "mkdir -p .vscode && dd if=hook.sh of=.vscode/settings.json",
        "ln": "ln -sf ../../hook.sh .git/hooks/post-checkout",
        "sedw": "sed -n 'w .git/hooks/pre-push' hook.sh",
        "lz4": "lz4 hook.sh .git/hooks/pre-rebase",
        "plain": "cp hook.sh copy.sh",
    }
    calls = [ToolUse("run_command", {"command": c}, id=k) for k, c in commands.items()]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    with FakeAnthropicServer([reply("on it", *calls), reply("done")],
                             api_key="test-key") as server:
        env.update(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="test-key",
                   PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring")
        done = subprocess.run(
            [str(Path(sys.executable).with_name("reins")), "exec", "--json", "--workspace",
             str(workspace), "--mode", "auto", "--approve", "allow", "go"], env=env,
            capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
            check=False)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    asked = {e["call_id"]: e for e in events if e["type"] == "approval_request"}
    results = {e["call_id"]: e for e in events if e["type"] == "tool_result"}
    assert set(asked) == set(commands) - {"plain", "sed"}, asked
    assert results["sed"]["error_code"] == "execution_error"  # the existing .envrc is a mark
    assert all(asked[k]["rule"] == HELD_RULE for k in asked), asked
    decided = {e["call_id"]: e for e in events if e["type"] == "approval_decision"}
    assert {k: decided[k]["decision"] for k in asked} == dict.fromkeys(asked, "deny"), decided
    assert all("which `--approve allow`" in decided[k]["message"] for k in asked), decided
    assert all(results[k]["error_code"] != "approval_denied" for k in asked), results
    assert results["plain"]["error_code"] is None, results["plain"]
    assert (workspace / "copy.sh").exists()
    hooks = workspace / ".git" / "hooks"
    assert not any((hooks / n).exists() for n in ("pre-commit", "post-checkout", "pre-push",
                                                  "pre-rebase"))
    assert (workspace / ".envrc").read_text() == "export A=1\n"
    assert not (workspace / ".vscode").exists()
