"""What the shell parser gives: words that know whether the shell changes them, redirections
that know whether they write a file, simple commands, and the whole command line.

A word's *kind* says what the shell does to it before the program sees it:
- `LITERAL` (`.`): nothing; the text is exactly one argument.
- `GLOB` (`*`): only pathname expansion (an unquoted `*`, `?` or `[`); it becomes one or
  more existing names that match it, or stays as it is.
- `TILDE` (`~`): only tilde expansion (`~`, `~/x`, `~user/x`): a home folder.
- `EXPANDS` (`$`): anything else: parameter (`$X`, `${X:=v}`, `${X%/}`), command (`$(…)`,
  backticks), arithmetic (`$((…))`) or process (`<(…)`) substitution, `$'…'`, brace
  expansion; or a mix of tilde and glob. What the program receives cannot be read here.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

LITERAL = "."
GLOB = "*"
TILDE = "~"
EXPANDS = "$"

WRITE_OPERATORS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
"""Redirections that open their target for writing (`>&` too when its target is a file)."""
NOT_FILES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_FD_PATH = re.compile(r"/dev/fd/[0-9]+\Z")
_DIR_CHANGERS = frozenset({"cd", "pushd", "popd"})


class ShellParseError(ValueError):
    """The command line cannot be read as shell (the message says what and where)."""


@dataclass(frozen=True)
class Word:
    text: str
    """The word with its quoting removed; expansions are kept as their source text."""
    kind: str = LITERAL
    quoted: bool = False
    """Some of it was quoted or escaped (so it is no keyword and no assignment)."""


@dataclass(frozen=True)
class Redirect:
    """One redirection: `2>> log` is Redirect(">>", "2", Word("log"))."""

    op: str
    fd: str
    target: Word
    """The file, the fd to duplicate (`>&2`), or a here-document's delimiter."""
    body: str | None = None
    """A here-document's text (None for other redirections)."""
    body_kind: str = LITERAL
    """EXPANDS when the here-document's body holds expansions (its delimiter is unquoted)."""

    @property
    def writes_file(self) -> bool:
        """It opens a file for writing (not a dup like `2>&1`, not /dev/null)."""
        if self.op == ">&":
            is_file = not re.fullmatch(r"[0-9]+-?|-", self.target.text)
        else:
            is_file = self.op in WRITE_OPERATORS
        return is_file and names_a_file(self.target.text)

    @property
    def words(self) -> list[Word]:
        """As command words: `2>&1` is one word, `> f` two, a here-document `<<` alone."""
        op = Word(self.fd + self.op)
        if self.body is not None:
            return [op]
        if self.op in (">&", "<&"):
            return [Word(op.text + self.target.text, self.target.kind)]
        return [op, self.target]


@dataclass(frozen=True)
class SimpleCommand:
    """One simple command: assignments, its words, its redirections, its pipeline."""

    assignments: tuple[str, ...]
    argv: tuple[str, ...]
    kinds: str = ""
    """One kind per argv word (see the module docstring); empty means all literal."""
    redirects: tuple[Redirect, ...] = ()
    pipeline: int = 0
    """Commands with the same number are joined by pipes (`a | b`)."""
    via: str = ""
    """'' for a command written in the line (or in one of its substitutions); otherwise
    what runs it: `sh -c`, `eval`, `nice`, `xargs`, `find -exec`, `a pipe into sh`, …"""
    assignment_kinds: str = ""

    def kind(self, i: int) -> str:
        return self.kinds[i] if i < len(self.kinds) else LITERAL

    @property
    def args(self) -> tuple[Word, ...]:
        return tuple(Word(t, self.kind(i)) for i, t in enumerate(self.argv))

    @property
    def all_words(self) -> list[Word]:
        """Assignments, argv, then redirections: what a command rule is compared with."""
        out = [Word(t, self.assignment_kinds[i] if i < len(self.assignment_kinds) else LITERAL)
               for i, t in enumerate(self.assignments)]
        out.extend(self.args)
        for redirect in self.redirects:
            out.extend(redirect.words)
        return out

    @property
    def words(self) -> list[str]:
        return [w.text for w in self.all_words]

    @property
    def word_kinds(self) -> str:
        return "".join(w.kind for w in self.all_words)


@dataclass(frozen=True)
class CommandLine:
    """A whole command line, read once: what the policy, the preview and run_command use."""

    text: str
    commands: tuple[SimpleCommand, ...]
    blind: tuple[str, ...] = ()
    """What runs but cannot be read (a shell reading another program's output, a program
    name that is an expansion, …), one sentence each."""

    @property
    def parts(self) -> tuple[tuple[str, ...], ...]:
        return tuple(tuple(c.words) for c in self.commands)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(c.word_kinds for c in self.commands)

    @property
    def changes_directory(self) -> bool:
        return any(c.argv and c.argv[0] in _DIR_CHANGERS for c in self.commands)


def names_a_file(path: str) -> bool:
    """Writing it writes a file: not /dev/null, /dev/stdout, /dev/fd/N and the like."""
    return not (path in NOT_FILES or _FD_PATH.match(path))


def normalized(path: str) -> str:
    """`sub/../.git/` is `.git`, `./` is `.` (text only; links are not followed)."""
    return posixpath.normpath(path) if path else path
