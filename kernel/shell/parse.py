"""Read a shell command line into the simple commands it would run: THE shell parser.

`read("FOO=1 git  status && echo 'a b' | wc -l")` gives a `CommandLine` whose commands are
`FOO=1 git status`, `echo 'a b'` and `wc -l`: every simple command of a compound command
(`;`, `&&`, `||`, `|`, `&`, newlines, subshells, `{ …; }`, `if`/`while`/`case` bodies,
function bodies), the commands inside substitutions (`$(…)`, backticks, `<(…)`, also inside
`$((…))`, `${X:-…}` and double quotes), and what commands run besides themselves
(kernel.shell.nested: `sh -c BODY`, `eval`, `bash <<EOF`, `echo … | sh`, wrappers such as
`nice`, `sudo`, `xargs`, `find -exec`). A case pattern, the values of `for NAME in …` and
the parentheses of `[[ … ]]` are no commands (what they substitute still runs); bash-only
syntax (`[[ … ]]`, `for ((…))`) is read so that what dash, the usual /bin/sh, would run or
write from it is seen too. Each word has its quoting removed and a *kind*
(kernel.shell.words) saying whether the shell changes it before the program sees it, so a
rule can match only what it can see. Environment assignments stay in front of the words (an
allow rule for `git status` must not match `LD_PRELOAD=x git status`).

This is a reader, not a shell: it expands nothing. A command it cannot read (an unterminated
quote or substitution, an unclosed parenthesis, a redirection without a target, a NUL
character) raises `ShellParseError` saying what and where: callers refuse it before anyone
is asked. `$'…'` is read as bash reads it and, because dash reads it differently, also as
dash does: the commands of both readings count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from functools import lru_cache

from kernel.shell.nested import SHELLS, Blind, Exec, Script, inner_commands
from kernel.shell.words import (
    EXPANDS,
    GLOB,
    LITERAL,
    TILDE,
    CommandLine,
    Redirect,
    ShellParseError,
    SimpleCommand,
    Word,
)

__all__ = ["SHELLS", "CommandLine", "ShellParseError", "SimpleCommand", "parse", "read",
           "split_commands"]

_OPERATORS = (
    "&>>", "<<-", "<<<", ";;&",
    "&&", "||", ";;", ";&", "|&", ">>", "<<", ">&", "<&", "&>", ">|", "<>",
    ";", "&", "|", "(", ")", "<", ">", "\n",
)  # fmt: skip
_REDIRECTS = frozenset({"&>>", "<<<", ">>", ">&", "<&", "&>", ">|", "<>", "<", ">"})
_HEREDOCS = frozenset({"<<", "<<-"})
_SEPARATORS = frozenset({";", "&", "&&", "||", "|", "|&", ";;", ";&", ";;&", "\n"})
_PIPES = frozenset({"|", "|&"})
_SKIPPED_AT_START = frozenset(
    {"{", "}", "!", "if", "then", "else", "elif", "fi", "do", "done", "while", "until",
     "esac"}
)  # fmt: skip
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPECIAL_PARAMS = frozenset("@*#?-$!0123456789")
_MAX_DEPTH = 24
_NESTED_TEXT_BUDGET = 200_000
"""Characters of nested scripts (`sh -c` bodies, piped `echo`s, …) read for one command
line; past it the rest cannot be seen (so it asks), and reading stays fast."""


def _position(text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"column {column}" + (f" of line {line}" if "\n" in text else "")


@dataclass
class _Word:
    text: str
    kind: str
    quoted: bool
    nested: list[SimpleCommand] = field(default_factory=list)
    body: str | None = None
    body_kind: str = LITERAL


@dataclass
class _Op:
    text: str
    pos: int


@dataclass
class _Nested:
    """Commands that run without being a word (substitutions in a here-document body)."""

    commands: list[SimpleCommand]


_Token = _Word | _Op | _Nested


class _Buffer:
    """The word being read, and what the shell will do to it."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.active = False
        self.quoted = False
        self.expands = False
        self.tilde = False
        self.glob = False
        self.bracket = False
        """An unquoted `[` was read: the word is a pattern only once a `]` closes it."""
        self.braces: list[int] = []
        self.nested: list[SimpleCommand] = []

    def text(self) -> str:
        return "".join(self.parts)

    def add(self, text: str, *, quoted: bool = False, expands: bool = False) -> None:
        self.parts.append(text)
        self.active = True
        self.quoted = self.quoted or quoted
        self.expands = self.expands or expands
        if self.bracket and "]" in text:
            self.glob = True

    def add_unquoted(self, c: str) -> None:
        text = self.text()
        if c == "~" and (not text or text[-1] in "=:"):
            self.tilde = True
        elif c in "*?":
            self.glob = True
        elif c == "[":  # `[` alone, `[[`, `a[` match only themselves: no pattern
            self.bracket = True
        elif c == "{":
            self.braces.append(len(text))
        elif c == "}" and self.braces:
            inner = text[self.braces.pop() + 1 :]
            self.expands = self.expands or "," in inner or ".." in inner
        self.add(c)

    def kind(self) -> str:
        if self.expands or (self.tilde and self.glob):
            return EXPANDS
        return TILDE if self.tilde else GLOB if self.glob else LITERAL


