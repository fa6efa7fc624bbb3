"""Reads the caller's keyring from inside the sandbox: `python3 keyring_reader.py KEYCTL ID`.

Prints one JSON object: what KEYCTL_READ of the key ID, KEYCTL_SEARCH of the session keyring
for `reins-canary` and KEYCTL_DESCRIBE of the session keyring gave ({"errno": N} or
{"data": TEXT}). KEYCTL is the keyctl system call's number here."""

from __future__ import annotations

import ctypes
import json
import sys

KEYCTL_DESCRIBE, KEYCTL_READ, KEYCTL_SEARCH = 6, 11, 10
KEY_SPEC_SESSION_KEYRING = -3


def main(keyctl: int, key: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    buffer = ctypes.create_string_buffer(4096)

    def call(*args: object) -> dict[str, object]:
        ctypes.set_errno(0)
        result = libc.syscall(ctypes.c_long(keyctl), *args)
        if result < 0:
            return {"errno": ctypes.get_errno()}
        return {"data": buffer.value.decode(errors="replace"), "result": result}

    found = {
        "read": call(ctypes.c_long(KEYCTL_READ), ctypes.c_long(key), buffer,
                     ctypes.c_long(len(buffer))),
        "search": call(ctypes.c_long(KEYCTL_SEARCH), ctypes.c_long(KEY_SPEC_SESSION_KEYRING),
                       b"user", b"reins-canary", ctypes.c_long(0)),
        "describe": call(ctypes.c_long(KEYCTL_DESCRIBE), ctypes.c_long(KEY_SPEC_SESSION_KEYRING),
                         buffer, ctypes.c_long(len(buffer))),
    }
    sys.stdout.write(json.dumps(found) + "\n")


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
