"""Real overlay upper layers for the transaction tests, as the current user or as nobody.

`layers(folder, tree, script)` builds the lower folder from `tree`, mounts an overlay over
it in a new user and mount namespace (`unshare -rm`, the `userxattr` format a sandbox's
overlay has), runs `script` in the merged folder with /bin/sh, and unmounts (the namespace
ends). The same script run in a plain copy of the lower folder gives what the workspace
must be after the change set is applied. `manifest` is a tree's exact content.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NOBODY = 65534
AS_NOBODY = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]


@dataclass(frozen=True)
class Link:
    target: str


@dataclass(frozen=True)
class Exe:
    text: str


DIR = None
Tree = Mapping[str, "str | bytes | Link | Exe | None"]


def build(root: Path, tree: Tree) -> None:
    """Make `root` hold `tree`: text or bytes files (0644), Exe files (0755), Link symlinks,
    DIR folders; parents are made."""
    root.mkdir(parents=True, exist_ok=True)
    for rel, value in tree.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if value is None:
            path.mkdir(exist_ok=True)
        elif isinstance(value, Link):
            path.symlink_to(value.target)
        elif isinstance(value, Exe):
            path.write_text(value.text)
            path.chmod(0o755)
        else:
            path.write_bytes(value.encode() if isinstance(value, str) else value)
            path.chmod(0o644)


def manifest(root: Path) -> dict[str, tuple[str, int, str]]:
    """Every entry below `root` (never following a link): type, mode, sha256 or target."""
    out: dict[str, tuple[str, int, str]] = {}
    for base, dirs, files in os.walk(os.fsencode(root)):
        for name in dirs + files:
            full = os.path.join(base, name)
            rel = os.fsdecode(os.path.relpath(full, os.fsencode(root)))
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", 0, os.fsdecode(os.readlink(full)))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", stat.S_IMODE(st.st_mode), "")
            else:
                with open(full, "rb") as f:
                    digest = hashlib.file_digest(f, "sha256").hexdigest()
                out[rel] = ("file", stat.S_IMODE(st.st_mode), digest)
    return out


def mount_and_run(folder: Path, script: str) -> None:
    """Run `script` in an overlay of folder/lower (upper folder/upper) in a new namespace."""
    for name in ("upper", "work", "merged"):
        (folder / name).mkdir(exist_ok=True)
    options = (f"userxattr,lowerdir={folder / 'lower'},upperdir={folder / 'upper'},"
               f"workdir={folder / 'work'}")
    inner = (f"mount -t overlay overlay -o {options} {folder / 'merged'} && "
             f"cd {folder / 'merged'} && {script}")
    done = subprocess.run(["unshare", "-rm", "sh", "-ec", inner], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, f"{script!r} failed: {done.stderr}"


def run_plain(folder: Path, script: str) -> None:
    """The same script in a plain copy of the lower folder (folder/plain)."""
    shutil.copytree(folder / "lower", folder / "plain", symlinks=True)
    done = subprocess.run(["sh", "-ec", f"cd {folder / 'plain'} && {script}"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, f"{script!r} failed in a plain folder: {done.stderr}"


def run_as_nobody(script: Path, folder: Path, name: str) -> dict[str, Any]:
    """`python SCRIPT FOLDER NAME` as nobody (setpriv); the JSON it prints last."""
    return _run_script([*AS_NOBODY, sys.executable], script, folder, name)


def run_as_current(script: Path, folder: Path, name: str) -> dict[str, Any]:
    """`python SCRIPT FOLDER NAME` in a process of its own; the JSON it prints last."""
    return _run_script([sys.executable], script, folder, name)


def _run_script(python: list[str], script: Path, folder: Path, name: str) -> dict[str, Any]:
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([*python, str(script), str(folder), name],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(root), "HOME": str(folder)},
                          check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
