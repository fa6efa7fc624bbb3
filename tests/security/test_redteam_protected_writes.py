"""Red team: a command that writes a protected path or a secret location through a writing
program (`tee .git/hooks/pre-commit`, `dd of=.envrc`, `cp x .vscode/settings.json`,
`sed -i … .bashrc`, …) is asked about like `> .git/hooks/x`, in every mode, whatever the
allow rules say, and only ever allowed once; into Reins' own data it is refused. The
sandbox also stops such writes (protected paths are read-only in it), but the user is told
before, not surprised after, and without a sandbox this is the only line. Through the real
shell reader, the real path policy and `decide()`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from kernel.fakemodel import FakeAnthropicServer
from kernel.fakemodel.script import ToolUse, reply
from kernel.paths import AppPaths
from kernel.policy.decide import Decision, Mode, Verdict
from tests.policy.worldkit import PolicyWorld

H = ".git/hooks/pre-commit"


@pytest.fixture
def world(tmp_path: Path) -> PolicyWorld:
    world = PolicyWorld(tmp_path)
    (world.workspace / ".git" / "hooks").mkdir(parents=True)
    (world.workspace / "sub").mkdir()
    return world


def _decide(world: PolicyWorld, command: str, mode: Mode, *, allow: Sequence[str] = (),
            deny: Sequence[str] = (), sandboxed: bool = True) -> Decision:
    return world.decide_command(command, mode, allow=allow, deny=deny, sandboxed=sandboxed)


PROTECTED = [
    # tee
    f"tee {H}", f"tee -a {H}", f"tee {H} -a", f"tee --append {H}", f"tee --app {H}",
    f"tee -- {H}", f"tee out.txt {H}", f"tee '{H}'", 'tee ".git"/hooks/pre-commit',
    "tee ./.git//hooks/pre-commit", "tee sub/../.git/hooks/pre-commit",
    "tee ../ws/.git/hooks/pre-commit", "tee .GIT/hooks/pre-commit", "tee .git./hooks/x",
    "tee .g\u200cit/hooks/x", "tee .ＧＩＴ/hooks/x", "tee .vscode/settings.json",
    "tee .VSCode/tasks.json", "tee ~/.bashrc", "tee --append ~/.zshrc", "tee .envrc",
    "tee .env", "tee sub/.env.local", "tee .mcp.json", "tee mise.toml", "tee .idea/x.xml",
    # dd
    "dd of=.envrc", f"dd if=x of={H}", "dd of=./.vscode/settings.json bs=1", "dd 'of=.envrc'",
    "dd of=~/.profile",
    # cp / mv / install / ln / rsync / scp
    "cp x .vscode/settings.json", "cp -f x .vscode/settings.json", "cp x .bashrc -f",
    "cp -- x .bashrc", "cp -t .git/hooks pre-commit", "cp --target-directory=.git/hooks x",
    "cp --target-dir .git/hooks x", "cp -rt.git/hooks x", "cp hooks/pre-commit .git/hooks/",
    "cp x .git/hooks", "cp evil/.bashrc ~", "cp evil/.envrc .", "cp evil/.envrc sub",
    "cp evil/.envrc ./", "cp x/.[a-z]* .", "cp .bashrc backup", "cp -a evil/.git .",
    "cp x .vsc*/settings.json", "cp x .Vscode/", "cp x ./.idea/", "cp -r x .devcontainer",
    "cp $SRC .git/hooks/", "/bin/cp x .bashrc",
    "\\cp x .bashrc", "cp x ~/.ssh/authorized_keys", f"mv x {H}", f"mv {H} elsewhere",
    "mv -f x .idea/workspace.xml", "mv -t .vscode x", f"install -m 755 x {H}",
    f"install -D -m0755 x {H}", "install -t .git/hooks pre-commit", "install -d .vscode",
    f"ln -sf /tmp/evil {H}", "ln -s /x/.bashrc", "ln -s /x/.bashrc .",
    "ln -t .git/hooks -s /tmp/pre-commit", "ln --symbolic --force evil .envrc",
    "link x .envrc", "rsync -a hooks/ .git/hooks/", "rsync x .bashrc",
    "rsync --exclude x -a src/ .vscode/", "scp host:x .bashrc", "cp x a:/../.bashrc",
    # truncate / touch / mkdir / rm / chmod
    "truncate -s 0 .envrc", "truncate --size=0 .bashrc", "truncate -s0 .git/config",
    f"touch {H}", "touch -d yesterday .envrc", "mkdir .vscode", "mkdir -p .git/hooks/d",
    f"rm {H}", "rm -f .envrc", "unlink .bashrc", "rmdir .vscode", "shred -u .env",
    f"chmod +x {H}", f"chmod 755 {H}", "chmod -R u+x .git/hooks", f"chmod -x {H}",
    "chown me .bashrc", "chattr +i .bashrc",
    # sed -i / perl -i
    "sed -i 's/a/b/' .bashrc", "sed -i.bak 's/a/b/' .bashrc", "sed -ie 's/a/b/' .bashrc",
    "sed -Ei 's/a/b/' .vscode/settings.json", "sed --in-place -e 's/a/b/' .git/config",
    "sed --in-pl -e s/a/b/ .git/config", "sed -i -e s/a/b/ -- .envrc",
    "sed -n -i 's/x/y/p' ~/.profile", "sed -i s/a/b/ .env", "sed -i s/a/b/ *",
    "sed -i s/a/b/ .g*/config", "sed -i s/a/b/ .GIT/con*", "sed -i s/x/y/ .vscode/*",
    "shopt -s dotglob; sed -i s/a/b/ ?bashrc", "perl -pi -e 's/a/b/' .bashrc",
    "perl -i.bak -pe 's/a/b/' .git/config",
    # tar / unzip / patch
    "tar -x -C .git -f a.tar", "tar xf a.tar -C .git/hooks", "tar xzf a.tgz -C.git",
    "tar --extract --directory=.vscode -f a.tar", "tar -xzf a.tgz --directory .git",
    "tar -xf a.tar",
    f"tar -cf {H} src", "unzip x.zip -d .git/hooks", "patch .bashrc fix.diff",
    "patch -o .envrc a fix.diff", "patch -d .git -p1 -i x.diff",
    # downloads and others
    f"curl -o {H} https://x", "curl --output .envrc https://x", "curl -sSLo .bashrc https://x",
    "curl -O https://x/dl/.bashrc", "curl -O --output-dir .git/hooks https://x/pre-commit",
    f"wget -O {H} https://x", "wget -P .git/hooks https://x/pre-commit",
    "wget https://x/.envrc", "sort -o .bashrc x", "uniq x .envrc",
    # wrappers, shells, xargs, find -exec
    f"echo x | sudo tee {H}", f"sudo -u root tee -a {H}", "env -i cp x .bashrc",
    "env A=1 tee .envrc", "nice -n 5 cp x .bashrc", "timeout 5 tee .bashrc",
    "command tee .bashrc", "busybox tee .bashrc", "nohup tee .bashrc", f"sh -c 'tee {H}'",
    f"bash -c \"cp x {H}\"", f"echo {H} | xargs tee", "echo x | xargs -I{} cp {} .git/hooks/",
    "find . -name '*.sh' -exec cp {} .git/hooks/ \\;", "find . -exec tee {} \\;",
    "cd .git && tee hooks/pre-commit", "tee $HOME/.bashrc", 'tee "$F"',
    "true && tee .bashrc", "(tee .bashrc)", "x=$(tee .bashrc)", "tee ~/.gitconfig",
    "tee .gitmodules", "tee .dir-locals.el", "tee sub/.envrc", "tee sub/deep/.vscode/x",
    "tee x.code-workspace", "tee .claude/settings.json", "tee ~/.config/autostart/x.desktop",
    "tee ~/.aws/credentials", "tee ~/.ssh/config", "tee .npmrc", "tee -a .git/info/attributes",
    "dd of=.git/config conv=notrunc", "cp x .git/config", "ln -s x .git/hooks/post-checkout",
    # git's own commands that write its config (core.fsmonitor, core.hooksPath, aliases run)
    "git config core.fsmonitor 'touch /tmp/x'", "git config core.hooksPath evil",
    "git -C . config alias.st '!sh x'", "git -C sub config core.pager less",
    "git --git-dir=.git config core.editor vim", "git --git-dir .git config core.editor vim",
    "git config set core.sshCommand evil", "git config --add core.fsmonitor x",
    "git config --unset core.pager", "git config -e", "git config --file .git/config a.b c",
    "git config -f .git/config a.b c", "git -c x.y=z config core.fsmonitor x",
    "git --no-pager config core.fsmonitor x", "git config --local core.fsmonitor x",
    "git config --worktree core.fsmonitor x", "git config --global core.fsmonitor x",
    "git remote add x 'ext::sh -c touch% /tmp/x'", "git remote set-url origin 'ext::sh x'",
    "git branch --set-upstream-to=origin/main", "git branch -u origin/main",
    "git submodule add https://x/y", "sudo git config core.fsmonitor x",
    "sh -c 'git config core.fsmonitor x'", "/usr/bin/git config core.fsmonitor x",
    # programs writing a file their script or an option names: sed's `w`
    f"sed -n 'w {H}' x", "sed 's/a/b/w .envrc' x", "sed -e p -e 'W ./.bashrc' x",
    "sed --expression='s/x/y/gw .vscode/tasks.json' x", "sed -nes/a/b/w.envrc x",
    "sed -n '/x/{w ../ws/.git/hooks/pre-push\n}' x",
    # awk's `print > "F"`
    f"awk '{{print > \"{H}\"}}' x", "gawk 'BEGIN{printf \"x\" >> \".envrc\"}'",
    "awk '{print $1 > \"./.en\" \"vrc\"}' x",
    # in-place editors and formatters
    "yq -i '.a = 1' .vscode/settings.json", "sd a b .envrc", "gsed -i s/a/b/ .envrc",
    "crudini --set .git/config core fsmonitor x", "prettier --write .vscode/settings.json",
    f"shfmt -w {H}", "xmlstarlet ed -L -u /a -v b .idea/workspace.xml",
    # compressors
    "lz4 x .envrc", f"lz4 -d x.lz4 {H}", "unlz4 .bashrc.lz4", "zstd -qo .envrc x",
    "zstd -of .envrc x", "zstd x -o ~/.bashrc", "brotli --output=.envrc x",
    "brotli -fo .envrc x", "pigz .envrc", "lzip -o .bashrc x",
    # images and media
    "mogrify -path .git/hooks x.png", "mogrify -format envrc ./.png",
    f"mogrify -write {H} x.png", "magick x.png .envrc", "magick mogrify -path .vscode x.png",
    f"ffmpeg -i in.mp4 {H}", "ffmpeg -y -i in.mp4 -c copy ./.envrc",
    "ffmpeg -i in -segment_list .envrc -f segment o%d", "ffmpeg -i in 'tee:a.mp4|.bashrc'",
    "ffprobe -o .envrc in.mp4",
    # compilers
    f"gcc --output={H} x.c", f"gcc --output {H} x.c", f"gcc -Wl,-o,{H} x.c",
    f"cc x.c -Xlinker -o -Xlinker {H}", "gcc -Wl,-Map=.bashrc x.c", "gcc-13 -o .envrc x.c",
    "x86_64-linux-gnu-gcc -o .envrc x.c", "ld --output=.envrc x.o", f"rustc -o {H} x.rs",
    "rustc --out-dir .git/hooks update.rs", "rustc --emit=link=.envrc x.rs",
    "rustc --out-dir=.vscode x.rs", "tsc --outFile=.envrc x.ts", "tsc --OUTFILE .bashrc x.ts",
    "tsc src/.env.ts", f"go build -o={H} .", f"go build --o {H} .",
    "go build -C .git -o hooks/pre-commit .", "go test -coverprofile=.envrc ./...",
    "kotlinc x.kt -d .vscode/x.jar", f"strip {H}", "objcopy x.o .envrc",
]

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

OUTSIDE = ["cp x /var/tmp/y", "tee ~/notes/x", "mv a /srv/elsewhere", "sed -i s/a/b/ /opt/f",
           "curl -o /var/tmp/page.html https://x", "install -d /opt/d"]
"""Not /tmp: a sandboxed command's /tmp is its own tmpfs (tests/policy/test_everyday_auto.py),
nor `../` (the test workspace lies under /tmp)."""


@pytest.mark.parametrize("command", PROTECTED)
def test_a_write_to_a_protected_path_by_a_program_asks_once(world: PolicyWorld,
                                                           command: str) -> None:
    for mode in (Mode.AUTO, Mode.AUTO_EDIT, Mode.ASK):
        for sandboxed in (True, False):
            decision = _decide(world, command, mode, allow=("run_command", "write_file"),
                               sandboxed=sandboxed)
            assert decision.verdict is Verdict.ASK, (command, mode, decision)
            assert decision.decided_by in ("always ask", "mode auto", "mode ask",
                                           "mode auto-edit"), decision
            assert not decision.can_session and not decision.can_always, decision


@pytest.mark.parametrize("command", PROTECTED)
def test_the_reason_names_the_write(world: PolicyWorld, command: str) -> None:
    reason = _decide(world, command, Mode.AUTO, allow=("run_command",)).reason
    assert ("protected path or a secret location" in reason
            or "cannot be named before it runs" in reason
            or "destructive" in reason or "network" in reason
            or "runs as another user" in reason), reason  # `sudo tee …`: a privilege change


@pytest.mark.parametrize("command", HARMLESS)
def test_a_plain_write_in_the_workspace_still_runs_in_auto_mode(world: PolicyWorld,
                                                                command: str) -> None:
    decision = _decide(world, command, Mode.AUTO)
    assert decision.verdict is Verdict.ALLOW, decision


@pytest.mark.parametrize("command", OUTSIDE)
def test_a_program_writing_outside_the_workspace_asks_in_auto_mode(world: PolicyWorld,
                                                                   command: str) -> None:
    decision = _decide(world, command, Mode.AUTO, allow=("run_command",))
    assert decision.verdict is Verdict.ASK, decision


@pytest.mark.parametrize("program", ["cp evil.json {}", "tee {}", "dd of={}",
                                     "sed -i s/a/b/ {}", "ln -sf /tmp/x {}",
                                     "echo x | sudo tee -a {}"])
def test_a_program_writing_reins_settings_is_refused(world: PolicyWorld, program: str) -> None:
    command = program.format(world.paths.settings_file)
    decision = _decide(world, command, Mode.AUTO, allow=("run_command",))
    assert decision.verdict is Verdict.DENY and "Reins' own" in decision.reason


def test_write_file_rules_apply_to_what_programs_write(world: PolicyWorld) -> None:
    deny = _decide(world, "cp x secrets/a", Mode.AUTO, deny=("write_file(secrets/**)",))
    assert deny.verdict is Verdict.DENY and deny.rule == "write_file(secrets/**)"
    allowed = _decide(world, "cp x build/a", Mode.ASK,
                      allow=("run_command(cp *)", "write_file(build/**)"))
    assert allowed.verdict is Verdict.ALLOW
    other = _decide(world, "cp x other/a", Mode.ASK,
                    allow=("run_command(cp *)", "write_file(build/**)"))
    assert other.verdict is Verdict.ASK


def test_tables_are_large() -> None:
    assert len(PROTECTED) >= 150 and len(HARMLESS) >= 30


def test_reins_exec_in_auto_mode_asks_before_a_program_writes_a_protected_path(
        workspace: Path, reins_home: AppPaths) -> None:
    """End to end through the real `reins exec` (auto mode, `--approve deny`, bubblewrap):
    each write through a program is asked about and, denied, changes nothing; a plain copy
    inside the workspace runs."""
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    (workspace / "hook.sh").write_text("#!/bin/sh\necho pwned\n")
    (workspace / ".envrc").write_text("export A=1\n")
    commands = {
        "tee": "echo pwned | tee -a .git/hooks/pre-commit",
        "cp": "cp hook.sh .git/hooks/pre-commit",
        "sed": "sed -i s/A=1/A=2/ .envrc",
        "dd": "dd if=hook.sh of=.vscode/settings.json",
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
             str(workspace), "--mode", "auto", "--approve", "deny", "go"], env=env,
            capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
            check=False)
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    asked = {e["call_id"]: e for e in events if e["type"] == "approval_request"}
    results = {e["call_id"]: e for e in events if e["type"] == "tool_result"}
    assert set(asked) == set(commands) - {"plain"}, asked
    assert all("protected path or a secret location" in asked[k]["reason"] for k in asked)
    assert all(results[k]["error_code"] == "approval_denied" for k in asked), results
    assert results["plain"]["error_code"] is None, results["plain"]
    assert (workspace / "copy.sh").exists()
    hooks = workspace / ".git" / "hooks"
    assert not any((hooks / n).exists() for n in ("pre-commit", "post-checkout", "pre-push",
                                                  "pre-rebase"))
    assert (workspace / ".envrc").read_text() == "export A=1\n"
    assert not (workspace / ".vscode").exists()
