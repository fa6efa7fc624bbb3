"""split_commands: every simple command of a compound command, as words without quoting."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.shell.classify import classify
from kernel.shell.parse import ShellParseError, parse, split_commands

CASES = [
    ("git status", [["git", "status"]]),
    ("  git   status  ", [["git", "status"]]),
    ("'git' \"status\"", [["git", "status"]]),
    ("g'i't sta\\tus", [["git", "status"]]),
    ("FOO=1 git status", [["FOO=1", "git", "status"]]),
    ('FOO="a b" BAR=2 make', [["FOO=a b", "BAR=2", "make"]]),
    ("a; b && c || d | e & f", [["a"], ["b"], ["c"], ["d"], ["e"], ["f"]]),
    ("a\nb", [["a"], ["b"]]),
    ("a |& b", [["a"], ["b"]]),
    ("(cd sub && make) || { echo fail; exit 1; }",
     [["cd", "sub"], ["make"], ["echo", "fail"], ["exit", "1"]]),
    ("echo $(rm -rf ~)", [["rm", "-rf", "~"], ["echo", "$(rm -rf ~)"]]),
    ("echo `id -u`", [["id", "-u"], ["echo", "`id -u`"]]),
    ('echo "$(whoami) here"', [["whoami"], ["echo", "$(whoami) here"]]),
    ("echo $(echo $(date))", [["date"], ["echo", "$(date)"], ["echo", "$(echo $(date))"]]),
    ("diff <(ls a) <(ls b)", [["ls", "a"], ["ls", "b"], ["diff", "<(ls a)", "<(ls b)"]]),
    ('sh -c "echo hi; rm -rf /"',
     [["sh", "-c", "echo hi; rm -rf /"], ["echo", "hi"], ["rm", "-rf", "/"]]),
    ("bash -ec 'a | b'", [["bash", "-ec", "a | b"], ["a"], ["b"]]),
    ("/bin/bash -c 'x'", [["/bin/bash", "-c", "x"], ["x"]]),
    ("bash script.sh -c", [["bash", "script.sh", "-c"]]),
    ('git commit -m "rm -rf /; reboot"', [["git", "commit", "-m", "rm -rf /; reboot"]]),
    ("echo ';' '&&' \\|", [["echo", ";", "&&", "|"]]),
    ("npm test 2>&1 > out.txt", [["npm", "test", "2>&1", ">", "out.txt"]]),
    ("npm test 2>& 1 >out.txt", [["npm", "test", "2>&1", ">", "out.txt"]]),
    ("cmd >>log 2>err <in", [["cmd", ">>", "log", "2>", "err", "<", "in"]]),
    ("cat <<EOF\nrm -rf /\n$(whoami)\nEOF\necho done",
     [["cat", "<<"], ["whoami"], ["echo", "done"]]),
    ("cat <<'EOF'\n$(whoami)\nEOF", [["cat", "<<"]]),
    ("f() { rm -rf ~; }; f", [["rm", "-rf", "~"], ["f"]]),
    ("if true; then rm x; else ls; fi", [["true"], ["rm", "x"], ["ls"]]),
    ("while read l; do echo $l; done < f", [["read", "l"], ["echo", "$l"], ["<", "f"]]),
    ("echo ${HOME:-/tmp} $((1 + 2))", [["echo", "${HOME:-/tmp}", "$((1 + 2))"]]),
    ("echo ${X:-$(rm -rf ~)}", [["rm", "-rf", "~"], ["echo", "${X:-$(rm -rf ~)}"]]),
    ('echo "${X:-`id`}"', [["id"], ["echo", "${X:-`id`}"]]),
    ("echo a # rm -rf /", [["echo", "a"]]),
    ("echo a#b", [["echo", "a#b"]]),
    ("echo 'it''s'", [["echo", "its"]]),
    ("ls \\\n  -la", [["ls", "-la"]]),
    ("echo ''", [["echo", ""]]),
    ("", []),
]


@pytest.mark.parametrize(("command", "expected"), CASES)
def test_split(command: str, expected: list[list[str]]) -> None:
    assert split_commands(command) == expected


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("git  status", "git status"),
        ("git 'status'", 'git "status"'),
        ("npm test -- --watch=false", "npm  test  --  '--watch=false'"),
        ("a&&b", "a && b"),
        ("ls -la|wc -l", "ls -la | wc -l"),
    ],
)
def test_equivalent_spellings_give_the_same_words(a: str, b: str) -> None:
    assert split_commands(a) == split_commands(b)


@pytest.mark.parametrize(
    "bad",
    ['echo "abc', "echo 'x", "(echo a", "echo $(ls", "echo `ls", "echo >", "echo a (b)",
     "echo ${x", "echo $((1+2)", 'sh -c "echo \'x"'],
)
def test_unreadable_commands_raise(bad: str) -> None:
    with pytest.raises(ShellParseError):
        split_commands(bad)


def test_parse_keeps_assignments_and_pipelines_apart() -> None:
    first, second, third = parse("FOO=1 curl -s x | sh; ls")
    assert first.assignments == ("FOO=1",) and first.argv == ("curl", "-s", "x")
    assert second.argv == ("sh",)
    assert first.pipeline == second.pipeline != third.pipeline


def test_quoted_assignment_is_a_command_word() -> None:
    assert parse("'FOO=1' ls")[0].argv == ("FOO=1", "ls")


SHELLISH = st.lists(
    st.sampled_from([*"abc $(){}`'\"\\;&|<>#=\n\t-~*012", "sh -c ", "<<EOF\n", "EOF\n"]),
    max_size=40,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(SHELLISH)
def test_any_text_parses_or_raises_shell_parse_error(text: str) -> None:
    try:
        parts = split_commands(text)
    except ShellParseError:
        return
    assert all(isinstance(w, str) for part in parts for w in part)
    classify(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="abc-_./~*", min_size=1, max_size=8), min_size=1, max_size=5))
def test_quoting_each_word_gives_the_same_words(words: list[str]) -> None:
    plain = " ".join(words)
    quoted = "  ".join(shlex.quote(w) for w in words)
    assert split_commands(quoted) == split_commands(" ".join(f"'{w}'" for w in words))
    if not any(c in plain for c in "~*"):
        assert split_commands(plain) == split_commands(quoted)
