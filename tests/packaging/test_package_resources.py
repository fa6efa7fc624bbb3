"""The app's shipped files: the icon set, the loader that finds it frozen or from source,
and the per-user Linux installer (run for real against a scratch XDG_DATA_HOME)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest
from PySide6.QtCore import QSize
from PySide6.QtGui import QImage

from desktop import resources
from desktop.resources import ICON_SIZES, ResourceMissing

ROOT = Path(__file__).resolve().parents[2]
ICONS = ROOT / "resources" / "icons"
INSTALLER = ROOT / "packaging" / "install-linux.sh"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def load_render_icons() -> ModuleType:
    """packaging/ is deliberately not a package (it would shadow PyPI `packaging`)."""
    spec = importlib.util.spec_from_file_location(
        "render_icons", ROOT / "packaging" / "render_icons.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_SIGNATURE
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_source_checkout_resources_are_found() -> None:
    assert resources.resources_dir() == ROOT / "resources"
    for size in ICON_SIZES:
        assert png_size(resources.icon_png(size).read_bytes()) == (size, size)
    assert resources.resource_path("reins.desktop.in").is_file()


def test_unknown_icon_size_and_missing_file_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="no 13px icon"):
        resources.icon_png(13)
    with pytest.raises(ResourceMissing, match=r"nope\.txt is missing"):
        resources.resource_path("nope.txt")


def frozen_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> Path:
    """Pretend to be a PyInstaller build whose resources sit in `where` (or nowhere)."""
    bundle = tmp_path / "bundle"
    data = bundle / "_internal"
    data.mkdir(parents=True)
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(data), raising=False)
    monkeypatch.setattr(sys, "executable", str(bundle / "reins"))
    monkeypatch.setattr(resources, "_CHECKOUT_ROOT", tmp_path / "no-checkout")
    target = {"meipass": data, "exe": bundle}.get(where)
    if target is not None:
        shutil.copytree(ROOT / "resources", target / "resources")
        return target / "resources"
    return bundle


def test_frozen_bundle_data_folder_is_found(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    expected = frozen_layout(tmp_path, monkeypatch, "meipass")
    assert resources.resources_dir() == expected
    assert resources.icon_png(64) == expected / "icons" / "reins-64.png"


def test_frozen_folder_next_to_the_executable_is_found(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    expected = frozen_layout(tmp_path, monkeypatch, "exe")
    assert resources.resources_dir() == expected


def test_missing_resources_name_every_place_looked(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    bundle = frozen_layout(tmp_path, monkeypatch, "nowhere")
    with pytest.raises(ResourceMissing) as err:
        resources.resources_dir()
    assert str(bundle / "_internal" / "resources") in str(err.value)
    assert str(bundle / "resources") in str(err.value)


def test_app_icon_has_every_size(qapp: object) -> None:
    icon = resources.app_icon()
    assert not icon.isNull()
    assert set(icon.availableSizes()) == {QSize(s, s) for s in ICON_SIZES}


def test_committed_pngs_match_the_svg(qapp: object) -> None:
    """The PNGs are renders of reins.svg, not stale copies (small rasteriser drift allowed)."""
    render_icons = load_render_icons()
    fresh = render_icons.render_pngs(ICONS / "reins.svg", (64, 256))
    for size, data in fresh.items():
        now = QImage.fromData(data).convertToFormat(QImage.Format.Format_RGBA8888)
        committed = QImage(str(ICONS / f"reins-{size}.png")).convertToFormat(
            QImage.Format.Format_RGBA8888)
        a, b = bytes(now.constBits()), bytes(committed.constBits())
        assert len(a) == len(b) == size * size * 4
        mean_diff = sum(abs(x - y) for x, y in zip(a, b, strict=True)) / len(a)
        assert mean_diff < 2.0, f"reins-{size}.png differs from reins.svg: run `make icons`"


def test_committed_interface_icons_match_their_svgs(qapp: object) -> None:
    """resources/icons/ui/*.png are renders of their SVGs (the app tints the PNGs)."""
    render_icons = load_render_icons()
    size = render_icons.UI_SIZE
    sources = sorted((ICONS / "ui").glob("*.svg"))
    assert sources
    for svg in sources:
        fresh = render_icons.render_pngs(svg, (size,))[size]
        now = QImage.fromData(fresh).convertToFormat(QImage.Format.Format_RGBA8888)
        committed = QImage(str(svg.with_suffix(".png"))).convertToFormat(
            QImage.Format.Format_RGBA8888)
        a, b = bytes(now.constBits()), bytes(committed.constBits())
        assert len(a) == len(b) == size * size * 4, svg.name
        mean_diff = sum(abs(x - y) for x, y in zip(a, b, strict=True)) / len(a)
        assert mean_diff < 2.0, f"{svg.with_suffix('.png').name} is stale: run `make icons`"


def test_ico_and_icns_hold_every_png() -> None:
    ico = (ICONS / "reins.ico").read_bytes()
    reserved, kind, count = struct.unpack("<HHH", ico[:6])
    assert (reserved, kind, count) == (0, 1, 7)
    seen = []
    for i in range(count):
        side, _, _, _, _, _, length, offset = struct.unpack(
            "<BBBBHHII", ico[6 + 16 * i: 22 + 16 * i])
        width, _ = png_size(ico[offset: offset + length])
        assert width == (side or 256)
        seen.append(width)
    assert seen == [16, 24, 32, 48, 64, 128, 256]

    icns = (ICONS / "reins.icns").read_bytes()
    assert icns[:4] == b"icns" and struct.unpack(">I", icns[4:8])[0] == len(icns)
    types, pos = {}, 8
    while pos < len(icns):
        kind_code, length = icns[pos: pos + 4], struct.unpack(">I", icns[pos + 4: pos + 8])[0]
        types[kind_code] = png_size(icns[pos + 8: pos + length])[0]
        pos += length
    assert types == {b"icp4": 16, b"icp5": 32, b"icp6": 64, b"ic07": 128, b"ic08": 256,
                     b"ic09": 512}


def unpacked_folder(parent: Path) -> Path:
    """The files install-linux.sh expects beside it in a bundle (its executable is inert)."""
    parent.mkdir(parents=True)
    shutil.copytree(ROOT / "resources", parent / "resources")
    shutil.copy2(INSTALLER, parent / "install-linux.sh")
    exe = parent / "reins"
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    return parent


def run_installer(folder: Path, data_home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_DATA_HOME": str(data_home)}
    return subprocess.run(["sh", str(folder / "install-linux.sh"), *args], env=env,
                          capture_output=True, text=True, timeout=60)


def desktop_entry(path: Path) -> dict[str, str]:
    lines = path.read_text().splitlines()
    assert lines[0] == "[Desktop Entry]"
    return dict(line.split("=", 1) for line in lines[1:] if line)


def test_installer_adds_menu_entry_and_icons_then_removes_them(tmp_path: Path) -> None:
    folder = unpacked_folder(tmp_path / "my apps" / "Reins")
    data_home = tmp_path / "share"
    done = run_installer(folder, data_home)
    assert done.returncode == 0, done.stderr
    entry = desktop_entry(data_home / "applications" / "reins.desktop")
    exe = folder.resolve() / "reins"
    assert entry["Exec"] == f'"{exe}"'
    assert entry["TryExec"] == str(exe)
    assert entry["Icon"] == "reins" and entry["Name"] == "Reins" and entry["Type"] == "Application"
    assert "@" not in "".join(entry.values())
    validator = shutil.which("desktop-file-validate")  # desktop-file-utils, when installed
    if validator is not None:
        checked = subprocess.run([validator, str(data_home / "applications" / "reins.desktop")],
                                 capture_output=True, text=True, timeout=60)
        assert checked.returncode == 0 and checked.stdout == "", checked.stdout
    for size in ICON_SIZES:
        installed = data_home / "icons" / "hicolor" / f"{size}x{size}" / "apps" / "reins.png"
        assert png_size(installed.read_bytes()) == (size, size)
    assert (data_home / "icons" / "hicolor" / "scalable" / "apps" / "reins.svg").is_file()

    gone = run_installer(folder, data_home, "--uninstall")
    assert gone.returncode == 0, gone.stderr
    caches = {"icon-theme.cache", "mimeinfo.cache"}  # rebuilt by the desktop's own tools
    leftovers = [p for p in data_home.rglob("*") if p.is_file() and p.name not in caches]
    assert leftovers == []


def test_installer_refuses_a_path_it_cannot_quote(tmp_path: Path) -> None:
    folder = unpacked_folder(tmp_path / "cost$HOME" / "Reins")
    data_home = tmp_path / "share"
    done = run_installer(folder, data_home)
    assert done.returncode == 1
    assert "move the folder somewhere plainer" in done.stderr
    assert not (data_home / "applications" / "reins.desktop").exists()


def test_installer_outside_a_bundle_says_where_to_run_it(tmp_path: Path) -> None:
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    shutil.copy2(INSTALLER, lonely / "install-linux.sh")
    done = run_installer(lonely, tmp_path / "share")
    assert done.returncode == 1
    assert "run me from the unpacked Reins folder" in done.stderr
