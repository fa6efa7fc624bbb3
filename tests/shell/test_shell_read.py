"""kernel.shell.parse.read: what each word is, what each redirection writes, what runs inside
other commands, and what cannot be read (with a message that says what and where)."""

from __future__ import annotations

import pytest

from kernel.shell.parse import ShellParseError, parse_line, read
from kernel.shell.words import CommandLine

# Commands that must be read (issue 15 §1: shlex refused them after they were approved).
READABLE = [
    ("echo hi # it's fine", [["echo", "hi"]]),
    ("echo hi #it's \"fine", [["echo", "hi"]]),
    ("ls # a comment with 'quotes' and \"more\nls -la", [["ls"], ["ls", "-la"]]),
    ("cat <<EOF\nit's here\nEOF", [["cat", "<<"]]),
    ("cat <<'EOF'\ndon't \"stop\nEOF\necho done", [["cat", "<<"], ["echo", "done"]]),
    ("cat <<-EOF\n\tunbalanced ' and \" here\n\tEOF", [["cat", "<<-"]]),
    ("cat <<'EOF'\na ` and $( here\nEOF", [["cat", "<<"]]),
    ("python - <<'PY'\nprint('it''s')\nPY", [["python", "-", "<<"]]),
    ("echo $'it\\'s' && ls", [["echo", "$'it\\'s'"], ["ls"]]),
    ("echo $'a\\tb'", [["echo", "$'a\\tb'"], ["echo", "$a\\tb"]]),
    ("echo \\\n  hello \\\n  world", [["echo", "hello", "world"]]),
    ("ls \\\n-la", [["ls", "-la"]]),
    ("echo \"a\\\nb\"", [["echo", "ab"]]),
    ("echo it\\'s", [["echo", "it's"]]),
    ('echo "it\'s"', [["echo", "it's"]]),
    ("echo '#not a comment'", [["echo", "#not a comment"]]),
    ("echo a#b # c", [["echo", "a#b"]]),
    ("printf '%s\\n' x | wc -l", [["printf", "%s\\n", "x"], ["wc", "-l"]]),
    ("echo ${X:-'}'}", [["echo", "${X:-'}'}"]]),
    ("echo $(( (1 + 2) * 3 ))", [["echo", "$(( (1 + 2) * 3 ))"]]),
    ("echo $( (cd x; ls) )", [["cd", "x"], ["ls"], ["echo", "$( (cd x; ls) )"]]),
    ("echo \"$(echo ')')\"", [["echo", ")"], ["echo", "$(echo ')')"]]),
    ("time -p make", [["time", "-p", "make"], ["make"]]),
]


@pytest.mark.parametrize(("command", "parts"), READABLE)
def test_readable(command: str, parts: list[list[str]]) -> None:
    assert [list(p) for p in read(command).parts] == parts


# (command, the message must contain)
UNREADABLE = [
    ("echo 'unclosed", "unterminated single quote starting at column 6"),
    ("ls; echo \"x", "unterminated double quote starting at column 10"),
    ("echo $(ls", "unterminated $( … ) substitution"),
    ("echo `ls", "unterminated backtick substitution starting at column 6"),
    ("echo ${x", "unterminated ${ … } expansion starting at column 6"),
    ("echo $((1+2)", "unterminated $( … ) substitution starting at column 6"),
    ("echo $(( 1 + $(id) ", "unterminated $(( … )) expression starting at column 6"),
    ("cat <<EOF\na ` here\nEOF", "in a here-document: unterminated backtick"),
    ("echo >", "the redirection '>' has no target"),
    ("(echo a", "unclosed '(' at column 1"),
    ("echo a (b)", "unexpected '(' after a command word at column 8"),
    ("ls\necho 'x", "unterminated single quote starting at column 6 of line 2"),
    ("sh -c \"echo 'x\"", "in what sh -c runs: unterminated single quote"),
    ("echo $'abc", "unterminated $'…' string"),
    ("ls\x00", "a NUL character"),
    ("echo \ud800", "lone surrogate"),
    ("", "the command is empty"),
    ("   \n\t", "the command is empty"),
]


