"""First start: `make run` installs what Qt needs to show a window (as root, with apt-get)
or prints the exact command; the package metadata builds without license warnings."""

from __future__ import annotations

import os
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "desktop" / "system_deps.sh"


def fake_system(tmp_path: Path, uid: int, libs: str = "") -> dict[str, str]:
    """A PATH where ldconfig knows only `libs`, `id -u` says `uid`, and apt-get records its
    arguments instead of installing anything."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    scripts = {
        "ldconfig": f"printf '%s\\n' '{libs}'",
        "id": f"echo {uid}",
        "apt-get": f'echo "$@" >> {tmp_path}/apt.log',
        "fc-list": "echo /usr/share/fonts/x.ttf: DejaVu Sans",
        "bwrap": "true", "pasta": "true", "uname": "echo Linux",
    }
    for name, body in scripts.items():
        path = bin_dir / name
        path.write_text(f"#!/bin/sh\n{body}\n")
        path.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:/usr/bin:/bin"}


def run(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True,
                          timeout=60, check=False)


def test_as_a_user_it_prints_the_exact_command(tmp_path: Path) -> None:
    done = run(fake_system(tmp_path, 1000))
    assert done.returncode == 0
    line = next(x for x in done.stderr.splitlines() if "apt-get install" in x)
    words = line.split()
    assert words[:4] == ["sudo", "apt-get", "install", "-y"]
    assert {"libxcb-cursor0", "libxkbcommon-x11-0", "libegl1", "libgl1"} <= set(words)
    assert not (tmp_path / "apt.log").exists()


def test_as_root_it_installs_only_what_is_missing(tmp_path: Path) -> None:
    done = run(fake_system(tmp_path, 0, libs="libxcb-cursor.so.0 libGL.so.1 libEGL.so.1"))
    assert done.returncode == 0, done.stderr
    calls = (tmp_path / "apt.log").read_text().splitlines()
    install = next(c.split() for c in calls if c.startswith("install"))
    assert install[:3] == ["install", "-y", "-q"]
    assert "libxkbcommon-x11-0" in install
    assert not {"libxcb-cursor0", "libgl1", "libegl1"} & set(install)


def test_nothing_missing_nothing_done(tmp_path: Path) -> None:
    libs = (" ".join(["libxcb-cursor.so.0", "libxkbcommon-x11.so.0", "libxcb-icccm.so.4",
                      "libxcb-keysyms.so.1", "libxcb-image.so.0", "libxcb-render-util.so.0",
                      "libxcb-shape.so.0", "libxcb-xinerama.so.0", "libxcb-randr.so.0",
                      "libEGL.so.1", "libGL.so.1", "libdbus-1.so.3", "libfontconfig.so.1"]))
    done = run(fake_system(tmp_path, 0, libs=libs))
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert not (tmp_path / "apt.log").exists()


def test_make_run_calls_it_before_starting_the_app() -> None:
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("\nrun: ", 1)[1].split("\n\n", 1)[0].splitlines()
    assert recipe[1].strip() == "@bash desktop/system_deps.sh"
    assert recipe[2].strip() == "$(VENV)/bin/reins"


def test_the_license_is_an_spdx_string() -> None:
    """A TOML table here makes setuptools print its deprecation warnings on every install."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"
