"""The protected links of the link tests and what a command or server does to them.

A workspace (`prepare`) with protected names that are links (`.vscode -> shared`,
`.envrc -> envrc-real`, `repo/.git/hooks -> ../../myhooks`), one leading through a link of
no protected name (`c/.idea -> ../hop`, `hop -> real-idea`) and two leading nowhere; the
attacks on them (`ATTACKS`: remove, rename, make again elsewhere; `DANGLING`: make what a
link leading nowhere leads to) and `check`, which runs git outside with a canary a planted
hook would touch and asserts that every link is as it was.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

HOOK = "printf '#!/bin/sh\\ntouch \"$REINS_CANARY\"\\n'"
LINKS = {".vscode": "shared", ".envrc": "envrc-real", "repo/.git/hooks": "../../myhooks",
         "deep/sub/.idea": "../../cfg", "c/.idea": "../hop", "hop": "real-idea",
         "e/.envrc": "../dirlink/envrc", "dirlink": "real-dir",
         "b/.envrc": "../notyet/envrc", ".devcontainer": "missing-dc"}
"""`hop` is no protected name, but `c/.idea` leads through it, and `e/.envrc` through the
folder `dirlink` leads to; the last two lead nowhere."""

ATTACKS: dict[str, str] = {
    "made again at once, leading elsewhere (the freed inode comes back)":
        "mkdir evil && echo '{\"evil\": 1}' > evil/tasks.json && rm .vscode && "
        "ln -s evil .vscode",
    "git's hooks made again leading to the command's hooks":
        f"mkdir evilhooks && {HOOK} > evilhooks/pre-commit && chmod +x evilhooks/pre-commit "
        "&& rm repo/.git/hooks && ln -s ../../evilhooks repo/.git/hooks",
    "replaced in one rename": "echo 'echo evil' > e2 && ln -s e2 tmp-link && mv -T tmp-link .envrc",
    "ln -sfn over it": "mkdir -p other && ln -sfn ../../other deep/sub/.idea",
    "removed": "rm .vscode",
    "renamed away": "mv .envrc envrc-moved",
    "replaced by a folder": "rm deep/sub/.idea && mkdir deep/sub/.idea && "
                            "echo x > deep/sub/.idea/workspace.xml",
    "git's hooks removed and a folder of hooks made":
        f"rm repo/.git/hooks && mkdir repo/.git/hooks && {HOOK} > repo/.git/hooks/pre-commit "
        "&& chmod +x repo/.git/hooks/pre-commit",
    "a link on the way made again leading elsewhere": "mkdir evil2 && rm hop && ln -s evil2 hop",
    "a link on the way made again leading to the user's folder": "rm hop && ln -s src hop",
    "the folder above a link renamed away, the link made again in a new one":
        "mkdir -p evil4 && mv deep deep2 && mkdir -p deep/sub && "
        "ln -s ../../evil4 deep/sub/.idea",
    "the link's own folder renamed away, the link made again in a new one":
        "mkdir -p evil5 && mv deep/sub deep/s2 && mkdir deep/sub && "
        "ln -s ../../evil5 deep/sub/.idea",
    "a folder link on the way made again leading elsewhere":
        "mkdir evil3 && echo 'echo evil' > evil3/envrc && rm dirlink && ln -s evil3 dirlink",
}
DANGLING: dict[str, str] = {
    "made where a link that leads nowhere leads":
        "mkdir -p notyet && echo 'echo evil' > notyet/envrc && mkdir missing-dc && "
        "echo '{}' > missing-dc/devcontainer.json",
    "a link made where one leads, to the user's folder": "ln -s src missing-dc",
    "a file made where one leads": "echo evil > missing-dc",
}
SAME = "rm .vscode && ln -s shared .vscode"
"""The same link made again: nothing to undo when its inode came back, else made again."""


def prepare(folder: Path) -> None:
    workspace = folder / "workspace"
    for name in ("shared", "myhooks", "cfg", "deep/sub", "c", "b", "e", "real-dir", "real-idea",
                 "src"):
        (workspace / name).mkdir(parents=True)
    (workspace / "src" / "keep.txt").write_text("mine\n")
    (workspace / "shared" / "tasks.json").write_text("{}\n")
    (workspace / "envrc-real").write_text("export A=1\n")
    (workspace / "real-dir" / "envrc").write_text("export B=1\n")
    env = {**os.environ, "HOME": str(folder)}
    subprocess.run(["git", "init", "-q", str(workspace / "repo")], check=True, env=env)
    subprocess.run(["rm", "-rf", str(workspace / "repo" / ".git" / "hooks")], check=True)
    for link, target in LINKS.items():
        (workspace / link).symlink_to(target)


def git_commit(folder: Path) -> str:
    home = folder / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
           "REINS_CANARY": str(folder / "pwned")}
    done = subprocess.run(["git", "-c", "safe.directory=*", "-c", "user.email=u@example.com",
                           "-c", "user.name=u", "commit", "-q", "--allow-empty", "-m", "look"],
                          cwd=folder / "workspace" / "repo", env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    return done.stderr


def check(folder: Path, report: dict[str, Any]) -> None:
    workspace = folder / "workspace"
    said = git_commit(folder)
    assert not (folder / "pwned").exists(), f"a planted hook ran outside the sandbox: {said}"
    for link, target in LINKS.items():
        path = workspace / link
        now = os.readlink(path) if path.is_symlink() else os.path.lexists(path)
        assert now == target, (link, now, report["outcomes"])
    assert (workspace / "shared" / "tasks.json").read_text() == "{}\n"
    assert (workspace / "envrc-real").read_text() == "export A=1\n"
    assert (workspace / "e" / ".envrc").read_text() == "export B=1\n"
    assert not (workspace / "myhooks" / "pre-commit").exists()
    assert (workspace / "src" / "keep.txt").read_text() == "mine\n", "the user's folder stays"
    for made in ("notyet/envrc", "missing-dc"):
        assert not os.path.lexists(workspace / made), (made, report["outcomes"])
