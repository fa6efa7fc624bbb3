"""What `sqlite3 DB` writes: the database, and any file its SQL may name (`ATTACH`,
`writefile()`, `.output`). Pure.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from kernel.shell.words import EXPANDS, Word
from kernel.shell.writers.targets import _anywhere

_SQLITE_VALUES = frozenset({"-init", "-cmd", "-separator", "-newline", "-nullvalue", "-vfs",
                            "-mmap", "-maxsize", "-pagecache", "-lookaside", "-heap",
                            "-escape"})
_SQL_WRITES = re.compile(r"(?is)\battach\b|\bvacuum\b|writefile|edit\s*\(|^\s*\.(?!(?:tables"
                         r"|schema|mode|headers?|indexes|indices|help|show|dump|width|timer"
                         r"|changes|databases|fullschema|stats)\b)")


def _sqlite3(words: Sequence[Word]) -> list[Word]:
    """`sqlite3 DB [SQL…]`: the database (not `:memory:`, not with `-readonly`); and
    whatever file its SQL names: `ATTACH`, `VACUUM INTO`, `writefile()`, a dot-command
    that writes (`.output`, `.save`, `.backup`, …), SQL read from stdin or `-init`
    (not under `-safe`)."""
    operands: list[Word] = []
    flags: set[str] = set()
    i = 1
    while i < len(words):
        text = words[i].text
        i += 1
        if text.startswith("-"):
            name = "-" + text.lstrip("-")
            flags.add(name)
            i += name in _SQLITE_VALUES
        else:
            operands.append(words[i - 1])
    if not operands:
        return []
    database, sql = operands[0], operands[1:]
    out = [] if "-readonly" in flags or database.text in ("", ":memory:") else [
        Word(re.sub(r"^file:|\?.*$", "", database.text), database.kind)]
    if "-safe" not in flags and ("-init" in flags or "-cmd" in flags or not sql or any(
            w.kind == EXPANDS or _SQL_WRITES.search(w.text) for w in sql)):
        out.append(_anywhere("sqlite3's SQL"))
    return out