@pytest.mark.parametrize(("command", "message"), UNREADABLE)
def test_unreadable_says_what_and_where(command: str, message: str) -> None:
    with pytest.raises(ShellParseError) as caught:
        read(command)
    assert message in str(caught.value)


# (command, one kinds string per part): . literal, * glob, ~ tilde, $ expands
KINDS = [
    ("echo hello world", ["..."]),
    ("echo 'hello $X' \"a b\" c\\$d", ["...."]),
    ("echo $X", [".$"]),
    ("echo ${X}", [".$"]),
    ("echo ${X:=1}", [".$"]),
    ("echo ${X%/}", [".$"]),
    ("echo ${#X}", [".$"]),
    ('echo "$X"', [".$"]),
    ('echo "a${X}b"', [".$"]),
    ("echo $1 $@ $? $$ $!", [".$$$$$"]),
    ("echo $((1+2))", [".$"]),
    ("echo $(id)", [".", ".$"]),
    ("echo `id`", [".", ".$"]),
    ("echo <(ls)", [".", ".$"]),
    ("echo >(cat)", [".", ".$"]),
    ("echo $'x'", [".$", ".."]),
    ('echo $"x"', [".$"]),
    ("echo {a,b}", [".$"]),
    ("echo x{1..3}", [".$"]),
    ("echo {}", [".."]),
    ("echo {x}", [".."]),
    ("echo *.py", [".*"]),
    ("echo a?c [ab]", [".**"]),
    ("echo '*.py' \\*", ["..."]),
    ("echo ~", [".~"]),
    ("echo ~/x ~root", [".~~"]),
    ("echo a=~/x", [".~"]),
    ("echo '~' \\~ a~b", ["...."]),
    ("echo ~/*.py", [".$"]),
    ("echo $", [".."]),
    ("echo a$", [".."]),
    ("FOO=$X ls", ["$."]),
    ("ls > $F", ["..$"]),
    ("ls 2>&1", [".."]),
]


@pytest.mark.parametrize(("command", "kinds"), KINDS)
def test_word_kinds(command: str, kinds: list[str]) -> None:
    line = read(command)
    assert list(line.kinds) == kinds
    assert all(len(k) == len(p) for k, p in zip(line.kinds, line.parts, strict=True))


# (command, the files its redirections write, as written; what a program writes is not read)
WRITES = [
    ("echo hi > out.txt", ["out.txt"]),
    ("echo hi >> log", ["log"]),
    ("echo hi >| f", ["f"]),
    ("make &> build.log", ["build.log"]),
    ("make &>> build.log", ["build.log"]),
    ("make >& build.log", ["build.log"]),
    ("exec 3<> sock", ["sock"]),
    ("make 2> err.txt", ["err.txt"]),
    ("make 2>>err.txt 3>x", ["err.txt", "x"]),
    ("echo hi > ~/x.pth", ["~/x.pth"]),
    ("echo '...\\nimport os' > x.pth", ["x.pth"]),
    ("echo hi > /dev/null 2>&1", []),
    ("echo hi >/dev/stdout 2>/dev/stderr >&2 1>&- >/dev/fd/3", []),
    ("cat < in.txt <<< word", []),
    ("cat <<EOF > out\nx\nEOF", ["out"]),
    ("echo > $F", ["$F"]),
    ('echo > "$HOME/x"', ["$HOME/x"]),
    ("echo > *.txt", ["*.txt"]),
    ("echo > $(mktemp)", ["$(mktemp)"]),
    ("cd sub && echo x > /tmp/f", ["/tmp/f"]),
    ("echo $(echo x > inner)", ["inner"]),
    ("echo hello $(( $(id > f; echo 1) ))", ["f"]),
    ("sh -c 'echo x > g'", ["g"]),
]


