"""Resource limits of a command (applied in the child), and how a stop is told in words.

The limits are set on the sandbox's init before it starts the command (prlimit(2) during
bwrap's start handshake, see `kernel.sandbox.handshake`; `setrlimit` in the unsandboxed
reaper), so they are inherited by the command and everything it starts; nothing runs in a
forked copy of the kernel (no preexec_fn, which is not safe in a process with threads).
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass, replace

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB
CPU_HARD_MARGIN_S = 5
"""The CPU hard limit lies this far above the soft one, so SIGXCPU (a stop we can name) comes
first and SIGKILL only if the command ignores it."""

_MEMORY_FAILURE = re.compile(
    r"MemoryError|Cannot allocate memory|out of memory|std::bad_alloc|memory exhausted|"
    r"failed to allocate|mmap failed|cannot allocate",
    re.IGNORECASE,
)
_FORK_FAILURE = re.compile(
    r"fork: (retry: )?Resource temporarily unavailable|Cannot fork|can't fork|fork failed|"
    r"BlockingIOError: \[Errno 11\]",
    re.IGNORECASE,
)
_SIGNAL_WORDS = {
    signal.SIGKILL: "killed",
    signal.SIGTERM: "terminated",
    signal.SIGSEGV: "segmentation fault",
    signal.SIGABRT: "aborted",
    signal.SIGBUS: "bus error",
    signal.SIGINT: "interrupted",
    signal.SIGPIPE: "broken pipe",
    signal.SIGHUP: "hang-up",
    signal.SIGILL: "illegal instruction",
    signal.SIGFPE: "arithmetic error",
}


def size_words(n: int) -> str:
    """4294967296 → '4 GiB'."""
    for unit, size in (("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= size:
            value = n / size
            return f"{value:g} {unit}" if value == int(value) else f"{value:.1f} {unit}"
    return f"{n} bytes"


@dataclass(frozen=True)
class ResourceLimits:
    address_space: int = 4 * GiB
    file_size: int = 1 * GiB
    processes: int = 512
    cpu_s: int | None = None
    """CPU seconds; None means the command's timeout."""

    def for_timeout(self, timeout_s: float) -> ResourceLimits:
        """These limits with the CPU limit filled in from the timeout when it is unset."""
        if self.cpu_s is not None:
            return self
        return replace(self, cpu_s=max(1, int(timeout_s + 0.999)))

    def cpu_hard(self) -> int:
        return (self.cpu_s or 1) + CPU_HARD_MARGIN_S

    def rlimits(self) -> tuple[tuple[str, int, int], ...]:
        """(name in the `resource` module, soft, hard) for every limit."""
        return (
            ("RLIMIT_AS", self.address_space, self.address_space),
            ("RLIMIT_FSIZE", self.file_size, self.file_size),
            ("RLIMIT_NPROC", self.processes, self.processes),
            ("RLIMIT_CPU", self.cpu_s or 1, self.cpu_hard()),
        )

    def words(self) -> str:
        cpu = f"{self.cpu_s} s" if self.cpu_s is not None else "the timeout"
        return (
            f"memory (address space) {size_words(self.address_space)}, file size "
            f"{size_words(self.file_size)}, processes {self.processes}, CPU time {cpu}"
        )


def describe_stop(exit_code: int | None, limits: ResourceLimits, output_tail: str) -> str:
    """Why a command stopped, in words ('' for an ordinary exit).

    A process killed by a signal shows as exit code 128+N (through `sh` and `bwrap`).
    Running out of address space is not a signal: the program fails an allocation and says
    so in its own words, which the tail of the output shows.
    """
    if exit_code is None or exit_code == 0:
        return ""
    if exit_code == 128 + signal.SIGXCPU:
        return f"stopped: CPU time limit {limits.cpu_s} s reached"
    if exit_code == 128 + signal.SIGXFSZ:
        return f"stopped: file size limit {size_words(limits.file_size)} reached"
    if _MEMORY_FAILURE.search(output_tail):
        return f"stopped: memory limit {size_words(limits.address_space)} reached"
    if _FORK_FAILURE.search(output_tail):
        return f"stopped: process limit {limits.processes} reached"
    if 128 < exit_code <= 128 + 64:
        try:
            sig = signal.Signals(exit_code - 128)
        except ValueError:
            return ""
        words = _SIGNAL_WORDS.get(sig, "")
        if sig == signal.SIGKILL and limits.cpu_s is not None:
            words = "killed (the CPU time limit's hard stop, or out of memory)"
        return f"killed by signal {sig.name}" + (f" ({words})" if words else "")
    return ""
