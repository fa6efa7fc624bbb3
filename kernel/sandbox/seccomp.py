"""The seccomp filter of every sandboxed program: the system calls a command never needs fail.

A classic-BPF program (what `bwrap --seccomp FD` loads), built here in pure Python: no
package brings more than these few lines would (libseccomp's binding is not on PyPI). It
refuses with EPERM:
- the kernel keyrings (`keyctl`, `add_key`, `request_key`): a command inherits the caller's
  session keyring, where Kerberos, aws-vault and keyutils keep secrets;
- what reaches into the kernel (`bpf`, `perf_event_open`, `userfaultfd`, `io_uring_*`: the
  largest kernel attack surface of recent years, which Docker's default profile refuses too;
  programs fall back to ordinary calls), modules, `kexec_*`, `reboot`, `swapon/off`, `acct`,
  setting the clock, `iopl`/`ioperm`;
- mounts, old and new (`mount` … `mount_setattr`), `setns`, and `unshare`/`clone` with a
  namespace flag; `clone3` fails with ENOSYS (its flags are in memory the filter cannot
  read), so libc falls back to `clone`, whose flags it can;
- `personality` turning address-space randomization off (a query still works).
`ptrace` stays allowed: the sandbox is a PID namespace of its own, so a command sees only its
own processes (bubblewrap's init included, which carries the same filter), and `gdb` and
`strace` keep working. A filter is inherited by every child and kept across `execve`.

The filter checks the architecture of each call: one it was not built for (a 32-bit
program, `int 0x80`, where the numbers differ) kills the process, and on x86_64 an x32 call
fails. Where this module knows no table (`native_arch` is None) there is no sandbox
(kernel.sandbox.detect), so every command is asked: fail closed.

bubblewrap reads the program from the descriptor until end of file and installs it on the
sandboxed program only (its own setup runs unfiltered; binders from the kernel's zygote enter
from outside and are not filtered). Each start needs a descriptor at offset 0: the program is
kept in one sealed memfd and `open_program` opens it anew through /proc/self/fd.
"""

from __future__ import annotations

import fcntl
import functools
import os
import platform
import struct
from collections.abc import Mapping
from dataclasses import dataclass

# classic BPF (linux/filter.h, linux/bpf_common.h)
_LD_W_ABS = 0x20
_JEQ = 0x15
_JGE = 0x35
_JSET = 0x45
_RET = 0x06
# linux/seccomp.h
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000
EPERM = 1
ENOSYS = 38
# offsets in struct seccomp_data (the low 32 bits of an argument: both arches are little-endian)
_NR, _ARCH = 0, 4
_ARG0 = 16

CLONE_NAMESPACES = (0x00000080 | 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000
                    | 0x10000000 | 0x20000000 | 0x40000000)
"""CLONE_NEWTIME, NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET."""
ADDR_NO_RANDOMIZE = 0x0040000
PERSONALITY_QUERY = 0xFFFFFFFF
X32_BIT = 0x40000000

REFUSED = (
    "keyctl", "add_key", "request_key",
    "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "mount", "umount2", "pivot_root", "fsopen", "fsconfig", "fsmount", "fspick",
    "move_mount", "open_tree", "mount_setattr", "setns",
    "swapon", "swapoff", "reboot", "acct", "settimeofday", "clock_settime",
    "iopl", "ioperm",
)
"""Refused whatever their arguments (EPERM); a name an architecture lacks is skipped."""
NAMESPACE_FLAG_CALLS = ("clone", "unshare")
"""Refused (EPERM) when their first argument holds a namespace flag."""
NOT_IMPLEMENTED = ("clone3",)
"""Fail with ENOSYS: libc then uses `clone`."""


@dataclass(frozen=True)
class Arch:
    name: str
    audit: int
    """AUDIT_ARCH_* (linux/audit.h): `seccomp_data.arch` of this architecture's calls."""
    numbers: Mapping[str, int]
    x32: bool = False
    """Calls with the x32 bit share this `audit` value (x86_64): they are refused."""


_GENERIC = {  # asm-generic/unistd.h (aarch64, and 64-bit newer architectures)
    "umount2": 39, "mount": 40, "pivot_root": 41, "acct": 89, "personality": 92,
    "unshare": 97, "kexec_load": 104, "init_module": 105, "delete_module": 106,
    "clock_settime": 112, "ptrace": 117, "reboot": 142, "settimeofday": 170,
    "add_key": 217, "request_key": 218, "keyctl": 219, "clone": 220, "swapon": 224,
    "swapoff": 225, "perf_event_open": 241, "setns": 268, "finit_module": 273, "bpf": 280,
    "userfaultfd": 282, "kexec_file_load": 294,
}
_COMMON = {  # the same number on every architecture since 5.1
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "open_tree": 428,
    "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "clone3": 435, "mount_setattr": 442,
}
ARCHES = {
    "x86_64": Arch("x86_64", 0xC000003E, {
        "clone": 56, "ptrace": 101, "personality": 135, "pivot_root": 155, "acct": 163,
        "settimeofday": 164, "mount": 165, "umount2": 166, "swapon": 167, "swapoff": 168,
        "reboot": 169, "iopl": 172, "ioperm": 173, "init_module": 175, "delete_module": 176,
        "clock_settime": 227, "kexec_load": 246, "add_key": 248, "request_key": 249,
        "keyctl": 250, "unshare": 272, "perf_event_open": 298, "setns": 308,
        "finit_module": 313, "kexec_file_load": 320, "bpf": 321, "userfaultfd": 323,
        **_COMMON}, x32=True),
    "aarch64": Arch("aarch64", 0xC00000B7, {**_GENERIC, **_COMMON}),
}
MACHINES = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}


