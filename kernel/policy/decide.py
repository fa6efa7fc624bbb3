"""THE policy function: one call's facts in, allow / ask / deny out, with who decided and why.

`decide()` is pure: every fact it needs (path verdicts from the path policy, the parsed and
classified command, the sandbox state, the session's mode and grants, the settings' rules) is
computed by the caller and passed in. Precedence:

0. a write into Reins' own settings or data (never possible for a tool)      → deny
1. a `deny` rule matching the call (any path, any part of a command)           → deny
2. `read-only` mode and a tool that is not a read                              → deny
3. an `ask` rule matching the call                                             → ask
4. always-ask facts, in every mode, whatever the rules and grants say:
   a destructive command or tool, a write to a protected path, a command with no
   sandbox                                                                     → ask
5. a session grant covering the whole call                                     → allow
6. `allow` rules covering the whole call (every path, every command part)      → allow
7. the mode (`read-only`/`ask`/`auto-edit`/`auto`, see `_by_mode`)            → allow | ask
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import TYPE_CHECKING

from kernel.policy.rules import COMMAND_TOOLS, Anchor, Rule
from kernel.tools.spec import ErrorCode, Risk

if TYPE_CHECKING:
    from kernel.tools.pathpolicy import PathVerdict
    from kernel.tools.spec import ToolSpec


OWN_DATA = "reins:"
"""PathVerdict.protected prefix of Reins' own folders: the path policy never lets tools write
there, so asking would be pointless; such writes are denied."""


class Mode(enum.StrEnum):
    READ_ONLY = "read-only"
    ASK = "ask"
    AUTO_EDIT = "auto-edit"
    AUTO = "auto"


class Verdict(enum.StrEnum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


@dataclass(frozen=True)
class CommandFacts:
    """A command call, parsed and classified by kernel.shell before the policy sees it."""

    text: str
    parts: tuple[tuple[str, ...], ...] = ()
    destructive: bool = False
    destructive_reason: str = ""
    network: bool = False
    """The classifier thinks the command needs the network (install, clone, fetch...)."""
    parse_error: str = ""


@dataclass(frozen=True)
class CallFacts:
    """What the caller found out about one validated call."""

    paths: Mapping[str, PathVerdict] = field(default_factory=dict)
    """Verdict per path argument present in the call (ToolSpec.path_params)."""
    command: CommandFacts | None = None
    sandboxed: bool = True
    """A sandbox is available for commands (kernel.sandbox.detect)."""


class RuleSet:
    """Rules of one list (allow, ask or deny), indexed for matching many rules fast."""

    def __init__(self, rules: Sequence[Rule] = ()) -> None:
        self.rules: tuple[Rule, ...] = tuple(rules)
        self._by_tool: dict[str, list[Rule]] = {}
        self._globbed: list[Rule] = []
        self._by_first_word: dict[str, dict[str, list[Rule]]] = {}
        self._command_any: dict[str, list[Rule]] = {}
        for rule in self.rules:
            if rule.tool_regex is not None:
                self._globbed.append(rule)
            elif rule.command is not None and rule.command.words and \
                    rule.command.regexes[0] is None:
                first = rule.command.words[0]
                self._by_first_word.setdefault(rule.tool, {}).setdefault(first, []).append(rule)
            elif rule.command is not None:
                self._command_any.setdefault(rule.tool, []).append(rule)
            else:
                self._by_tool.setdefault(rule.tool, []).append(rule)

    def __len__(self) -> int:
        return len(self.rules)

    def for_tool(self, name: str) -> list[Rule]:
        """Rules without a command pattern that name this tool (path rules, bare names)."""
        found = list(self._by_tool.get(name, ()))
        found.extend(r for r in self._globbed if r.matches_tool(name))
        return found

    def command_rules(self, tool: str, words: Sequence[str]) -> list[Rule]:
        """Command rules of `tool` that could match a command starting like `words`."""
        found = list(self._by_first_word.get(tool, {}).get(words[0], ())) if words else []
        found.extend(self._command_any.get(tool, ()))
        return found


@dataclass(frozen=True)
class Grant:
    """A session grant: a rule the user allowed for this session (shown and revocable)."""

    rule: Rule
    network: bool = False


@dataclass(frozen=True)
class Session:
    """The session facts the policy reads."""

    mode: Mode
    workspace: PurePath
    home: PurePath
    grants: tuple[Grant, ...] = ()


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    decided_by: str
    """`rule deny run_command(rm *)`, `mode auto-edit`, `session grant ...`, `always ask`."""
    reason: str
    risk: Risk
    """The call's risk: the spec's, escalated by what this call does."""
    rule: str = ""
    network: bool = False
    """The command gets the network if it runs (the user's rule, grant or approval)."""
    can_session: bool = True
    can_always: bool = True
    error_code: ErrorCode | None = None


def decide(spec: ToolSpec, args: Mapping[str, object], facts: CallFacts, session: Session,
           allow: RuleSet, ask: RuleSet, deny: RuleSet) -> Decision:
    """Decide one validated call. Pure: no I/O, no clock, no randomness."""
    command = facts.command if spec.name in COMMAND_TOOLS else None
    writes = spec.risk in (Risk.WRITE, Risk.DESTRUCTIVE)
    outside = [n for n, v in facts.paths.items() if not v.inside_workspace]
    protected = [n for n, v in facts.paths.items() if v.protected and writes]
    risk = Risk.DESTRUCTIVE if command is not None and command.destructive else spec.risk
    grantable = not protected and risk is not Risk.DESTRUCTIVE
    network = command is not None and command.network

    def out(verdict: Verdict, by: str, reason: str, rule: str = "", *, net: bool = False,
            code: ErrorCode | None = None) -> Decision:
        return Decision(verdict, by, reason, risk, rule, net, grantable, grantable, code)

    if command is not None and command.parse_error:
        return out(Verdict.DENY, "command parser",
                   f"the command cannot be parsed ({command.parse_error}); nothing was run",
                   code=ErrorCode.INVALID_ARGUMENTS)

    own = [str(v.resolved) for v in facts.paths.values()
           if v.protected is not None and v.protected.startswith(OWN_DATA)]
    if own and writes:
        return out(Verdict.DENY, "always deny",
                   f"{', '.join(own)} is inside Reins' own settings or data, which tools never "
                   f"write (change settings in the app or in settings.json yourself)")
    hit = _any_match(deny, spec, facts, session, command)
    if hit is not None:
        return out(Verdict.DENY, f"rule deny {hit.text}", f"denied by the rule {hit.text}",
                   hit.text)
    if session.mode is Mode.READ_ONLY and spec.risk is not Risk.READ:
        return out(Verdict.DENY, "mode read-only",
                   f"{spec.name} is a {spec.risk.value} tool and the session is read-only")
    hit = _any_match(ask, spec, facts, session, command)
    if hit is not None:
        return out(Verdict.ASK, f"rule ask {hit.text}", f"the rule {hit.text} asks first",
                   hit.text, net=network)

    if command is not None and command.destructive:
        return out(Verdict.ASK, "always ask",
                   f"destructive command ({command.destructive_reason or 'classifier'})",
                   net=network)
    if risk is Risk.DESTRUCTIVE:
        return out(Verdict.ASK, "always ask", f"{spec.name} is a destructive tool")
    if protected:
        where = ", ".join(str(facts.paths[n].resolved) for n in protected)
        return out(Verdict.ASK, "always ask", f"write to a protected path: {where}")
    if spec.risk is Risk.EXECUTE and not facts.sandboxed:
        return out(Verdict.ASK, "always ask", "no sandbox is available, so every command asks",
                   net=network)

    granted = [g.rule for g in session.grants if g.network or not network]
    if granted and _covers(granted, spec, facts, session, command):
        used = _matching(granted, spec, facts, session, command)
        return out(Verdict.ALLOW, f"session grant {used}", f"allowed for this session ({used})",
                   used, net=network)
    if _covers_set(allow, spec, facts, session, command):
        rule = _matching(_candidates(allow, spec, command), spec, facts, session, command)
        return out(Verdict.ALLOW, f"rule allow {rule}", f"allowed by the rule {rule}", rule,
                   net=network)
    verdict, reason = _by_mode(spec, session.mode, outside, network, facts.sandboxed)
    return out(verdict, f"mode {session.mode.value}", reason, net=network)


def _by_mode(spec: ToolSpec, mode: Mode, outside: Sequence[str], network: bool,
             sandboxed: bool) -> tuple[Verdict, str]:
    if spec.origin != "builtin":
        return Verdict.ASK, f"{spec.name} comes from {spec.origin}; outside tools ask first"
    if outside:
        return Verdict.ASK, f"{', '.join(outside)} is outside the workspace"
    if spec.risk is Risk.READ:
        return Verdict.ALLOW, "reads inside the workspace run"
    if spec.risk is Risk.WRITE:
        if mode in (Mode.AUTO_EDIT, Mode.AUTO):
            return Verdict.ALLOW, f"writes inside the workspace run in {mode.value} mode"
        return Verdict.ASK, f"writes ask in {mode.value} mode"
    if spec.risk is Risk.EXECUTE and mode is Mode.AUTO:
        if network:
            return Verdict.ASK, "the command needs the network"
        if sandboxed:
            return Verdict.ALLOW, "sandboxed commands inside the workspace run in auto mode"
    return Verdict.ASK, f"{spec.risk.value} tools ask in {mode.value} mode"


def _rel(verdict: PathVerdict, anchor: Anchor, session: Session) -> str | None:
    """The verdict's path relative to the anchor, or None when it is not under it."""
    path = PurePath(verdict.resolved)
    base = {Anchor.WORKSPACE: session.workspace, Anchor.HOME: session.home,
            Anchor.ABSOLUTE: PurePath(path.anchor)}[anchor]
    try:
        rel = path.relative_to(base)
    except ValueError:
        return None
    return rel.as_posix() if rel.parts else None


def _rule_matches(rule: Rule, spec: ToolSpec, facts: CallFacts, session: Session,
                  command: CommandFacts | None) -> bool:
    """Does `rule` match some part of the call (one path, one command part)?"""
    if not rule.matches_tool(spec.name):
        return False
    if rule.command is not None:
        return command is not None and any(rule.command.matches(p) for p in command.parts)
    if rule.path is not None:
        return any(_path_matches(rule, v, session) for v in _path_verdicts(spec, facts))
    return True


def _path_verdicts(spec: ToolSpec, facts: CallFacts) -> list[PathVerdict]:
    return [v for n, v in facts.paths.items() if n in spec.path_params]


def _path_matches(rule: Rule, verdict: PathVerdict, session: Session) -> bool:
    if rule.path is None:
        return False
    rel = _rel(verdict, rule.path.anchor, session)
    return rel is not None and rule.path.matches(rel)


def _candidates(rules: RuleSet, spec: ToolSpec, command: CommandFacts | None) -> list[Rule]:
    found = rules.for_tool(spec.name)
    if command is not None:
        seen: set[int] = set()
        for part in command.parts:
            for rule in rules.command_rules(spec.name, part):
                if id(rule) not in seen:
                    seen.add(id(rule))
                    found.append(rule)
    return found


def _any_match(rules: RuleSet, spec: ToolSpec, facts: CallFacts, session: Session,
               command: CommandFacts | None) -> Rule | None:
    for rule in _candidates(rules, spec, command):
        if _rule_matches(rule, spec, facts, session, command):
            return rule
    return None


def _covers(rules: Sequence[Rule], spec: ToolSpec, facts: CallFacts, session: Session,
            command: CommandFacts | None) -> bool:
    """Every path and every command part is matched by some rule of `rules`."""
    relevant = [r for r in rules if r.matches_tool(spec.name)]
    if not relevant:
        return False
    if any(not r.has_spec for r in relevant):
        return True
    if command is not None and command.parts:
        return all(
            any(r.command is not None and r.command.matches(p) for r in relevant)
            for p in command.parts
        )
    verdicts = _path_verdicts(spec, facts)
    return bool(verdicts) and all(
        any(_path_matches(r, v, session) for r in relevant) for v in verdicts
    )


def _covers_set(rules: RuleSet, spec: ToolSpec, facts: CallFacts, session: Session,
                command: CommandFacts | None) -> bool:
    if not len(rules):
        return False
    return _covers(_candidates(rules, spec, command), spec, facts, session, command)


def _matching(rules: Sequence[Rule], spec: ToolSpec, facts: CallFacts, session: Session,
              command: CommandFacts | None) -> str:
    """The rule(s) that matched the call, for the record: per command part, in order."""
    relevant = [r for r in rules if r.matches_tool(spec.name)]
    bare = [r.text for r in relevant if not r.has_spec]
    if bare:
        return bare[0]
    if command is not None and command.parts:
        names = [next((r.text for r in relevant if r.command is not None
                       and r.command.matches(p)), "") for p in command.parts]
    else:
        names = [r.text for r in relevant if _rule_matches(r, spec, facts, session, command)]
    return " + ".join(n for n in dict.fromkeys(names) if n)


def offered_tools(specs: Iterable[ToolSpec], mode: Mode) -> list[str] | None:
    """The tool names to offer the model (`registry.schemas(allowed=...)`): in read-only mode
    only read tools; otherwise None, meaning all of them."""
    if mode is not Mode.READ_ONLY:
        return None
    return [s.name for s in specs if s.risk is Risk.READ]
