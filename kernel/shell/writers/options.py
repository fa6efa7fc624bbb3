"""Reading a writing program's words: its options and operands as GNU's getopt reads them
(`_scan`: bundled short options, a value attached or the next word, a long option by any
unambiguous prefix) or as programs whose options are whole words read them (`_scan_words`:
go, javac, tsc, ffmpeg, ImageMagick); what the options were given; and the readers that
take an option's values (`sort -o F`) or one operand (`uniq IN OUT`). Pure: used by the
readers in kernel.shell.writers and the table in kernel.shell.writes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kernel.shell.words import Word


@dataclass(frozen=True)
class _Options:
    values: frozenset[str] = frozenset()
    """Options that take a value: attached (`-oFILE`, `--output=FILE`) or the next word."""
    optional: frozenset[str] = frozenset()
    """Options whose value is only ever attached (`-i.bak`, `--in-place=.bak`)."""
    flags: frozenset[str] = frozenset()
    """Long options without a value that change what is written (for their prefixes)."""

    @property
    def long(self) -> tuple[str, ...]:
        return tuple(sorted(n for n in self.values | self.optional | self.flags
                            if n.startswith("--")))


def _opts(values: str = "", optional: str = "", flags: str = "") -> _Options:
    return _Options(frozenset(values.split()), frozenset(optional.split()),
                    frozenset(flags.split()))


Found = list[tuple[str, Word | None]]
"""The options given, in order: (`-t` or `--target-directory`, its value or None)."""


def _long(name: str, spec: _Options) -> str:
    """`--target-dir` is `--target-directory` (getopt takes any unambiguous prefix)."""
    known = spec.long
    if name in known:
        return name
    matches = [n for n in known if n.startswith(name)]
    return matches[0] if len(matches) == 1 else name


def _scan(words: Sequence[Word], spec: _Options) -> tuple[Found, list[Word]]:
    """The options and the operands after the program's name."""
    found: Found = []
    operands: list[Word] = []
    i = 1
    while i < len(words):
        word = words[i]
        text = word.text
        i += 1
        if text == "--":
            operands.extend(words[i:])
            break
        if not text.startswith("-") or text == "-":
            operands.append(word)
        elif text.startswith("--"):
            name, eq, attached = text.partition("=")
            name = _long(name, spec)
            if eq:
                found.append((name, Word(attached, word.kind)))
            elif name in spec.values and i < len(words):
                found.append((name, words[i]))
                i += 1
            else:
                found.append((name, None))
        else:
            for at in range(1, len(text)):
                flag, rest = f"-{text[at]}", text[at + 1:]
                if flag in spec.optional:
                    found.append((flag, Word(rest, word.kind)))
                    break
                if flag in spec.values:
                    if rest:
                        found.append((flag, Word(rest, word.kind)))
                    elif i < len(words):
                        found.append((flag, words[i]))
                        i += 1
                    else:
                        found.append((flag, None))
                    break
                found.append((flag, None))
    return found, operands


def _scan_words(words: Sequence[Word], values: Callable[[str], bool], *, signs: str = "-",
                fold: bool = False) -> tuple[Found, list[Word]]:
    """The options and operands of a program whose options are whole words (go, javac,
    kotlinc, tsc, ffmpeg, ImageMagick): `-name VALUE` where `values(name)`, `-name=VALUE`,
    `--name` as `-name`, `+name` where `signs` holds `+`; any other option is a flag; after
    `--` every word is an operand. Names come back without their signs (in lower case with
    `fold`: tsc's)."""
    found: Found = []
    operands: list[Word] = []
    i = 1
    while i < len(words):
        word = words[i]
        i += 1
        if word.text == "--":
            operands.extend(words[i:])
            break
        if len(word.text) < 2 or word.text[0] not in signs:
            operands.append(word)
            continue
        name, eq, attached = word.text.lstrip(word.text[0]).partition("=")
        name = name.lower() if fold else name
        if eq:
            found.append((name, Word(attached, word.kind)))
        elif values(name) and i < len(words):
            found.append((name, words[i]))
            i += 1
        else:
            found.append((name, None))
    return found, operands


def _given(found: Found, *names: str) -> list[Word]:
    return [value for name, value in found if name in names and value is not None]


def _last(found: Found, *names: str) -> Word | None:
    """The value the last of these options was given (a later one overrides)."""
    given = _given(found, *names)
    return given[-1] if given else None


def _has(found: Found, *names: str) -> bool:
    return any(name in names for name, _ in found)


def _option_values(spec: _Options, *names: str) -> Callable[[Sequence[Word]], list[Word]]:
    def written(words: Sequence[Word]) -> list[Word]:
        found, _ = _scan(words, spec)
        return [w for w in _given(found, *names) if w.text != "-"]

    return written


def _nth(spec: _Options, n: int) -> Callable[[Sequence[Word]], list[Word]]:
    def written(words: Sequence[Word]) -> list[Word]:
        return _scan(words, spec)[1][n:n + 1]

    return written
