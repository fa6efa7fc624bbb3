"""Permission rules: `Tool` or `Tool(spec)`, parsed once, matched word by word or path by path.

Forms (the `permissions.allow|ask|deny` lists of settings.json):
- `read_file`, `mcp__git__*`      a tool name; `*` in the name matches any characters.
- `run_command(git status)`      a command, compared word by word with each part of the
                                 parsed call (`a && b`, pipes: every part is a command).
                                 A word is a glob (`test-*`); a lone `*` as the last word
                                 matches any number of further words (also none; so
                                 `run_command(*)` is every command); a lone `*` elsewhere
                                 matches exactly one word. Quoting and spacing
                                 are those of the shell, so `git  "status"` is `git status`.
- `write_file(docs/**)`          a path glob for tools with path arguments: relative to the
                                 workspace, `~/...` under the home folder, or absolute.
                                 `**` matches any number of folders, `*` and `?` stay inside
                                 one name. `docs/**` matches what is inside `docs`.

A rule that cannot be parsed raises `RuleError` naming it; it is never skipped. A rule of
settings.json (`parse_setting_rule`) must also name a tool Reins has: one of
`BUILTIN_TOOLS`, an MCP tool `mcp__<server>__<tool>`, or a `*` pattern that can match one of
them; a rule naming no such tool would match nothing (a deny rule `Bash(curl *)` copied from
Claude Code would deny no curl), so it is refused, with the Reins spelling for Claude Code's
tool names.
"""

from __future__ import annotations

import enum
import fnmatch
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from kernel.shell.parse import ShellParseError, parse_line
from kernel.shell.words import GLOB, LITERAL


class SpecKind(enum.Enum):
    """What a tool's rules may give in parentheses."""

    NONE = "none"
    """Nothing: the tool's name alone (`read_tool_output`)."""
    COMMAND = "command"
    PATH = "path"


BUILTIN_TOOLS: Mapping[str, SpecKind] = {
    "read_file": SpecKind.PATH,
    "write_file": SpecKind.PATH,
    "edit_file": SpecKind.PATH,
    "list_directory": SpecKind.PATH,
    "glob": SpecKind.PATH,
    "grep": SpecKind.PATH,
    "read_tool_output": SpecKind.NONE,
    "run_command": SpecKind.COMMAND,
    "find_tools": SpecKind.NONE,
    "mcp_resources": SpecKind.NONE,
}
"""THE names of the tools Reins registers besides MCP tools (tested equal to the registry's,
with the spec each one's rules take), and what their rules may give in parentheses."""
MCP_PREFIX = "mcp__"
_MCP_TOOL = re.compile(r"mcp__[A-Za-z0-9_-]+?__[A-Za-z0-9_-]+\Z")
"""`mcp__<server>__<tool>` (kernel.mcp.naming), server and tool not empty."""

COMMAND_TOOLS: Mapping[str, str] = {"run_command": "command"}
"""Tools whose rule spec is a command, and the argument that holds it."""

_RULE = re.compile(r"^\s*(?P<tool>[A-Za-z0-9_*-]{1,64})\s*(?:\((?P<spec>.*)\))?\s*$", re.S)
_GLOB_CHARS = re.compile(r"([*?\[])")


class RuleError(ValueError):
    """A rule that cannot be parsed; the message names the rule."""

    def __init__(self, rule: str, problem: str) -> None:
        super().__init__(f"rule {rule!r}: {problem}")
        self.rule = rule
        self.problem = problem


class Anchor(enum.StrEnum):
    WORKSPACE = "workspace"
    HOME = "home"
    ABSOLUTE = "absolute"


