"""The rule index gives the same answers as trying every rule."""

from __future__ import annotations

import itertools

import pytest

from kernel.policy.rules import Anchor, parse_rule
from kernel.policy.ruleset import RuleSet, Target, covering, matches, relative_paths
from kernel.shell.parse import parse_line


def cmd(text: str) -> Target:
    """A run_command target as the policy builds it: parts and kinds from one reading."""
    line = parse_line(text)
    return Target("run_command", line.parts, kinds=line.kinds)


RULES = [parse_rule(t) for t in (
    "run_command(git status)", "run_command(git *)", "run_command(npm test *)",
    "run_command(*-lint *)", "run_command(*)", "run_command(g?t log)", "run_command([gn]pm x)",
    "write_file(docs/**)", "write_file(**/*.md)", "write_file(d*/x)", "write_file(/tmp/**)",
    "read_file(~/notes/**)", "read_file(/etc/hosts)", "read_file", "mcp__git__*", "*",
    "mcp__time__now", "edit_file(src/*.py)",
)]

TARGETS = [
    cmd("git status"),
    cmd("git log && npm test -x"),
    cmd("gpm x; eslint-lint --fix"),
    cmd("got log"),
    cmd("ls"),
    cmd("git $SUB"),
    cmd("npm test $(id)"),
    cmd("git log *.py"),
    cmd("echo ~"),
    Target("run_command", (("git", "status"),)),
    Target("run_command", ()),
    Target("write_file", paths=(relative_paths("/ws/docs/a.md", "/ws", "/home/u"),)),
    Target("write_file", paths=(relative_paths("/ws/dx/x", "/ws", "/home/u"),)),
    Target("write_file", paths=(relative_paths("/tmp/q", "/ws", "/home/u"),)),
    Target("write_file", paths=(relative_paths("/ws/src/a.py", "/ws", "/home/u"),)),
    Target("read_file", paths=(relative_paths("/home/u/notes/n.txt", "/ws", "/home/u"),)),
    Target("read_file", paths=(relative_paths("/etc/hosts", "/ws", "/home/u"),)),
    Target("edit_file", paths=(relative_paths("/ws/src/a.py", "/ws", "/home/u"),)),
    Target("edit_file", paths=(relative_paths("/ws/src/sub/a.py", "/ws", "/home/u"),)),
    Target("mcp__git__log"),
    Target("mcp__time__now"),
    Target("other"),
]


@pytest.mark.parametrize("size", [1, 3, 7, len(RULES)])
def test_index_agrees_with_brute_force(size: int) -> None:
    for rules in itertools.islice(itertools.combinations(RULES, size), 300):
        indexed = RuleSet(rules)
        for target in TARGETS:
            brute = next((r for r in rules if matches(r, target)), None)
            found = indexed.first_match(target)
            assert (found is None) == (brute is None), (rules, target)
            if found is not None:
                assert matches(found, target)
            assert bool(indexed.covering(target)) == bool(covering(rules, target)), (
                rules, target)


def test_relative_paths() -> None:
    assert relative_paths("/ws/a/b", "/ws", "/home/u") == {
        Anchor.ABSOLUTE: "ws/a/b", Anchor.WORKSPACE: "a/b"}
    assert relative_paths("/home/u/ws/x", "/home/u/ws", "/home/u") == {
        Anchor.ABSOLUTE: "home/u/ws/x", Anchor.WORKSPACE: "x", Anchor.HOME: "ws/x"}
    assert relative_paths("/wsx/a", "/ws", "/h") == {Anchor.ABSOLUTE: "wsx/a"}
    assert relative_paths("/ws", "/ws", "/h") == {Anchor.ABSOLUTE: "ws"}
    assert relative_paths("/", "/ws", "/h") == {}
    assert relative_paths("/a", "/", "/h") == {Anchor.ABSOLUTE: "a", Anchor.WORKSPACE: "a"}


def test_covering_names_one_rule_per_part() -> None:
    rules = [parse_rule(t) for t in ("run_command(git *)", "run_command(npm test *)")]
    target = cmd("git log | npm test; git diff")
    assert covering(rules, target) == "run_command(git *) + run_command(npm test *)"
    assert RuleSet(rules).covering(target) == covering(rules, target)
    assert covering(rules, cmd("git log && ls")) == ""


@pytest.mark.parametrize("command", [
    "git log $X", "git log ${X:=1}", "git log $(id)", "git log `id`", "git log $((1+2))",
    "git log ~", 'git log "$HOME"', "git log <(ls)", "git log {a,b}", "git $(echo log)",
])
def test_allow_rules_do_not_cover_words_they_cannot_see(command: str) -> None:
    """A deny or ask rule still matches the text; an allow rule does not cover it."""
    rule = parse_rule("run_command(git *)")
    target = cmd(command)
    assert matches(rule, target)
    assert covering([rule], target) == "" and RuleSet([rule]).covering(target) == ""


def test_a_part_without_kinds_is_covered_by_no_word_rule() -> None:
    rules = [parse_rule("run_command(git *)")]
    assert covering(rules, Target("run_command", (("git", "status"),))) == ""
    assert covering(rules, cmd("git status")) == "run_command(git *)"