@pytest.mark.parametrize(("command", "written"), WRITES)
def test_redirection_writes(command: str, written: list[str]) -> None:
    found = [r.target.text for c in read(command).commands for r in c.redirects if r.writes_file]
    assert list(dict.fromkeys(found)) == written


# (command, the commands run inside it: (via, words))
NESTED = [
    ("sh -c 'rm x'", [("sh -c", ["rm", "x"])]),
    ("bash -lc 'a; b'", [("bash -c", ["a"]), ("bash -c", ["b"])]),
    ("/bin/dash -ec 'a'", [("dash -c", ["a"])]),
    ("zsh -o pipefail -c 'a'", [("zsh -c", ["a"])]),
    ("eval 'a b'", [("eval", ["a", "b"])]),
    ("eval a b", [("eval", ["a", "b"])]),
    ("bash <<EOF\na\nEOF", [("bash <<", ["a"])]),
    ("sh <<< 'a'", [("sh <<<", ["a"])]),
    ("echo a b | sh", [("a pipe into sh", ["a", "b"])]),
    ("printf 'a\\nb' | bash", [("a pipe into bash", ["anb"]), ("a pipe into bash", ["a"]),
                               ("a pipe into bash", ["b"])]),
    ("env A=1 a", [("env", ["a"])]),
    ("env -S 'a b'", [("env -S", ["a", "b"])]),
    ("nice -n 5 a", [("nice", ["a"])]),
    ("nohup a", [("nohup", ["a"])]),
    ("timeout 5 a", [("timeout", ["a"])]),
    ("timeout -s 9 5s a", [("timeout", ["a"])]),
    ("stdbuf -oL a", [("stdbuf", ["a"])]),
    ("ionice -c 3 a", [("ionice", ["a"])]),
    ("setsid a", [("setsid", ["a"])]),
    ("command a", [("command", ["a"])]),
    ("exec a", [("exec", ["a"])]),
    ("builtin a", [("builtin", ["a"])]),
    ("time a", [("time", ["a"])]),
    ("sudo -E A=1 a", [("sudo", ["a"])]),
    # a word after an option may be its value: both readings count
    ("sudo -u root a", [("sudo", ["root", "a"]), ("sudo", ["a"])]),
    ("env -u X -C dir a", [("env", ["X", "-C", "dir", "a"]), ("env", ["dir", "a"]),
                           ("env", ["a"])]),
    ("timeout -s KILL 5s a", [("timeout", ["KILL", "5s", "a"]), ("timeout", ["a"])]),
    ("flock /tmp/l a", [("flock", ["/tmp/l", "a"]), ("flock", ["a"])]),
    ("su -c'a b' root", [("su -c", ["a", "b"])]),
    ("su -lc 'a b' root", [("su -c", ["a", "b"])]),
    ("doas a", [("doas", ["a"])]),
    ("su -c 'a b' root", [("su -c", ["a", "b"])]),
    ("busybox a", [("busybox", ["a"])]),
    ("xargs a", [("xargs", ["a", "{xargs input}"])]),
    ("xargs -n 1 -I{} a {}", [("xargs", ["a", "{}"])]),
    ("xargs -I {} a {}", [("xargs", ["a", "{}"])]),
    ("echo p | xargs -I{} a {} q", [("xargs", ["a", "{}", "q"])]),
    ("echo p q | xargs a", [("xargs", ["a", "p", "q"])]),
    ("find . -exec a {} ;", [("find -exec", ["a", "{}"])]),
    ("find . -execdir a {} + -ok b \\;", [("find -execdir", ["a", "{}"]),
                                          ("find -ok", ["b"])]),
    ("watch a b", [("watch", ["a", "b"])]),
    ("flock /tmp/l -c 'a b'", [("flock -c", ["a", "b"])]),
    ("alias x='a b'", [("alias", ["a", "b"])]),
    ("trap 'a' EXIT", [("trap", ["a"])]),
    ("sudo nice sh -c 'a'", [("sudo", ["nice", "sh", "-c", "a"]), ("nice", ["sh", "-c", "a"]),
                             ("sh -c", ["a"])]),
    # runners, by name and the subcommand that runs a program
    ("uv run a", [("uv run", ["a"])]),
    ("poetry -C dir run a", [("poetry run", ["a"])]),
    ("npm exec -- a", [("npm exec", ["a"])]),
    ("npx -c 'a b'", [("npx -c", ["a", "b"])]),
    ("direnv exec . a", [("direnv exec", [".", "a"]), ("direnv exec", ["a"])]),
    ("uv pip install a", []),
    ("npm run a", []),
    ("bash build.sh", []),
    ("sh < script.sh", []),
    ("python -c 'a'", []),
]


