"""Issue 14 §1: a command holds no capability, as root and as an ordinary user.

bubblewrap started by uid 0 without a user namespace keeps every capability inside: a
command could `umount /proc` and read the host's, remount `/` read-write, `nsenter` into the
host. Each spelling below must fail, and the process limit must hold for root too.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kernel.sandbox.pids import usable_hierarchy
from tests.security.conftest import Confined

CAPABILITY_LINES = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")

ESCAPES = [
    "umount -l /proc",
    "umount /proc",
    "umount -l /",
    "umount -l /tmp",
    "mount -o remount,rw /",
    "mount -o remount,rw /usr",
    "mount -t tmpfs none /mnt",
    "mount -t proc proc /mnt",
    "mkdir -p /tmp/m && mount --bind / /tmp/m",
    "unshare -r true",
    "unshare --user --map-root-user true",
    "unshare -m true",
    "unshare -n true",
    "unshare -p -f true",
    "chroot / true",
    "cd /tmp && mkdir -p old && pivot_root . old",
    "nsenter -t 1 -m true",
    "nsenter --mount=/proc/1/ns/mnt true",
    "nsenter --net=/proc/self/ns/net true",
    "nsenter -t 1 -U true",
    "python3 -c 'import ctypes,sys; l=ctypes.CDLL(None,use_errno=True); "
    "sys.exit(0 if l.unshare(0x10000000)==0 else 1)'",  # unshare(CLONE_NEWUSER) directly
    "python3 -c 'import ctypes,sys; l=ctypes.CDLL(None,use_errno=True); "
    "sys.exit(0 if l.setuid(1234)==0 else 1)'",
    "touch /etc/reins-escape",
    "touch /usr/reins-escape",
]


def test_a_command_holds_no_capability(confined: Confined) -> None:
    report = confined(["grep ^Cap /proc/self/status"])
    (outcome,) = report["outcomes"]
    fields = dict(line.split(":\t") for line in outcome["output"].splitlines())
    assert set(CAPABILITY_LINES) <= set(fields), outcome
    assert {name: int(fields[name], 16) for name in CAPABILITY_LINES} == dict.fromkeys(
        CAPABILITY_LINES, 0), outcome


def test_no_spelling_of_a_mount_namespace_or_privilege_escape_works(confined: Confined) -> None:
    commands = [f"{escape}; echo exit=$?" for escape in ESCAPES]
    commands.append("grep -c ' /proc ' /proc/self/mounts; ls /etc/reins-escape 2>&1; echo end")
    report = confined(commands)
    *escapes, after = report["outcomes"]
    for escape, outcome in zip(ESCAPES, escapes, strict=True):
        assert "exit=0" not in outcome["output"], (confined.who, escape, outcome["output"])
    assert "No such file" in after["output"] and "end" in after["output"], after


def test_no_host_process_or_namespace_is_in_reach(confined: Confined) -> None:
    """The process running Reins (here: the test's helper, the executor's parent) cannot be
    seen, signalled, traced or entered."""
    host = os.getpid()
    report = confined([
        "ls /proc | grep -c '^[0-9]'",
        f"cat /proc/{host}/environ; echo exit=$?",
        f"kill -0 {host}; echo exit=$?",
        f"nsenter -t {host} -m -n true; echo exit=$?",
        "python3 -c 'import ctypes,sys; l=ctypes.CDLL(None,use_errno=True); "
        f"sys.exit(0 if l.ptrace(16,{host},0,0)==0 else 1)'; echo exit=$?",  # PTRACE_ATTACH
        "readlink /proc/1/ns/user /proc/self/ns/user",
    ])
    count, environ, kill, nsenter, ptrace, userns = report["outcomes"]
    assert int(count["output"].split()[0]) <= 4, count  # init, sh, ls, grep
    for outcome in (environ, kill, nsenter, ptrace):
        assert "exit=0" not in outcome["output"], outcome
    own = Path("/proc/self/ns/user").readlink()
    assert str(own) not in userns["output"], userns  # a user namespace of its own


def test_the_process_limit_holds_for_every_user(confined: Confined) -> None:
    """Root is exempt from RLIMIT_NPROC: as root, a pids cgroup per command holds the limit."""
    if confined.who == "current" and os.getuid() == 0 and usable_hierarchy() is None:
        pytest.skip("root without a writable pids cgroup: `reins doctor` says the limit is "
                    "not enforced")
    limit = 40 if confined.who == "current" and os.getuid() == 0 else None
    if limit is None:
        pytest.skip("an ordinary user's limit is tested in tests/sandbox/test_sandbox_limits.py")
    report = confined(["for i in $(seq 120); do sleep 5 & done; wait; echo all-started"],
                      processes=limit)
    (outcome,) = report["outcomes"]
    assert report["status"]["process_limit"] == "cgroup"
    assert outcome["stopped"] == f"stopped: process limit {limit} reached", outcome
    assert "all-started" not in outcome["output"]
    assert report["cgroups_left"] == [], report  # each command's cgroup was removed after it
