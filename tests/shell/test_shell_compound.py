"""Compound commands read as the shell reads them: `[`/`[[` are no patterns, a case
pattern, a loop's values and `[[`'s parentheses are no commands; what runs inside each is
still seen (issue 29 §3)."""

from __future__ import annotations

import pytest

from kernel.shell.classify import classify
from kernel.shell.parse import parse_line, split_commands
from kernel.shell.words import GLOB, LITERAL


@pytest.mark.parametrize("line, programs", [
    ("[ -f a ] && echo y", ["[", "echo"]),
    ("[[ -f a ]] && echo y", ["[[", "echo"]),
    ("case $x in a|b) echo ab;; (*) ls;; esac", ["echo", "ls"]),
    ("for f in *.py x; do wc -l $f; done", ["wc"]),
    ("select o in a b; do echo $o; done", ["echo"]),
    ("[[ $v =~ ^(a|b)$ ]]", ["[[", "b", "$"]),  # `|` read as dash would: a pipe
])
def test_programs(line: str, programs: list[str]) -> None:
    assert [p[0] for p in split_commands(line)] == programs


@pytest.mark.parametrize("word, kind", [
    ("[", LITERAL), ("[[", LITERAL), ("]]", LITERAL), ("a[", LITERAL), ("[ab]", GLOB),
    ("x[0-9]*", GLOB), ('[a"]"', GLOB), ("*", GLOB),
])
def test_a_bracket_is_a_pattern_only_when_closed(word: str, kind: str) -> None:
    assert parse_line(f"echo {word}").commands[0].kind(1) == kind


@pytest.mark.parametrize("line", [
    "[ -f a ] || rm -rf ~",
    "[[ -f a ]] && rm -rf ~",
    "[[ $(rm -rf ~) ]]",
    "[[ ( -n $(rm -rf ~) ) ]]",
    "( [[ -f a ]] ) && rm -rf /",
    "case x in a) rm -rf ~;; esac",
    "case $(rm -rf ~) in a) ;; esac",
    "case x in $(rm -rf ~)) ;; esac",
    "case x in esac; rm -rf ~",
    "case x in a) echo;; esac; rm -rf ~",
    "case x in a) case y in b) rm -rf ~;; esac;; esac",
    "for f in $(rm -rf ~); do :; done",
    "for f in a; do rm -rf ~; done",
    "for ((i=0; i<$(rm -rf ~); i++)); do :; done",
    "select o in a; do rm -rf ~; done",
    "> /dev/null for x in a; rm -rf ~",
    "[ -v 'a[$(rm -rf ~)]' ]",
])
def test_what_runs_inside_is_still_judged(line: str) -> None:
    assert classify(line).destructive, line


@pytest.mark.parametrize("line, written", [
    ("[[ x ]] > out.txt", "out.txt"),
    ("[[ a > b.txt ]]", "b.txt"),  # dash, the usual /bin/sh, runs `[[` with a redirection
    ("for f in a b > log.txt; do :; done", "log.txt"),
    ("case x in a) echo > c.txt;; esac", "c.txt"),
])
def test_writes_of_either_shell_are_seen(line: str, written: str) -> None:
    assert written in [r.target.text for c in parse_line(line).commands for r in c.redirects
                       if r.writes_file]
