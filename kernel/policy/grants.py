"""Grants: what "allow for this session" and "always allow" turn an approved call into.

A grant is a rule that matches exactly the approved call and its equivalent spellings:
- a command: one rule per part, its words literal (`run_command(git status)`), so
  `git   "status"` later matches and `git status --short` does not;
- a call with paths: one rule per path, literal (`write_file(docs/a.md)`, `read_file(~/x)`);
- any other call: the tool's name (`mcp__time__now`).

Session grants live in the session's events (ApprovalDecision with scope `session`, minus
GrantRevoked), so they survive a restart; "always" grants are `allow` rules in settings.json.
Destructive calls and writes to protected paths are never granted beyond the one call.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import PurePath

from kernel.events import ApprovalDecision, Event, GrantRevoked
from kernel.policy.decide import CallFacts, CommandFacts, Grant, Session
from kernel.policy.rules import (
    COMMAND_TOOLS,
    Anchor,
    Rule,
    command_rule_text,
    literal_path,
    parse_rule,
)
from kernel.tools.spec import ToolSpec


def grant_rules(spec: ToolSpec, facts: CallFacts, session: Session) -> tuple[Rule, ...]:
    """The rules a grant made from this call consists of."""
    command: CommandFacts | None = facts.command if spec.name in COMMAND_TOOLS else None
    if command is not None and command.parts:
        texts = [command_rule_text(spec.name, part) for part in command.parts]
    else:
        texts = [f"{spec.name}({_path_glob(v.resolved, session)})"
                 for n, v in facts.paths.items() if n in spec.path_params]
        texts = texts or [spec.name]
    return tuple(parse_rule(t) for t in dict.fromkeys(texts))


def _path_glob(path: PurePath, session: Session) -> str:
    for base, prefix in ((session.workspace, ""), (session.home, "~/")):
        if path.is_relative_to(base) and path != base:
            return prefix + literal_path(path.relative_to(base).as_posix())
    return literal_path(path.as_posix())


def describe(rule: Rule) -> str:
    """The rule in words, as shown before "always allow" saves it."""
    if rule.command is not None:
        words = " ".join(rule.command.words)
        tail = " followed by any arguments" if rule.command.rest else ""
        if not rule.command.words:
            return f"{rule.tool}: every command"
        return (f"{rule.tool}: the command `{words}`{tail} (any spacing or quoting), "
                f"in every session")
    if rule.path is not None:
        where = {Anchor.WORKSPACE: "in the session's workspace",
                 Anchor.HOME: "in your home folder", Anchor.ABSOLUTE: "on this computer"}
        return f"{rule.tool}: paths matching {rule.path.glob} {where[rule.path.anchor]}"
    if rule.tool_regex is not None:
        return f"every call of every tool named like {rule.tool}"
    return f"every call of {rule.tool}"


def session_grants(events: Iterable[Event]) -> tuple[Grant, ...]:
    """The grants in force after these events of one session (in order)."""
    grants: dict[str, Grant] = {}
    for event in events:
        if isinstance(event, ApprovalDecision) and event.scope == "session" and event.rule:
            for text in decode_rules(event.rule):
                grants[text] = Grant(parse_rule(text), network=event.network)
        elif isinstance(event, GrantRevoked) and event.scope == "session":
            grants.pop(event.rule, None)
    return tuple(grants.values())


def encode_rules(texts: Sequence[str]) -> str:
    """Rule texts as one event field: the rule itself, or a JSON list (a rule never starts
    with `[`)."""
    return texts[0] if len(texts) == 1 else json.dumps(list(texts), ensure_ascii=False)


def decode_rules(field: str) -> list[str]:
    if field.startswith("["):
        return [str(t) for t in json.loads(field)]
    return [field] if field else []
