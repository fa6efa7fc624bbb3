"""Settling a command's transaction once it and every process it started have ended.

What the command changed is read from the overlay's upper layer (`read_upper`), judged
(`judge`): ordinary changes are applied to the workspace at once, and changes to protected
entries or secret locations are shown to the user as a diff and applied only if they keep
them (in every mode). A target someone else changed while the command ran is never
overwritten unasked: the user is shown which and decides. Everything applied for one call
is one checkpoint step (kernel.transaction.checkpoints), so it can be undone; it is applied
all or nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kernel.transaction.apply import Applied, ApplyError, apply, start_stamp
from kernel.transaction.changeset import ChangeSet, split_held
from kernel.transaction.checkpoints import CheckpointError, Checkpoints
from kernel.transaction.diff import held_diff
from kernel.transaction.judge import Classify, Held, judge
from kernel.transaction.upper import read_upper

Ask = Callable[[str, str], Awaitable[bool]]
"""Ask the user (why, what: a diff) whether to apply changes; True when they keep them."""


@dataclass(frozen=True)
class Settled:
    """What became of one command's changes."""

    applied: ChangeSet
    """Applied to the workspace (one checkpoint step: undoable)."""
    held: tuple[Held, ...] = ()
    """Held for the user, with why."""
    kept: bool = False
    """The user kept the held changes (they are in `applied`)."""
    conflicts: tuple[str, ...] = ()
    """Targets changed by someone else while the command ran (the user was asked)."""
    failure: str = ""
    """Why nothing was applied, when applying failed (everything was put back)."""

    def lines(self) -> list[str]:
        """What the model and the user read in the call's result."""
        out: list[str] = []
        if self.applied.changes:
            out.append(f"changes applied to the workspace: {self.applied.summary()} "
                       f"(the user can undo them)")
            out += [f"  {change.kind} {change.path}" for change in self.applied.changes[:50]]
            if len(self.applied.changes) > 50:
                out.append(f"  … and {len(self.applied.changes) - 50} more")
        if self.held:
            verdict = "kept by the user and applied" if self.kept else \
                "discarded: the user did not keep them; they are not in the workspace"
            out.append(f"changes held for the user's review ({verdict}):")
            out += [f"  {h.change.kind} {h.change.path}: {h.why}" for h in self.held]
        if self.conflicts:
            out.append("changed by someone else while the command ran: "
                       + ", ".join(self.conflicts))
        if self.failure:
            out.append(f"nothing of what the command changed was applied: {self.failure}")
        return out


async def settle(folder: Path, workspace: Path, *, since_ns: int, classify: Classify,
                 ask: Ask, checkpoints: Checkpoints, session_id: str, call_id: str
                 ) -> Settled:
    """Read, judge and apply the changes of the transaction in `folder` (its `upper/`);
    `since_ns`: when the command started (`kernel.transaction.apply.start_stamp`)."""
    upper = folder / "upper"
    found = await asyncio.to_thread(read_upper, upper, workspace)
    if not found.changes:
        return Settled(ChangeSet(()))
    judged = await asyncio.to_thread(judge, found.changes, classify, upper=upper,
                                     lower=workspace)
    ordinary, held_set = split_held(found, (h.change.path for h in judged.held))
    held = (*judged.held, *(Held(c, "it lies in or replaces a folder whose change is held")
                            for c in held_set if c.path not in {h.change.path
                                                                for h in judged.held}))
    kept = False
    if held:
        kept = await ask(_held_reason(held), await asyncio.to_thread(
            held_diff, [(h.change, h.why) for h in held], upper, workspace))
    chosen = found.changes if kept else ordinary.changes
    if not chosen:
        return Settled(ChangeSet(()), held, kept)

    def applied_now(since: int) -> Applied:
        return apply(upper, workspace, chosen, since_ns=since, last=True,
                     recorder=checkpoints.begin(session_id, call_id, workspace))

    try:
        applied = await asyncio.to_thread(applied_now, since_ns)
        conflicts = tuple(c.path for c in applied.conflicts)
        if conflicts:
            overwrite = await ask(_conflict_reason(conflicts), await asyncio.to_thread(
                held_diff, [(c, "it was changed meanwhile") for c in chosen
                            if c.path in conflicts], upper, workspace))
            if not overwrite:
                return Settled(ChangeSet(()), held, kept, conflicts,
                               "files it changed were changed by someone else meanwhile, "
                               "and the user did not let it overwrite them")
            applied = await asyncio.to_thread(applied_now, start_stamp())
            if applied.conflicts:
                return Settled(ChangeSet(()), held, kept, conflicts,
                               "files it changed are still being changed by someone else")
    except (ApplyError, CheckpointError) as exc:
        return Settled(ChangeSet(()), held, kept, (), str(exc))
    return Settled(applied.changes, held, kept, conflicts)


def _held_reason(held: Sequence[Held]) -> str:
    names = ", ".join(h.change.path for h in held[:5])
    more = f" and {len(held) - 5} more" if len(held) > 5 else ""
    return (f"The command changed files that git, your shell or your editor run or read as "
            f"configuration, or secret files: {names}{more}. They are not in your workspace "
            f"until you keep them.")


def _conflict_reason(paths: Sequence[str]) -> str:
    names = ", ".join(paths[:5])
    return (f"While the command ran, these files were changed by someone else: {names}. "
            f"Keep the command's versions over them?")
