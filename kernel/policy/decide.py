"""THE policy function: one call's facts in, allow / ask / deny out, with who decided and why.

`decide()` is pure: every fact it needs (path verdicts from the path policy, the parsed and
classified command, the sandbox state, the session's mode and grants, the settings' rules) is
computed by the caller and passed in. Precedence:

0. a write into Reins' own settings or data (never possible for a tool)      → deny
1. a `deny` rule matching the call (any path, any part of a command)           → deny
2. `read-only` mode and a tool that is not a read                              → deny
3. an `ask` rule matching the call                                             → ask
4. always-ask facts, in every mode (read-only included for reads), whatever the allow
   rules and grants say: a destructive or opaque command (kernel.shell.classify), a
   destructive tool, a write to a protected path, a secret location
   (`kernel.pathrules.SECRET_PATTERNS`) passed to a tool that would read or change its
   content, a command with no sandbox that holds its changes                     → ask
   (protected and secret paths are allowed once only: only approving that very call
   lifts them, never a session grant or an "always" rule)
5. a session grant covering the whole call                                     → allow
6. `allow` rules covering the whole call (every path, every command part)      → allow
7. the mode (`read-only`/`ask`/`auto-edit`/`auto`, see `_by_mode`)            → allow | ask

A command is decided from its risk label, the rules over its literal words, the mode and the
sandbox state, never from guesses of what it will write: it runs as a transaction, and what
it changed is judged afterwards with the one path policy (kernel.transaction.judge), which
holds a protected change for the user in every mode.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import TYPE_CHECKING

from kernel.events import RiskLevel
from kernel.modes import MODE_NAMES
from kernel.modes import Mode as Mode
from kernel.pathrules import describe_secret
from kernel.policy.rules import COMMAND_TOOLS, Rule
from kernel.policy.ruleset import RuleSet, Target, covering, relative_paths
from kernel.tools.spec import ErrorCode, Risk

if TYPE_CHECKING:
    from kernel.tools.pathpolicy import PathVerdict
    from kernel.tools.spec import ToolSpec


NAMES_ONLY: frozenset[str] = frozenset({"list_directory", "glob"})
"""Built-in tools that show only the names below a path, never a file's content: a secret
location passed to them is not a secret fact (its names are listed, each marked secret)."""

class Verdict(enum.StrEnum):
    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


@dataclass(frozen=True)
class CommandFacts:
    """A command call, parsed and classified by kernel.shell before the policy sees it."""

    text: str
    parts: tuple[tuple[str, ...], ...] = ()
    kinds: tuple[str, ...] = ()
    """Per part, one kernel.shell.words kind per word: an allow rule matches only the words
    it can see (a part without kinds is seen by no allow rule)."""
    literal: bool = False
    """Every word of every part is literal: a grant made from it matches it again."""
    destructive: bool = False
    destructive_reason: str = ""
    network: bool = False
    """The classifier thinks the command needs the network (install, clone, fetch...)."""
    parse_error: str = ""
    level: RiskLevel = "ordinary"
    """How alarming the classifier finds it (kernel.shell.classify.Classification.level)."""


@dataclass(frozen=True)
class CallFacts:
    """What the caller found out about one validated call."""

    paths: Mapping[str, PathVerdict] = field(default_factory=dict)
    """Verdict per path argument present in the call (ToolSpec.path_params)."""
    command: CommandFacts | None = None
    sandboxed: bool = True
    """Commands run in a sandbox as transactions, whose changes are judged before they reach
    the workspace (kernel.runtime.assemble.SandboxFacts)."""


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
    level: RiskLevel = "ordinary"
    """How alarming the call is for a person (`risk_level`): what the approval shows."""


def decide(spec: ToolSpec, args: Mapping[str, object], facts: CallFacts, session: Session,
           allow: RuleSet, ask: RuleSet, deny: RuleSet) -> Decision:
    """Decide one validated call. Pure: no I/O, no clock, no randomness."""
    command = facts.command if spec.name in COMMAND_TOOLS else None
    writes = spec.risk in (Risk.WRITE, Risk.DESTRUCTIVE)
    outside = [n for n, v in facts.paths.items() if not v.inside_workspace]
    protected = [n for n, v in facts.paths.items() if v.protected and writes]
    secret = [] if spec.name in NAMES_ONLY else [
        n for n, v in facts.paths.items() if v.secret is not None]
    risk = Risk.DESTRUCTIVE if command is not None and command.destructive else spec.risk
    grantable = not protected and not secret and risk is not Risk.DESTRUCTIVE and (
        command is None or command.literal)
    network = command is not None and command.network

    def out(verdict: Verdict, by: str, reason: str, rule: str = "", *, net: bool = False,
            code: ErrorCode | None = None) -> Decision:
        return Decision(verdict, by, reason, risk, rule, net, grantable, grantable, code,
                        risk_level(spec, command))

    if command is not None and command.parse_error:
        return out(Verdict.DENY, "command parser",
                   f"Reins cannot read this command: it cannot be parsed ({command.parse_error}). "
                   f"Nothing was run.",
                   code=ErrorCode.INVALID_ARGUMENTS)

    own = [str(v.resolved) for v in facts.paths.values() if v.own_data]
    if own and writes:
        return out(Verdict.DENY, "always deny",
                   f"{', '.join(own)} is inside Reins' own settings or data, which tools never "
                   f"write. Change settings in the app or in settings.json yourself.")
    target = _target(spec, facts, session, command)
    hit = deny.first_match(target)
    if hit is not None:
        return out(Verdict.DENY, f"rule deny {hit.text}", f"Your rule {hit.text} blocks this.",
                   hit.text)
    if session.mode is Mode.READ_ONLY and spec.risk is not Risk.READ:
        return out(Verdict.DENY, "mode read-only",
                   f"The session is in Read-only mode, where only tools that read run. Switch "
                   f"to another mode to let {spec.name} run.")
    hit = ask.first_match(target)
    if hit is not None:
        return out(Verdict.ASK, f"rule ask {hit.text}", f"Your rule {hit.text} says to ask first.",
                   hit.text, net=network)

    if command is not None and command.destructive:
        return out(Verdict.ASK, "always ask",
                   _destructive_reason(command),
                   net=network)
    if risk is Risk.DESTRUCTIVE:
        return out(Verdict.ASK, "always ask",
                   f"{spec.name} can destroy data, so it needs your OK every time.")
    if protected:
        where = ", ".join(str(facts.paths[n].resolved) for n in protected)
        return out(Verdict.ASK, "always ask",
                   f"This writes {where}, a protected path (it runs code or holds "
                   f"settings), so it needs your OK every time.")
    if secret:
        return out(Verdict.ASK, "always ask", _secret_reason(facts, secret, writes=writes),
                   net=network)
    if spec.risk is Risk.EXECUTE and not facts.sandboxed:
        return out(Verdict.ASK, "always ask",
                   "Commands cannot run in a sandbox here that holds what they change (reins "
                   "doctor says why), so every command needs your OK.",
                   net=network)

    granted = [g.rule for g in session.grants if g.network or not network]
    used = covering(granted, target)
    if used:
        return out(Verdict.ALLOW, f"session grant {used}", f"You allowed {used} for this session.",
                   used, net=network)
    used = allow.covering(target)
    if used:
        return out(Verdict.ALLOW, f"rule allow {used}", f"Your rule {used} allows this.", used,
                   net=network)
    verdict, reason = _by_mode(spec, session.mode, outside, network, facts.sandboxed)
    return out(verdict, f"mode {session.mode.value}", reason, net=network)


_TOOL_LEVELS: dict[Risk, RiskLevel] = {
    Risk.READ: "harmless", Risk.WRITE: "ordinary", Risk.EXECUTE: "ordinary",
    Risk.DESTRUCTIVE: "destructive",
}


def risk_level(spec: ToolSpec, command: CommandFacts | None) -> RiskLevel:
    """How alarming a call is: a command's level is the classifier's (a command that cannot
    be read is destructive); another tool's follows its risk."""
    if command is not None:
        return "destructive" if command.parse_error else command.level
    return _TOOL_LEVELS[spec.risk]


