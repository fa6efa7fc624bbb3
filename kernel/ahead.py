"""`Ahead(fn)`: `fn()` started in a thread now; calling the object waits for it and returns
its answer (or raises its exception), the same on every call.

What `reins exec` and `reins doctor` start right after parsing their arguments, so that work
that waits (keyring loads its backends and asks each whether it can be used, over D-Bus;
the sandbox probe runs bubblewrap) goes on while the SDK and Reins' modules load, instead of after.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Ahead(Generic[T]):
    def __init__(self, fn: Callable[[], T], name: str = "ahead") -> None:
        self._outcome: tuple[T] | BaseException = RuntimeError(f"{name} has not finished")
        self._thread = threading.Thread(target=self._run, args=(fn,), name=name, daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[[], T]) -> None:
        try:
            self._outcome = (fn(),)
        except BaseException as exc:  # raised where the answer is asked for
            self._outcome = exc

    def __call__(self) -> T:
        self._thread.join()
        if isinstance(self._outcome, BaseException):
            raise self._outcome
        return self._outcome[0]
