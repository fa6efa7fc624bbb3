"""A typed table of what the UI does with each message from the kernel.

Each entry pairs a message class with a handler that takes that class (mypy checks the pair),
so a renamed or removed kind is an import error or a type error, never a handler that
silently stops being called; `kinds` lets a test check that every message the kernel can send
is handled (kernel.protocol.REPLIES).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from kernel import protocol as p

M = TypeVar("M", bound=p.Message)


class Handlers:
    def __init__(self) -> None:
        self._table: dict[type[p.Message], Callable[[Any], None]] = {}

    def on(self, kind: type[M], handler: Callable[[M], None]) -> Handlers:
        if kind in self._table:
            raise ValueError(f"{kind.__name__} already has a handler")
        self._table[kind] = handler
        return self

    def handle(self, message: p.Message) -> bool:
        """Carry out `message`; False when no handler takes it."""
        handler = self._table.get(type(message))
        if handler is None:
            return False
        handler(message)
        return True

    @property
    def kinds(self) -> frozenset[type[p.Message]]:
        return frozenset(self._table)