@dataclass(frozen=True)
class CommandPattern:
    """The words of a command rule. `rest` is True when it ends with a lone `*`."""

    words: tuple[str, ...]
    rest: bool
    regexes: tuple[re.Pattern[str] | None, ...] = field(compare=False, repr=False)

    plain: bool = field(default=False, compare=False, repr=False)
    """No word is a glob: compared as a tuple."""

    def covers(self, words: Sequence[str], kinds: str) -> bool:
        """An allow rule's match: the words match AND the rule sees them as they will run.
        `kinds` has one kernel.shell.words kind per word. A word the shell changes (`$X`,
        `$(…)`, `~`, …) is seen by no rule; an unquoted glob only by the trailing `*`,
        which accepts any words anyway, and so whatever names the glob becomes. A rule
        without words (`run_command(*)`) names no words and covers every command."""
        if not self.words and self.rest:
            return True
        if len(kinds) != len(words) or not self.matches(words):
            return False
        n = len(self.words)
        return set(kinds[:n]) <= {LITERAL} and set(kinds[n:]) <= {LITERAL, GLOB}

    def matches(self, words: Sequence[str]) -> bool:
        n = len(self.words)
        if len(words) < n or (not self.rest and len(words) != n):
            return False
        if self.plain:
            return tuple(words[:n]) == self.words
        for pattern, rx, word in zip(self.words, self.regexes, words, strict=False):
            if rx is None:
                if pattern != word:
                    return False
            elif not rx.match(word):
                return False
        return True


@dataclass(frozen=True)
class PathPattern:
    """A path glob anchored at the workspace, the home folder, or the root."""

    anchor: Anchor
    glob: str
    regex: re.Pattern[str] = field(compare=False, repr=False)

    def matches(self, path: str) -> bool:
        """`path` is relative to the anchor (POSIX separators, no leading slash)."""
        return self.regex.match(path) is not None


@dataclass(frozen=True)
class Rule:
    """One parsed rule. `text` is its canonical spelling (what settings store)."""

    text: str
    tool: str
    tool_regex: re.Pattern[str] | None = field(compare=False, repr=False)
    command: CommandPattern | None = None
    path: PathPattern | None = None

    @property
    def has_spec(self) -> bool:
        return self.command is not None or self.path is not None

    def matches_tool(self, name: str) -> bool:
        if self.tool_regex is None:
            return name == self.tool
        return self.tool_regex.match(name) is not None


def parse_rule(text: str) -> Rule:
    """Parse one rule or raise RuleError naming it."""
    if not isinstance(text, str):
        raise RuleError(str(text), "a rule must be a string")
    m = _RULE.match(text)
    if m is None:
        raise RuleError(
            text,
            "expected `Tool` or `Tool(spec)`; a tool name uses letters, digits, `_`, `-` "
            "and `*`, and the spec is closed by `)` at the very end",
        )
    tool, spec = m.group("tool"), m.group("spec")
    tool_regex = _tool_regex(tool)
    if spec is None:
        return Rule(text=tool, tool=tool, tool_regex=tool_regex)
    if tool_regex is not None:
        raise RuleError(text, "a tool name with `*` cannot take a (spec); write it bare")
    spec = spec.strip()
    if not spec:
        raise RuleError(text, "empty (spec); write the tool name alone to match every call")
    if tool in COMMAND_TOOLS:
        command = _parse_command(text, spec)
        shown = " ".join([_join_words(command.words)] * bool(command.words)
                         + ["*"] * command.rest)
        return Rule(text=f"{tool}({shown})", tool=tool, tool_regex=None, command=command)
    path = _parse_path(text, spec)
    return Rule(text=f"{tool}({path.glob})", tool=tool, tool_regex=None, path=path)


def parse_rules(texts: Iterable[str]) -> tuple[Rule, ...]:
    return tuple(parse_rule(t) for t in texts)


def parse_setting_rule(text: str) -> Rule:
    """A rule a person wrote (settings.json): parsed, and refused with RuleError unless it
    names a tool Reins has and gives a spec only where that tool's rules take one."""
    m = _RULE.match(text) if isinstance(text, str) else None
    if m is not None:
        _check_tool(text, m.group("tool"), m.group("spec"))
    rule = parse_rule(text)
    kind = BUILTIN_TOOLS.get(rule.tool, SpecKind.NONE)
    if rule.has_spec and kind is SpecKind.NONE:
        what = "an MCP tool's arguments are not matched" if rule.tool.startswith(
            MCP_PREFIX) else f"{rule.tool} has no command or path argument to match"
        raise RuleError(text, f"{rule.tool} takes no (spec) ({what}); write `{rule.tool}` "
                              f"alone for every call of it")
    return rule


