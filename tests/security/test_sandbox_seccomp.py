"""Issue 28 §D: the seccomp filter, tried from inside the real sandbox as root and as nobody.

Each system call a command never needs fails with EPERM (`clone3` with ENOSYS, so libc
falls back to `clone`, whose flags the filter reads); the probe's arguments make most of them
fail differently without the filter (a bad descriptor, a bad address, an unknown key), so
the table shows the filter, not only a missing capability. Ordinary commands (threads,
forks, git, make, a debugger's ptrace of its own child) still work, and the filter holds for
the sandbox's init and every process a command starts.
"""

from __future__ import annotations

import json
import platform
import shlex
from pathlib import Path
from typing import Any

import pytest

from kernel.sandbox.seccomp import CLONE_NAMESPACES, X32_BIT, native_arch
from tests.security.conftest import Confined

PROBE = Path(__file__).with_name("syscall_probe.py")
EPERM, ENOSYS = 1, 38
CLONE_NEWUSER, CLONE_FS, CLONE_FILES = 0x10000000, 0x200, 0x400
BOGUS = 0x7FFFFFF0
"""A key id, descriptor or clock no one has."""

ARGS: dict[str, list[int]] = {
    "keyctl": [11, BOGUS, 0, 0],  # KEYCTL_READ of a key that does not exist: ENOKEY
    "add_key": [0, 0, 0, 0, -3],  # bad addresses: EFAULT
    "request_key": [0, 0, 0, -3],
    "bpf": [999, 0, 0],
    "perf_event_open": [0, 0, -1, -1, 0],
    "userfaultfd": [0xFFFF],
    "io_uring_setup": [0, 0],
    "init_module": [0, 0, 0],
    "finit_module": [-1, 0, 0],
    "delete_module": [0, 0],
    "kexec_load": [0, 0, 0, 0],
    "kexec_file_load": [-1, -1, 0, 0, 0],
    "mount": [0, 0, 0, 0, 0],
    "umount2": [0, 0],
    "pivot_root": [0, 0],
    "fsopen": [0, 0],
    "fsconfig": [-1, 0, 0, 0, 0],
    "fsmount": [-1, 0, 0],
    "fspick": [-1, 0, 0],
    "move_mount": [-1, 0, -1, 0, 0],
    "open_tree": [-1, 0, 0],  # no capability needed: EFAULT without the filter
    "mount_setattr": [-1, 0, 0, 0, 0],
    "setns": [-1, 0],  # EBADF without the filter
    "swapon": [0, 0],
    "swapoff": [0],
    "reboot": [0, 0, 0, 0],
    "acct": [0],
    "settimeofday": [0, 0],  # a no-op that succeeds without the filter
    "clock_settime": [BOGUS, 0],
    "iopl": [0],  # lowering the level succeeds without the filter
    "ioperm": [0, 0, 0],
}
"""The refused calls of kernel.sandbox.seccomp.REFUSED, with harmless arguments."""


def probe_calls() -> tuple[list[tuple[str, int, list[int]]], dict[str, int]]:
    """(the calls for syscall_probe.py, the errno expected of each)."""
    arch = native_arch()
    assert arch is not None
    numbers = arch.numbers
    calls = [(name, numbers[name], args) for name, args in ARGS.items() if name in numbers]
    calls += [
        ("clone NEWUSER", numbers["clone"], [CLONE_NEWUSER | CLONE_FS, 0, 0, 0, 0]),
        ("clone every namespace", numbers["clone"], [CLONE_NAMESPACES | CLONE_FS, 0, 0, 0, 0]),
        ("unshare NEWUSER", numbers["unshare"], [CLONE_NEWUSER]),
        ("clone3", numbers["clone3"], [0, 0]),
        ("personality ADDR_NO_RANDOMIZE", numbers["personality"], [0x0040000]),
    ]
    expected = {name: EPERM for name, _n, _a in calls}
    expected["clone3"] = ENOSYS
    if arch.x32:
        calls.append(("x32 getpid", X32_BIT | 39, []))
        expected["x32 getpid"] = EPERM
    calls += [("unshare FILES", numbers["unshare"], [CLONE_FILES]),
              ("personality query", numbers["personality"], [0xFFFFFFFF])]
    expected |= {"unshare FILES": 0, "personality query": 0}
    return calls, expected


def prepare(folder: Path) -> None:
    (folder / "workspace" / "probe.py").write_bytes(PROBE.read_bytes())


def outputs(report: dict[str, Any]) -> list[str]:
    return [str(o["output"]) for o in report["outcomes"]]


