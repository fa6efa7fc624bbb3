"""Events committed before anyone is told: the run emits, the store's writer commits (many
at once), and each event reaches the sink in order only once it is on disk. A run never
reports a fact that is not stored; a failed commit or sink stops it (StoreFailed)."""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from kernel.agent.store import SessionStore
from kernel.events import Event

Sink = Callable[[Event], None]


class StoreFailed(RuntimeError):
    """An event could not be committed (or the sink failed): the run cannot go on."""


class Reporter:
    """Commits events through the store's writer and reports each, in order, once stored.

    What is emitted waits in one queue, in order, each with the store write it waits for.
    A write that completes (in the store's writer thread) wakes the event loop once for
    all that are done by then, not once per write, and the loop reports, in order, each
    entry at the head of the queue whose write is done (the writer completes writes in the
    order they were submitted, so this is the order they complete in)."""

    def __init__(self, store: SessionStore, sink: Sink) -> None:
        self._store = store
        self._sink = sink
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._queue: deque[tuple[Event | None, Future[Any]]] = deque()
        self._lock = threading.Lock()
        self._woken = False
        """A drain is scheduled and has not started yet."""
        self._idle = asyncio.Event()
        self._idle.set()
        self._error: BaseException | None = None
        self.sink_failed = False
        """The sink raised: nothing more can be reported."""
        self.last_reported: Event | None = None
        self._last: Future[Any] | None = None
        """The store write of the last event emitted: an event not stored (a streamed
        delta, one already stored) is reported once that write is done, in order."""

    def emit(self, event: Event, *, store: bool = True,
             write: Future[Any] | None = None) -> None:
        """Store (unless `store` is false or it is a delta), then report, in order.
        `write`: the store write that stores this event (with more), already submitted."""
        if self._error is not None:
            raise StoreFailed(f"the session store or the sink failed: {self._error}")
        future: Future[Any]
        if write is not None:
            future = write
        elif store and event.stored:
            future = self._store.submit_event(event)
        else:  # reported right after the event before it (no trip through the writer)
            future = self._last if self._last is not None else self._store.barrier()
        self._last = future
        self._enqueue(event, future)

    def track(self, future: Future[Any]) -> None:
        """Follow a pipelined store write: a failure stops the run at the next emit/flush."""
        self._enqueue(None, future)

    def _enqueue(self, event: Event | None, future: Future[Any]) -> None:
        self._queue.append((event, future))
        self._idle.clear()
        future.add_done_callback(self._wake)

    def _wake(self, _done: Future[Any]) -> None:
        """A write is done (in any thread): schedule a drain unless one is pending."""
        with self._lock:
            if self._woken:
                return
            self._woken = True
        if threading.get_ident() == self._loop_thread:
            self._loop.call_soon(self._drain)
        else:
            self._loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        with self._lock:
            self._woken = False
        queue = self._queue
        while queue and queue[0][1].done():
            event, future = queue.popleft()
            self._deliver(event, future)
        if not queue:
            self._idle.set()

    def _deliver(self, event: Event | None, future: Future[Any]) -> None:
        if self._error is not None:
            return
        error = future.exception()
        if error is not None:
            self._error = error
            return
        if event is None:
            return
        try:
            self._sink(event)
        except Exception as exc:
            self._error = exc
            self.sink_failed = True
            return
        self.last_reported = event

    @property
    def healthy(self) -> bool:
        return self._error is None

    def report_unstored(self, events: Sequence[Event]) -> None:
        """The store failed: report these events directly, in order, without storing them
        (those after the last one already reported). A failing sink raises."""
        if self.last_reported in events:
            events = events[events.index(self.last_reported) + 1:]
        for event in events:
            self._sink(event)
            self.last_reported = event

    async def committed(self, barrier: Future[None] | None = None) -> None:
        """Wait until everything submitted so far (before `barrier`, a store barrier taken
        earlier) is on disk and reported; raise if something of it could not be."""
        await asyncio.wrap_future(barrier if barrier is not None else self._store.barrier())
        if self._error is not None:
            raise StoreFailed(f"the session store or the sink failed: {self._error}")

    async def flush(self) -> None:
        """Wait until every emitted event is reported; raise if one could not be."""
        await self._idle.wait()
        if self._error is not None:
            raise StoreFailed(f"the session store or the sink failed: {self._error}")

