"""Where the API key lives: the OS keyring, or the environment variable — never a file.

If the system has no keyring backend, saving says so (KeyringUnavailable): the app keeps a
key entered in Settings in memory for that run only, and offers `ANTHROPIC_API_KEY` to keep
one; the key is never written to a plain-text file.
The key found here travels to the kernel over the protocol (SetApiKey) only.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kernel.model.keys import ENV_VAR, KEYRING_SERVICE, KEYRING_USER, keyring_backend

if TYPE_CHECKING:
    import keyring.backend


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
            "run of Reins only (never written to a file). To keep one across runs, set "
            f"{ENV_VAR} in the environment that starts Reins.")
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
