"""confined.py with a secret in the caller's session keyring (issue 28, break 6).

Joins a new session keyring (so nothing of the test run's own is touched), adds a `user` key
`reins-canary` holding CANARY, writes its id to FOLDER/workspace/key-id, then runs
confined.py's `main` (as root, or forked into nobody: the session keyring is inherited, as
it is by every process the kernel starts, and a possessed key is readable).
"""

from __future__ import annotations

import ctypes
import json
import sys
from pathlib import Path

from kernel.sandbox.seccomp import native_arch
from tests.security.confined import main

CANARY = b"reins-keyring-canary-7f3a"
KEYCTL_JOIN_SESSION_KEYRING = 1
KEY_SPEC_SESSION_KEYRING = -3


def plant() -> int:
    """The new key's id, in a new session keyring of this process."""
    arch = native_arch()
    assert arch is not None
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    keyctl, add_key = arch.numbers["keyctl"], arch.numbers["add_key"]
    if libc.syscall(ctypes.c_long(keyctl), ctypes.c_long(KEYCTL_JOIN_SESSION_KEYRING),
                    None) < 0:
        raise OSError(ctypes.get_errno(), "keyctl(JOIN_SESSION_KEYRING)")
    key = libc.syscall(ctypes.c_long(add_key), b"user", b"reins-canary", CANARY,
                       ctypes.c_size_t(len(CANARY)), ctypes.c_long(KEY_SPEC_SESSION_KEYRING))
    if key < 0:
        raise OSError(ctypes.get_errno(), "add_key")
    return int(key)

if __name__ == "__main__":
    folder = Path(sys.argv[2])
    (folder / "workspace").mkdir(exist_ok=True)
    (folder / "workspace" / "key-id").write_text(str(plant()))
    main(sys.argv[1], folder, json.loads(sys.argv[3]))
