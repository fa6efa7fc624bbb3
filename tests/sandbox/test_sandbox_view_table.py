"""The view of the machine a command gets (kernel.sandbox.view.plan_view), as tables: pure
facts in, mounts out (the real mounts are tested in tests/security/test_sandbox_view.py)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kernel.sandbox.view import (
    HostFacts,
    Mount,
    Stamp,
    Stamped,
    View,
    ViewFacts,
    describe_view,
    plan_view,
    shown_folders,
    stamp_of,
    tool_folder,
)

HOME = "/home/ada"
MERGED = HostFacts(top=(("/bin", "usr/bin"), ("/lib", "usr/lib"), ("/lib64", "usr/lib64"),
                        ("/sbin", "usr/sbin")),
                   etc_hidden=(("/etc/gshadow", False), ("/etc/shadow", False),
                               ("/etc/ssl/private", True)),
                   etc_named=(("/run/systemd/resolve/stub-resolv.conf", "/etc/resolv.conf"),))
SPLIT = HostFacts(top=(("/bin", ""), ("/lib", ""), ("/sbin", "")), etc_hidden=(),
                  cpu=False)


BASE = ViewFacts(host=MERGED, workspace="/srv/proj", home=HOME,
                 sandbox_home=f"{HOME}/.local/share/reins/sandbox-home",
                 own_folders=(f"{HOME}/.config/reins", f"{HOME}/.local/share/reins"))


def facts(**changes: Any) -> ViewFacts:
    return replace(BASE, **changes)


def by_path(view: View) -> dict[str, Mount]:
    return {m.path: m for m in (*view.system, *view.after)}


@pytest.mark.parametrize(("folder", "shown"), [
    (f"{HOME}/.nvm/versions/node/v20.11.0/bin", f"{HOME}/.nvm/versions/node/v20.11.0"),
    (f"{HOME}/.pyenv/shims", f"{HOME}/.pyenv"),
    (f"{HOME}/.cargo/bin", f"{HOME}/.cargo"),
    ("/home/linuxbrew/.linuxbrew/bin", "/home/linuxbrew/.linuxbrew"),
    ("/opt/homebrew/sbin", "/opt/homebrew"),
    (f"{HOME}/bin", f"{HOME}/bin"),  # its parent is the home
    (f"{HOME}/.local/bin", f"{HOME}/.local/bin"),  # ~/.local/share is every app's data
    ("/opt/bin", "/opt/bin"),  # its parent is a top-level folder
    ("/snap/bin", "/snap/bin"),
    (f"{HOME}/go/tools", f"{HOME}/go/tools"),
    ("/opt", None), ("/home", None), (HOME, None), ("/", None),
])
def test_the_folder_a_path_entry_shows(folder: str, shown: str | None) -> None:
    assert tool_folder(folder, HOME) == shown


def test_merged_usr_links_and_the_system_folders() -> None:
    view = by_path(plan_view(facts()))
    assert view["/usr"].argv() == ["--ro-bind", "/usr", "/usr"]
    assert view["/bin"].argv() == ["--symlink", "usr/bin", "/bin"]
    assert view["/lib64"].how == "symlink"
    assert view["/etc"].how == "read-only"
    assert view["/etc/shadow"].argv() == ["--ro-bind", "/dev/null", "/etc/shadow"]
    assert view["/etc/ssl/private"].argv() == ["--tmpfs", "/etc/ssl/private", "--remount-ro",
                                               "/etc/ssl/private"]
    assert view["/run/systemd/resolve/stub-resolv.conf"].how == "read-only"
    assert [view[p].argv() for p in ("/dev", "/proc", "/tmp")] == [
        ["--dev", "/dev"], ["--proc", "/proc"], ["--tmpfs", "/tmp"]]
    assert view["/sys/devices/system/cpu"].how == "read-only"
    for absent in ("/", "/run", "/var", "/srv", "/opt", "/mnt", "/media", "/home", "/root",
                   "/sys", HOME):
        assert absent not in view or view[absent].how == "sealed", absent


def test_a_split_usr_binds_its_folders() -> None:
    view = by_path(plan_view(facts(host=SPLIT)))
    assert view["/bin"].argv() == ["--ro-bind", "/bin", "/bin"]
    assert "/sys/devices/system/cpu" not in view


@pytest.mark.parametrize(("path_folders", "read_only", "expected"), [
    ((), (), []),
    (("/usr/local/bin", "/usr/bin", "/bin"), (), []),  # inside the system folders
    ((f"{HOME}/.pyenv/shims", f"{HOME}/.pyenv/bin",
      f"{HOME}/.pyenv/plugins/pyenv-virtualenv/shims"), (), [f"{HOME}/.pyenv"]),
    ((f"{HOME}/.cargo/bin",), (f"{HOME}/.rustup", "/srv/data"),
     [f"{HOME}/.cargo", f"{HOME}/.rustup", "/srv/data"]),
    ((), (f"{HOME}/.nvm", f"{HOME}/.nvm/versions"), [f"{HOME}/.nvm"]),
    # what holds the home shows everything the view leaves out: refused, however spelt
    ((), ("/", HOME, os.path.dirname(HOME), "/srv/data"), ["/srv/data"]),
])
def test_the_folders_shown(path_folders: tuple[str, ...], read_only: tuple[str, ...],
                           expected: list[str]) -> None:
    shown = [folder for folder, _ in shown_folders(
        facts(path_folders=path_folders, read_only_paths=read_only))]
    assert shown == expected


def test_secrets_in_shown_folders_are_hidden_and_others_ignored() -> None:
    view = by_path(plan_view(facts(
        path_folders=(f"{HOME}/.cargo/bin",),
        secrets=((f"{HOME}/.cargo/credentials.toml", False), (f"{HOME}/.ssh", True),
                 ("/srv/proj/.env", False)))))
    assert view[f"{HOME}/.cargo/credentials.toml"].argv() == [
        "--ro-bind", "/dev/null", f"{HOME}/.cargo/credentials.toml"]
    assert f"{HOME}/.ssh" not in view  # not shown at all
    assert "/srv/proj/.env" not in view  # the workspace's marks hide it


@pytest.mark.parametrize(("changes", "hidden"), [
    ({}, []),  # nothing shown holds Reins' folders: absent
    ({"read_only_paths": (f"{HOME}/.local",)}, [f"{HOME}/.local/share/reins"]),
    ({"workspace": HOME}, [f"{HOME}/.config/reins", f"{HOME}/.local/share/reins"]),
    ({"workspace": f"{HOME}/.local/share/reins/project"}, []),  # cannot hide the workspace
])
def test_reins_folders_are_hidden_only_where_shown(changes: dict[str, Any],
                                                   hidden: list[str]) -> None:
    view = plan_view(facts(**changes))
    assert [m.path for m in view.after if m.how == "private"] == hidden
    assert [m.path for m in view.after if m.how == "sealed"] == [*hidden, "/"]
    home = next(m for m in view.after if m.how == "writable")
    assert home.path == f"{HOME}/.local/share/reins/sandbox-home"
    argv = view.after_argv()
    assert argv[-2:] == ["--remount-ro", "/"]


def test_the_view_is_deterministic_and_described() -> None:
    some = facts(path_folders=(f"{HOME}/.cargo/bin",), read_only_paths=("/srv/data",))
    assert plan_view(some) == plan_view(some)
    lines = describe_view(plan_view(some), "/srv/proj")
    assert any(line.startswith("/srv/proj ") and "writable" in line for line in lines)
    assert any("/etc/shadow" in line and "hidden" in line for line in lines)
    assert any(line.startswith("/srv/data ") and "exec.read_only_paths" in line
               for line in lines)


def test_cached_facts_follow_a_mode_changed_in_place(tmp_path: Path) -> None:
    """A file made private by chmod alone (its folder unchanged) is seen at the next use,
    as a file made anew is."""
    (tmp_path / "a.conf").write_text("x")
    (tmp_path / "a.conf").chmod(0o644)
    made: list[int] = []

    def private() -> tuple[tuple[Stamp, ...], tuple[str, ...]]:
        made.append(1)
        return (stamp_of(str(tmp_path)),), tuple(sorted(
            e.name for e in os.scandir(tmp_path) if not e.stat().st_mode & 0o004))

    facts = Stamped(private)
    assert facts.get() == () and facts.get() == () and len(made) == 1
    (tmp_path / "a.conf").chmod(0o600)
    assert facts.get() == ("a.conf",)
    (tmp_path / "b.key").write_text("k")
    (tmp_path / "b.key").chmod(0o600)
    assert facts.get() == ("a.conf", "b.key")


@pytest.mark.parametrize("named", ["/", HOME, os.path.dirname(HOME)])
def test_a_settings_folder_that_holds_the_home_is_refused_and_said(named: str) -> None:
    view = plan_view(facts(read_only_paths=(named, "/srv/data")))
    [refused] = [m for m in view.system if m.path == named]  # "/" is also sealed, after
    assert refused.how == "refused" and "holds the home" in refused.why
    assert refused.argv() == []
    assert ["--ro-bind", named, named] not in [m.argv() for m in view.system]
    assert by_path(view)["/srv/data"].how == "read-only"
