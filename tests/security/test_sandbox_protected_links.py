"""A protected name that is a link (`.vscode -> shared`, `.envrc -> envrc-real`,
`.git/hooks -> ../../myhooks`) stays the link it was, whatever a command does to it.

The sandbox binds where such a link leads read-only, but the link itself is no mount point:
a command can remove it, rename it, or make it again leading elsewhere, and a link made
again at once gets the freed inode back (ext4), so it looked like the same entry and a
`.git/hooks` leading to the command's own hooks ran them at the user's next commit. Now the
link's text is part of what the index compares: a link leading elsewhere is moved to the
quarantine like any new protected entry, and the link as it was is made again.

Real bubblewrap, the real executor, as the user running the tests (root in CI) and as nobody;
afterwards git runs outside the sandbox in the repository, with a canary a planted hook would
touch.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from tests.security.conftest import Confined

HOOK = "printf '#!/bin/sh\\ntouch \"$REINS_CANARY\"\\n'"
LINKS = {".vscode": "shared", ".envrc": "envrc-real", "repo/.git/hooks": "../../myhooks",
         "deep/sub/.idea": "../../cfg", "c/.idea": "../hop", "hop": "real-idea",
         "b/.envrc": "../notyet/envrc", ".devcontainer": "missing-dc"}
"""`hop` is no protected name, but `c/.idea` leads through it; the last two lead nowhere."""

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


def _prepare(folder: Path) -> None:
    workspace = folder / "workspace"
    for name in ("shared", "myhooks", "cfg", "deep/sub", "c", "b", "real-idea", "src"):
        (workspace / name).mkdir(parents=True)
    (workspace / "src" / "keep.txt").write_text("mine\n")
    (workspace / "shared" / "tasks.json").write_text("{}\n")
    (workspace / "envrc-real").write_text("export A=1\n")
    env = {**os.environ, "HOME": str(folder)}
    subprocess.run(["git", "init", "-q", str(workspace / "repo")], check=True, env=env)
    subprocess.run(["rm", "-rf", str(workspace / "repo" / ".git" / "hooks")], check=True)
    for link, target in LINKS.items():
        (workspace / link).symlink_to(target)


def _git_commit(folder: Path) -> str:
    home = folder / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": os.environ["PATH"], "HOME": str(home), "GIT_CONFIG_NOSYSTEM": "1",
           "REINS_CANARY": str(folder / "pwned")}
    done = subprocess.run(["git", "-c", "safe.directory=*", "-c", "user.email=u@example.com",
                           "-c", "user.name=u", "commit", "-q", "--allow-empty", "-m", "look"],
                          cwd=folder / "workspace" / "repo", env=env, capture_output=True,
                          text=True, timeout=60, check=False)
    return done.stderr


def _check(folder: Path, report: dict[str, Any]) -> None:
    workspace = folder / "workspace"
    said = _git_commit(folder)
    assert not (folder / "pwned").exists(), f"a planted hook ran outside the sandbox: {said}"
    for link, target in LINKS.items():
        path = workspace / link
        now = os.readlink(path) if path.is_symlink() else os.path.lexists(path)
        assert now == target, (link, now, report["outcomes"])
    assert (workspace / "shared" / "tasks.json").read_text() == "{}\n"
    assert (workspace / "envrc-real").read_text() == "export A=1\n"
    assert not (workspace / "myhooks" / "pre-commit").exists()
    assert (workspace / "src" / "keep.txt").read_text() == "mine\n", "the user's folder stays"
    for made in ("notyet/envrc", "missing-dc"):
        assert not os.path.lexists(workspace / made), (made, report["outcomes"])


def test_a_protected_link_stays_the_link_it_was(confined: Confined) -> None:
    report = confined([*ATTACKS.values(), *DANGLING.values(), SAME], prepare=_prepare,
                      inspect=_check)
    outcomes = dict(zip([*ATTACKS, *DANGLING, "same"], report["outcomes"], strict=True))
    for name in ATTACKS:
        relinked = [r for r in outcomes[name]["reverted"] if r["relinked"]]
        assert relinked and all(r["error"] == "" for r in relinked), (name, outcomes[name])
    for name in DANGLING:
        moved = [r for r in outcomes[name]["reverted"] if r["moved_to"]]
        assert moved and all(r["rule"].startswith("where ") for r in moved), outcomes[name]
    same = report["outcomes"][-1]
    assert all(r["path"] == ".vscode" and r["error"] == "" and r["relinked"] in ("", "shared")
               for r in same["reverted"]), same
    moved = {r["path"] for o in report["outcomes"] for r in o["reverted"] if r["moved_to"]}
    assert {".vscode", "repo/.git/hooks", ".envrc", "deep/sub/.idea"} <= moved


def test_all_at_once_in_one_command(confined: Confined) -> None:
    """The attacks one after another in one command: each link is made again once."""
    every = [*ATTACKS.values(), *DANGLING.values()]
    report = confined([" ; ".join(f"( {c} )" for c in every)], prepare=_prepare,
                      inspect=_check)
    [outcome] = report["outcomes"]
    relinked = {r["path"] for r in outcome["reverted"] if r["relinked"]}
    assert relinked == {".vscode", ".envrc", "repo/.git/hooks", "deep/sub/.idea", "hop"}, (
        outcome)