class _Context:
    """One reading of a command line: pipeline numbers, what cannot be seen, the dialect."""

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        self.pipelines = 0
        self.blind: list[str] = []
        self.depth = 0
        self.budget = _NESTED_TEXT_BUDGET

    def new_pipeline(self) -> int:
        self.pipelines += 1
        return self.pipelines

    def parse(self, text: str, where: str = "") -> list[SimpleCommand]:
        tokens, _end = _Lexer(text, self, where).lex(0, until_paren=False)
        return _Parser(tokens, self, text, where).commands()

    def derive(self, command: SimpleCommand, feeder: SimpleCommand | None) -> list[SimpleCommand]:
        """What `command` runs besides itself, as simple commands (recursively)."""
        if self.depth > _MAX_DEPTH:
            self.blind.append("commands nested too deep to follow: cannot tell what runs")
            return []
        self.depth += 1
        try:
            out: list[SimpleCommand] = []
            for item in inner_commands(command, feeder):
                if isinstance(item, Blind):
                    self.blind.append(item.reason)
                elif isinstance(item, Exec):
                    inner = SimpleCommand((), tuple(w.text for w in item.words),
                                          "".join(w.kind for w in item.words),
                                          command.redirects, command.pipeline, item.via)
                    out.append(inner)
                    out.extend(self.derive(inner, feeder))
                else:
                    out.extend(self.script(item))
            return out
        finally:
            self.depth -= 1

    def script(self, item: Script) -> list[SimpleCommand]:
        self.budget -= len(item.text) + 1
        if self.budget < 0:
            self.blind.append("too much nested shell text to follow: cannot tell what runs")
            return []
        shown = item.text if len(item.text) <= 60 else item.text[:59] + "…"
        if not item.literal:
            self.blind.append(f"{item.via} runs text built from expansions ({shown!r}): "
                              f"cannot tell exactly what runs")
        try:
            found = self.parse(item.text, where=f"in what {item.via} runs: ")
        except ShellParseError:
            if item.strict and item.literal:
                raise
            self.blind.append(f"{item.via} runs text that cannot be read as shell "
                              f"({shown!r}): cannot tell what runs")
            return []
        return [c if c.via else replace(c, via=item.via) for c in found]


