"""`Ahead(fn)`: `fn()` started in a thread now; calling the object waits for it and returns
its answer (or raises its exception), the same on every call. `in_child(target, ...)`: the
same for a function called in a new interpreter, on another core.

What `reins exec` and `reins doctor` start right after parsing their arguments, so that work
that waits (keyring loads its backends and asks each whether it can be used, over D-Bus;
the sandbox probe runs bubblewrap) goes on while the SDK and Reins' modules load, instead of after.
A thread only overlaps waiting: loading modules holds the interpreter's lock, so keyring's
own loading (about 0.13 s of CPU: jaraco.context loads urllib.request, the backends load
secretstorage and cryptography) added to what the main thread loads. In a child it runs
beside it.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Generic, TypeGuard, TypeVar

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


CHILD_CODE = """
import importlib, json, os, sys
sys.path[:] = json.loads(sys.argv[1])
answer = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
module, _, name = sys.argv[2].partition(":")
try:
    text = json.dumps({"answer": getattr(importlib.import_module(module), name)()})
    answer.write(text)
    answer.close()
except BaseException:
    os._exit(1)
"""
"""Run by `python -I -c`: the parent's sys.path (argv[1]), then `module:function` (argv[2])
called; its answer, as JSON, is the only thing written to the parent's pipe (what the
function prints goes to stderr). Any failure exits 1 and says nothing: the parent then calls
the function itself, which raises or logs what it has to say where it is asked."""


def in_child(target: str, accept: Callable[[object], TypeGuard[T]],
             fallback: Callable[[], T], name: str = "ahead-child") -> Ahead[T]:
    """An Ahead answering what `target` ("module:function", no arguments, a JSON answer)
    answers in a new interpreter started now: this executable in isolated mode (no
    current folder, no PYTHON* variables on its path: this process's sys.path is passed to
    it as it is), the environment and the current folder inherited. When the child cannot
    start, fails or answers what `accept` refuses, `fallback()` (the same function here)
    answers instead; so does a frozen app, whose executable runs no `-c`."""
    return Ahead(lambda: _child_answer(target, accept, fallback), name)


def _child_answer(target: str, accept: Callable[[object], TypeGuard[T]],
                  fallback: Callable[[], T]) -> T:
    if not getattr(sys, "frozen", False):
        try:
            done = subprocess.run(
                [sys.executable, "-I", "-c", CHILD_CODE, json.dumps(sys.path), target],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, check=False)
        except (OSError, ValueError, TypeError):  # no interpreter; a path JSON cannot carry
            done = None
        if done is not None and done.returncode == 0:
            with contextlib.suppress(ValueError):
                found = json.loads(done.stdout)
                if isinstance(found, dict) and "answer" in found and accept(found["answer"]):
                    return found["answer"]
    return fallback()