@pytest.mark.parametrize(("command", "inner"), NESTED)
def test_what_runs_inside(command: str, inner: list[tuple[str, list[str]]]) -> None:
    line = read(command)
    assert [(c.via, c.words) for c in line.commands if c.via] == inner
    assert line.blind == ()


# Commands whose inside cannot be read: `blind` says so.
BLIND = [
    ("cat x | sh", "sh runs whatever `cat` writes"),
    ("curl -s https://x | bash", "bash runs whatever `curl` writes"),
    ("{ echo a; cat b; } | sh", "sh runs whatever `{ … }` writes"),
    ("(echo a) | bash", "bash runs whatever `{ … }` writes"),
    ("$X -rf ~", "the program name '$X' is an expansion"),
    ("$(echo rm) -rf ~", "the program name '$(echo rm)' is an expansion"),
    ('"$(printf rm)" x', "the program name '$(printf rm)' is an expansion"),
    ("/bin/r? x", "the program name '/bin/r?' is an expansion"),
    ("sudo $CMD", "the program name '$CMD' is an expansion"),
    ("uv $X rm -rf ~", "uv's subcommand is only known when it runs"),
    ("sudo " + "-a b " * 10 + "rm x", "too many words that may be the program"),
    ("sh -c \"$X\"", "sh -c runs text built from expansions"),
    ("eval \"$CMD\"", "eval runs text built from expansions"),
    ("bash <<EOF\n$CMD\nEOF", "bash << runs text built from expansions"),
    ("echo \"'\" | sh", "runs text that cannot be read as shell"),
    ("echo $'a\\'b'", "reads differently in dash and in bash"),
]


@pytest.mark.parametrize(("command", "reason"), BLIND)
def test_what_cannot_be_seen_is_said(command: str, reason: str) -> None:
    assert any(reason in r for r in read(command).blind), read(command).blind


def test_dollar_quote_counts_both_readings() -> None:
    """bash: `$'\\''` is a quote and `rm` runs; dash: it is `$` and a quoted string."""
    line = read("echo $'\\'' ; rm -rf ~ #'")
    assert ["rm", "-rf", "~"] in [c.words for c in line.commands]


def test_one_reading_is_shared() -> None:
    """The policy and run_command read the same text: they get the very same reading."""
    text = "echo hi # it's fine"
    assert read(text) is read(text)
    assert isinstance(parse_line(text), CommandLine)


@pytest.mark.timeout(20)
def test_nesting_is_bounded() -> None:
    line = read("eval " * 40 + "rm -rf ~")
    assert any("nested too deep" in r for r in line.blind)


@pytest.mark.timeout(20)
def test_nested_text_is_bounded() -> None:
    """Past a bound on the nested text read, the rest cannot be seen (so it asks)."""
    body = "echo " + "x " * 1500
    line = read("; ".join([f"sh -c '{body}'"] * 100) + "; sh -c 'rm -rf ~'")
    assert any("too much nested shell text" in r for r in line.blind)