class _Lexer:
    """Turns text into words and operators; recurses into substitutions."""

    def __init__(self, text: str, ctx: _Context, where: str = "") -> None:
        self.s = text
        self.ctx = ctx
        self.where = where

    def error(self, message: str, pos: int) -> ShellParseError:
        return ShellParseError(f"{self.where}{message} starting at {_position(self.s, pos)}")

    def lex(self, pos: int, until_paren: bool) -> tuple[list[_Token], int]:
        """Tokens from `pos`; with `until_paren`, stop at the `)` closing a substitution."""
        s = self.s
        start = pos
        tokens: list[_Token] = []
        buf = _Buffer()
        depth = 0
        heredocs: list[tuple[_Word, bool]] = []
        expect_heredoc: bool | None = None

        def end_word() -> None:
            nonlocal buf, expect_heredoc
            if buf.active:
                word = _Word(buf.text(), buf.kind(), buf.quoted, buf.nested)
                if expect_heredoc is not None:
                    heredocs.append((word, expect_heredoc))
                    expect_heredoc = None
                tokens.append(word)
            buf = _Buffer()

        while pos < len(s):
            c = s[pos]
            if c in " \t":
                end_word()
                pos += 1
            elif c == "\\":
                if s.startswith("\n", pos + 1):
                    pos += 2
                    continue
                buf.add(s[pos + 1] if pos + 1 < len(s) else "\\", quoted=True)
                pos += 2
            elif c == "'":
                close = s.find("'", pos + 1)
                if close < 0:
                    raise self.error("unterminated single quote", pos)
                buf.add(s[pos + 1 : close], quoted=True)
                pos = close + 1
            elif c == '"':
                text, pos, subs, expands = self.expansions(pos + 1, mode='"')
                buf.add(text, quoted=True, expands=expands)
                buf.nested.extend(subs)
            elif c == "$" and pos + 1 < len(s) and s[pos + 1] in "'\"" and \
                    self.ctx.dialect == "bash":
                if s[pos + 1] == "'":
                    text, pos = self.ansi_c(pos)
                    buf.add(text, quoted=True, expands=True)
                else:
                    text, pos, subs, _ = self.expansions(pos + 2, mode='"')
                    buf.add(text, quoted=True, expands=True)
                    buf.nested.extend(subs)
            elif c == "$" or c == "`":
                text, pos, subs, expands = self.dollar(pos)
                buf.add(text, expands=expands)
                buf.nested.extend(subs)
            elif c == "#" and not buf.active:
                newline = s.find("\n", pos)
                pos = len(s) if newline < 0 else newline
            elif c in "<>" and s.startswith("(", pos + 1):
                text, pos, subs = self.substitution(pos + 2)
                buf.add(c + "(" + text + ")", expands=True)
                buf.nested.extend(subs)
            elif c in ";&|()<>\n":
                op = next(o for o in _OPERATORS if s.startswith(o, pos))
                text = buf.text()
                if (op in _REDIRECTS or op in _HEREDOCS) and buf.active and not buf.quoted \
                        and text.isdigit():
                    buf = _Buffer()
                    op_text = text + op
                else:
                    end_word()
                    op_text = op
                if op == "(":
                    depth += 1
                elif op == ")":
                    if until_paren and depth == 0:
                        return tokens, pos + 1
                    depth -= 1
                if op in _HEREDOCS:
                    expect_heredoc = op == "<<-"
                tokens.append(_Op(op_text, pos))
                pos += len(op)
                if op == "\n" and heredocs:
                    pos = self.heredoc_bodies(pos, heredocs, tokens)
                    heredocs = []
            else:
                buf.add_unquoted(c)
                pos += 1
        end_word()
        if heredocs:
            self.heredoc_bodies(pos, heredocs, tokens)
        if until_paren:
            raise self.error("unterminated $( … ) substitution", start - 2)
        return tokens, pos

    def dollar(self, pos: int) -> tuple[str, int, list[SimpleCommand], bool]:
        """A `$…` expansion or a backtick substitution at `pos`: (source text, end,
        commands it runs, whether it expands). A `$` that starts nothing is literal."""
        s = self.s
        if s[pos] == "`":
            text, end, subs = self.backtick(pos + 1)
            return "`" + text + "`", end, subs, True
        if s.startswith("$((", pos):
            found = self.arithmetic(pos)
            if found is not None:
                end, subs = found
                return s[pos:end], end, subs, True
        if s.startswith("$(", pos):
            text, end, subs = self.substitution(pos + 2)
            return "$(" + text + ")", end, subs, True
        if s.startswith("${", pos):
            end, subs = self.braces(pos + 2)
            return s[pos:end], end, subs, True
        nxt = s[pos + 1 : pos + 2]
        if nxt in _SPECIAL_PARAMS and nxt:
            return s[pos : pos + 2], pos + 2, [], True
        name = re.match(r"[A-Za-z_][A-Za-z0-9_]*", s[pos + 1 :])
        if name:
            end = pos + 1 + name.end()
            return s[pos:end], end, [], True
        return "$", pos + 1, [], False

    def expansions(self, pos: int, *, mode: str) -> tuple[str, int, list[SimpleCommand], bool]:
        """Text up to the closing double quote (`mode='"'`), or all of it (`mode='<<'`,
        a here-document body, where quotes are ordinary characters)."""
        s = self.s
        out: list[str] = []
        subs: list[SimpleCommand] = []
        expands = False
        start = pos - 1
        while pos < len(s):
            c = s[pos]
            if c == '"' and mode == '"':
                return "".join(out), pos + 1, subs, expands
            if c == "\\" and pos + 1 < len(s):
                nxt = s[pos + 1]
                if nxt != "\n":
                    out.append(nxt if nxt in '"\\$`' and (mode == '"' or nxt != '"')
                               else "\\" + nxt)
                pos += 2
            elif c in "$`":
                text, pos, inner, grew = self.dollar(pos)
                out.append(text)
                subs.extend(inner)
                expands = expands or grew
            else:
                out.append(c)
                pos += 1
        if mode == "<<":
            return "".join(out), pos, subs, expands
        raise self.error("unterminated double quote", start)

    def ansi_c(self, pos: int) -> tuple[str, int]:
        """`$'…'` as bash reads it: backslash escapes, `\\'` does not end it."""
        s = self.s
        i = pos + 2
        while i < len(s):
            if s[i] == "\\":
                i += 2
                continue
            if s[i] == "'":
                return s[pos : i + 1], i + 1
            i += 1
        raise self.error("unterminated $'…' string", pos)

    def substitution(self, pos: int) -> tuple[str, int, list[SimpleCommand]]:
        tokens, end = self.lex(pos, until_paren=True)
        return self.s[pos : end - 1], end, _Parser(tokens, self.ctx, self.s, self.where).commands()

    def backtick(self, pos: int) -> tuple[str, int, list[SimpleCommand]]:
        s = self.s
        out: list[str] = []
        start = pos - 1
        while pos < len(s):
            c = s[pos]
            if c == "`":
                inner = "".join(out)
                return inner, pos + 1, self.ctx.parse(inner, f"{self.where}in `…`: ")
            if c == "\\" and pos + 1 < len(s) and s[pos + 1] in "`\\$":
                out.append(s[pos + 1])
                pos += 2
            else:
                out.append(c)
                pos += 1
        raise self.error("unterminated backtick substitution", start)

    def quoted_or_expansion(self, pos: int, subs: list[SimpleCommand], *,
                            arithmetic: bool = False) -> int | None:
        """Inside `$((…))` or `${…}`: skip a quoted string, an escape or an expansion at `pos`
        (collecting the commands it substitutes) and give the position after it; None when
        `pos` holds an ordinary character. In `arithmetic`, bash evaluates a single-quoted
        string too (`$(( 'a[$(cmd)]' ))` runs cmd), so its substitutions count."""
        s = self.s
        c = s[pos]
        if c == "\\":
            return pos + 2
        if c == "'":
            close = s.find("'", pos + 1)
            if close < 0:
                raise self.error("unterminated single quote", pos)
            text = s[pos + 1:close]
            if arithmetic and ("$(" in text or "`" in text):
                subs.extend(self.evaluated(text))
            return close + 1
        if c == '"':
            _text, end, inner, _ = self.expansions(pos + 1, mode='"')
        elif c in "$`":
            _text, end, inner, _ = self.dollar(pos)
        else:
            return None
        subs.extend(inner)
        return end

    def evaluated(self, text: str) -> list[SimpleCommand]:
        """The commands of quoted text bash evaluates as arithmetic (read as far as it can
        be; what cannot be read is a note that we cannot tell what runs)."""
        try:
            return self.ctx.parse(f": {text}",  # an argument, as bash substitutes in it
                                  f"{self.where}in a quoted arithmetic expression: ")
        except ShellParseError:
            self.ctx.blind.append(f"an arithmetic expression evaluates {text!r}: cannot tell "
                                  f"what runs")
            return []

    def arithmetic(self, pos: int) -> tuple[int, list[SimpleCommand]] | None:
        """`$(( … ))` from `pos` (its `$`): its end and the commands substituted inside, or
        None when it is a command substitution starting with a subshell, `$( (…) )`."""
        s = self.s
        i = pos + 3
        depth = 0
        subs: list[SimpleCommand] = []
        while i < len(s):
            skipped = self.quoted_or_expansion(i, subs, arithmetic=True)
            if skipped is not None:
                i = skipped
                continue
            c = s[i]
            if c == "(":
                depth += 1
            elif c == ")":
                if depth == 0:
                    return (i + 2, subs) if s.startswith("))", i) else None
                depth -= 1
            i += 1
        raise self.error("unterminated $(( … )) expression", pos)

    def braces(self, pos: int) -> tuple[int, list[SimpleCommand]]:
        """`${ … }` from after its `{`: its end and the commands substituted inside."""
        s = self.s
        depth = 1
        start = pos - 2
        subs: list[SimpleCommand] = []
        while pos < len(s):
            skipped = self.quoted_or_expansion(pos, subs)
            if skipped is not None:
                pos = skipped
                continue
            c = s[pos]
            depth += (c == "{") - (c == "}")
            pos += 1
            if depth == 0:
                return pos, subs
        raise self.error("unterminated ${ … } expansion", start)

    def heredoc_bodies(self, pos: int, heredocs: list[tuple[_Word, bool]],
                       tokens: list[_Token]) -> int:
        """Read here-document bodies; commands substituted in unquoted ones still run."""
        s = self.s
        for word, strip_tabs in heredocs:
            lines: list[str] = []
            while pos < len(s):
                newline = s.find("\n", pos)
                line = s[pos:] if newline < 0 else s[pos:newline]
                pos = len(s) if newline < 0 else newline + 1
                if strip_tabs:
                    line = line.lstrip("\t")
                if line == word.text:
                    break
                lines.append(line)
            body = "\n".join(lines) + ("\n" if lines else "")
            word.body = body
            if not word.quoted:
                inner = _Lexer(body, self.ctx, f"{self.where}in a here-document: ")
                text, _end, subs, expands = inner.expansions(0, mode="<<")
                word.body, word.body_kind = text, EXPANDS if expands else LITERAL
                tokens.append(_Nested(subs))
        return pos


