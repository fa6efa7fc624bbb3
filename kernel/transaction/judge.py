"""Which changes of a command's change set are held for the user (pure but for `lstat`s).

A command ran on an overlay of the workspace (kernel.sandbox.bwrap); what it changed is a
fact read from the upper layer (kernel.transaction.upper). This module judges that fact
with the one path policy (kernel.tools.pathpolicy): a change to a protected entry (at any
depth: what git, a shell, an editor or a hook manager runs or reads as configuration, what
a repository's git config names) or to a secret location is held, in every mode, and shown
to the user as a diff; the rest is applied.

Git directories are judged as git reads them: the objects, refs and index a `git commit`
writes are ordinary changes, the entries git reads as code or configuration
(kernel.pathrules.GIT_DANGEROUS) are held, and so is every change inside a folder that the
command turned into a git directory (`git init`, `git init --bare`, a `.git` made by hand):
its config would run at the user's next git command there.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from kernel.pathrules import describe_secret, fold_name, git_dangerous_match, looks_like_git_dir
from kernel.transaction.changeset import Change

GIT_ENTRY = ".git/**"
"""The path policy's pattern for everything inside a `.git` folder: for a command, only its
entries git reads as code are held."""
HOOK_KEYS = ("gitHooks", "simple-git-hooks", "husky", "pre-commit", "lint-staged")
"""The keys of package.json whose commands a git hook runs (yorkie, simple-git-hooks,
husky 4, pre-commit, lint-staged): a change to one of them is held, the rest of the file
(dependencies, scripts) is ordinary work."""
MAX_MANIFEST_BYTES = 4 << 20


@dataclass(frozen=True)
class Held:
    """One change held for the user, and why, in words."""

    change: Change
    why: str


@dataclass(frozen=True)
class Judged:
    apply: tuple[Change, ...]
    held: tuple[Held, ...]


class WriteVerdict(Protocol):
    """What the one path policy says of writing a path (kernel.tools.pathpolicy.PathVerdict)."""

    @property
    def secret(self) -> str | None: ...
    @property
    def protected(self) -> str | None: ...


Classify = Callable[[str], WriteVerdict]
"""The path policy's verdict on writing a workspace-relative path (PathPolicy.classify)."""


def judge(changes: Sequence[Change], classify: Classify, *, upper: Path, lower: Path
          ) -> Judged:
    """Split `changes` into what may be applied and what is held (with the reason).

    `upper` and `lower` are the overlay's layers, read only to tell which folders are git
    directories after the command and where a link it made leads."""
    made = new_git_dirs(changes, upper, lower)
    found = git_dirs_after(changes, upper, lower)
    apply: list[Change] = []
    held: list[Held] = []
    for change in changes:
        why = held_because(change, classify, made, upper, lower) or _git_code(change, found)
        if why:
            held.append(Held(change, why))
        else:
            apply.append(change)
    return Judged(tuple(apply), tuple(held))


def held_because(change: Change, classify: Classify, made: Iterable[str], upper: Path,
                 lower: Path) -> str:
    """Why `change` is held ('' when it may be applied)."""
    for path in (change.path, change.previous) if change.previous else (change.path,):
        why = _path_held(path, classify, made)
        if why:
            return why
    if change.entry == "link" and change.kind != "deleted":
        return _link_held(change.path, classify, made, upper, lower)
    if os.path.basename(change.path) == "package.json" and change.entry == "file":
        keys = _hook_keys(lower / change.path) != _hook_keys(upper / change.path)
        return "it changes what git hooks run (package.json's hook keys)" if keys else ""
    return ""


