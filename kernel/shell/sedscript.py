"""What a sed script writes, read as GNU sed reads it (its compile.c): the files its `w FILE`,
`W FILE` and `s///w FILE` commands name, which sed opens, and so creates or empties, while it
reads the script, before any input and even when a later error stops it; and whether it runs
commands (`e`, `e COMMAND`, `s///e`).

A file name runs to the end of its line (`w out;p` writes `out;p`), text (`a`, `i`, `c`)
too, and a regex may hold its delimiter inside brackets (`s/[/]w x/y/` writes nothing).
Each `-e` is its own piece: a name ends where it ends, but text left open (`-e 'a\\'`)
takes the next piece's first line. Pure: used by kernel.shell.writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

_BLANK = " \t"
_SPACE = " \t\n\v\f\r"
_DIGITS = "0123456789"
_NO_ARGUMENT = frozenset("=dDFgGhHnNpPzx")


@dataclass(frozen=True)
class SedScript:
    files: tuple[str, ...]
    """The files the script opens for writing, as written (sed expands no `~`)."""
    runs: bool
    """It runs commands: what they write cannot be read here."""
    unread: bool
    """Part of it could not be read (sed stops there with an error, or it is not GNU
    sed's syntax): a reader that disagrees with sed must not say it writes nothing."""


class _Error(Exception):
    """sed would stop here (its bad_prog)."""


class _Reader:
    """One piece of the script (an `-e`, or the script operand), read as compile_program
    reads it."""

    def __init__(self, text: str, files: list[str], depth: int) -> None:
        self.text = text
        self.at = 0
        self.files = files
        self.depth = depth
        self.runs = False
        self.pending = False
        """Text (`a`, `i`, `c`) is left open at the end: the next piece continues it."""

    def char(self) -> str:
        """The next character, '' at the end."""
        if self.at >= len(self.text):
            return ""
        self.at += 1
        return self.text[self.at - 1]

    def back(self, ch: str) -> None:
        if ch:
            self.at -= 1

    def nonblank(self) -> str:
        ch = self.char()
        while ch and ch in _BLANK:
            ch = self.char()
        return ch

    def end_of_command(self) -> None:
        ch = self.nonblank()
        if ch in ("}", "#"):
            self.back(ch)
        elif ch not in ("", "\n", ";"):
            raise _Error

    def integer(self, ch: str) -> None:
        while ch and ch in _DIGITS:
            ch = self.char()
        self.back(ch)

    def filename(self) -> str:
        ch = self.nonblank()
        name = []
        while ch not in ("", "\n"):
            name.append(ch)
            ch = self.char()
        if not name:
            raise _Error
        return "".join(name)

    def label(self) -> str:
        ch = self.nonblank()
        name = []
        while ch not in ("", "\n", ";", "}", "#") and ch not in _BLANK:
            name.append(ch)
            ch = self.char()
        self.back(ch)
        return "".join(name)

    def bracket(self) -> str:
        """After a `[` in a regex: to its `]` (snarf_char_class)."""
        ch = self.char()
        if ch == "^":
            ch = self.char()
        if ch == "]":
            ch = self.char()
        state, delim = 0, ""
        while True:
            if ch in ("", "\n"):
                return ch
            if ch in ".:=" and state == 1:
                state, delim = 2, ch
            elif ch in ".:=" and state == 2 and ch == delim:
                state = 3
            elif ch == "[":
                state = 1 if state == 0 else state
            elif ch == "]" and state in (0, 1):
                return ch
            else:
                if ch == "]" and state == 3:
                    state = 0
                state &= ~1
            ch = self.char()

    def delimited(self, slash: str, regex: bool) -> None:
        """To the next unescaped `slash` (match_slash); a regex's brackets may hold it."""
        if not slash.isascii():
            raise _Error
        while True:
            ch = self.char()
            if ch in ("", "\n"):
                raise _Error
            if ch == slash:
                return
            if ch == "\\":
                if not self.char():
                    raise _Error
            elif ch == "[" and regex and self.bracket() != "]":
                raise _Error

    def text_to_end(self, lead: str) -> None:
        """`a`, `i`, `c` and `e COMMAND`'s text (read_text): to the end of its line, a
        backslash joining the next; left open at the end of the piece."""
        if not lead:
            self.pending = True
            return
        ch = self.char()
        while ch not in ("", "\n"):
            if ch == "\\":
                ch = self.char()
                if not ch:
                    self.pending = True
                    return
            ch = self.char()
        self.pending = False

    def address(self, ch: str) -> bool:
        if ch in ("/", "\\"):
            self.delimited(self.char() if ch == "\\" else ch, regex=True)
            ch = self.nonblank()
            while ch in ("I", "M"):
                ch = self.nonblank()
            self.back(ch)
        elif ch and ch in _DIGITS:
            self.integer(ch)
            ch = self.nonblank()
            if ch == "~":
                self.integer(self.nonblank())
            else:
                self.back(ch)
        elif ch in ("+", "~"):
            self.integer(self.nonblank())
        elif ch != "$":
            return False
        return True

    def substitute_flags(self) -> None:
        while True:
            ch = self.nonblank()
            if ch == "e":
                self.runs = True
            elif ch == "w":
                self.files.append(self.filename())
                return
            elif ch and ch in _DIGITS:
                self.integer(ch)
            elif ch in ("}", "#"):
                self.back(ch)
                return
            elif ch in ("", "\n", ";") or (ch == "\r" and self.char() == "\n"):
                return
            elif ch not in ("i", "I", "m", "M", "p", "g"):
                raise _Error

    def program(self) -> None:
        if self.pending:
            self.text_to_end("\n")
        while True:
            ch = self.char()
            while ch and (ch == ";" or ch in _SPACE):
                ch = self.char()
            if not ch:
                return
            addressed = self.address(ch)
            if addressed:
                ch = self.nonblank()
                if ch == ",":
                    if not self.address(self.nonblank()):
                        raise _Error
                    ch = self.nonblank()
            if ch == "!":
                ch = self.nonblank()
            self.command(ch, addressed)

    def command(self, ch: str, addressed: bool) -> None:
        if ch == "#":
            if addressed:
                raise _Error
            while ch not in ("", "\n"):
                ch = self.char()
        elif ch == "v":
            self.label()
        elif ch == "{":
            self.depth += 1
        elif ch == "}":
            if not self.depth or addressed:
                raise _Error
            self.depth -= 1
            self.end_of_command()
        elif ch in ("e", "a", "i", "c"):
            self.text_command(ch)
        elif ch == ":":
            if addressed or not self.label():
                raise _Error
        elif ch in ("T", "b", "t"):
            self.label()
        elif ch in ("Q", "q", "L", "l"):
            ch = self.nonblank()
            if ch and ch in _DIGITS:
                self.integer(ch)
            else:
                self.back(ch)
            self.end_of_command()
        elif ch in _NO_ARGUMENT:
            self.end_of_command()
        elif ch in ("r", "R"):
            self.filename()
        elif ch in ("w", "W"):
            self.files.append(self.filename())
        elif ch == "s":
            slash = self.char()
            self.delimited(slash, regex=True)
            self.delimited(slash, regex=False)
            self.substitute_flags()
        elif ch == "y":
            slash = self.char()
            self.delimited(slash, regex=False)
            self.delimited(slash, regex=False)
            self.end_of_command()
        else:
            raise _Error

    def text_command(self, ch: str) -> None:
        if ch == "e":
            self.runs = True
            ch = self.nonblank()
            if ch in ("", "\n"):
                return
        else:
            ch = self.nonblank()
        if not ch:
            raise _Error
        if ch == "\\":
            ch = self.char()
        else:
            self.back(ch)
            ch = "\n"
        self.text_to_end(ch)


def read_script(pieces: Sequence[str]) -> SedScript:
    """What the script made of `pieces` (each `-e` in order, or the script operand)
    writes; sed stops at the first error, so what comes after it is not read."""
    files: list[str] = []
    runs = pending = False
    depth = 0
    for piece in pieces:
        reader = _Reader(piece, files, depth)
        reader.pending = pending
        try:
            reader.program()
        except _Error:
            return SedScript(tuple(files), runs or reader.runs, unread=True)
        runs, pending, depth = runs or reader.runs, reader.pending, reader.depth
    return SedScript(tuple(files), runs, unread=False)
