"""bwrap's start handshake: the sandbox's pid is read strictly and the limits really land."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kernel.sandbox.handshake import HandshakeError, child_pid, set_limits
from kernel.sandbox.limits import MiB, ResourceLimits


def test_the_pid_is_read_from_bwraps_info() -> None:
    info = b'{\n    "child-pid": 4242,\n    "cgroup-namespace": 4026531835\n}\n'
    assert child_pid(info) == 4242


@pytest.mark.parametrize(
    ("info", "words"),
    [
        (b"", "stopped before it created the sandbox"),
        (b"{", "did not report"),
        (b"\xff\xfe", "did not report"),
        (b"[]", "did not report"),
        (b'{"pid": 12}', "did not report"),
        (b'{"child-pid": "12"}', "impossible process id"),
        (b'{"child-pid": true}', "impossible process id"),
        (b'{"child-pid": 1}', "impossible process id"),
        (b'{"child-pid": -5}', "impossible process id"),
        (b'{"child-pid": 12.5}', "impossible process id"),
    ],
)
def test_anything_else_is_refused(info: bytes, words: str) -> None:
    with pytest.raises(HandshakeError, match=words):
        child_pid(info)


def _limits_of(pid: int) -> dict[str, tuple[str, str]]:
    rows = Path(f"/proc/{pid}/limits").read_text().splitlines()[1:]
    return {row[:26].strip(): tuple(row[26:].split()[:2]) for row in rows}  # type: ignore[misc]


def test_the_limits_land_on_the_process() -> None:
    proc = subprocess.Popen(["sleep", "30"])
    try:
        set_limits(proc.pid, ResourceLimits(address_space=512 * MiB, file_size=3 * MiB,
                                            processes=64, cpu_s=7))
        rows = _limits_of(proc.pid)
    finally:
        proc.kill()
        proc.wait()
    assert rows["Max address space"] == (str(512 * MiB), str(512 * MiB))
    assert rows["Max file size"] == (str(3 * MiB), str(3 * MiB))
    assert rows["Max processes"] == ("64", "64")
    assert rows["Max cpu time"] == ("7", "12")


def test_a_process_that_does_not_exist_is_an_error() -> None:
    """A pid above pid_max: a reaped child's pid could already belong to someone else."""
    beyond = int(Path("/proc/sys/kernel/pid_max").read_text()) + 1
    with pytest.raises(HandshakeError, match="RLIMIT_AS could not be set"):
        set_limits(beyond, ResourceLimits(cpu_s=1))