def native_arch(machine: str | None = None) -> Arch | None:
    """The table for this machine (`platform.machine()`), None where there is none."""
    name = MACHINES.get((machine or platform.machine()).lower())
    return ARCHES[name] if name is not None else None


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program(arch: Arch) -> bytes:
    """The filter for `arch` as `struct sock_filter[]` (see the module docstring)."""
    refused = [arch.numbers[n] for n in REFUSED if n in arch.numbers]
    by_flags = [arch.numbers[n] for n in NAMESPACE_FLAG_CALLS]
    enosys = [arch.numbers[n] for n in NOT_IMPLEMENTED]
    personality = arch.numbers["personality"]
    # layout: arch check, number dispatch, then the shared tails the jumps lead to
    tails = [
        ("allow", [_insn(_RET, RET_ALLOW)]),
        ("eperm", [_insn(_RET, RET_ERRNO | EPERM)]),
        ("enosys", [_insn(_RET, RET_ERRNO | ENOSYS)]),
        ("flags", [_insn(_LD_W_ABS, _ARG0), _insn(_JSET, CLONE_NAMESPACES, 0, 1),
                   _insn(_RET, RET_ERRNO | EPERM), _insn(_RET, RET_ALLOW)]),
        ("personality", [_insn(_LD_W_ABS, _ARG0), _insn(_JEQ, PERSONALITY_QUERY, 2, 0),
                         _insn(_JSET, ADDR_NO_RANDOMIZE, 0, 1),
                         _insn(_RET, RET_ERRNO | EPERM), _insn(_RET, RET_ALLOW)]),
    ]
    dispatch: list[tuple[int, int, str]] = []  # (jump code, k, tail to take when it holds)
    if arch.x32:
        dispatch.append((_JGE, X32_BIT, "eperm"))
    dispatch += [(_JEQ, nr, "eperm") for nr in refused]
    dispatch += [(_JEQ, nr, "enosys") for nr in enosys]
    dispatch += [(_JEQ, nr, "flags") for nr in by_flags]
    dispatch.append((_JEQ, personality, "personality"))
    starts: dict[str, int] = {}
    at = len(dispatch) + 1  # after the dispatch and its fall-through jump to "allow"
    for name, body in tails:
        starts[name] = at
        at += len(body)
    out = [_insn(_LD_W_ABS, _ARCH), _insn(_JEQ, arch.audit, 1, 0),
           _insn(_RET, RET_KILL_PROCESS), _insn(_LD_W_ABS, _NR)]
    for index, (code, k, tail) in enumerate(dispatch):
        out.append(_insn(code, k, _offset(starts[tail], index), 0))
    out.append(_insn(_RET, RET_ALLOW))  # no match: the same as the "allow" tail
    out += [insn for _name, body in tails for insn in body]
    return b"".join(out)


def _offset(target: int, index: int) -> int:
    """A forward jump from dispatch entry `index` to the tail at `target` (counted from the
    entry after the dispatch's first); classic BPF jumps at most 255 instructions."""
    offset = target - index - 1
    if not 0 <= offset <= 255:
        raise ValueError(f"a seccomp jump of {offset} instructions cannot be encoded")
    return offset


class _Sealed:
    """The program in a sealed memfd (no one can change it), opened anew for each start."""

    def __init__(self, prog: bytes) -> None:
        self.fd = os.memfd_create("reins-seccomp", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        os.write(self.fd, prog)
        fcntl.fcntl(self.fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK
                    | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE)


@functools.cache
def _sealed() -> _Sealed | None:
    arch = native_arch()
    return _Sealed(program(arch)) if arch is not None else None


def open_program() -> int:
    """A new descriptor of this machine's filter at offset 0, close-on-exec (hand it to
    bubblewrap with `pass_fds` and close it once bubblewrap started). OSError where there is
    no filter for this machine (fail closed: the caller does not start the sandbox)."""
    sealed = _sealed()
    if sealed is None:
        raise OSError(f"no seccomp filter for the {platform.machine()} architecture")
    return os.open(f"/proc/self/fd/{sealed.fd}", os.O_RDONLY | os.O_CLOEXEC)


def seccomp_args(fd: int | None) -> list[str]:
    """bubblewrap's options for the filter on `fd` (none without one)."""
    return [] if fd is None else ["--seccomp", str(fd)]
