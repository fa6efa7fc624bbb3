"""The kernel worker's side of undo: a session's applied steps, undoing a call, rewinding
to one, and a step's diff (kernel.transaction.checkpoints), for the app's timeline.

Each reads or changes the checkpoint index and the workspace in a thread, never on the
kernel's loop. Undo and rewind refuse (CommandFailed, in words) while a run of the session
is in progress here, and while another process runs it (`reins exec`: its run lock is held
for as long as the undo takes, so no run starts under it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING

from kernel import protocol as p

if TYPE_CHECKING:
    from kernel.transaction.checkpoints import Checkpoints, UndoResult
    from kernel.worker.service import KernelService

# The UI process imports kernel.worker.service (for `start_worker`), so the checkpoints and the run
# lock are imported where they are used, in the worker process.


def step_list(checkpoints: Checkpoints, session_id: str) -> p.StepList:
    return p.StepList(session_id, tuple(
        p.StepInfo(s.call_id, s.undone, s.undoable, s.undoes)
        for s in checkpoints.steps(session_id)))


def undo_outcome(session_id: str, call_id: str, action: p.UndoAction,
                 result: UndoResult) -> p.UndoOutcome:
    return p.UndoOutcome(session_id, call_id, action, result.undone, result.restored,
                         tuple(p.BlockedPath(b.path, b.reason, b.by_call)
                               for b in result.blocked),
                         result.refused, result.stopped_at)


async def list_steps(service: KernelService, message: p.ListSteps) -> None:
    service.store.get_session(message.session_id)  # UnknownSession for a wrong id
    service.send(await asyncio.to_thread(step_list, service.runtime.checkpoints,
                                         message.session_id))


async def undo_call(service: KernelService, message: p.UndoCall) -> None:
    await _undo(service, message.session_id, message.call_id, "undo")


async def rewind_to(service: KernelService, message: p.RewindTo) -> None:
    await _undo(service, message.session_id, message.call_id, "rewind")


async def get_step_diff(service: KernelService, message: p.GetStepDiff) -> None:
    from kernel.transaction.checkpoints import CheckpointError

    checkpoints = service.runtime.checkpoints
    try:
        text = await asyncio.to_thread(checkpoints.diff, message.session_id, message.call_id)
    except CheckpointError as exc:
        service.send(p.StepDiff(message.session_id, message.call_id, error=str(exc)))
        return
    service.send(p.StepDiff(message.session_id, message.call_id, text))


async def _undo(service: KernelService, session_id: str, call_id: str,
                action: p.UndoAction) -> None:
    from kernel.agent.runlock import SessionLocked, session_lock
    from kernel.transaction.checkpoints import CheckpointError

    what = "undone" if action == "undo" else "rewound"
    service.store.get_session(session_id)
    if session_id in service.runs:
        raise ValueError(f"a run is in progress in this session: stop it or let it finish "
                         f"before anything can be {what}")
    checkpoints = service.runtime.checkpoints
    undo: Callable[[str, str], UndoResult] = (
        checkpoints.undo if action == "undo" else checkpoints.rewind)
    lock = session_lock(service.paths, session_id)
    try:
        await asyncio.to_thread(lock.acquire)
    except SessionLocked:
        raise ValueError(f"nothing was {what}: another Reins process is running this "
                         f"session (reins exec); stop that run first") from None
    try:
        result = await asyncio.to_thread(undo, session_id, call_id)
    except CheckpointError as exc:
        raise ValueError(str(exc)) from None
    finally:
        lock.release()
    service.send(undo_outcome(session_id, call_id, action, result))
    service.send(await asyncio.to_thread(step_list, checkpoints, session_id))