class _Parser:
    """Groups tokens into simple commands, and adds what each runs besides itself."""

    def __init__(self, tokens: list[_Token], ctx: _Context, text: str, where: str) -> None:
        self.tokens = tokens
        self.ctx = ctx
        self.text = text
        self.where = where

    def error(self, message: str, pos: int) -> ShellParseError:
        return ShellParseError(f"{self.where}{message} at {_position(self.text, pos)}")

    def commands(self) -> list[SimpleCommand]:
        out: list[SimpleCommand] = []
        assignments: list[_Word] = []
        argv: list[_Word] = []
        redirects: list[Redirect] = []
        pipeline = self.ctx.new_pipeline()
        opened: list[int] = []
        feeder: SimpleCommand | None = None
        last: SimpleCommand | None = None
        tokens = self.tokens
        cases: list[str] = []
        """One state per `case` being read: its subject, a pattern, or a body."""
        header = False
        """Reading the words of `for NAME in WORDS`: values, not a command."""
        i = 0

        def flush() -> None:
            nonlocal assignments, argv, redirects, last
            if assignments or argv or redirects:
                command = SimpleCommand(
                    tuple(w.text for w in assignments), tuple(w.text for w in argv),
                    "".join(w.kind for w in argv), tuple(redirects), pipeline,
                    assignment_kinds="".join(w.kind for w in assignments))
                out.append(command)
                out.extend(self.ctx.derive(command, feeder))
                last = command
            assignments, argv, redirects = [], [], []

        while i < len(tokens):
            tok = tokens[i]
            i += 1
            if isinstance(tok, _Nested):
                out.extend(tok.commands)
                continue
            if isinstance(tok, _Word):
                out.extend(tok.nested)
                keyword = not argv and not assignments and not redirects and not tok.quoted
                if header or (cases and cases[-1] != _BODY and not (
                        keyword and tok.text == "esac")):
                    if cases and cases[-1] == _SUBJECT and not tok.quoted and tok.text == "in":
                        cases[-1] = _PATTERN
                    continue
                if keyword and tok.text == "case":
                    cases.append(_SUBJECT)
                    continue
                if keyword and tok.text == "esac" and cases:
                    cases.pop()
                    continue
                if keyword and tok.text in ("for", "select"):
                    i += _loop_header(tokens, i)
                    header = _in_list(tokens, i)
                    i += int(header)
                    continue
                if not argv and not tok.quoted and _ASSIGNMENT.match(tok.text):
                    assignments.append(tok)
                elif not argv and not tok.quoted and tok.text in _SKIPPED_AT_START:
                    continue
                elif not argv and not assignments and not tok.quoted and tok.text in (
                        "coproc", "function"):
                    i += _keyword_name(tokens, i)
                    continue
                elif tok.text or tok.quoted:
                    argv.append(tok)
                continue
            op = tok.text
            if cases and cases[-1] == _PATTERN:  # `a|b)`, `(*)`: patterns, then a body
                if op == ")":
                    cases[-1] = _BODY
                continue
            if op in ("(", ")") and _in_conditional(argv):
                argv.append(_Word(op, LITERAL, False))  # `[[ ( -f a ) ]]`, `=~ ^(a|b)$`
                continue
            fd = op[: len(op) - len(op.lstrip("0123456789"))]
            base = op[len(fd):]
            if base in _REDIRECTS or base in _HEREDOCS:
                target = tokens[i] if i < len(tokens) else None
                if not isinstance(target, _Word):
                    raise self.error(f"the redirection {op!r} has no target", tok.pos)
                out.extend(target.nested)
                word = Word(target.text, target.kind, target.quoted)
                if base in _HEREDOCS:
                    redirects.append(Redirect(base, fd, word, target.body or "",
                                              target.body_kind))
                else:
                    redirects.append(Redirect(base, fd, word))
                i += 1
            elif op in _SEPARATORS:
                flush()
                header = False
                if op in _CASE_ENDS and cases:
                    cases[-1] = _PATTERN
                if op in _PIPES:
                    feeder = _GROUP if _ends_group(tokens[i - 2] if i >= 2 else None) else last
                else:
                    feeder = None
                    pipeline = self.ctx.new_pipeline()
            elif op == "(":
                nxt = tokens[i] if i < len(tokens) else None
                if isinstance(nxt, _Op) and nxt.text == ")" and len(argv) == 1 and not assignments:
                    argv = []
                    i += 1
                    continue
                if argv or assignments:
                    raise self.error("unexpected '(' after a command word", tok.pos)
                opened.append(tok.pos)
            elif op == ")":
                flush()
                if opened:
                    opened.pop()
        if opened:
            raise self.error("unclosed '('", opened[-1])
        flush()
        return out


