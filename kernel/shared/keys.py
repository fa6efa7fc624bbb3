"""Where the Anthropic API key is looked up: one keyring entry, in one keyring backend, and
one environment variable.

The UI (desktop.settings.keystore, which stores the key) and the kernel's provider (which
reads it) both use these names and `keyring_backend()`. This module imports nothing heavy
when loaded (keyring only when the backend is asked for), so the UI process can use it
without loading the anthropic SDK.

`keyring_backend()` is the one place that picks the backend, so that what the app stores
the kernel reads. It picks as keyring.core does (keyring 24-25: `_detect_backend`), once per
process, and sets its choice as keyring's own (keyring.set_keyring):
1. a backend chosen in this process stays: the first choice, or one set with `use_backend`
   (tests, a program embedding the kernel); this module keeps that state itself and never
   reads keyring's (it has no public way to ask whether a backend was set). After the first
   choice keyring's current backend is the answer, so one set with keyring.set_keyring
   later is used too;
2. PYTHON_KEYRING_BACKEND, else keyring's config file (keyringrc.cfg in
   keyring.util.platform_.config_root()): keyring's own loaders, `load_env` and
   `load_config`, decide;
3. else the viable backend of highest priority among all those registered (the
   `keyring.backends` entry points, third-party ones included); when more than one has a
   priority above 0, keyring's chainer (priority 10), which asks each in turn; with none,
   fail.Keyring.
Step 3 is keyring's discovery without one cost: keyring loads the macOS backend's entry
point on every system, and that import runs ctypes.util.find_library three times (ldconfig,
gcc and ld, about 50 ms with their processes), while its priority raises unless
platform.system() is Darwin. Elsewhere that module is not loaded: it could not be chosen.
Every other entry point is loaded as keyring loads it and every registered backend asked its
priority; when the chainer would be the answer (or tie), keyring's own discovery is run
instead (keyring.core.init_backend; the chainer lists its backends through it). The entry
points are read with importlib.metadata (its `group=` selection), the standard library's
copy of the importlib_metadata keyring reads them with before Python 3.12.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import keyring.backend

ENV_VAR = "ANTHROPIC_API_KEY"
KEYRING_SERVICE = "reins"
KEYRING_USER = "anthropic_api_key"

MACOS_ENTRY_POINT = "keyring.backends.macOS"
CHAINER_PRIORITY = 10
"""keyring.backends.chainer.ChainerBackend's priority when it has backends to chain."""

_LOCK = threading.Lock()
_chosen_here: list[keyring.backend.KeyringBackend] = []
"""The backend chosen in this process (step 1), once there is one."""


def keyring_backend() -> keyring.backend.KeyringBackend:
    """keyring's backend for this process, chosen on the first call (see the module's text)
    and set as keyring's own (keyring.set_keyring), so keyring.get_password and the others
    use it too. Raises what keyring raises for a PYTHON_KEYRING_BACKEND or config file that
    names a backend that cannot be loaded or used."""
    import keyring

    with _LOCK:
        if not _chosen_here:
            _use(_chosen())
    return keyring.get_keyring()


def use_backend(backend: keyring.backend.KeyringBackend) -> None:
    """Make `backend` this process's choice (keyring's too), as if keyring_backend() had
    chosen it."""
    with _LOCK:
        _use(backend)


def _use(backend: keyring.backend.KeyringBackend) -> None:
    import keyring

    keyring.set_keyring(backend)
    _chosen_here[:] = [backend]


def picks_as_a_new_process() -> bool:
    """Whether a new interpreter, started now with this environment, current folder and
    sys.path, picks the backend `keyring_backend()` would pick here: true until one is
    chosen in this process (step 1), for every other step reads what the child inherits."""
    return not _chosen_here


def _chosen() -> keyring.backend.KeyringBackend:
    import keyring
    import keyring.core

    named = keyring.core.load_env() or keyring.core.load_config()
    if named is not None:
        return named
    found = _detected()
    if found is None:
        keyring.core.init_backend()  # keyring's own discovery
        found = keyring.get_keyring()
    return found


def _detected() -> keyring.backend.KeyringBackend | None:
    """keyring's discovery (step 3) without the macOS entry point off macOS; None when the
    chainer would be chosen, or no backend is registered at all (keyring's would be
    fail.Keyring, always registered): the caller then runs keyring's own discovery."""
    import logging
    import platform
    from importlib import metadata

    import keyring.backend
    import keyring.backends.chainer

    for entry in metadata.entry_points(group="keyring.backends"):
        if entry.value == MACOS_ENTRY_POINT and platform.system() != "Darwin":
            continue
        try:  # as keyring.backend._load_plugins
            init = entry.load()
            if callable(init):
                init()
        except Exception:
            logging.getLogger("keyring.backend").exception(
                f"Error initializing plugin {entry}.")
    scored: list[tuple[float, keyring.backend.KeyringBackend]] = []
    for cls in keyring.backend.KeyringBackend.get_viable_backends():
        if issubclass(cls, keyring.backends.chainer.ChainerBackend):
            continue
        try:
            ring = cls()
        except TypeError:  # as keyring.backend.get_all_keyring
            continue
        scored.append((float(ring.priority), ring))
    if not scored:
        return None
    best_priority, best = max(scored, key=lambda pair: pair[0])
    if sum(priority > 0 for priority, _ in scored) > 1 and best_priority <= CHAINER_PRIORITY:
        return None
    return best