@pytest.mark.skipif(native_arch() is None, reason=f"no seccomp table for {platform.machine()}")
def test_every_refused_call_fails_inside_the_sandbox(confined: Confined) -> None:
    calls, expected = probe_calls()
    command = f"python3 probe.py {shlex.quote(json.dumps(calls))}"
    nested = "sh -c " + shlex.quote("sh -c " + shlex.quote(command))  # a grandchild
    report = confined([command, nested], prepare=prepare)
    for outcome in report["outcomes"]:
        assert outcome["exit_code"] == 0, outcome
        found = json.loads(outcome["output"].strip().splitlines()[-1])
        assert found == expected, {k: (found.get(k), v) for k, v in expected.items()
                                   if found.get(k) != v}


ORDINARY = [
    "ls -la /",
    "git init -q repo && cd repo && git status --short && git -c user.name=a "
    "-c user.email=a@b commit -q --allow-empty -m x && git log --oneline | wc -l",
    "python3 -c \"import subprocess; subprocess.run(['true'], check=True); print('sub ok')\"",
    "printf 'all:\\n\\t@echo made\\n' > Makefile && make",
    "python3 -c \"import threading; t = [threading.Thread(target=sum, args=([1],)) "
    "for _ in range(8)]; [x.start() for x in t]; [x.join() for x in t]; print('threads ok')\"",
    "sh -c 'sleep 1 & wait' && echo waited",
    "python3 -c \"import os, multiprocessing as m; p = m.Pool(2); "
    "print(sum(p.map(abs, range(10)))); p.close(); p.join()\"",
    # a debugger's ptrace: attach to its own child, then let it go
    "python3 -c \"import ctypes, os, signal; c = ctypes.CDLL(None, use_errno=True); "
    "p = os.fork()\nif p == 0: signal.pause()\n"
    "r = c.ptrace(16, p, 0, 0); os.waitpid(p, 0); c.ptrace(17, p, 0, 0); os.kill(p, 9); "
    "os.waitpid(p, 0); print('ptrace', r, ctypes.get_errno())\"",
    # the filter holds for the sandbox's init and for a grandchild of the command
    "grep Seccomp /proc/1/status; sh -c 'sh -c \"grep Seccomp: /proc/self/status\"'",
]


def test_ordinary_commands_still_work(confined: Confined) -> None:
    report = confined(ORDINARY)
    for outcome in report["outcomes"]:
        assert outcome["exit_code"] == 0, outcome
    text = outputs(report)
    assert "1" in text[1].split()
    assert "sub ok" in text[2] and "made" in text[3] and "threads ok" in text[4]
    assert "waited" in text[5] and "45" in text[6]
    assert "ptrace 0 0" in text[7]
    seccomp = text[8].split()
    assert seccomp[:2] == ["Seccomp:", "2"] and int(seccomp[3]) >= 1  # the init: filtered
    assert seccomp[4:] == ["Seccomp:", "2"]  # the grandchild: filtered



KEYRING_SCRIPT = Path(__file__).with_name("keyring_confined.py")
KEYRING_READER = Path(__file__).with_name("keyring_reader.py")


@pytest.mark.skipif(native_arch() is None, reason=f"no seccomp table for {platform.machine()}")
def test_the_callers_session_keyring_is_out_of_reach(confined: Confined) -> None:
    """Break 6: a key in the session keyring of the process that runs Reins (inherited by
    every process it starts, and possessed, so readable without the filter: checked by hand
    with bubblewrap alone) cannot be read, found or even described by a command, and its
    name is not in /proc/keys (which lists it, without the mount that hides it)."""
    arch = native_arch()
    assert arch is not None

    def plant_reader(folder: Path) -> None:
        (folder / "workspace" / "reader.py").write_bytes(KEYRING_READER.read_bytes())

    read = f"python3 reader.py {arch.numbers['keyctl']} \"$(cat key-id)\""
    listings = "cat /proc/keys /proc/key-users 2>&1; true"
    report = confined([read, f"sh -c {shlex.quote(read)}", listings], prepare=plant_reader,
                      script=KEYRING_SCRIPT)
    assert "reins-canary" not in report["outcomes"][2]["output"]  # not even its name
    for outcome in report["outcomes"][:2]:
        assert outcome["exit_code"] == 0, outcome
        assert "reins-keyring-canary" not in outcome["output"]
        found = json.loads(outcome["output"].strip().splitlines()[-1])
        assert found == {"read": {"errno": EPERM}, "search": {"errno": EPERM},
                         "describe": {"errno": EPERM}}
