"""A hard link names the same file under another name, so a check by name does not see
it: `ln ~/.ssh/id_ed25519 project/notes.txt` made `cat notes.txt` print the key inside the
sandbox (a bind mount hides a path, not an inode), and `echo … >> gitconfig.txt` wrote the
repository's config through a second name of `.git/config`.

Now every name in the workspace of a secret or protected file (by its inode: kernel.hardlinks,
found by the workspace index) is hidden or bound read-only as that file is. A command cannot
make such a link itself: link(2) from a path bound read-only (or from the workspace to one)
crosses a mount point (EXDEV). Real bubblewrap, the real executor, as the user running the
tests (root in CI) and as nobody; links made before the session and during it, outside the
sandbox, renamed, at depth, named like harmless files, to a secret reached through a
symlinked folder and to one only kernel.pathrules' list names.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from tests.security.conftest import Confined

STEPS = Path(__file__).with_name("hardlink_steps.py")
SECRETS = {
    "home/.ssh/id_ed25519": "CANARY-SSH",
    "home/cloud/aws/credentials": "CANARY-AWS",  # ~/.aws -> cloud/aws
    "home/.config/gh/hosts.yml": "CANARY-GH",  # only the one list names it
    "home/.pgpass": "CANARY-PGPASS",
    "workspace/deploy/.ssh/id_rsa": "CANARY-WS-KEY",
    "workspace/.env": "CANARY-DOTENV",
    "workspace/sub/.envrc": "export CANARY-ENVRC",
}
PROTECTED = {
    "home/.bashrc": "# the user's bashrc\n",
    "workspace/.vscode/tasks.json": "{}\n",
    "workspace/sub/.envrc": "export CANARY-ENVRC",
}
BEFORE = {  # name in the workspace -> what it is another name of (FOLDER-relative)
    "notes.txt": "home/.ssh/id_ed25519",
    "a/b/c/d/e/README.md": "home/.aws/credentials",
    "config.yml": "home/.config/gh/hosts.yml",
    "src/.bashrc": "home/.pgpass",  # a protected name: bound read-only, still readable
    "key.txt": "workspace/deploy/.ssh/id_rsa",
    "env.sample": "workspace/.env",
    "env-copy": "workspace/sub/.envrc",
    "gitconfig.txt": "workspace/repo/.git/config",
    "scripts/pre-commit.sh": "workspace/repo/.git/hooks/pre-commit",
    "dotfiles/bashrc": "home/.bashrc",
    "tasks.json.bak": "workspace/.vscode/tasks.json",
}
HOOK = "#!/bin/sh\ntouch \"$REINS_CANARY\"\n"


def _prepare(folder: Path) -> None:
    (folder / "home/cloud/aws").mkdir(parents=True)
    (folder / "home/.aws").symlink_to("cloud/aws")
    subprocess.run(["git", "init", "-q", str(folder / "workspace/repo")], check=True)
    (folder / "workspace/repo/.git/hooks/pre-commit").write_text(HOOK)
    (folder / "workspace/plain.sh").write_text("echo plain\n")
    (folder / "workspace/bin").mkdir()
    for path, text in {**SECRETS, **PROTECTED}.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text(text)
    for name, of in BEFORE.items():
        (folder / "workspace" / name).parent.mkdir(parents=True, exist_ok=True)
        os.link(folder / of, folder / "workspace" / name)


CAT_ALL = "cat " + " ".join(BEFORE) + " 2>&1; true"
WRITE_ALL = "; ".join(f"echo EVIL >> {name}" for name in BEFORE) + "; true"
LINK_INSIDE = ("ln repo/.git/config x1; ln repo/.git/hooks/pre-commit x2; ln sub/.envrc x3; "
               "ln .vscode/tasks.json x4; ln notes.txt x5; "
               "ln plain.sh repo/.git/hooks/post-checkout; "
               "ls x1 x2 x3 x4 x5 repo/.git/hooks/post-checkout 2>&1; true")
ORDINARY = "cat .venv/lib/pkg.py && echo more >> .venv/lib/pkg.py && echo written"
"""A hard link of nothing secret or protected (uv links packages from its cache)."""
STEPS_LIST: list[Any] = [
    CAT_ALL, WRITE_ALL, LINK_INSIDE,
    ["link", "home/.ssh/id_ed25519", "workspace/later/deep/todo.md"],  # during the session
    ["rename", "workspace/notes.txt", "workspace/bin/renamed.txt"],
    ["link", "workspace/plain.sh", "workspace/repo/.git/hooks/post-merge"],  # a new hook
    ["link", "workspace/bin/run.sh", "home/.profile"],  # a new name in the home for a file
    "cat later/deep/todo.md bin/renamed.txt 2>&1; echo EVIL >> plain.sh; "
    "echo EVIL >> bin/run.sh; true",
    ORDINARY,
    "mkdir -p sub2 && echo x > fresh && ln fresh sub2/.envrc && echo linked",  # made here
]


def _check(folder: Path, report: dict[str, Any]) -> None:
    outcomes = report["outcomes"]
    shown = "".join(str(o.get("output", "")) for o in outcomes)
    for text in SECRETS.values():
        assert text not in shown, (text, outcomes)
    for path, text in {**SECRETS, **PROTECTED}.items():
        assert (folder / path).read_text() == text, (path, outcomes)
    assert (folder / "workspace/repo/.git/hooks/pre-commit").read_text() == HOOK
    assert "EVIL" not in (folder / "workspace/repo/.git/config").read_text()
    assert (folder / "workspace/plain.sh").read_text() == "echo plain\n", outcomes[-3]
    assert (folder / "home/.profile").read_text() == "", outcomes[-3]
    assert not (folder / "workspace/sub2/.envrc").exists()
    assert (folder / "uv-cache/pkg.py").read_text() == "print('a package')\nmore\n"
    linked = outcomes[2]["output"]
    for made in ("x1", "x2", "x3", "x4", "x5", "repo/.git/hooks/post-checkout"):
        assert f"cannot access '{made}': No such file" in linked, linked
    assert not any((folder / "workspace" / made).exists() for made in ("x1", "x2", "x3", "x4"))
    assert not (folder / "workspace/repo/.git/hooks/post-checkout").exists()


def _prepare_all(folder: Path) -> None:
    _prepare(folder)
    (folder / "workspace/bin/run.sh").write_text("")
    (folder / "uv-cache").mkdir()
    (folder / "uv-cache/pkg.py").write_text("print('a package')\n")
    (folder / "workspace/.venv/lib").mkdir(parents=True)
    os.link(folder / "uv-cache/pkg.py", folder / "workspace/.venv/lib/pkg.py")


def test_hard_links_to_secrets_and_protected_files_in_the_sandbox(confined: Confined) -> None:
    report = confined(STEPS_LIST, prepare=_prepare_all, inspect=_check, script=STEPS,
                      spec={"home": "home"})
    said = report["outcomes"][1]["output"]
    assert said.count("EVIL") == 0
    assert "Read-only file system" in said or "Permission denied" in said, said
    ordinary = report["outcomes"][-2]
    assert ordinary["exit_code"] == 0 and "a package" in ordinary["output"], ordinary
    assert all(o.get("reverted", []) == [] for o in report["outcomes"][:-1]), report["outcomes"]
    made = report["outcomes"][-1]  # a link it makes under a protected name is undone
    assert "linked" in made["output"], made
    assert [(r["path"], bool(r["moved_to"])) for r in made["reverted"]] == [("sub2/.envrc", True)]
