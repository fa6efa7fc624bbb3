"""Issue 28 break 5: one sandbox home per workspace, as root and as nobody.

A `.pth` in the Python user site and a `core.fsmonitor` in `~/.gitconfig`, planted by a
command of workspace A in its HOME, ran in every later command of workspace B. Each
workspace now has its own home (AppPaths.sandbox_home_for, 0700): the payloads still run in A
(the control: they are live) and never in B.
"""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

from kernel.paths import AppPaths
from tests.security.conftest import Confined

PLANT = (
    "python3 -c \"import site, os; d = site.getusersitepackages(); os.makedirs(d, "
    "exist_ok=True); open(d + '/evil.pth', 'w').write("
    "'import os; open(\\\"pth-ran\\\", \\\"w\\\")\\n')\" && "
    "git config --global core.fsmonitor 'touch fsmonitor-ran; true' && "
    "mkdir -p ~/.config/git && printf '[alias]\\n\\tst = !touch alias-ran\\n' "
    "> ~/.config/git/config && echo planted"
)
TRY = ("python3 -c pass; git init -q repo; cd repo && git status --short >/dev/null; "
       "git st 2>/dev/null; echo home=$HOME")


def test_what_a_command_plants_in_its_home_never_runs_in_another_workspace(
        confined: Confined) -> None:
    seen: dict[str, Any] = {}

    def inspect(folder: Path, report: dict[str, Any]) -> None:
        paths = AppPaths(data=folder / "data", config=folder / "config")
        for name in ("a", "b"):
            ws = folder / name
            seen[name] = {"pth": (ws / "pth-ran").exists() or (ws / "repo" / "pth-ran").exists(),
                          "fsmonitor": (ws / "repo" / "fsmonitor-ran").exists(),
                          "alias": (ws / "repo" / "alias-ran").exists(),
                          "home": str(paths.sandbox_home_for(ws).resolve())}
        seen["modes"] = {stat.S_IMODE(p.stat().st_mode) for p in
                         (paths.sandbox_homes, *paths.sandbox_homes.iterdir())}
        seen["homes"] = sorted(p.name for p in paths.sandbox_homes.iterdir())

    report = confined([PLANT, TRY, TRY], spec={"in": ["a", "a", "b"]}, inspect=inspect)
    outputs = [str(o["output"]) for o in report["outcomes"]]
    assert "planted" in outputs[0], outputs
    assert seen["a"] == {"pth": True, "fsmonitor": True, "alias": True,
                         "home": seen["a"]["home"]}, (seen, outputs)  # the control: live
    assert seen["b"] == {"pth": False, "fsmonitor": False, "alias": False,
                         "home": seen["b"]["home"]}, (seen, outputs)
    assert f"home={seen['a']['home']}" in outputs[1]
    assert f"home={seen['b']['home']}" in outputs[2]
    assert seen["a"]["home"] != seen["b"]["home"]
    assert seen["modes"] == {0o700} and len(seen["homes"]) == 2
    assert all(name.startswith(("a-", "b-")) for name in seen["homes"])


def test_the_home_is_named_after_the_resolved_workspace(tmp_path: Path) -> None:
    paths = AppPaths(data=tmp_path / "data", config=tmp_path / "config")
    project = tmp_path / "my project"
    project.mkdir()
    (tmp_path / "link").symlink_to(project)
    same = {paths.sandbox_home_for(p) for p in (project, tmp_path / "link",
                                                tmp_path / "link" / ".." / "my project")}
    assert len(same) == 1  # one workspace, however it is spelt
    home = same.pop()
    assert home.parent == paths.sandbox_homes and home.name.startswith("my_project-")
    names = {paths.sandbox_home_for(Path(p)).name for p in
             ("/srv/a/x", "/srv/b/x", "/", "/srv/..hidden", "/srv/a\nb", "/srv/" + "z" * 300)}
    assert len(names) == 6  # same basename, different folders: different homes
    for name in names:
        assert "/" not in name and "\n" not in name and not name.startswith(".")
        assert len(name) <= 60