def _destructive_reason(command: CommandFacts) -> str:
    """Why a command asks every time: what the classifier found, in its words."""
    found = command.destructive_reason or "the classifier flagged it"
    if command.level == "privilege":
        return f"This command {found}, so it needs your OK every time."
    return f"This is a destructive command: {found}. It needs your OK every time."


def _secret_reason(facts: CallFacts, names: Sequence[str], *, writes: bool) -> str:
    found = [facts.paths[n] for n in names]
    what = "; ".join(f"{v.resolved} is a secret location: {describe_secret(v.secret)}"
                     for v in found if v.secret is not None)
    verb = "changing" if writes else "reading"
    return f"{what}. {verb.capitalize()} it always asks for your OK, in every mode."


def _by_mode(spec: ToolSpec, mode: Mode, outside: Sequence[str], network: bool,
             sandboxed: bool) -> tuple[Verdict, str]:
    if spec.origin != "builtin":
        return Verdict.ASK, (f"{spec.name} comes from {spec.origin}: tools from outside Reins "
                             f"need your OK first.")
    if outside:
        return Verdict.ASK, (f"{', '.join(outside)} is outside the workspace, so it needs "
                             f"your OK.")
    if spec.risk is Risk.READ:
        return Verdict.ALLOW, "Reading inside the workspace needs no OK."
    if spec.risk is Risk.WRITE:
        if mode in (Mode.AUTO_EDIT, Mode.AUTO):
            return Verdict.ALLOW, (f"Changes inside the workspace run without asking in "
                                   f"{MODE_NAMES[mode]} mode.")
        return Verdict.ASK, (f"Changes need your OK in {MODE_NAMES[mode]} mode (Auto-edit "
                             f"mode lets changes inside the workspace run).")
    if spec.risk is Risk.EXECUTE and mode is Mode.AUTO:
        if network:
            return Verdict.ASK, "This command needs the network, so it needs your OK."
        if sandboxed:
            return Verdict.ALLOW, "Sandboxed commands run without asking in Auto mode."
    if spec.risk is Risk.EXECUTE:
        return Verdict.ASK, (f"Commands need your OK in {MODE_NAMES[mode]} mode (Auto mode "
                             f"runs sandboxed commands without asking).")
    return Verdict.ASK, f"{spec.name} needs your OK in {MODE_NAMES[mode]} mode."


def _target(spec: ToolSpec, facts: CallFacts, session: Session,
            command: CommandFacts | None) -> Target:
    workspace, home = str(session.workspace), str(session.home)
    paths = tuple(relative_paths(str(v.resolved), workspace, home)
                  for n, v in facts.paths.items() if n in spec.path_params)
    if command is None:
        return Target(spec.name, (), paths)
    return Target(spec.name, command.parts, paths, command.kinds)


def offered_tools(specs: Iterable[ToolSpec], mode: Mode) -> list[str] | None:
    """The tool names to offer the model (`registry.schemas(allowed=...)`): in read-only mode
    only read tools; otherwise None, meaning all of them."""
    if mode is not Mode.READ_ONLY:
        return None
    return [s.name for s in specs if s.risk is Risk.READ]
