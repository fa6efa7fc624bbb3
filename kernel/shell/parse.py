"""Split a shell command line into the simple commands it would run.

`split_commands("FOO=1 git  status && echo 'a b' | wc -l")` gives
`[["FOO=1", "git", "status"], ["echo", "a b"], ["wc", "-l"]]`: every simple command of a
compound command (`;`, `&&`, `||`, `|`, `&`, newlines, subshells, `{ …; }`, `if`/`while`
bodies), the commands inside command substitutions (`$(…)`, backticks, `<(…)`), and the
bodies of `sh -c` / `bash -c`, each as its list of words with the quoting removed. Equivalent
spellings (extra spaces, quoting) give the same words, so the approval rules can match word by
word. Environment assignments stay in front of the words (an allow rule for `git status` must
not match `LD_PRELOAD=x git status`); `SimpleCommand` keeps them apart for the classifier.

This is a lexer and a flat parser, not a shell: it does not expand variables or globs, and
`${…}` expansions are kept as text. A command it cannot read (unbalanced quotes or
parentheses, a redirect without a target) raises `ShellParseError`: callers fail closed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_OPERATORS = (
    "&>>", "<<-", "<<<",
    "&&", "||", ";;", "|&", ">>", "<<", ">&", "<&", "&>", ">|", "<>",
    ";", "&", "|", "(", ")", "<", ">", "\n",
)  # fmt: skip
_REDIRECTS = frozenset({"&>>", "<<<", ">>", ">&", "<&", "&>", ">|", "<>", "<", ">"})
_HEREDOCS = frozenset({"<<", "<<-"})
_SEPARATORS = frozenset({";", "&", "&&", "||", "|", "|&", ";;", "\n"})
_PIPES = frozenset({"|", "|&"})
_SKIPPED_AT_START = frozenset(
    {"{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until",
     "esac", "time"}
)  # fmt: skip
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "busybox"})


class ShellParseError(ValueError):
    """The command line cannot be read as shell (the message says where and why)."""


@dataclass(frozen=True)
class SimpleCommand:
    """One simple command: assignments, its words, its redirections, its pipeline."""

    assignments: tuple[str, ...]
    argv: tuple[str, ...]
    redirects: tuple[tuple[str, str], ...] = ()
    """(operator, target) pairs, e.g. (">", "out.txt"), ("2>&", "1"); heredocs give ("<<", "")."""
    pipeline: int = 0
    """Commands with the same number are joined by pipes (`a | b`)."""

    @property
    def words(self) -> list[str]:
        """Assignments, argv, then redirections (`2>&1` as one word, `> f` as two)."""
        out = [*self.assignments, *self.argv]
        for op, target in self.redirects:
            if op.endswith("&") and op not in ("&>", "&>>"):
                out.append(op + target)
            else:
                out.extend((op, target) if target else (op,))
        return out


@dataclass
class _Word:
    text: str
    quoted: bool
    nested: list[SimpleCommand] = field(default_factory=list)


@dataclass
class _Op:
    text: str


@dataclass
class _Nested:
    """Commands that run without being a word (substitutions in a here-document body)."""

    commands: list[SimpleCommand]


_Token = _Word | _Op | _Nested


class _Lexer:
    """Turns text into words and operators; recurses into substitutions."""

    def __init__(self, text: str, counter: list[int]) -> None:
        self.s = text
        self.counter = counter

    def error(self, message: str, pos: int) -> ShellParseError:
        snippet = self.s[max(0, pos - 20) : pos + 20].replace("\n", "\\n")
        return ShellParseError(f"{message} at character {pos} (near {snippet!r})")

    def lex(self, pos: int, until_paren: bool) -> tuple[list[_Token], int]:
        """Tokens from `pos`; with `until_paren`, stop at the `)` closing a substitution."""
        s = self.s
        tokens: list[_Token] = []
        buf: list[str] = []
        quoted = False
        in_word = False
        nested: list[SimpleCommand] = []
        depth = 0
        heredocs: list[tuple[str, bool, bool]] = []
        expect_heredoc_word: tuple[bool] | None = None

        def end_word() -> None:
            nonlocal buf, quoted, in_word, nested, expect_heredoc_word
            if in_word:
                word = _Word("".join(buf), quoted, nested)
                if expect_heredoc_word is not None:
                    heredocs.append((word.text, word.quoted, expect_heredoc_word[0]))
                    expect_heredoc_word = None
                tokens.append(word)
            buf, quoted, in_word, nested = [], False, False, []

        while pos < len(s):
            c = s[pos]
            if c in " \t":
                end_word()
                pos += 1
            elif c == "\\":
                if pos + 1 < len(s) and s[pos + 1] == "\n":
                    pos += 2
                    continue
                buf.append(s[pos + 1] if pos + 1 < len(s) else "\\")
                quoted = in_word = True
                pos += 2
            elif c == "'":
                close = s.find("'", pos + 1)
                if close < 0:
                    raise self.error("unbalanced single quote", pos)
                buf.append(s[pos + 1 : close])
                quoted = in_word = True
                pos = close + 1
            elif c == '"':
                text, pos, subs = self.expansions(pos + 1, quoted=True)
                buf.append(text)
                nested.extend(subs)
                quoted = in_word = True
            elif c == "$" and s.startswith("$((", pos):
                close = self.matching_arith(pos + 3)
                buf.append(s[pos:close])
                in_word = True
                pos = close
            elif c == "$" and s.startswith("$(", pos):
                text, pos, subs = self.substitution(pos + 2)
                buf.append("$(" + text + ")")
                nested.extend(subs)
                in_word = True
            elif c == "$" and s.startswith("${", pos):
                close = self.matching_brace(pos + 2)
                buf.append(s[pos:close])
                nested.extend(self.inside_braces(pos + 2, close - 1))
                in_word = True
                pos = close
            elif c == "`":
                text, pos, subs = self.backtick(pos + 1)
                buf.append("`" + text + "`")
                nested.extend(subs)
                in_word = True
            elif c == "#" and not in_word:
                newline = s.find("\n", pos)
                pos = len(s) if newline < 0 else newline
            elif c in "<>" and s.startswith("(", pos + 1):
                text, pos, subs = self.substitution(pos + 2)
                buf.append(c + "(" + text + ")")
                nested.extend(subs)
                in_word = True
            elif c in ";&|()<>\n":
                op = next(o for o in _OPERATORS if s.startswith(o, pos))
                if op in _REDIRECTS | _HEREDOCS and in_word and not quoted and buf and all(
                    part.isdigit() for part in buf
                ):
                    fd = "".join(buf)
                    buf, in_word = [], False
                    op_text = fd + op
                else:
                    end_word()
                    op_text = op
                pos += len(op)
                if op == "(":
                    depth += 1
                elif op == ")":
                    if until_paren and depth == 0:
                        return tokens, pos
                    depth -= 1
                if op in _HEREDOCS:
                    expect_heredoc_word = (op == "<<-",)
                tokens.append(_Op(op_text))
                if op == "\n" and heredocs:
                    pos = self.heredoc_bodies(pos, heredocs, tokens)
                    heredocs = []
            else:
                buf.append(c)
                in_word = True
                pos += 1
        end_word()
        if until_paren:
            raise self.error("unterminated $( … ) substitution", pos)
        return tokens, pos

    def expansions(self, pos: int, *, quoted: bool) -> tuple[str, int, list[SimpleCommand]]:
        """Text up to the closing double quote (or the end, for a here-document body)."""
        s = self.s
        out: list[str] = []
        subs: list[SimpleCommand] = []
        start = pos - 1
        while pos < len(s):
            c = s[pos]
            if c == '"' and quoted:
                return "".join(out), pos + 1, subs
            if c == "\\" and pos + 1 < len(s):
                nxt = s[pos + 1]
                if nxt == "\n":
                    pass
                elif nxt in '"\\$`':
                    out.append(nxt)
                else:
                    out.append("\\" + nxt)
                pos += 2
            elif s.startswith("$((", pos):
                close = self.matching_arith(pos + 3)
                out.append(s[pos:close])
                pos = close
            elif s.startswith("$(", pos):
                text, pos, inner = self.substitution(pos + 2)
                out.append("$(" + text + ")")
                subs.extend(inner)
            elif s.startswith("${", pos):
                close = self.matching_brace(pos + 2)
                out.append(s[pos:close])
                subs.extend(self.inside_braces(pos + 2, close - 1))
                pos = close
            elif c == "`":
                text, pos, inner = self.backtick(pos + 1)
                out.append("`" + text + "`")
                subs.extend(inner)
            else:
                out.append(c)
                pos += 1
        if not quoted:
            return "".join(out), pos, subs
        raise self.error("unbalanced double quote", start)

    def substitution(self, pos: int) -> tuple[str, int, list[SimpleCommand]]:
        tokens, end = self.lex(pos, until_paren=True)
        return self.s[pos : end - 1], end, _Parser(tokens, self.counter).commands()

    def backtick(self, pos: int) -> tuple[str, int, list[SimpleCommand]]:
        s = self.s
        out: list[str] = []
        start = pos - 1
        while pos < len(s):
            c = s[pos]
            if c == "`":
                inner = "".join(out)
                return inner, pos + 1, _parse(inner, self.counter)
            if c == "\\" and pos + 1 < len(s) and s[pos + 1] in "`\\$":
                out.append(s[pos + 1])
                pos += 2
            else:
                out.append(c)
                pos += 1
        raise self.error("unbalanced backtick", start)

    def matching_arith(self, pos: int) -> int:
        depth = 2
        while pos < len(self.s):
            c = self.s[pos]
            depth += (c == "(") - (c == ")")
            pos += 1
            if depth == 0:
                return pos
        raise self.error("unterminated $(( … )) expression", pos)

    def inside_braces(self, start: int, end: int) -> list[SimpleCommand]:
        """Commands substituted inside `${name:-$(cmd)}` still run."""
        inner = self.s[start:end]
        if "$(" not in inner and "`" not in inner:
            return []
        return _Lexer(inner, self.counter).expansions(0, quoted=False)[2]

    def matching_brace(self, pos: int) -> int:
        s = self.s
        depth = 1
        start = pos
        while pos < len(s):
            c = s[pos]
            if c == "\\":
                pos += 2
                continue
            if c == "'":
                close = s.find("'", pos + 1)
                if close < 0:
                    raise self.error("unbalanced single quote", pos)
                pos = close + 1
                continue
            depth += (c == "{") - (c == "}")
            pos += 1
            if depth == 0:
                return pos
        raise self.error("unterminated ${ … } expansion", start)

    def heredoc_bodies(
        self, pos: int, heredocs: list[tuple[str, bool, bool]], tokens: list[_Token]
    ) -> int:
        """Skip here-document bodies; commands in unquoted ones still run, so keep them."""
        s = self.s
        for delimiter, quoted, strip_tabs in heredocs:
            lines: list[str] = []
            while pos < len(s):
                newline = s.find("\n", pos)
                line = s[pos:] if newline < 0 else s[pos:newline]
                pos = len(s) if newline < 0 else newline + 1
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break
                lines.append(line)
            if not quoted:
                body = _Lexer("\n".join(lines), self.counter)
                _text, _end, subs = body.expansions(0, quoted=False)
                tokens.append(_Nested(subs))
        return pos


class _Parser:
    """Groups tokens into simple commands."""

    def __init__(self, tokens: list[_Token], counter: list[int]) -> None:
        self.tokens = tokens
        self.counter = counter

    def new_pipeline(self) -> int:
        self.counter[0] += 1
        return self.counter[0]

    def commands(self) -> list[SimpleCommand]:
        out: list[SimpleCommand] = []
        assignments: list[str] = []
        argv: list[str] = []
        redirects: list[tuple[str, str]] = []
        pipeline = self.new_pipeline()
        depth = 0
        i = 0
        tokens = self.tokens

        def flush() -> None:
            nonlocal assignments, argv, redirects
            if assignments or argv or redirects:
                command = SimpleCommand(tuple(assignments), tuple(argv), tuple(redirects), pipeline)
                out.append(command)
                out.extend(_shell_bodies(command, self.counter))
            assignments, argv, redirects = [], [], []

        while i < len(tokens):
            tok = tokens[i]
            i += 1
            if isinstance(tok, _Nested):
                out.extend(tok.commands)
                continue
            if isinstance(tok, _Word):
                out.extend(tok.nested)
                if not argv and not tok.quoted and _ASSIGNMENT.match(tok.text):
                    assignments.append(tok.text)
                elif not argv and not tok.quoted and tok.text in _SKIPPED_AT_START:
                    continue
                elif tok.text or tok.quoted:
                    argv.append(tok.text)
                continue
            op = tok.text
            base = op.lstrip("0123456789")
            if base in _REDIRECTS or base in _HEREDOCS:
                target = tokens[i] if i < len(tokens) else None
                if not isinstance(target, _Word):
                    raise ShellParseError(f"the redirection {op!r} has no target")
                out.extend(target.nested)
                redirects.append((op, "" if base in _HEREDOCS else target.text))
                i += 1
            elif op in _SEPARATORS:
                flush()
                if op not in _PIPES:
                    pipeline = self.new_pipeline()
            elif op == "(":
                nxt = tokens[i] if i < len(tokens) else None
                if isinstance(nxt, _Op) and nxt.text == ")" and len(argv) == 1 and not assignments:
                    argv = []
                    i += 1
                    continue
                if argv or assignments:
                    raise ShellParseError("unexpected '(' after a command word")
                depth += 1
            elif op == ")":
                flush()
                depth -= 1
        if depth > 0:
            raise ShellParseError("unbalanced parenthesis: a '(' is never closed")
        flush()
        return out


def _shell_bodies(command: SimpleCommand, counter: list[int]) -> list[SimpleCommand]:
    """The commands of `sh -c BODY` (any shell, `-c` alone or in a flag group like `-ec`)."""
    argv = command.argv
    if not argv or argv[0].rsplit("/", 1)[-1] not in SHELLS:
        return []
    rest = list(argv[1:])
    if argv[0].endswith("busybox") and rest and rest[0] in SHELLS:
        rest = rest[1:]
    saw_c = False
    for word in rest:
        if word == "--":
            continue
        if word.startswith("-") and not word.startswith("--") and len(word) > 1:
            saw_c = saw_c or "c" in word[1:]
            continue
        if word.startswith("--"):
            continue
        return _parse(word, counter) if saw_c else []
    return []


def _parse(text: str, counter: list[int]) -> list[SimpleCommand]:
    tokens, _end = _Lexer(text, counter).lex(0, until_paren=False)
    return _Parser(tokens, counter).commands()


def parse(command: str) -> list[SimpleCommand]:
    """Every simple command in `command`, substitutions first, in the order they appear."""
    if not isinstance(command, str):
        raise ShellParseError(f"a command must be text, not {type(command).__name__}")
    return _parse(command, [0])


def split_commands(command: str) -> list[list[str]]:
    """Every simple command of `command` as its list of words (see the module docstring)."""
    return [c.words for c in parse(command)]