def _hook_keys(path: Path) -> object:
    """The HOOK_KEYS of a package.json (a file that is missing, too large or not JSON
    counts as one whose keys cannot be told: it differs from any other)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return {}
    except OSError:
        return object()
    try:
        data = os.read(fd, MAX_MANIFEST_BYTES + 1) if stat.S_ISREG(os.fstat(fd).st_mode) \
            else b""
    finally:
        os.close(fd)
    try:
        manifest = json.loads(data)
    except ValueError:
        return object()
    if len(data) > MAX_MANIFEST_BYTES or not isinstance(manifest, dict):
        return object()
    return {key: manifest[key] for key in HOOK_KEYS if key in manifest}


def _path_held(path: str, classify: Classify, made: Iterable[str]) -> str:
    for folder in made:
        if _below(path, folder):
            return (f"it is inside {folder or 'the workspace'}, which the command made a git "
                    f"repository: git runs what its config names at the next git command there")
    verdict = classify(path)
    if verdict.secret is not None:
        return f"it is a secret location ({describe_secret(verdict.secret)})"
    protected = verdict.protected
    if protected is None:
        return ""
    if protected == GIT_ENTRY:
        inner = _inside_dot_git(path)
        if inner is not None and git_dangerous_match(inner) is None:
            return ""  # objects, refs, the index: what `git commit` writes
        return "git reads it as code or configuration"
    return f"it is protected ({protected}): it is run or read as configuration outside the " \
           f"sandbox"


def _git_code(change: Change, git_dirs: Iterable[str]) -> str:
    """Why `change` is held as code or configuration of a git directory that is not named
    `.git` (a bare repository, a linked worktree's layout), whatever the path policy's
    patterns say of its name."""
    for path in (change.path, change.previous) if change.previous else (change.path,):
        for folder in git_dirs:
            inner = path[len(folder) + 1:] if folder else path
            if _below(path, folder) and git_dangerous_match(inner) is not None:
                return (f"git reads it as code or configuration of the git directory "
                        f"{folder or '(the workspace itself)'}")
    return ""


def _below(path: str, folder: str) -> bool:
    """`path` is `folder` or inside it ('' is the workspace: everything is inside)."""
    return not folder or path == folder or path.startswith(folder + "/")


def _inside_dot_git(path: str) -> str | None:
    """The part of `path` below its last `.git` folder, else None."""
    parts = path.split("/")
    for at in range(len(parts) - 2, -1, -1):
        if fold_name(parts[at]) == ".git":
            return "/".join(parts[at + 1:])
    return None


def _link_held(path: str, classify: Classify, made: Iterable[str], upper: Path,
               lower: Path) -> str:
    """A link the command made is held when it leads out of the workspace or to what
    would be held: a tool or editor following it later writes there."""
    try:
        text = os.readlink(upper / path)
    except OSError:
        return ""
    target = os.path.normpath(os.path.join(os.path.dirname(path), text))
    if os.path.isabs(text) or target == ".." or target.startswith("../"):
        return f"it is a link leading out of the workspace ({text})"
    why = _path_held(target, classify, made)
    return f"it is a link to {target}, and {why}" if why else ""


def new_git_dirs(changes: Sequence[Change], upper: Path, lower: Path) -> tuple[str, ...]:
    """The folders (workspace-relative) that are git directories after the command and
    were not before it: the folders of changed entries and their parents."""
    return tuple(f for f in git_dirs_after(changes, upper, lower)
                 if not _is_git_dir(upper, lower, f, after=False))


def git_dirs_after(changes: Sequence[Change], upper: Path, lower: Path) -> tuple[str, ...]:
    """The folders of changed entries and their parents that are git directories after
    the command, as git tells one (`_is_git_dir`); '' is the workspace itself."""
    folders = {os.path.dirname(c.path) for c in changes} | {c.path for c in changes
                                                             if c.entry == "dir"}
    candidates = {""} | {f for folder in folders for f in _and_parents(folder)}
    return tuple(sorted(f for f in candidates if _is_git_dir(upper, lower, f, after=True)))


def _and_parents(folder: str) -> Iterable[str]:
    while folder:
        yield folder
        folder = os.path.dirname(folder)


def _is_git_dir(upper: Path, lower: Path, folder: str, *, after: bool) -> bool:
    """Whether git takes `folder` for a git directory (after the command, or before it):
    a HEAD file or link, and `objects` and `refs` folders (or links), or a `commondir`."""
    def mode(name: str) -> int | None:
        return _mode(upper, lower, os.path.join(folder, name)) if after else \
            _lmode(lower / folder / name)

    return looks_like_git_dir(mode)


def _mode(upper: Path, lower: Path, path: str) -> int | None:
    """The mode of `path` after the command: the upper's entry (None for a whiteout), else
    the lower's, unless a folder above it was replaced (opaque) or deleted."""
    mode = _lmode(upper / path)
    if mode is not None:
        return None if stat.S_ISCHR(mode) and os.lstat(upper / path).st_rdev == 0 else mode
    for parent in _and_parents(os.path.dirname(path)):
        above = _lmode(upper / parent)
        if above is not None and (not stat.S_ISDIR(above) or _opaque(upper / parent)):
            return None
    return _lmode(lower / path)


def _opaque(folder: Path) -> bool:
    for name in ("user.overlay.opaque", "trusted.overlay.opaque"):
        try:
            if os.getxattr(folder, name, follow_symlinks=False) == b"y":
                return True
        except OSError:
            continue
    return False


def _lmode(path: Path) -> int | None:
    try:
        return os.lstat(path).st_mode
    except OSError:
        return None