def _check_tool(text: str, tool: str, spec: str | None) -> None:
    if tool in BUILTIN_TOOLS or _MCP_TOOL.match(tool):
        return
    if "*" in tool:
        head = tool.split("*", 1)[0]
        if head.startswith(MCP_PREFIX) or MCP_PREFIX.startswith(head) or any(
                fnmatch.fnmatchcase(name, tool) for name in BUILTIN_TOOLS):
            return
        raise RuleError(text, f"`{tool}` matches no Reins tool (Reins' tools: "
                              f"{', '.join(BUILTIN_TOOLS)}, and MCP tools named "
                              f"mcp__<server>__<tool>)")
    claude = _CLAUDE_CODE.get(tool) or next(
        (v for k, v in _CLAUDE_CODE.items() if k.casefold() == tool.casefold()), None)
    if claude is not None:
        names, note = claude
        said = f"`{tool}` is Claude Code's tool name, not a Reins tool"
        if names:
            said += f"; in Reins write {' and '.join(_spelled(n, spec) for n in names)}"
        if names != ("run_command",) and spec is not None and re.match(r"\s*/[^/]", spec):
            said += (" (in Claude Code `/path` is relative to the settings file, in Reins it "
                     "is absolute: write the path from the workspace if that is what it "
                     "meant)")
        raise RuleError(text, f"{said}{'. ' + note if note else ''}")
    if re.fullmatch(r"mcp__[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*", tool):
        raise RuleError(text, f"`{tool}` names an MCP server, not one of its tools, and "
                              f"would match nothing; for every tool of that server write "
                              f"`{tool}__*`")
    import difflib  # only to explain a refused rule: settings that load never need it

    folded = {n.casefold(): n for n in BUILTIN_TOOLS}
    key = tool.casefold()
    close = [key] if key in folded else difflib.get_close_matches(key, list(folded), n=1,
                                                                  cutoff=0.5)
    hint = f"; did you mean {_spelled(folded[close[0]], spec)}?" if close else ""
    raise RuleError(text, f"`{tool}` is not a Reins tool, so the rule would match nothing"
                          f"{hint} (Reins' tools: {', '.join(BUILTIN_TOOLS)}, and MCP tools "
                          f"named mcp__<server>__<tool>)")


def _spelled(tool: str, spec: str | None) -> str:
    """The rule for `tool` with the same spec, as settings would store it; with the reason
    when that rule itself cannot be parsed (Claude Code's `curl:*`)."""
    text = f"{tool}({spec.strip()})" if spec is not None and spec.strip() else tool
    try:
        return f"`{parse_rule(text).text}`"
    except RuleError as exc:
        return f"`{text}` ({exc.problem})"


_NO_SUCH = ((), "Reins has no such tool")
_CLAUDE_CODE: Mapping[str, tuple[tuple[str, ...], str]] = {
    "Bash": (("run_command",), ""),
    "Read": (("read_file",), "Claude Code's Read rules also cover Grep, Glob and LS; in Reins "
                             "each tool has its own rules, so write one for grep, glob and "
                             "list_directory too"),
    "Edit": (("edit_file", "write_file"), "Claude Code's Edit rules cover every tool that "
                                          "changes files"),
    "MultiEdit": (("edit_file",), ""),
    "Write": (("write_file",), ""),
    "NotebookEdit": (("edit_file",), ""),
    "NotebookRead": (("read_file",), ""),
    "Glob": (("glob",), ""),
    "Grep": (("grep",), ""),
    "LS": (("list_directory",), ""),
    "WebFetch": ((), "Reins has no tool that fetches web pages: commands reach the network "
                     "only when you allow it, and a rule for a downloader names the command, "
                     "e.g. `run_command(curl *)`, `run_command(wget *)`"),
    "WebSearch": ((), "Reins has no tool that searches the web"),
    **{name: _NO_SUCH for name in ("Task", "Agent", "TodoWrite", "TodoRead", "BashOutput",
                                   "KillShell", "KillBash", "ExitPlanMode", "SlashCommand",
                                   "Skill", "ListMcpResourcesTool", "ReadMcpResourceTool")},
}
"""Claude Code's tool names: what to write in Reins instead."""


def _tool_regex(tool: str) -> re.Pattern[str] | None:
    if "*" not in tool:
        return None
    return re.compile(re.escape(tool).replace(r"\*", ".*") + r"\Z")


