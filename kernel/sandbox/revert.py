"""Undo what a command made that would run outside the sandbox (kernel.sandbox.marks).

Inside the sandbox, what exists of the protected set is read-only or bound onto itself (it
cannot be written, renamed or replaced). What a command can still do is make NEW entries:
`git init` where there was no repository, a hook in a repository's new `hooks/`, a
`sub/.vscode/tasks.json`, a `.envrc`, a `.git` file pointing elsewhere. After each command
the workspace index is refreshed; every new mark that is not inert is moved out of the
workspace into Reins' quarantine folder, and the command's result says so.

A protected LINK (`.vscode -> shared`, `.git/hooks -> ../../myhooks`) sits in a writable
folder; the sandbox binds where it leads read-only and the link onto itself
(kernel.sandbox.pin), and whatever changed it anyway (removed, renamed, made again to lead
elsewhere, with the freed inode: marks.Mark.led tells the two apart) is undone here: what
leads elsewhere is new and moved out like the rest; then the link as it was is made again
(`to_restore`, `restore`).

Inert, and kept: a git config `git init` or `git clone` could have written (see
marks.inert_git_config), a hooks folder holding only `*.sample` files, and new secrets by
name (`.env`: the command wrote it, so it knew what is in it; later commands do not see it).
A new secret FOLDER (`.ssh/`, `.aws/`, `.kube/`) is configuration other programs read
(`authorized_keys`, `credential_process`, exec plugins), so it is moved like the rest.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kernel.pathrules import WORKTREE_PROTECTED, first_match
from kernel.sandbox.marks import Mark, inert_git_config, inert_hooks
from kernel.sandbox.workspace_index import list_folder

MAX_CONFIG_BYTES = 64 << 10
SHOWN = 12
"""Undone entries named one by one in a result; the rest are counted."""


@dataclass(frozen=True)
class Reverted:
    """One entry a command made that was moved out of the workspace."""

    path: str
    """Relative to the workspace."""
    rule: str
    """The pattern of kernel.pathrules it matched."""
    moved_to: str
    """Where it is now; '' when it could not be moved (then `error` says why), or for a
    link made again."""
    error: str = ""
    relinked: str = ""
    """For a protected link the command removed or replaced: what it leads to again (then
    `error`, if any, says why it could not be made again)."""


def _inert(workspace: Path, mark: Mark) -> bool:
    target = workspace / mark.path
    if mark.kind == "secret":
        return not mark.rule.endswith("/**") and first_match(mark.path, WORKTREE_PROTECTED) is None
    if mark.kind != "git-entry":
        return False
    if mark.rule == "config" and mark.entry == "file":
        try:
            with open(target, "rb") as file:
                data = file.read(MAX_CONFIG_BYTES + 1)
        except OSError:
            return False
        return len(data) <= MAX_CONFIG_BYTES and inert_git_config(data.decode("utf-8", "replace"))
    if mark.rule == "hooks/**" and mark.entry == "dir":
        listing = list_folder(str(target))
        return listing is not None and inert_hooks({n: k for n, (k, _i) in listing.items()})
    return False


def to_revert(workspace: Path, before: Mapping[str, Mark], after: Mapping[str, Mark]
              ) -> list[Mark]:
    """The marks new since `before` (a path not marked then, or marked as another entry)
    that are not inert, outermost first (nothing below one of them is listed)."""
    found: list[Mark] = []
    for path in sorted(after):
        mark = after[path]
        if before.get(path) == mark or mark.kind == "git-dir" or mark.same_as:
            continue
        if any(before.get(hop) != after.get(hop) for hop in mark.via):
            continue  # a link on the way changed: it is undone, what it led to is not
        if any(path.startswith(done.path + "/") for done in found):
            continue
        if not _inert(workspace, mark):
            found.append(mark)
    return found


def to_restore(before: Mapping[str, Mark], after: Mapping[str, Mark]) -> list[Mark]:
    """The protected links of `before` that are not there as they were (gone, renamed,
    replaced by another entry, or by a link leading elsewhere)."""
    return [mark for path, mark in sorted(before.items())
            if mark.entry == "link" and mark.kind in ("protected", "git-entry") and mark.led
            and after.get(path) != mark]


def restore(workspace: Path, marks: list[Mark]) -> list[Reverted]:
    """Make each link of `marks` again as it was (after `quarantine` moved out what the
    command put in its place)."""
    done: list[Reverted] = []
    for mark in marks:
        link = workspace / mark.path
        problem = ""
        if not _no_link_between(workspace, mark.path):
            problem = "a folder above it is a link"
        elif not link.parent.is_dir():
            problem = "the folder it was in is gone"
        elif os.path.lexists(link):
            problem = "something Reins keeps is in its place"
        else:
            try:
                os.symlink(mark.led, link)
            except OSError as exc:
                problem = str(exc)
        done.append(Reverted(mark.path, mark.rule, "",
                             f"not made again: {problem}" if problem else "", mark.led))
    return done


def _no_link_between(workspace: Path, path: str) -> bool:
    """No folder between the workspace and `path` is a symbolic link (so a move acts on
    the entry the index saw, not on one a link leads to)."""
    parent = (workspace / path).parent
    return os.path.realpath(parent) == str(parent)


def quarantine(workspace: Path, marks: list[Mark], folder: Path) -> list[Reverted]:
    """Move each mark's entry from the workspace into `folder` (its path kept below it)."""
    done: list[Reverted] = []
    for mark in marks:
        source = workspace / mark.path
        target = folder / mark.path
        if not _no_link_between(workspace, mark.path):
            done.append(Reverted(mark.path, mark.rule, "", "a folder above it is a link"))
            continue
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(source, target)
        except OSError as exc:
            done.append(Reverted(mark.path, mark.rule, "", _removed(source, exc)))
            continue
        done.append(Reverted(mark.path, mark.rule, str(target)))
    return done


