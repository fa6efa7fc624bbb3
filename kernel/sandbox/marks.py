"""Which entries of a workspace the sandbox must hide or keep as they are (pure).

The one list of secret locations and the one list of protected paths are
kernel.pathrules'; this module applies them to the entries a walk of the workspace meets,
top-down, at any depth:

- a secret (`.ssh/`, `.env`, `.aws/`, ... anywhere) is hidden from commands;
- a protected entry (`.vscode/`, `.envrc`, `.idea/`, a shell start-up file, ...) is bound
  read-only, so it cannot be written, replaced, renamed or removed;
- a git directory (a `.git` folder, or a bare repository: `HEAD`, `objects/`, `refs/`) is
  bound onto itself, so it cannot be renamed or replaced, and the entries of it git reads as
  code or configuration (kernel.pathrules.GIT_DANGEROUS: config, hooks, info/attributes,
  commondir, ...) are bound read-only; the rest (objects, refs, the index) stays writable;
- a `.git` file or link (`gitdir: elsewhere`) is protected like the rest.

Symbolic links are not followed. A link is never hidden by its name (the path policy judges
where a link leads, and so does the sandbox: the entry it leads to is met by the walk under
its own name), but a protected name is protected as a link too (`.git/hooks -> ../hooks`,
`.vscode -> ../shared`): git and editors follow it, so where it leads is bound read-only.
bubblewrap cannot bind the link itself (it follows it); kernel.sandbox.pin binds every marked
link onto itself in the sandbox before the command starts, and should one change anyway,
kernel.sandbox.revert undoes it after the command (a mark of a link holds its text,
`Mark.led`, since a link made again often gets the freed inode back).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

from kernel.pathrules import (
    GIT_DANGEROUS,
    SECRET_PATTERNS,
    WORKTREE_PROTECTED,
    first_match,
    fold_name,
    git_dangerous_match,
    secret_match,
)

MarkKind = Literal["secret", "protected", "git-dir", "git-entry"]
"""secret: hidden; protected and git-entry: read-only; git-dir: bound onto itself."""
EntryKind = Literal["dir", "file", "link", "other"]



@dataclass(frozen=True)
class Mark:
    """One entry the sandbox treats specially. `path` is relative to the workspace."""

    path: str
    kind: MarkKind
    rule: str
    """The pattern of kernel.pathrules that made it one (or `.git`, `bare repository`)."""
    entry: EntryKind
    ino: int
    """The inode when it was seen: the same path with another inode is a new entry."""
    led: str = ""
    """For a link, the path it holds (its readlink): a link removed and made again leading
    elsewhere may get the freed inode back (ext4 reuses it at once), so a link is the same
    entry only with the same inode AND the same text."""
    via: tuple[str, ...] = ()
    """For where a protected link leads (workspace_index.with_led): the links followed to
    get here, first the protected one; empty for an entry the walk marked by its name."""
    same_as: str = ""
    """For another name (a hard link) of a secret or protected file: that file's path
    (absolute; kernel.sandbox.samefiles). Never undone: the command did not make it."""


Walk = Literal["descend", "stop"]


@dataclass(frozen=True)
class Seen:
    """What to do with one entry met by the walk."""

    mark: Mark | None
    walk: Walk
    git_dir: str | None
    """For a folder to descend into: the git directory it belongs to (its path), else None."""


def classify(path: str, entry: EntryKind, ino: int, *, git_dir: str | None,
             bare: bool = False) -> Seen:
    """Judge the entry at `path` (relative to the workspace) met by the walk.

    `git_dir` is the git directory the entry's folder belongs to (None outside git
    directories); `bare` says a folder is a bare repository."""
    if git_dir is not None:
        inner = PurePosixPath(path).relative_to(git_dir).as_posix()
        dangerous = git_dangerous_match(inner)
        if dangerous is not None:  # a link too: git follows it (`hooks -> ../my-hooks`)
            return Seen(Mark(path, "git-entry", dangerous, entry, ino), "stop", None)
        if entry == "dir" and could_match_below(inner, GIT_DANGEROUS):
            return Seen(None, "descend", git_dir)
        return Seen(None, "stop", None)
    name = path.rsplit("/", 1)[-1]
    if fold_name(name) == ".git":
        if entry == "dir":
            return Seen(Mark(path, "git-dir", ".git", entry, ino), "descend", path)
        return Seen(Mark(path, "protected", ".git", entry, ino), "stop", None)
    if entry != "link" and may_be_marked(name):
        secret = secret_match(path)
        if secret is not None:
            return Seen(Mark(path, "secret", secret, entry, ino), "stop", None)
    if may_be_marked(name):
        protected = first_match(path, WORKTREE_PROTECTED)
        if protected is not None:  # a link too: the editor opens `.vscode/` through it
            return Seen(Mark(path, "protected", protected, entry, ino), "stop", None)
    if entry != "dir":
        return Seen(None, "stop", None)
    if bare:
        return Seen(Mark(path, "git-dir", "bare repository", entry, ino), "descend", path)
    return Seen(None, "descend", None)


def _tail(pattern: str) -> str:
    """The last segment a path matching `pattern` may end with, as the walk meets it: the
    walk stops at a matched folder, so for `.ssh/**` that is `.ssh`."""
    segments = [s for s in PurePosixPath(pattern).parts if s != "**"]
    return segments[-1]


def could_match_below(folder: str, patterns: tuple[str, ...]) -> bool:
    """Some pattern (anchored globs: `*` one segment, `**` any number) could match a path
    strictly below `folder`; case is ignored as kernel.pathrules does."""
    parts = [p for p in folder.split("/") if p not in ("", ".")]
    for pattern in patterns:
        segments = PurePosixPath(pattern).parts
        for index, segment in enumerate(segments):
            if segment == "**":
                return True
            if index == len(parts):
                return True
            if not _segment(segment).fullmatch(parts[index]):
                break
    return False


def _segment_body(glob: str) -> str:
    return "".join("[^/]*" if c == "*" else "[^/]" if c == "?" else re.escape(c) for c in glob)


def _segment(glob: str) -> re.Pattern[str]:
    return re.compile(_segment_body(glob), re.IGNORECASE | re.DOTALL)


_TAIL_GLOBS = tuple(dict.fromkeys(_tail(p) for p in (*SECRET_PATTERNS, *WORKTREE_PROTECTED)))
_TAIL_NAMES = frozenset(fold_name(t) for t in _TAIL_GLOBS if not any(c in t for c in "*?"))
_TAIL_WILD = re.compile(
    "|".join(f"(?:{_segment_body(t)})" for t in _TAIL_GLOBS if any(c in t for c in "*?")),
    re.IGNORECASE | re.DOTALL)


def may_be_marked(name: str) -> bool:
    """Only an entry so named can be a secret or a protected entry outside git directories
    (or a `.git`): the walk tries the full patterns on these few. Names are folded as
    kernel.pathrules matches them (`.g\u200cit`, `.envrc.`: what a file system that folds
    names opens for `.git`, `.envrc`)."""
    folded = fold_name(name)
    return folded in _TAIL_NAMES or folded == ".git" or _TAIL_WILD.fullmatch(folded) is not None


_CONFIG_KEYS: dict[str, frozenset[str]] = {
    "core": frozenset({"repositoryformatversion", "filemode", "bare", "logallrefupdates",
                       "ignorecase", "precomposeunicode", "symlinks"}),
    "extensions": frozenset({"objectformat", "refstorage"}),
    "remote": frozenset({"url", "fetch", "pushurl", "tagopt", "prune", "mirror"}),
    "branch": frozenset({"remote", "merge"}),
}
"""What `git init` and `git clone` write into a new repository's config: a config holding
only these keys runs nothing. Anything else (a hook path, fsmonitor, sshCommand, a filter,
an alias, an include, a pager, uploadpack) makes the config one to keep out of reach."""
_SECTION = re.compile(r'\[([A-Za-z][A-Za-z0-9.-]*)(?: "([^"\\\n]*)")?\]')
_ENTRY = re.compile(r"([A-Za-z][A-Za-z0-9-]*)\s*=\s*(.*)")
_SAFE_VALUE = re.compile(r"[A-Za-z0-9_./:@+*~^-]*")
_REMOTE_URL = re.compile(
    r"(?:https?|git|ssh|file)://\S+|[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:\S+|\.{0,2}/\S*")


def inert_git_config(text: str) -> bool:
    """The text is a git config `git init` or `git clone` could have written, and nothing
    more: known sections and keys only, plain values, remote URLs over http(s), git, ssh or
    a local path.
    Anything this reader does not know makes it not inert (fail closed)."""
    section: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("["):
            match = _SECTION.fullmatch(line)
            if match is None:
                return False
            section = match.group(1).casefold()
            named = match.group(2) is not None
            if section not in _CONFIG_KEYS or named != (section in ("remote", "branch")):
                return False
            continue
        entry = _ENTRY.fullmatch(line)
        if entry is None or section is None:
            return False
        key, value = entry.group(1).casefold(), entry.group(2)
        if key not in _CONFIG_KEYS[section] or not _SAFE_VALUE.fullmatch(value):
            return False
        if section == "remote" and key in ("url", "pushurl") and not _REMOTE_URL.fullmatch(
                value):
            return False
    return True


def inert_hooks(names: dict[str, EntryKind]) -> bool:
    """A hooks folder holds only the `*.sample` files `git init` puts there (git runs a
    hook only by its exact name)."""
    return all(kind == "file" and name.endswith(".sample") for name, kind in names.items())
