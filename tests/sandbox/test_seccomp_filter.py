"""kernel.sandbox.seccomp: the filter's decisions as a table (the program run by a classic-BPF
interpreter, for every architecture it knows, including those this machine cannot run), its
numbers against the kernel's headers, and where it is (not) installed.

The filter tried for real from inside the sandbox: tests/security/test_sandbox_seccomp.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import struct
from pathlib import Path

import pytest

from kernel.paths import AppPaths
from kernel.sandbox import detect, seccomp
from kernel.sandbox.executor import CommandExecutor, SandboxUnavailable
from kernel.sandbox.seccomp import (
    ARCHES,
    NOT_IMPLEMENTED,
    REFUSED,
    RET_ALLOW,
    RET_ERRNO,
    RET_KILL_PROCESS,
    Arch,
    native_arch,
    program,
)
from kernel.tools.externalize import OutputStore

EPERM = RET_ERRNO | 1
ENOSYS = RET_ERRNO | 38
AUDIT_ARCH_I386 = 0x40000003
AUDIT_ARCH_ARM = 0x40000028
CLONE_THREAD_FLAGS = 0x003D0F00
"""What glibc's pthread_create passes to clone (VM, FS, FILES, SIGHAND, THREAD, SYSVSEM, …)."""
FORK_FLAGS = 0x01200011
"""glibc's fork: CHILD_SETTID, CHILD_CLEARTID, SIGCHLD."""


def run_bpf(prog: bytes, nr: int, arch: int, args: tuple[int, ...] = ()) -> int:
    """The classic-BPF program over one `struct seccomp_data` (little-endian)."""
    full = (*args, *([0] * (6 - len(args))))
    data = struct.pack("<iIQ6Q", nr, arch, 0, *(a & (2**64 - 1) for a in full))
    insns = list(struct.iter_unpack("=HBBI", prog))
    pc, acc = 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        if code == 0x20:  # ld [k]
            acc = struct.unpack_from("<I", data, k)[0]
        elif code == 0x06:  # ret k
            return k
        elif code in (0x15, 0x35, 0x45):  # jeq, jge, jset
            hit = (acc == k if code == 0x15 else acc >= k if code == 0x35 else bool(acc & k))
            pc += jt if hit else jf
        else:
            raise AssertionError(f"an instruction the filter should not hold: {code:#x}")
        pc += 1


def cases(arch: Arch) -> list[tuple[str, int, tuple[int, ...], int]]:
    n = arch.numbers
    table = [(name, n[name], (), EPERM) for name in REFUSED if name in n]
    table += [(name, n[name], (), ENOSYS) for name in NOT_IMPLEMENTED]
    table += [
        ("clone NEWUSER", n["clone"], (0x10000000 | 0x11,), EPERM),
        ("clone NEWNS", n["clone"], (0x00020000,), EPERM),
        ("clone NEWNET", n["clone"], (0x40000000,), EPERM),
        ("clone NEWTIME", n["clone"], (0x80,), EPERM),
        ("clone NEWCGROUP", n["clone"], (0x02000000,), EPERM),
        ("clone namespace flag, high word set", n["clone"], (0xFFFF_0000_1000_0000,), EPERM),
        ("clone a thread", n["clone"], (CLONE_THREAD_FLAGS,), RET_ALLOW),
        ("clone a fork", n["clone"], (FORK_FLAGS,), RET_ALLOW),
        ("unshare NEWUSER", n["unshare"], (0x10000000,), EPERM),
        ("unshare NEWPID", n["unshare"], (0x20000000,), EPERM),
        ("unshare FILES", n["unshare"], (0x400,), RET_ALLOW),
        ("personality query", n["personality"], (0xFFFFFFFF,), RET_ALLOW),
        ("personality LINUX", n["personality"], (0,), RET_ALLOW),
        ("personality no ASLR", n["personality"], (0x0040000,), EPERM),
        ("personality no ASLR + 32-bit", n["personality"], (0x0040008,), EPERM),
        ("ptrace (a debugger of its own processes)", n["ptrace"], (16, 5), RET_ALLOW),
        ("read", 0 if arch.name == "x86_64" else 63, (), RET_ALLOW),
        ("number 0", 0, (), RET_ALLOW),
        ("a number no one uses", 999, (), RET_ALLOW),
    ]
    return table


@pytest.mark.parametrize("arch", ARCHES.values(), ids=lambda a: a.name)
def test_the_filter_decides_each_call_as_the_table_says(arch: Arch) -> None:
    prog = program(arch)
    for name, nr, args, expected in cases(arch):
        assert run_bpf(prog, nr, arch.audit, args) == expected, name


