"""Where the API key lives: the OS keyring, the environment variable, or — only when the
user chooses it on a system with no keyring — a file only they can read.

If the system has no keyring backend, saving says so (KeyringUnavailable): the app keeps a
key entered in Settings in memory for that run only, unless the user ticks the box that
keeps it in `AppPaths.api_key_file` (mode 0600, kernel.shared.keyfile), as Claude Code does on
Linux; nothing is written to a file otherwise. The key found here travels to the kernel over
the protocol (SetApiKey); the kernel reads the key file itself on its next start.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kernel.shared.keyfile import read_key_file, remove_key_file, write_key_file
from kernel.shared.keys import ENV_VAR, KEYRING_SERVICE, KEYRING_USER, keyring_backend

if TYPE_CHECKING:
    import keyring.backend

    from kernel.paths import AppPaths  # (the app loads it after its first paint)


class KeyringUnavailable(RuntimeError):
    """No usable keyring backend: the key cannot be stored safely."""


@dataclass(frozen=True)
class KeyringState:
    available: bool
    backend: str
    explanation: str


def keyring_state() -> KeyringState:
    import keyring  # loading its backends takes a while: only when the keyring is used
    import keyring.backends.fail
    import keyring.errors

    try:
        backend = keyring_backend()  # the kernel's choice, the same as when it reads the key
    except (keyring.errors.KeyringError, RuntimeError, OSError) as exc:
        return KeyringState(False, "none", f"The system keyring cannot be used ({exc}).")
    name = type(backend).__module__ + "." + type(backend).__name__
    if isinstance(backend, keyring.backends.fail.Keyring) or _priority(backend) <= 0:
        return KeyringState(
            False, name,
            "No system keyring is available, so a key entered here is kept in memory for this "
            "run of Reins only, unless you tick the box below to keep it in a file. To keep "
            f"one without a file, set {ENV_VAR} in the environment that starts Reins.")
    return KeyringState(True, name, "The key is stored in the system keyring.")


def _priority(backend: keyring.backend.KeyringBackend) -> float:
    import keyring.errors

    try:
        return float(backend.priority)
    except (keyring.errors.KeyringError, RuntimeError, AttributeError, TypeError):
        return 0.0


def stored_key() -> str | None:
    """The key in the keyring, or None (no backend, no entry)."""
    if not keyring_state().available:
        return None
    import keyring
    import keyring.errors

    try:
        return keyring.get_password(KEYRING_SERVICE, KEYRING_USER) or None
    except (keyring.errors.KeyringError, RuntimeError, OSError):
        return None


def save_key(key: str) -> None:
    """Store (or, for an empty key, delete) the key in the keyring."""
    state = keyring_state()
    if not state.available:
        raise KeyringUnavailable(state.explanation)
    import keyring
    import keyring.errors

    try:
        if key:
            keyring.set_password(KEYRING_SERVICE, KEYRING_USER, key)
        else:
            try:
                keyring.delete_password(KEYRING_SERVICE, KEYRING_USER)
            except keyring.errors.PasswordDeleteError:
                return
    except (keyring.errors.KeyringError, RuntimeError, OSError) as exc:
        raise KeyringUnavailable(f"The system keyring refused the key: {exc}") from exc


def take_env_key(environ: MutableMapping[str, str] | None = None) -> str | None:
    """Remove the key from this process's environment and return it.

    Called before the kernel is spawned, so the kernel's environment never holds the key;
    the UI hands it over the queue instead."""
    env = os.environ if environ is None else environ
    return env.pop(ENV_VAR, None) or None


def file_key(paths: AppPaths) -> str | None:
    """The key in the key file (None: no file); OSError (kernel.shared.keyfile.KeyFileError) when
    the file may not be used, saying why."""
    return read_key_file(paths.api_key_file)


def save_key_file(paths: AppPaths, key: str) -> None:
    """Keep the key in the key file (mode 0600), or remove the file for an empty key."""
    if key:
        write_key_file(paths.api_key_file, key)
    else:
        remove_key_file(paths.api_key_file)