_SUBJECT, _PATTERN, _BODY = "subject", "pattern", "body"
_CASE_ENDS = frozenset({";;", ";&", ";;&"})


def _loop_header(tokens: list[_Token], i: int) -> int:
    """After `for` or `select`: 1 when `tokens[i]` is the loop's NAME (skipped like the
    keyword), 0 before `((` (bash's `for ((…))`, read as the subshells dash sees)."""
    name = tokens[i] if i < len(tokens) else None
    return int(isinstance(name, _Word) and not name.quoted and bool(_NAME.fullmatch(name.text)))


def _in_list(tokens: list[_Token], i: int) -> bool:
    """`tokens[i]` is the `in` of `for NAME in WORDS`: the words up to the separator are the
    loop's values (what they substitute still runs), not a command."""
    word = tokens[i] if i < len(tokens) else None
    return isinstance(word, _Word) and not word.quoted and word.text == "in"


def _in_conditional(argv: list[_Word]) -> bool:
    """Inside bash's `[[ … ]]`, where parentheses group or belong to a regex. Its `<`, `>`,
    `&&`, `||` and `|` are still read as dash, the usual /bin/sh, reads them (redirections and
    pipes), so what either shell runs or writes is seen."""
    return bool(argv) and argv[0].text == "[[" and not argv[0].quoted and not any(
        w.text == "]]" and not w.quoted for w in argv[1:])


