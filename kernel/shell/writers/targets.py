"""The words that name written targets: a source's name inside a folder (`cp x ~`), a
path from a folder (`-C sub`), the files only the data names in a folder (`DIR/*`), files
anywhere (`(any file … may name)`), what is kept outside the workspace (a crontab); and
whether a path is a protected or secret one (kernel.pathrules); the glob characters.
Pure.
"""

from __future__ import annotations

import posixpath
from functools import lru_cache

from kernel.pathrules import protected_match
from kernel.pathrules import secret_match as _secret_match
from kernel.shell.words import EXPANDS, GLOB, LITERAL, TILDE, Word


def _kind(*words: Word) -> str:
    kinds = {w.kind for w in words}
    if EXPANDS in kinds or {GLOB, TILDE} <= kinds:
        return EXPANDS
    return GLOB if GLOB in kinds else TILDE if TILDE in kinds else LITERAL


def _inside(folder: Word, source: Word) -> Word:
    """Where `source` lands in `folder` (`cp x/.bashrc ~` writes `~/.bashrc`)."""
    name = posixpath.basename(source.text.rstrip("/")) or source.text
    return Word(posixpath.join(folder.text, name), _kind(folder, source))


def _any_in(folder: Word) -> Word:
    """Files whose names only the data knows (an archive's, a patch's), in `folder`."""
    return Word(posixpath.join(folder.text, "*"), EXPANDS)


def _anywhere(what: str) -> Word:
    """Files anywhere, named only by `what` (a script, SQL, a patch allowed `..`)."""
    return Word(f"(any file {what} may name)", EXPANDS)


@lru_cache(maxsize=4096)
def _flagged(path: str) -> bool:
    return protected_match(path) is not None or _secret_match(path) is not None


def _elsewhere(what: str) -> Word:
    """What a program keeps outside the workspace for another to run later, outside the
    sandbox (a crontab, an at job): no path here names it, and it is asked about as a file
    that cannot be named."""
    return Word(f"({what})", EXPANDS)


def _under(folder: Word, path: Word) -> Word:
    """`path` taken from `folder` (`-C sub` then `.git`: `sub/.git`)."""
    if folder.text == "." or path.text.startswith(("/", "~")):
        return path
    return Word(posixpath.join(folder.text, path.text), _kind(folder, path))


_GLOB_CHARS = frozenset("*?[")
