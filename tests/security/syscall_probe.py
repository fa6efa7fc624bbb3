"""Tries system calls inside the sandbox; prints one JSON object {name: errno (0: it worked)}.

`python3 syscall_probe.py JSON`, JSON a list of [name, number, [arguments]]. Run by
tests/security/test_sandbox_seccomp.py with the numbers of this machine's seccomp table.
The arguments are chosen so that without the filter each call fails its own way (a bad
descriptor, a bad address, an unknown key) or, for the calls that need a capability, with
EPERM: the filter's EPERM is what the test asks of every one.
"""

from __future__ import annotations

import ctypes
import json
import sys


def main(calls: list[tuple[str, int, list[int]]]) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    found: dict[str, int] = {}
    for name, number, args in calls:
        ctypes.set_errno(0)
        result = libc.syscall(ctypes.c_long(number), *(ctypes.c_long(a) for a in args))
        found[name] = ctypes.get_errno() if result == -1 else 0
    sys.stdout.write(json.dumps(found) + "\n")


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
