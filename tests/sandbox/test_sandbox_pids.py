"""The process limit where RLIMIT_NPROC does not hold (kernel.sandbox.pids): which uid a
process really is, where the pids controller is mounted, a command's own cgroup."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from kernel.sandbox import pids
from kernel.sandbox.doctor import report
from kernel.sandbox.pids import CommandCgroup, Hierarchy, kernel_uid, usable_hierarchy


@pytest.mark.parametrize(("uid_map", "uid", "expected"), [
    ("         0          0 4294967295\n", 0, 0),
    ("         0          0 4294967295\n", 1000, 1000),
    ("         0      65534          1\n", 0, 65534),
    ("      1000          0          1\n", 1000, 0),
    ("         0     100000      65536\n", 1000, 101000),
    ("         0     100000      65536\n", 70000, None),
    ("0 1000 1\n1 100000 65535\n", 1, 100000),
    ("0 1000 1\n1 100000 65535\n", 0, 1000),
    ("", 0, None),
    ("garbage line\n", 0, None),
    ("0 0\n", 0, None),
])
def test_the_kernel_uid_is_read_through_the_user_namespace(
    tmp_path: Path, uid_map: str, uid: int, expected: int | None
) -> None:
    path = tmp_path / "uid_map"
    path.write_text(uid_map)
    assert kernel_uid(uid, str(path)) == expected


def test_a_missing_uid_map_is_no_answer(tmp_path: Path) -> None:
    assert kernel_uid(0, str(tmp_path / "absent")) is None


V1 = "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
V1_OTHERS = "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
V2_NO_PIDS = "41 31 0:38 / {mount} rw,relatime - cgroup2 cgroup2 rw\n"


@pytest.mark.parametrize(("mountinfo", "controllers", "expected"), [
    (V1, "", [(Path("/sys/fs/cgroup/pids"), 1)]),
    (V1_OTHERS, "", []),
    (V2_NO_PIDS, "cpu memory", []),
    (V2_NO_PIDS, "cpu memory pids", [("{mount}", 2)]),
    (V2_NO_PIDS + V1, "pids", [(Path("/sys/fs/cgroup/pids"), 1), ("{mount}", 2)]),
    ("not a mountinfo line\n", "", []),
    ("", "", []),
])
def test_the_pids_controller_is_found_in_the_mount_table(
    tmp_path: Path, mountinfo: str, controllers: str, expected: list[tuple[object, int]]
) -> None:
    (tmp_path / "cgroup.controllers").write_text(controllers)
    found = pids._pids_mounts(mountinfo.replace("{mount}", str(tmp_path)))
    assert found == [Hierarchy(tmp_path if m == "{mount}" else m, v)  # type: ignore[arg-type]
                     for m, v in expected]


def test_the_process_limit_mechanism_matches_the_user() -> None:
    if kernel_uid() not in (0, None):
        assert pids.process_limit() == "rlimit"
    elif usable_hierarchy() is not None:
        assert pids.process_limit() == "cgroup"
    else:
        assert pids.process_limit() == "none"
        assert "process limit: NOT ENFORCED" in report()


def test_a_command_cgroup_holds_its_process_and_is_removed_after() -> None:
    hierarchy = usable_hierarchy()
    if hierarchy is None:
        pytest.skip("no writable pids cgroup here (an ordinary user needs none)")
    cgroup = CommandCgroup.make(hierarchy, 7)
    try:
        assert (cgroup.path / "pids.max").read_text().strip() == "7"
        sleeper = subprocess.Popen(["sleep", "30"])
        cgroup.join(sleeper.pid)
        assert cgroup.pids() == [sleeper.pid]
        cgroup.remove()  # kills what is left in it
        assert sleeper.wait(5) == -signal.SIGKILL
    finally:
        deadline = time.monotonic() + 5
        while not cgroup.remove() and time.monotonic() < deadline:
            time.sleep(0.01)
    assert not cgroup.path.exists()


def test_doctor_says_how_commands_are_confined(sandbox_status) -> None:
    text = report()
    assert "capabilities: none (CapEff, CapPrm and CapBnd 0)" in text
    assert "nested user namespaces: refused" in text
    assert "running as: " in text and f"(uid {os.getuid()}" in text
    expected = {"rlimit": "process limit: RLIMIT_NPROC", "cgroup": "a pids cgroup per command",
                "none": "process limit: NOT ENFORCED"}[sandbox_status.process_limit]
    assert expected in text