def _removed(source: Path, cause: OSError) -> str:
    """Remove what could not be moved (fail closed); say what happened."""
    try:
        if source.is_dir() and not source.is_symlink():
            shutil.rmtree(source)
        else:
            source.unlink()
    except FileNotFoundError:
        return f"gone before it could be moved ({cause})"
    except OSError as exc:
        return f"could not be moved ({cause}) nor removed ({exc}): remove it by hand"
    return f"removed: it could not be moved ({cause})"



def _short(path: str, limit: int = 160) -> str:
    return path if len(path) <= limit else "…" + path[-(limit - 1):]


def describe(reverted: tuple[Reverted, ...], what: str) -> list[str]:
    """Lines for the model and the user: what `what` ("the command") made that was undone,
    and the protected links it removed or replaced that were made again."""
    moved = [r for r in reverted if not r.relinked]
    relinked = [r for r in reverted if r.relinked]
    lines: list[str] = []
    if moved:
        lines.append(f"undone by Reins: {what} made files that git, a shell or an editor "
                     "would run outside the sandbox (write such files with write_file or "
                     "edit_file, which ask the user):")
        lines += _listed([f"  {_short(r.path)} ({r.rule}): "
                          + (f"moved to {_short(r.moved_to)}" if r.moved_to else r.error)
                          for r in moved])
    if relinked:
        lines.append(f"undone by Reins: {what} removed or replaced links that git or an "
                     "editor follows (they stay as they are):")
        lines += _listed([f"  {_short(r.path)} -> {_short(r.relinked)}"
                          + (f": {r.error}" if r.error else ": made again")
                          for r in relinked])
    return lines


def _listed(lines: list[str]) -> list[str]:
    if len(lines) <= SHOWN:
        return lines
    return [*lines[:SHOWN], f"  … and {len(lines) - SHOWN} more"]
