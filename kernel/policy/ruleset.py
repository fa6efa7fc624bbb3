"""Matching one call against many rules, fast: rule lists indexed by tool, first word, first
path component.

A call is matched as a `Target`: the tool's name, the words of each part of its command, and
each path argument relative to every anchor it lies under (workspace, home, root). A rule
*matches* a target when it matches one part or one path (deny and ask use this: they read the
words' text, whatever the shell does to them); rules *cover* a target when every part and
every path is matched by one of them, each part only through words the rule can see
(`CommandPattern.covers`: no expansion, a glob only where the rule's trailing `*` is; allow
and grants use this).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kernel.policy.rules import Anchor, Rule

_GLOB = frozenset("*?[")


@dataclass(frozen=True)
class Target:
    tool: str
    parts: tuple[tuple[str, ...], ...] = ()
    """The words of each simple command (command tools only)."""
    paths: tuple[Mapping[Anchor, str], ...] = ()
    """Per path argument: its path relative to each anchor it lies under."""
    kinds: tuple[str, ...] = ()
    """Per part, one kernel.shell.words kind per word: allow rules cover only the words they
    can see; a part without kinds is covered by none (deny and ask rules read the text)."""

    def kinds_of(self, i: int) -> str:
        return self.kinds[i] if i < len(self.kinds) else ""


def relative_paths(resolved: str, workspace: str, home: str) -> dict[Anchor, str]:
    """`resolved` (absolute, normalized) relative to each anchor it lies under."""
    out: dict[Anchor, str] = {}
    if resolved != "/":
        out[Anchor.ABSOLUTE] = resolved.lstrip("/")
    for anchor, base in ((Anchor.WORKSPACE, workspace), (Anchor.HOME, home)):
        prefix = base.rstrip("/") + "/"
        if resolved.startswith(prefix) and len(resolved) > len(prefix):
            out[anchor] = resolved[len(prefix):]
    return out


def _literal_head(pattern: str) -> str | None:
    """The first word / path component when it has no glob characters, else None."""
    return None if _GLOB & set(pattern) else pattern


class RuleSet:
    """The rules of one list (allow, ask or deny), indexed. Immutable once built."""

    def __init__(self, rules: Iterable[Rule] = ()) -> None:
        self.rules: tuple[Rule, ...] = tuple(rules)
        self._bare: dict[str, list[Rule]] = {}
        self._globbed: list[Rule] = []
        self._commands: dict[tuple[str, str | None], list[Rule]] = {}
        self._paths: dict[tuple[str, Anchor, str | None], list[Rule]] = {}
        self._tool_cache: dict[str, tuple[Rule, ...]] = {}
        for rule in self.rules:
            if rule.tool_regex is not None:
                self._globbed.append(rule)
            elif rule.command is not None:
                head = _literal_head(rule.command.words[0]) if rule.command.words else None
                self._commands.setdefault((rule.tool, head), []).append(rule)
            elif rule.path is not None:
                head = _literal_head(rule.path.glob.lstrip("~/").split("/", 1)[0])
                self._paths.setdefault((rule.tool, rule.path.anchor, head), []).append(rule)
            else:
                self._bare.setdefault(rule.tool, []).append(rule)

    def __len__(self) -> int:
        return len(self.rules)

    def _tool_rules(self, tool: str) -> tuple[Rule, ...]:
        """Rules without a spec that name this tool (exactly or by a `*` pattern)."""
        found = self._tool_cache.get(tool)
        if found is None:
            found = (*self._bare.get(tool, ()), *(r for r in self._globbed if
                                                   r.matches_tool(tool)))
            self._tool_cache[tool] = found
        return found

    def _part_rules(self, tool: str, words: Sequence[str]) -> list[Rule]:
        found = list(self._commands.get((tool, words[0]), ())) if words else []
        found.extend(self._commands.get((tool, None), ()))
        return found

    def _path_rules(self, tool: str, rels: Mapping[Anchor, str]) -> list[Rule]:
        found: list[Rule] = []
        for anchor, rel in rels.items():
            found.extend(self._paths.get((tool, anchor, rel.split("/", 1)[0]), ()))
            found.extend(self._paths.get((tool, anchor, None), ()))
        return found

    def candidates(self, target: Target) -> list[Rule]:
        """The rules that could match some part of the target (a superset, in rule order
        per part)."""
        found = list(self._tool_rules(target.tool))
        for words in target.parts:
            found.extend(self._part_rules(target.tool, words))
        for rels in target.paths:
            found.extend(self._path_rules(target.tool, rels))
        return found

    def first_match(self, target: Target) -> Rule | None:
        """The first rule matching one part or one path of the target."""
        for rule in self.candidates(target):
            if matches(rule, target):
                return rule
        return None

    def covering(self, target: Target) -> str:
        """The rules covering the whole target, joined by ` + ` ('' when not covered)."""
        if not self.rules:
            return ""
        bare = self._tool_rules(target.tool)
        if bare:
            return bare[0].text
        names: list[str] = []
        if target.parts:
            for i, words in enumerate(target.parts):
                kinds = target.kinds_of(i)
                hit = next((r for r in self._part_rules(target.tool, words)
                            if r.command is not None and r.command.covers(words, kinds)), None)
                if hit is None:
                    return ""
                names.append(hit.text)
        elif target.paths:
            for rels in target.paths:
                hit = next((r for r in self._path_rules(target.tool, rels)
                            if _path_hit(r, rels)), None)
                if hit is None:
                    return ""
                names.append(hit.text)
        return " + ".join(dict.fromkeys(names))


def _path_hit(rule: Rule, rels: Mapping[Anchor, str]) -> bool:
    pattern = rule.path
    return pattern is not None and (rel := rels.get(pattern.anchor)) is not None \
        and pattern.matches(rel)


def matches(rule: Rule, target: Target) -> bool:
    """Does the rule match one part or one path of the target?"""
    if not rule.matches_tool(target.tool):
        return False
    if rule.command is not None:
        return any(rule.command.matches(words) for words in target.parts)
    if rule.path is not None:
        return any(_path_hit(rule, rels) for rels in target.paths)
    return True


def covering(rules: Sequence[Rule], target: Target) -> str:
    """The rules (of `rules`) that together match every part and every path of the target,
    joined by ` + `, or '' when some part or path is matched by none of them."""
    relevant = [r for r in rules if r.matches_tool(target.tool)]
    for rule in relevant:
        if not rule.has_spec:
            return rule.text
    units: list[list[Rule]]
    if target.parts:
        units = [[r for r in relevant
                  if r.command is not None and r.command.covers(w, target.kinds_of(i))]
                 for i, w in enumerate(target.parts)]
    elif target.paths:
        units = [[r for r in relevant if _path_hit(r, rels)] for rels in target.paths]
    else:
        return ""
    if not all(units):
        return ""
    return " + ".join(dict.fromkeys(unit[0].text for unit in units))
