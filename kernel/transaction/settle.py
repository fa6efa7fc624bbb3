"""Settling a command's transaction once it and every process it started have ended.

What the command changed is read from the overlay's upper layer (`read_upper`), judged
(`judge`): ordinary changes are applied to the workspace at once, and changes to protected
entries or secret locations are shown to the user as a diff and applied only if they keep
them (in every mode). With `review_all` (the user chose *Run and review*) every change is
shown and nothing is applied unless they keep it. A target someone else changed while the
command ran is never overwritten unasked: the user is shown which and decides. Everything
applied for one call is one checkpoint step (kernel.transaction.checkpoints), so it can be
undone; it is applied all or nothing.

Nothing is cancelled wholesale or hidden: a FIFO, socket or device the command left is
never put in the workspace, but only that entry is dropped (said in the result), and what
the user is shown lists every changed path however long the diff (kernel.transaction.diff).
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from kernel.transaction.apply import Applied, ApplyError, apply, start_stamp
from kernel.transaction.changeset import Change, ChangeSet, split_held
from kernel.transaction.checkpoints import SMALL_BYTES, SMALL_HELD, CheckpointError, Checkpoints
from kernel.transaction.diff import Shown, shown_changes
from kernel.transaction.judge import Classify, Held, Judged, judge
from kernel.transaction.seen import SeenFiles
from kernel.transaction.upper import read_upper

Ask = Callable[[str, Shown], Awaitable[bool]]
"""Ask the user (why, what: every path and the diff) whether to apply changes; True when
they keep them."""
SHOWN_APPLIED = 50


@dataclass(frozen=True)
class Dropped:
    """A special file the command left, never put in the workspace."""

    path: str
    what: str
    """'a FIFO', 'a socket', 'a device'."""


@dataclass(frozen=True)
class Refused:
    """A change to a path a deny rule of the user's names, never put in the workspace."""

    path: str
    rule: str


class RuleHit(Protocol):
    """A rule of the user's naming a path (kernel.tools.spec.WriteRule)."""

    @property
    def verdict(self) -> str: ...
    @property
    def rule(self) -> str: ...


Rules = Callable[[str], RuleHit | None]
"""The user's deny or ask rule for writing a workspace-relative path (None: none)."""


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
    dropped: tuple[Dropped, ...] = ()
    """Special files the command left: not applied (the rest was judged as usual)."""
    reviewed: ChangeSet | None = None
    """With Run and review: every change the user was shown (kept: all applied)."""
    refused: tuple[Refused, ...] = ()
    """Changes to paths the user's deny rules name: not applied."""

    def lines(self) -> list[str]:
        """What the model and the user read in the call's result."""
        out: list[str] = []
        if self.reviewed is not None:
            out.append(_reviewed_line(self.reviewed, self.kept))
        if self.applied.changes:
            out.append(f"changes applied to the workspace: {self.applied.summary()} "
                       f"(the user can undo them)")
            out += [f"  {change.kind} {change.path}"
                    for change in self.applied.changes[:SHOWN_APPLIED]]
            if len(self.applied.changes) > SHOWN_APPLIED:
                out.append(f"  … and {len(self.applied.changes) - SHOWN_APPLIED} more")
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
        if self.refused:
            out.append("not applied, refused by the user's deny rules: " + ", ".join(
                f"{r.path} ({r.rule})" for r in self.refused))
        if self.dropped:
            out.append("not applied, special files (a FIFO, socket or device is never put in "
                       "the workspace; the command's other changes were judged as usual): "
                       + ", ".join(f"{d.path} ({d.what})" for d in self.dropped))
        return out


def _reviewed_line(reviewed: ChangeSet, kept: bool) -> str:
    if not reviewed.changes:
        return "Run and review: the command changed nothing in the workspace"
    if kept:
        return (f"Run and review: the user was shown every change ({reviewed.summary()}) and "
                f"kept them")
    return (f"Run and review: the user was shown every change ({reviewed.summary()}) and "
            f"discarded them: none of them is in the workspace")


