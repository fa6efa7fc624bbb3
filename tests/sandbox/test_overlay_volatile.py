"""The transaction's overlay is mounted `volatile` where the kernel takes it (no sync of its
upper layer: kernel.sandbox.binder.overlay_options). The options builder, pure; the probe
over the real kernel, and over a `mount` that refuses the option as an older kernel does;
and a real volatile overlay's leftovers (`work/work/incompat/volatile/dirty`, each of mode
0) removed by a user without CAP_DAC_OVERRIDE."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from kernel.sandbox import overlay_probe
from kernel.sandbox.binder import Overlay, overlay_options
from kernel.sandbox.call_folders import remove_tree

NOBODY = 65534


@pytest.mark.parametrize(("overlay", "options"), [
    (Overlay("/w", "/t", [], False), b"userxattr,lowerdir=/w,upperdir=/t/upper,workdir=/t/work"),
    (Overlay("/w", "/t", [], True),
     b"userxattr,volatile,lowerdir=/w,upperdir=/t/upper,workdir=/t/work"),
    (Overlay("/a,b:c\\d", "/t", [("/a,b:c\\d/.env", False)], True),
     b"userxattr,volatile,lowerdir=/a\\,b\\:c\\\\d,upperdir=/t/upper,workdir=/t/work"),
    (Overlay("/w", "/x,volatile", [], False),
     b"userxattr,lowerdir=/w,upperdir=/x\\,volatile/upper,workdir=/x\\,volatile/work"),
])
def test_the_options_say_volatile_only_when_asked(overlay: Overlay, options: bytes) -> None:
    assert overlay_options(overlay) == options


def _kernel_has_volatile() -> bool:
    found = re.match(r"(\d+)\.(\d+)", platform.release())
    return found is not None and (int(found[1]), int(found[2])) >= (5, 10)


def test_the_probe_finds_volatile_where_the_kernel_has_it() -> None:
    status = overlay_probe.overlay_status()
    if not status.available:
        pytest.skip(status.reason)
    if not _kernel_has_volatile():
        pytest.skip(f"Linux {platform.release()} predates the volatile option (5.10)")
    assert status.volatile, status


def test_a_kernel_refusing_volatile_still_runs_transactions(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mount = shutil.which("mount")
    if shutil.which("unshare") is None or mount is None:
        pytest.skip("util-linux's unshare or mount is missing")
    if not overlay_probe.overlay_status().available:
        pytest.skip(overlay_probe.overlay_status().reason)
    calls = tmp_path / "calls"
    fake = tmp_path / "bin" / "mount"
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\necho \"$*\" >> {calls}\n"
                    "case \"$*\" in *volatile*) echo 'mount: bad option' >&2; exit 32;; esac\n"
                    f"exec {mount} \"$@\"\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    status = overlay_probe.overlay_status.__wrapped__()
    assert status.available and not status.volatile, status
    first, second = calls.read_text().splitlines()
    assert "volatile," in first and "volatile" not in second


def test_a_volatile_overlays_folders_are_removed_by_a_user_without_capabilities() -> None:
    if not overlay_probe.overlay_status().volatile:
        pytest.skip("no volatile overlay here")
    root = Path(tempfile.mkdtemp(prefix="reins-volatile-"))
    try:
        root.chmod(0o777)  # reachable by nobody
        call = root / "call"
        layers = [call / name for name in ("lower", "upper", "work", "merged")]
        for layer in layers:
            layer.mkdir(parents=True)
        lower, upper, work, merged = map(str, layers)
        subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                        'mount -t overlay overlay -o "volatile,lowerdir=$1,upperdir=$2,'
                        'workdir=$3" "$4" && echo x > "$4/f"', "-", lower, upper, work, merged],
                       check=True)
        dirty = call / "work/work/incompat/volatile/dirty"
        assert oct((call / "work/work").stat().st_mode & 0o777) == "0o0"
        assert os.geteuid() != 0 or dirty.is_file()  # as another user: not even seen
        if os.geteuid() == 0:
            subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(call)], check=True)
            assert _as_nobody(lambda: remove_tree(call)) == 0
        else:
            remove_tree(call)
        assert not call.exists()
    finally:
        shutil.rmtree(root)


def _as_nobody(work: Callable[[], object]) -> int:
    """Run `work` in a child as uid and gid nobody, with no capability left: its exit code
    (0 when it ran, 1 when it raised)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgroups([])
            os.setresgid(NOBODY, NOBODY, NOBODY)
            os.setresuid(NOBODY, NOBODY, NOBODY)
            work()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)