def _parse_command(text: str, spec: str) -> CommandPattern:
    try:
        parts = [c.words for c in parse_line(spec).commands if not c.via]
    except ShellParseError as exc:
        raise RuleError(text, f"the command cannot be parsed: {exc}") from exc
    if len(parts) != 1 or not parts[0]:
        raise RuleError(
            text,
            "a command rule names one command; write one rule per part of a compound "
            "command (`a && b` needs a rule for `a` and one for `b`)",
        )
    words = tuple(parts[0])
    if len(words[-1]) > 2 and words[-1].endswith(":*"):
        head = " ".join([*words[:-1], words[-1][:-2]])
        raise RuleError(
            text,
            f"`{words[-1]}` at the end is Claude Code's prefix form, which here would be one "
            f"word starting `{words[-1][:-1]}` and match almost nothing; write "
            f"`run_command({head} *)` for `{head}` followed by any words, or "
            f"`{words[-1][:-2]}:?*` for one word starting `{words[-1][:-1]}`",
        )
    rest = words[-1] == "*"
    if rest:
        words = words[:-1]
    regexes = tuple(_word_regex(w) for w in words)
    return CommandPattern(words=words, rest=rest, regexes=regexes,
                          plain=all(rx is None for rx in regexes))


def _word_regex(word: str) -> re.Pattern[str] | None:
    if not _GLOB_CHARS.search(word):
        return None
    return re.compile(fnmatch.translate(word), re.S)


def _join_words(words: Sequence[str]) -> str:
    """Words back to rule text that parses to the same words."""
    return " ".join(_quote(w) for w in words)


def _quote(word: str) -> str:
    if word and re.fullmatch(r"[A-Za-z0-9_@%+=:,./*?\[\]!^-]+", word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def _parse_path(text: str, spec: str) -> PathPattern:
    if "\x00" in spec:
        raise RuleError(text, "a path cannot contain a NUL character")
    if spec.startswith("~/") or spec == "~":
        anchor, body = Anchor.HOME, spec[1:].lstrip("/")
    elif spec.startswith("~"):
        raise RuleError(text, "only `~/` (your own home folder) is supported, not `~user`")
    elif spec.startswith("/"):
        anchor, body = Anchor.ABSOLUTE, spec.lstrip("/")
    else:
        anchor, body = Anchor.WORKSPACE, spec
    parts = [p for p in PurePosixPath(body).parts if p != "."]
    if ".." in parts:
        raise RuleError(text, "a path rule cannot contain `..`; write the path it leads to")
    if not parts:
        raise RuleError(text, "the path names no file or folder; use `**` for everything")
    glob = "/".join(parts)
    if glob != glob.strip():
        raise RuleError(text, "the path starts or ends with a blank (before a `/` that is "
                              "dropped), which the rule's text cannot keep; write it without")
    shown = {Anchor.HOME: "~/" + glob, Anchor.ABSOLUTE: "/" + glob, Anchor.WORKSPACE: glob}
    return PathPattern(anchor=anchor, glob=shown[anchor], regex=_path_regex(text, parts))


def _path_regex(text: str, parts: Sequence[str]) -> re.Pattern[str]:
    out: list[str] = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
            continue
        if "**" in part:
            raise RuleError(text, f"`**` must be a whole path component, not part of {part!r}")
        out.append(_component_regex(part) + ("" if last else "/"))
    body = "".join(out)
    if parts[-1] == "**":
        body = body[: -len(".*")] + "[^/].*" if len(parts) > 1 else "[^/].*"
    return re.compile(body + r"\Z", re.S)


def _component_regex(part: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(part):
        c = part[i]
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            j = part.find("]", i + 2 if part[i + 1 : i + 2] in ("!", "]") else i + 1)
            if j == -1:
                out.append(re.escape(c))
            else:
                inner = part[i + 1 : j].replace("\\", "\\\\").replace("[", "\\[")
                if inner.startswith("!"):
                    inner = "^" + inner[1:]
                elif inner.startswith("^"):
                    inner = "\\" + inner
                out.append("[" + inner + "]")
                i = j
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def literal_word(word: str) -> str:
    """A command word as a rule word that matches only itself (globs escaped)."""
    return _GLOB_CHARS.sub(r"[\1]", word)


def literal_path(path: str) -> str:
    """A relative or absolute path as a rule glob that matches only itself."""
    return _GLOB_CHARS.sub(r"[\1]", path)


def command_rule_text(tool: str, words: Sequence[str]) -> str:
    """The rule that matches exactly this command part (and equivalent spellings)."""
    return f"{tool}({_join_words([literal_word(w) for w in words])})"