async def settle(folder: Path, workspace: Path, *, since_ns: int, classify: Classify,
                 ask: Ask, checkpoints: Checkpoints, session_id: str, call_id: str,
                 review_all: bool = False, rules: Rules = lambda _path: None) -> Settled:
    """Read, judge and apply the changes of the transaction in `folder` (its `upper/`);
    `since_ns`: when the command started (`kernel.transaction.apply.start_stamp`);
    `review_all`: show every change and apply nothing unless the user keeps them; `rules`:
    a change to a path the user's deny rule names is not applied, one their ask rule names
    is held."""
    upper = folder / "upper"
    seen = SeenFiles(data_up_to=SMALL_BYTES, max_data=SMALL_HELD)
    read = await asyncio.to_thread(read_upper, upper, workspace, seen)
    found, dropped = without_specials(read, upper)
    found, refused = without_denied(found, rules)
    reviewed = found if review_all else None
    if not found.changes:
        return Settled(ChangeSet(()), dropped=dropped, reviewed=reviewed, refused=refused)
    judged = held_by_rules(await asyncio.to_thread(judge, found.changes, classify,
                                                   upper=upper, lower=workspace), rules)
    ordinary, held_set = split_held(found, (h.change.path for h in judged.held))
    held = (*judged.held, *(Held(c, "it lies in or replaces a folder whose change is held")
                            for c in held_set if c.path not in {h.change.path
                                                                for h in judged.held}))
    why = {h.change.path: h.why for h in held}
    shown = found.changes if review_all else tuple(h.change for h in held)
    kept = False
    if shown:
        reason = _review_reason(found, held) if review_all else _held_reason(held)
        kept = await ask(reason, await asyncio.to_thread(
            shown_changes, [(c, why.get(c.path, "")) for c in shown], upper, workspace))
    chosen = found.changes if kept else () if review_all else ordinary.changes
    if not chosen:
        return Settled(ChangeSet(()), held, kept, dropped=dropped, reviewed=reviewed,
                       refused=refused)

    def applied_now(since: int) -> Applied:
        return apply(upper, workspace, chosen, since_ns=since, last=True, seen=seen,
                     recorder=checkpoints.begin(session_id, call_id, workspace))

    try:
        applied = await asyncio.to_thread(applied_now, since_ns)
        conflicts = tuple(c.path for c in applied.conflicts)
        if conflicts:
            overwrite = await ask(_conflict_reason(conflicts), await asyncio.to_thread(
                shown_changes, [(c, "it was changed meanwhile") for c in chosen
                                if c.path in conflicts], upper, workspace))
            if not overwrite:
                return Settled(ChangeSet(()), held, kept, conflicts,
                               "files it changed were changed by someone else meanwhile, "
                               "and the user did not let it overwrite them", dropped,
                               reviewed, refused)
            applied = await asyncio.to_thread(applied_now, start_stamp())
            if applied.conflicts:
                return Settled(ChangeSet(()), held, kept, conflicts,
                               "files it changed are still being changed by someone else",
                               dropped, reviewed, refused)
    except (ApplyError, CheckpointError) as exc:
        return Settled(ChangeSet(()), held, kept, (), str(exc), dropped, reviewed, refused)
    return Settled(applied.changes, held, kept, conflicts, dropped=dropped, reviewed=reviewed,
                   refused=refused)


def _rule_for(change: Change, rules: Rules, verdict: str) -> RuleHit | None:
    """The user's rule of that verdict naming the change's path (or, for a rename, the
    path it came from)."""
    names = (change.path, change.previous) if change.previous else (change.path,)
    return next((rule for rule in map(rules, names)
                 if rule is not None and rule.verdict == verdict), None)


def without_denied(found: ChangeSet, rules: Rules) -> tuple[ChangeSet, tuple[Refused, ...]]:
    """The change set without the changes to paths (or from paths, for a rename) that a
    deny rule of the user's names, and those, with the rule."""
    kept: list[Change] = []
    refused: list[Refused] = []
    for change in found.changes:
        denial = _rule_for(change, rules, "deny")
        if denial is None:
            kept.append(change)
        else:
            refused.append(Refused(change.path, denial.rule))
    if not refused:
        return found, ()
    return ChangeSet(tuple(kept)), tuple(refused)


def held_by_rules(judged: Judged, rules: Rules) -> Judged:
    """`judged` with the changes an ask rule of the user's names held too."""
    apply: list[Change] = []
    held = list(judged.held)
    for change in judged.apply:
        asking = _rule_for(change, rules, "ask")
        if asking is None:
            apply.append(change)
        else:
            held.append(Held(change, f"your rule {asking.rule} asks before it is written"))
    return Judged(tuple(apply), tuple(held))


def without_specials(found: ChangeSet, upper: Path) -> tuple[ChangeSet, tuple[Dropped, ...]]:
    """The change set without the special files the command made or changed (a FIFO,
    socket or device is never put in the workspace: only that entry is dropped), and
    those, with what each is. Deleting one that was there is an ordinary change."""
    special = [c for c in found.changes if c.entry == "other" and c.kind != "deleted"]
    if not special:
        return found, ()
    paths = {c.path for c in special}
    return (ChangeSet(tuple(c for c in found.changes if c.path not in paths)),
            tuple(Dropped(c.path, _special_kind(upper / c.path)) for c in special))


def _special_kind(path: Path) -> str:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return "a special file"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a special file"


def _review_reason(found: ChangeSet, held: Sequence[Held]) -> str:
    also = (f" {len(held)} of them would be held in any case: files git, your shell or your "
            f"editor run or read as configuration, or secret files." if held else "")
    return (f"You chose Run and review: the command ran without the network, and none of "
            f"what it changed ({found.summary()}) is in your workspace until you keep it."
            f"{also}")


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