def _keyword_name(tokens: list[_Token], i: int) -> int:
    """After the keyword `coproc` or `function`: 1 when `tokens[i]` is the NAME of
    `coproc NAME { …; }`, `function NAME ( … )` or `function NAME() { …; }` (skipped like
    the keyword), else 0 (`coproc cmd args` runs cmd)."""
    if i + 1 >= len(tokens):
        return 0
    name, after = tokens[i], tokens[i + 1]
    if not isinstance(name, _Word) or name.quoted or not _NAME.fullmatch(name.text):
        return 0
    opens = (isinstance(after, _Op) and after.text == "(") or (
        isinstance(after, _Word) and not after.quoted and after.text == "{")
    return 1 if opens else 0


_GROUP = SimpleCommand((), ("{ … }",))
"""What feeds a pipe when a group (`{ …; }`, `( … )`, a loop) is piped: several commands."""


def _ends_group(token: _Token | None) -> bool:
    if isinstance(token, _Op):
        return token.text == ")"
    return isinstance(token, _Word) and not token.quoted and token.text in (
        "}", "done", "fi", "esac")


def _check_text(command: object) -> str:
    if not isinstance(command, str):
        raise ShellParseError(f"a command must be text, not {type(command).__name__}")
    if "\x00" in command:
        raise ShellParseError(f"a NUL character at {_position(command, command.index(chr(0)))}"
                              f" (no shell can receive one)")
    try:
        command.encode()
    except UnicodeEncodeError as exc:
        raise ShellParseError(
            f"it is not valid text: a lone surrogate {command[exc.start]!r} at "
            f"{_position(command, exc.start)}") from exc
    return command