@pytest.mark.parametrize("arch", ARCHES.values(), ids=lambda a: a.name)
def test_a_call_of_another_architecture_kills_the_process(arch: Arch) -> None:
    prog = program(arch)
    for other in (AUDIT_ARCH_I386, AUDIT_ARCH_ARM, *(a.audit for a in ARCHES.values()
                                                   if a is not arch)):
        for nr in (0, 39, arch.numbers["keyctl"]):
            assert run_bpf(prog, nr, other) == RET_KILL_PROCESS


def test_x32_calls_fail_on_x86_64() -> None:
    prog = program(ARCHES["x86_64"])
    for nr in (0x40000000, 0x40000000 | 39, 0x40000000 | 250, 0xFFFFFFFF):
        assert run_bpf(prog, nr - (1 << 32) if nr >= 1 << 31 else nr,
                       ARCHES["x86_64"].audit) == EPERM


HEADERS = {
    "x86_64": Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
    "aarch64": Path("/usr/include/asm-generic/unistd.h"),
}


@pytest.mark.parametrize("name", ARCHES)
def test_the_numbers_are_the_kernels(name: str) -> None:
    header = HEADERS[name]
    if not header.is_file():
        pytest.skip(f"{header} is not installed (linux-libc-dev)")
    defined = {m[1]: int(m[2]) for m in re.finditer(
        r"#define __NR(?:3264)?_(\w+)\s+(\d+)", header.read_text())}
    for call, number in ARCHES[name].numbers.items():
        assert defined.get(call) == number, call


def test_every_name_is_known_where_it_exists() -> None:
    """A misspelt name would be skipped silently: each refused name is in some table."""
    known = {name for arch in ARCHES.values() for name in arch.numbers}
    assert set(REFUSED) <= known
    assert {"keyctl", "add_key", "request_key", "bpf", "mount", "setns"} <= set(REFUSED)


def test_machines_without_a_table_have_none() -> None:
    assert native_arch("x86_64") is ARCHES["x86_64"]
    assert native_arch("arm64") is ARCHES["aarch64"]
    for machine in ("riscv64", "ppc64le", "s390x", "i686", "armv7l", ""):
        assert native_arch(machine or "unknown") is None


def test_without_a_table_there_is_no_sandbox_and_commands_are_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail closed: on a machine the filter does not know, `detect_sandbox` says none (so every
    command asks) and a command not approved is not run."""
    monkeypatch.setattr(seccomp, "native_arch", lambda machine=None: None)
    detect._detect.cache_clear()
    try:
        status = detect.detect_sandbox()
        assert not status.available and "seccomp" in status.reason
        executor = CommandExecutor(AppPaths(data=tmp_path / "d", config=tmp_path / "c"))
        with (OutputStore(tmp_path / "out").spool("c") as spool,
              pytest.raises(SandboxUnavailable, match="seccomp")):
            asyncio.run(executor.run("true", workspace=tmp_path, spool=spool, timeout_s=5))
    finally:
        detect._detect.cache_clear()


def test_each_start_gets_its_own_descriptor_at_the_start_of_the_program() -> None:
    arch = native_arch()
    if arch is None:
        pytest.skip("no table for this machine")
    first, second = seccomp.open_program(), seccomp.open_program()
    try:
        assert first != second
        assert os.read(first, 1 << 16) == program(arch)
        assert os.read(second, 1 << 16) == program(arch)
        assert not os.get_inheritable(first)
    finally:
        os.close(first)
        os.close(second)


def _seccomp_mode(pid: int) -> str:
    status = Path(f"/proc/{pid}/status").read_text()
    return status.split("Seccomp:")[1].split()[0]


def test_the_filter_is_the_sandboxed_programs_not_bubblewraps(tmp_path: Path) -> None:
    """bubblewrap itself (it mounts the sandbox, then waits for it outside) runs unfiltered;
    the sandbox's init and the command run filtered (mode 2)."""
    if not detect.detect_sandbox().available:
        pytest.skip("bubblewrap is not available here")
    executor = CommandExecutor(AppPaths(data=tmp_path / "d", config=tmp_path / "c"),
                               ahead=False)
    seen: dict[str, str] = {}

    async def main() -> None:
        with OutputStore(tmp_path / "out").spool("c") as spool:
            run = asyncio.ensure_future(executor.run(
                "sleep 2", workspace=tmp_path, spool=spool, timeout_s=10))
            for _ in range(100):
                await asyncio.sleep(0.02)
                outer = [p for p in children(os.getpid()) if comm(p) == "bwrap"]
                inner = [c for p in outer for c in children(p)]
                if outer and inner:  # the init loads the filter once the sandbox is set up
                    seen["bwrap"] = _seccomp_mode(outer[0])
                    seen["init"] = _seccomp_mode(inner[0])
                    if seen["init"] == "2":
                        break
            assert (await run).exit_code == 0
        executor.shutdown()

    asyncio.run(main())
    assert seen == {"bwrap": "0", "init": "2"}


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def children(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            found += [int(c) for c in (task / "children").read_text().split()]
    return found
