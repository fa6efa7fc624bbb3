"""What an awk program writes: the files its output redirections name (`print > "F"`,
`printf … >> "F"`, `print > "a" "b"` is `ab`), and whether it may write others that no text
here names (`print > $1`, a variable), runs commands (`print | "cmd"`, `"cmd" | getline`,
`|&`, `system()`) or loads code (`@load`, `@include`).

Read as awk's grammar splits a program into tokens: strings, regular expressions (a `/`
where an operand may start), comments; a redirection is a `>`, `>>`, `|` or `|&` in a
`print` or `printf` statement outside the parentheses it opened (`print (a > b)` compares).
Pure: used by kernel.shell.writes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TOKEN = re.compile(r"""
    (?P<space>[ \t\r]+|\\\n)
  | (?P<comment>\#[^\n]*)
  | (?P<string>"(?:[^"\\\n]|\\.)*"?)
  | (?P<word>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<number>[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|\.[0-9]+)
  | (?P<op>\|&|\|\||&&|>>|>=|<=|==|!=|\+\+|--|[-+*%^!<>|?:~$=,;(){}\[\]\n@/])
  | (?P<other>.)
""", re.X | re.S)
_REGEX = re.compile(r"/(?:[^/\\\n\[]|\\.|\[\^?\]?(?:[^\]\\\n]|\\.)*\])*/", re.S)
_OPERAND_ENDS = frozenset({"word", "number", "string", "regex"})
"""After these (and `)`, `]`, `$`), a `/` divides; elsewhere it starts a regex."""
_KEYWORDS = frozenset({"print", "printf", "return", "in", "getline", "do", "else"})
_STATEMENT_ENDS = frozenset({";", "\n", "{", "}"})
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "/": "/"}


@dataclass(frozen=True)
class AwkProgram:
    files: tuple[str, ...]
    """The files its redirections name, as written."""
    unknown: bool
    """It may write files no text names, runs commands or loads code."""


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) of each token but spaces and comments; `/…/` as `regex` where an
    operand may start."""
    out: list[tuple[str, str]] = []
    at = 0
    while at < len(text):
        previous = out[-1] if out else ("op", "")
        operand_before = (previous[0] in _OPERAND_ENDS and previous[1] not in _KEYWORDS) or (
            previous[1] in (")", "]", "$"))
        regex = None if operand_before or text[at] != "/" else _REGEX.match(text, at)
        if regex is not None:
            out.append(("regex", regex.group()))
            at = regex.end()
            continue
        match = _TOKEN.match(text, at)
        assert match is not None and match.lastgroup is not None
        at = match.end()
        if match.lastgroup not in ("space", "comment"):
            out.append((match.lastgroup, match.group()))
    return out


def _unquoted(string: str) -> str:
    body = string[1:-1] if len(string) > 1 and string.endswith('"') else string[1:]
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(1)), body, flags=re.S)


def read_program(text: str) -> AwkProgram:
    """What the awk program `text` writes."""
    tokens = _tokens(text)
    files: list[str] = []
    unknown = False
    depth = 0
    printing: int | None = None
    """The depth a `print` or `printf` statement started at, while one is read."""
    i = 0
    while i < len(tokens):
        kind, token = tokens[i]
        following = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        i += 1
        if token in ("(", "["):
            depth += 1
        elif token in (")", "]"):
            depth -= 1
        elif token in _STATEMENT_ENDS and (printing is None or depth <= printing):
            printing = None
        elif kind == "word" and token in ("print", "printf"):
            printing = depth
        elif token in (">", ">>", "|", "|&") and printing == depth:
            target = []
            while i < len(tokens) and tokens[i][0] == "string":
                target.append(_unquoted(tokens[i][1]))
                i += 1
            ended = i >= len(tokens) or tokens[i][1] in _STATEMENT_ENDS
            if token in ("|", "|&") or not target or not ended:
                unknown = True
            else:
                files.append("".join(target))
            printing = None
        elif token == "|&" or (token == "|" and following == "getline") or (
                kind == "word" and token == "system" and following == "(") or (
                token == "@" and following in ("load", "include")):
            unknown = True
    return AwkProgram(tuple(files), unknown)