@lru_cache(maxsize=512)
def _read(command: str) -> CommandLine:
    ctx = _Context("bash")
    commands = ctx.parse(command)
    blind = ctx.blind
    if "$'" in command:
        dash = _Context("dash")
        try:
            more = dash.parse(command)
        except ShellParseError:
            blind.append("`$'…'` reads differently in dash and in bash, and dash cannot read "
                         "this command: cannot tell what runs")
        else:
            commands.extend(c for c in more if c not in commands)
            blind.extend(dash.blind)
    return CommandLine(command, tuple(commands), tuple(dict.fromkeys(blind)))


def parse_line(command: str) -> CommandLine:
    """The command line read, whatever it holds (an empty one has no commands)."""
    return _read(_check_text(command))


def read(command: str) -> CommandLine:
    """A command line to run, read: raises ShellParseError for one that cannot be read or
    holds no command. Cached: the policy, the preview and run_command share one reading."""
    line = parse_line(command)
    if not command.strip():
        raise ShellParseError("the command is empty")
    return line


def parse(command: str) -> list[SimpleCommand]:
    """Every simple command in `command`, substitutions first, in the order they appear."""
    return list(parse_line(command).commands)


def split_commands(command: str) -> list[list[str]]:
    """Every simple command of `command` as its list of words (see the module docstring)."""
    return [list(p) for p in parse_line(command).parts]
