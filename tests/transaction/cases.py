"""The change-set table: each case a workspace, a shell command run over a real overlay, and
the change set `read_upper` must find. `run_case` also applies that change set to the
workspace (which must then be exactly what the command made in a plain copy) and undoes it
(which must give back exactly the workspace before).

`python cases.py FOLDER NAME` runs one case and prints its outcome as JSON: the tests run
it as nobody (setpriv) as well as in their own process.
"""

from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernel.transaction.apply import apply, start_stamp
from kernel.transaction.checkpoints import Checkpoints
from kernel.transaction.upper import read_upper
from tests.transaction.overlaykit import (
    DIR,
    Exe,
    Link,
    Tree,
    build,
    manifest,
    mount_and_run,
    run_plain,
)

Expected = set[tuple[str, str, str] | tuple[str, str, str, str]]
"""(path, kind, entry) or (path, kind, entry, previous) of each change."""


@dataclass(frozen=True)
class Case:
    tree: Tree
    script: str
    expected: Expected
    details: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per path, fields of the Change to check (added, removed, executable, binary)."""


TEXT = "one\ntwo\n"
CAFE = os.fsdecode(b"caf\xe9")

CASES: dict[str, Case] = {
    "create": Case({"a.txt": TEXT}, "echo new > n.txt", {("n.txt", "created", "file")},
                   {"n.txt": {"added": 1, "removed": 0}}),
    "modify": Case({"a.txt": TEXT}, "printf 'one\\nthree\\n' > a.txt",
                   {("a.txt", "modified", "file")}, {"a.txt": {"added": 1, "removed": 1}}),
    "append": Case({"a.txt": TEXT}, "echo more >> a.txt", {("a.txt", "modified", "file")},
                   {"a.txt": {"added": 1, "removed": 0}}),
    "truncate": Case({"a.txt": TEXT}, ": > a.txt", {("a.txt", "modified", "file")},
                     {"a.txt": {"added": 0, "removed": 2}}),
    "delete file": Case({"a.txt": TEXT, "b.txt": "b\n"}, "rm a.txt",
                        {("a.txt", "deleted", "file")}, {"a.txt": {"removed": 2}}),
    "delete tree": Case({"d/x": "x\n", "d/e/y": "y\n", "d/e/f": DIR, "keep": "k\n"},
                        "rm -rf d",
                        {("d", "deleted", "dir"), ("d/x", "deleted", "file"),
                         ("d/e", "deleted", "dir"), ("d/e/y", "deleted", "file"),
                         ("d/e/f", "deleted", "dir")}),
    "rm -rf then recreate (opaque)": Case(
        {"d/x": "x\n", "d/y": "y\n", "d/sub/z": "z\n"},
        "rm -rf d && mkdir d && echo new > d/x && echo y > d/y",
        {("d/x", "modified", "file"), ("d/sub", "deleted", "dir"),
         ("d/sub/z", "deleted", "file")}),
    "chmod +x only": Case({"run.sh": "echo hi\n"}, "chmod +x run.sh",
                          {("run.sh", "mode", "file")}, {"run.sh": {"executable": True}}),
    "chmod -x only": Case({"run.sh": Exe("echo hi\n")}, "chmod -x run.sh",
                          {("run.sh", "mode", "file")}, {"run.sh": {"executable": False}}),
    "chmod a folder": Case({"d/x": "x\n"}, "chmod 700 d", {("d", "mode", "dir")}),
    "mv file": Case({"a.txt": TEXT}, "mv a.txt b.txt", {("b.txt", "renamed", "file", "a.txt")}),
    "mv folder": Case({"d/x": "x\n", "d/y": "y\n"}, "mv d e",
                      {("d", "deleted", "dir"), ("e", "created", "dir"),
                       ("e/x", "renamed", "file", "d/x"), ("e/y", "renamed", "file", "d/y")}),
    "mv then edit is no rename": Case({"a.txt": TEXT}, "mv a.txt b.txt && echo z >> b.txt",
                                      {("a.txt", "deleted", "file"),
                                       ("b.txt", "created", "file")}),
    "symlink made": Case({"a.txt": TEXT}, "ln -s a.txt l", {("l", "link", "link")}),
    "symlink re-pointed": Case({"a.txt": TEXT, "b.txt": "b\n", "l": Link("a.txt")},
                               "ln -sfn b.txt l", {("l", "link", "link")}),
    "symlink re-made the same": Case({"a.txt": TEXT, "l": Link("a.txt")},
                                     "rm l && ln -s a.txt l", set()),
    "file to folder": Case({"a.txt": TEXT}, "rm a.txt && mkdir a.txt && echo z > a.txt/z",
                           {("a.txt", "replaced", "dir"), ("a.txt/z", "created", "file")}),
    "folder to link": Case({"a.txt": TEXT, "d/x": "x\n"}, "rm -rf d && ln -s a.txt d",
                           {("d", "replaced", "link"), ("d/x", "deleted", "file")}),
    "folder to file": Case({"d/x": "x\n", "d/e/y": "y\n"}, "rm -rf d && echo f > d",
                           {("d", "replaced", "file"), ("d/x", "deleted", "file"),
                            ("d/e", "deleted", "dir"), ("d/e/y", "deleted", "file")}),
    "link to file": Case({"a.txt": TEXT, "l": Link("a.txt")}, "rm l && echo own > l",
                         {("l", "replaced", "file")}),
    "touch without change": Case({"a.txt": TEXT, "d/x": "x\n"}, "touch a.txt d/x d", set()),
    "rewrite with the same bytes": Case({"a.txt": TEXT}, "cat a.txt > t && cat t > a.txt"
                                        " && rm t", set()),
    "made and removed": Case({"a.txt": TEXT}, "mkdir -p t/u && echo x > t/u/v && rm -rf t",
                             set()),
    "hard link": Case({"a.txt": TEXT}, "ln a.txt h.txt && echo n > n && ln n m",
                      {("h.txt", "created", "file"), ("n", "created", "file"),
                       ("m", "created", "file")}),
    "empty file": Case({"e0": ""}, ": > e1 && mv e0 e2",
                       {("e0", "deleted", "file"), ("e1", "created", "file"),
                        ("e2", "created", "file")}, {"e1": {"added": 0}}),
    "binary file": Case({"b.bin": b"\0\1\2"}, "printf 'a\\000b' > b.bin",
                        {("b.bin", "modified", "file")}, {"b.bin": {"binary": True}}),
    "odd names": Case({"a.txt": TEXT},
                      "echo a > 'sp ace' && echo b > \"$(printf 'new\\nline')\" && "
                      "echo c > \"$(printf 'caf\\351')\" && mkdir ' d ' && echo e > ' d /-x'",
                      {("sp ace", "created", "file"), ("new\nline", "created", "file"),
                       (CAFE, "created", "file"), (" d ", "created", "dir"),
                       (" d /-x", "created", "file")}),
    "deep nesting": Case({"a.txt": TEXT}, "mkdir -p a/b/c/d/e/f/g/h && echo x > a/b/c/d/e/f/g/h/i",
                         {*{("/".join("abcdefgh"[:n]), "created", "dir") for n in range(1, 9)},
                          ("a/b/c/d/e/f/g/h/i", "created", "file")}),
    "deep change in a kept tree": Case({"a/b/c/d.txt": TEXT, "a/b/e.txt": "e\n"},
                                       "echo x >> a/b/c/d.txt",
                                       {("a/b/c/d.txt", "modified", "file")}),
}


def _fields(change: Any) -> tuple[str, ...]:
    base = (change.path, change.kind, change.entry)
    return (*base, change.previous) if change.previous else base


def run_case(name: str, folder: Path) -> dict[str, Any]:
    """Run one case in `folder` (see the module's text); its outcome as plain data."""
    case = CASES[name]
    build(folder / "lower", case.tree)
    before = manifest(folder / "lower")
    time.sleep(0.01)  # the workspace's own times a tick before the command's start
    since = start_stamp()
    mount_and_run(folder, case.script)
    run_plain(folder, case.script)
    changes = read_upper(folder / "upper", folder / "lower")
    opaque = [os.fsdecode(p) for p in _opaque(folder / "upper")]
    with Checkpoints(folder / "checkpoints") as checkpoints:
        recorder = checkpoints.begin("s1", "c1", folder / "lower")
        applied = apply(folder / "upper", folder / "lower", changes.changes, since_ns=since,
                        recorder=recorder)
        after_apply = manifest(folder / "lower")
        if not applied.ok:
            return {"found": [list(_fields(c)) for c in changes],
                    "conflicts": [[c.path, c.reason] for c in applied.conflicts]}
        if len(changes) == 0:
            assert applied.step is None and checkpoints.steps("s1") == []
            undone_json: dict[str, Any] = {"ok": True}
        else:
            undone_json = checkpoints.undo("s1", "c1").to_json()
        after_undo = manifest(folder / "lower")
    plain = manifest(folder / "plain")
    return {"changes": [c.to_json() for c in changes],
            "found": [list(_fields(c)) for c in changes],
            "opaque": opaque,
            "conflicts": [[c.path, c.reason] for c in applied.conflicts],
            "applied_as_plain": after_apply == plain,
            "apply_diff": sorted(set(after_apply.items()) ^ set(plain.items())),
            "undo": undone_json,
            "undone_as_before": after_undo == before}


def _opaque(upper: Path) -> list[bytes]:
    found = []
    for base, dirs, _files in os.walk(os.fsencode(upper)):
        for name in dirs:
            full = os.path.join(base, name)
            if b"user.overlay.opaque" in [os.fsencode(x) for x in os.listxattr(full)]:
                found.append(os.path.relpath(full, os.fsencode(upper)))
    return found


if __name__ == "__main__":
    sys.stdout.write(json.dumps(run_case(sys.argv[2], Path(sys.argv[1]))) + "\n")
