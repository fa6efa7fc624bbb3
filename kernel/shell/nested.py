"""What a simple command runs besides itself, read from its words alone: the program a
wrapper or a runner starts (`sudo rm x`, `nice make`, `xargs grep`, `uv run pytest`, `npx
tsc`), the shell text a shell or `eval` reads (`sh -c BODY`, `bash <<EOF`, `echo … | sh`,
`su -c`, `alias`, `trap`), the command `find -exec` runs, a command in an option's value
(`tar --to-command`, `rsync -e`, `git -c core.pager=…`), or a note (`Blind`) that it cannot
be seen (`cat x | sh`, a program word only known when it runs): such a command is opaque.

Wrappers and runners are known by name only (`WRAPPERS`); the program after a wrapper's name
is found by one rule, not by each one's options: words starting with `-` or `+` and
`VAR=value` words are skipped, and a word right after an option may be that option's value, so both
readings count (`sudo -u root rm x` runs `root rm x` or `rm x`), as do both readings of a
word the wrapper may take itself (`flock FILE cmd`); a number is never the program
(`nice -n 5`, `timeout 5`). A runner may take words of its own after its subcommand (a
tool, a package, an environment), so for a runner more readings count, whatever its
grammar: the words after a later `--`, `-c` or `--command` (`mise x node@20 -- rm`, `nix
shell PKG -c rm`), and the name after `:` in a program word (`hatch run test:rm`). A wrapped
program is a command of the line like any other: a deny
or ask rule for it applies through any wrapper, and an allow rule must cover it too
(`run_command(sudo *)` alone does not allow `sudo rm x`). What a command writes is not read
here: it is judged after it ran (kernel.transaction).

Pure functions over words; kernel.shell.parse turns the results into simple commands.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from kernel.pathrules import git_key_kind
from kernel.shell.words import EXPANDS, LITERAL, TILDE, SimpleCommand, Word

SHELLS = frozenset(
    {"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "yash", "posh", "rbash", "fish",
     "csh", "tcsh"}
)  # fmt: skip
PRIVILEGE = frozenset({"sudo", "doas", "su", "pkexec", "run0", "runuser"})
XARGS_INPUT = "{xargs input}"


@dataclass(frozen=True)
class Exec:
    """A command run directly: its words, and what ran it (for `SimpleCommand.via`)."""

    words: tuple[Word, ...]
    via: str


@dataclass(frozen=True)
class Script:
    """Shell text a command runs. `strict`: a parse error is the whole line's parse error
    (the body of `sh -c`); otherwise the text is read as far as it can be."""

    text: str
    via: str
    literal: bool
    strict: bool = True


@dataclass(frozen=True)
class Blind:
    """What runs cannot be seen: the command is opaque (no allow rule or grant covers it)."""

    reason: str


Inner = Exec | Script | Blind


@dataclass(frozen=True)
class Wrapper:
    """A program that runs another one named on its line, known by its name."""

    operands: int = 0
    """Words of its own before the program (`timeout 5`, `flock FILE`, `direnv exec DIR`)."""
    script: frozenset[str] = frozenset()
    """Its options whose value is shell text it runs (`su -c`, `env -S`, `npx -c`)."""
    joins: bool = False
    """It runs the words after its options as one shell text (`watch`, `sg GROUP`)."""
    runs: frozenset[str] | None = None
    """A runner: the subcommands that run a program (`uv run`, `npm exec`); None: it runs
    the program named after its options (`nice make`, `npx tsc`)."""


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


_C = _names("-c --command")
_PLAIN = Wrapper()
WRAPPERS: dict[str, Wrapper] = {
    **dict.fromkeys(_names("""
        sudo doas pkexec run0 nice ionice stdbuf nohup setsid command exec builtin time
        unshare nsenter unbuffer strace ltrace catchsegv xargs busybox ssh-agent
        dbus-run-session dbus-launch fakeroot eatmydata linux32 linux64 xvfb-run torsocks
        proxychains proxychains4 valgrind numactl prlimit setpriv systemd-run shx corepack
        cross-env env-cmd pnpx bunx uvx"""), _PLAIN),
    **dict.fromkeys(_names("timeout chrt taskset chroot setarch faketime envdir"),
                    Wrapper(operands=1)),
    "su": Wrapper(operands=1, script=_C),
    "runuser": Wrapper(script=_C),
    "flock": Wrapper(operands=1, script=_C),
    "script": Wrapper(script=_C),
    "env": Wrapper(script=_names("-S --split-string")),
    **dict.fromkeys(("mapfile", "readarray"), Wrapper(script=_names("-C"))),
    "watch": Wrapper(joins=True),
    "sg": Wrapper(operands=1, script=_names("-c"), joins=True),
    "cross-env-shell": Wrapper(joins=True),
    "npx": Wrapper(script=_names("-c --call")),
    "npm": Wrapper(script=_names("-c --call"), runs=_names("exec exe x")),
    **dict.fromkeys(("pnpm", "yarn"), Wrapper(runs=_names("exec dlx"))),
    "bun": Wrapper(runs=_names("x")),
    **dict.fromkeys(_names("uv pipx poetry pdm hatch rye pipenv conda mamba micromamba dotenv "
                           "dotenvx op volta"), Wrapper(runs=_names("run"))),
    "pixi": Wrapper(runs=_names("run exec")),
    "nix": Wrapper(runs=_names("shell develop")),
    **dict.fromkeys(("mise", "rtx"), Wrapper(script=_C, runs=_names("exec x"))),
    **dict.fromkeys(_names("asdf rbenv pyenv nodenv goenv jenv plenv phpenv luaenv bundle "
                           "bundler fnm"), Wrapper(runs=_names("exec"))),
    **dict.fromkeys(("direnv", "aws-vault"), Wrapper(operands=1, runs=_names("exec"))),
    "rustup": Wrapper(operands=1, runs=_names("run")),
}
"""Wrappers and runners by name. A runner's own words are judged as well (`npx` needs the
network); what it runs from a file or a name only the project knows (`npm run`, `cargo run`,
`make`) is not read, nor a program a package names otherwise than by its own name."""

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_NUMBER = re.compile(r"[0-9][0-9.,:x]*[a-zA-Z]?\Z")
_MAX_READINGS = 8


def _option(text: str) -> bool:
    """An option word: `-x`, `--x`, or `+x` (a toolchain or matrix pick: `hatch run
    +py=3.12`, `cargo +nightly`), never a program."""
    return text.startswith(("-", "+")) and len(text) > 1


def _script_value(words: Sequence[Word], i: int,
                  options: frozenset[str]) -> tuple[str, Word | None] | None:
    """The option of `options` `words[i]` gives and the shell text it gives it (`-c TEXT`,
    `--command=TEXT`, `-lc TEXT`, `-cTEXT`; None as text when none follows), or None."""
    word = words[i]
    text = word.text
    after = words[i + 1] if i + 1 < len(words) else None
    flag, eq, attached = text.partition("=")
    if text in options:
        return text, after
    if eq and flag in options:
        return flag, Word(attached, word.kind)
    if not text.startswith("--"):
        for at, letter in enumerate(text[1:], 1):
            if f"-{letter}" in options:
                rest = text[at + 1:]
                return f"-{letter}", Word(rest, word.kind) if rest else after
    return None


def _starts(words: Sequence[Word], i: int, operands: int,
            script: frozenset[str]) -> tuple[list[int], list[Inner]]:
    """Where the program may start in `words[i:]`, by the one rule (module docstring), and
    the shell text a script option gives (`su -c TEXT`: then nothing else runs) or a note
    that there are too many readings to follow."""
    starts: list[int] = []
    after_option = False
    while i < len(words):
        if len(starts) >= _MAX_READINGS:
            return starts, [Blind(f"{base(words[0].text)} is given too many words that may "
                                  f"be the program it runs: cannot tell what runs")]
        word = words[i]
        text = word.text
        if text == "--":
            at = i + 1 + operands
            return ([*starts, at] if at < len(words) else starts), []
        if _option(text):
            given = _script_value(words, i, script) if script else None
            if given is not None:
                flag, value = given
                return starts, [] if value is None else [
                    Script(value.text, f"{base(words[0].text)} {flag}", _literal([value]))]
            after_option = "=" not in text
        elif not starts and _ASSIGNMENT.match(text):
            after_option = False
        elif after_option or operands:  # the option's value or the wrapper's own word
            if not _NUMBER.match(text):  # (a number is never the program), or the program
                starts.append(i)
            operands -= not after_option
            after_option = False
        else:
            return [*starts, i], []
        i += 1
    return starts, []


def _wrapped(name: str, spec: Wrapper, words: Sequence[Word],
             feeder: SimpleCommand | None) -> list[Inner]:
    """What a wrapper or runner called `name` runs: each reading of where its program
    starts, as its own command."""
    at = 1
    if spec.runs is not None:
        found = _subcommand(words, spec.runs)
        if found is None:
            return []
        if found < 0:
            return [Blind(f"{name}'s subcommand is only known when it runs: cannot tell what "
                          f"it runs")]
        at = found
        name = f"{name} {words[at - 1].text}"
    starts, notes = _starts(words, at, spec.operands, spec.script)
    if any(isinstance(note, Script) for note in notes):
        return notes
    if spec.runs is not None:
        starts = _runner_starts(words, starts)
    marker = _xargs_replace(words[1:starts[-1] if starts else len(words)]) \
        if name == "xargs" else None
    out: list[Inner] = list(notes)
    for start in starts or ([len(words)] if name == "xargs" else []):
        rest = tuple(words[start:])
        if marker is not None and rest and rest[0].text == marker:
            continue  # `xargs -I {} cmd {}`: the marker is -I's value
        if name == "xargs":
            if marker is not None:  # its input goes where the words say `{}`
                rest = tuple(Word(w.text, EXPANDS) if marker in w.text else w for w in rest)
            if marker is None or not rest:  # or after them
                rest = (rest or (Word("echo"),)) + _fed_words(feeder)
        if spec.joins:
            out.append(Script(" ".join(w.text for w in rest), name, _literal(rest)))
        else:
            out.append(Exec(rest, name))
            after_colon = _named_after_colon(rest) if spec.runs is not None else None
            if after_colon is not None:
                out.append(Exec(after_colon, name))
    return out


_HANDS_ON = _names("-- -c --command")
"""Words after which a runner's remaining words may be the program it runs."""


def _runner_starts(words: Sequence[Word], starts: list[int]) -> list[int]:
    """A runner's readings (`starts`) and the further ones its own words allow (module
    docstring): after a later `--`, `-c` or `--command` (not an option), and the name after
    `:` in a program word (then read as a word of its own)."""
    later = [i + 1 for i in range(starts[0] + 1 if starts else len(words), len(words) - 1)
             if words[i].text in _HANDS_ON and not _option(words[i + 1].text)]
    return sorted({*starts, *later})[:_MAX_READINGS]


def _named_after_colon(words: tuple[Word, ...]) -> tuple[Word, ...] | None:
    """`test:rm -rf x` read as `rm -rf x` (hatch's `ENV:COMMAND`), or None."""
    first = words[0] if words else None
    named = first.text.rsplit(":", 1)[1] if first is not None and ":" in first.text else ""
    if first is None or first.kind != LITERAL or not named:
        return None
    return (Word(named), *words[1:])


def _subcommand(words: Sequence[Word], runs: frozenset[str]) -> int | None:
    """Where a runner's program words start: after its first subcommand that runs one
    (`uv -q run`, `poetry -C dir run`); None when it runs no program (`uv pip install`), -1
    when its subcommand is only known when it runs (`uv $X …`)."""
    after_option = False
    for i, word in enumerate(words[1:], 1):
        if _option(word.text) and word.text != "--":
            after_option = "=" not in word.text
            continue
        if word.text in runs and word.kind == LITERAL:
            return i + 1
        if not after_option:
            return None if word.kind == LITERAL else -1
        after_option = False
    return None


def base(word: str) -> str:
    """`/usr/bin/rm` is `rm`."""
    return word.rsplit("/", 1)[-1]


def _literal(words: Sequence[Word]) -> bool:
    return all(w.kind in (LITERAL, TILDE) for w in words)


def _fed_words(feeder: SimpleCommand | None) -> tuple[Word, ...]:
    """The words `xargs` reads: an `echo`'s words when we can see them, else one unknown."""
    if feeder is not None and feeder.argv and base(feeder.argv[0]) in _ECHOES:
        return tuple(w for w in feeder.args[1:] if not w.text.startswith("-"))
    return (Word(XARGS_INPUT, EXPANDS),)


def _xargs_replace(options: Sequence[Word]) -> str | None:
    """The replace-string of xargs' options (`-I X`, `-IX`, `-i`, `--replace[=X]`), if any."""
    for i, word in enumerate(options):
        text = word.text
        if text == "-I" and i + 1 < len(options):
            return options[i + 1].text
        if text.startswith("-I") and len(text) > 2:
            return text[2:]
        if text in ("-i", "--replace"):
            return "{}"
        if text.startswith(("-i", "--replace=")):
            return text.split("=", 1)[1] if "=" in text else text[2:]
    return None


_SHELL_WITH_VALUE = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_ECHOES = frozenset({"echo", "printf"})


_OPTION_SCRIPTS: dict[str, frozenset[str]] = {
    "tar": _names("--to-command -I --use-compress-program -F --info-script "
                  "--new-volume-script --checkpoint-action"),
    "rsync": _names("-e --rsh --rsync-path"),
    "zip": _names("-TT --unzip-command"),
    "nix-shell": _names("--run --command"),
}
"""Options of programs (not wrappers: what they do themselves still counts) whose value is a
command they run (`tar --to-command`, `rsync -e`); `--checkpoint-action=exec=CMD`'s too."""


def _option_scripts(name: str, words: Sequence[Word], options: frozenset[str]) -> list[Inner]:
    """The commands in the values of `options` (`tar -I CMD`, `-ICMD`)."""
    found: list[Inner] = []
    for i, word in enumerate(words[1:], 1):
        flag, eq, attached = word.text.partition("=")
        value: Word | None = None
        if eq and flag in options:
            value = Word(attached, word.kind)
        elif word.text in options and i + 1 < len(words):
            value = words[i + 1]
        elif word.text[:2] in options and len(word.text) > 2 and not word.text.startswith("--"):
            value = Word(word.text[2:], word.kind)
        if value is None:
            continue
        text = value.text
        if flag == "--checkpoint-action":
            if not text.startswith("exec="):
                continue
            text = text.removeprefix("exec=")
        found.append(Script(text, f"{name} {flag}", _literal([value]), strict=False))
    return found


def _git_config(words: Sequence[Word]) -> list[Inner]:
    """What `git -c KEY=VALUE` (before the subcommand) makes git run."""
    found: list[Inner] = []
    i = 1
    while i < len(words) and words[i].text.startswith("-"):
        flag, _, attached = words[i].text.partition("=")
        if flag in ("-c", "--config-env"):
            setting = attached if attached else (words[i + 1].text if i + 1 < len(words)
                                                 else "")
            key, _, value = setting.partition("=")
            kind = git_key_kind(key)
            runs = kind == "program"
            if flag == "--config-env" and kind is not None:
                found.append(Blind(f"git --config-env sets {key} from the environment: "
                                   f"cannot tell what runs"))
            elif kind is not None and not runs:
                found.append(Blind(f"git -c {key} makes git run or read {value!r}: cannot tell "
                                   f"what runs"))
            elif runs and (not key.casefold().startswith("alias.") or value.startswith("!")):
                found.append(Script(value.removeprefix("!"), f"git -c {key}",
                                    _literal(words[i:i + 2]), strict=False))
        takes = not attached and flag in ("-C", "-c", "--git-dir", "--work-tree",
                                          "--namespace", "--config-env")
        i += 2 if takes else 1
    return found


def _find_execs(words: Sequence[Word]) -> list[Inner]:
    found: list[Inner] = []
    i = 1
    while i < len(words):
        if words[i].text in _FIND_EXEC:
            action = words[i].text
            inner: list[Word] = []
            i += 1
            while i < len(words) and words[i].text not in (";", "+"):
                inner.append(words[i])
                i += 1
            if inner:
                found.append(Exec(tuple(inner), f"find {action}"))
        i += 1
    return found


def _shell_script(name: str, command: SimpleCommand, words: Sequence[Word],
                  feeder: SimpleCommand | None) -> list[Inner]:
    """The text a shell runs: its `-c` body, its here-document or here-string, or what is
    piped into it. A script file (`bash build.sh`, `sh < x.sh`) is not read."""
    saw_c = False
    stdin = False
    i = 1
    while i < len(words):
        text = words[i].text
        if text == "--":
            i += 1
            break
        if text in _SHELL_WITH_VALUE:
            i += 2
            continue
        if text[:1] in "-+" and len(text) > 1:
            if not text.startswith("--"):
                saw_c = saw_c or "c" in text[1:]
                stdin = stdin or "s" in text[1:]
            i += 1
            continue
        break
    if saw_c:
        if i >= len(words):
            return []
        body = words[i]
        return [Script(body.text, f"{name} -c", _literal([body]))]
    if i < len(words) and not stdin:
        return _script_file(name, command, words[i], feeder)
    return _stdin_script(name, command, feeder)


_STDIN_FILES = _names("- /dev/stdin /dev/fd/0 /proc/self/fd/0")


def _script_file(name: str, command: SimpleCommand, script: Word,
                 feeder: SimpleCommand | None) -> list[Inner]:
    """The script a shell or `source` reads from a file named in the line: its standard
    input (`sh /dev/stdin <<< TEXT`), what a process substitution writes (`. <(…)`: cannot
    tell), else nothing (`bash build.sh` is not read)."""
    if script.text in _STDIN_FILES:
        return _stdin_script(name, command, feeder)
    if "<(" in script.text and script.kind == EXPANDS:
        return [Blind(f"{name} runs what {script.text} writes: cannot tell what runs")]
    return []


def _stdin_script(name: str, command: SimpleCommand,
                  feeder: SimpleCommand | None) -> list[Inner]:
    for redirect in reversed(command.redirects):
        if redirect.body is not None:
            return [Script(redirect.body, f"{name} <<", redirect.body_kind == LITERAL)]
        if redirect.op == "<<<":
            return [Script(redirect.target.text, f"{name} <<<",
                           _literal([redirect.target]))]
        if redirect.op == "<" and not redirect.fd:
            return []
    return _piped_script(name, feeder)


def _piped_script(name: str, feeder: SimpleCommand | None) -> list[Inner]:
    if feeder is None:
        return []
    via = f"a pipe into {name}"
    if feeder.argv and base(feeder.argv[0]) in _ECHOES:
        args = [w for w in feeder.args[1:] if not re.fullmatch(r"-[neE]+", w.text)]
        text = " ".join(w.text for w in args)
        scripts: list[Inner] = [Script(text, via, _literal(args), strict=False)]
        escaped = _escapes(text)
        if escaped != text:
            scripts.append(Script(escaped, via, _literal(args), strict=False))
        if base(feeder.argv[0]) == "printf":  # `printf %s TEXT`: the format places each
            scripts += [Script(w.text, via, _literal([w]), strict=False) for w in args[1:]]
        return scripts
    shown = feeder.argv[0] if feeder.argv else "a redirection"
    return [Blind(f"{name} runs whatever `{shown}` writes into it: cannot tell what runs")]


def _escapes(text: str) -> str:
    """What dash's `echo` and `printf` make of backslash escapes (enough to split lines)."""
    return text.replace("\\n", "\n").replace("\\t", "\t").replace("\\\\", "\\")


_SUBSCRIPT_SUBSTITUTION = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\[[^\]]*(?:\$\(|`)")
"""An array subscript holding a command substitution: bash evaluates a subscript in a
variable NAME (`test -v`, `printf -v`, `read`, `let`, `(( ))`, `[[ -eq ]]`, a value later
read as arithmetic), quotes or not."""
_COMPOUND_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?\+?=\((.*)\)\Z", re.S)
"""`x=(…)` given quoted to declare and its kin, which evaluate it as a compound assignment."""
_DECLARES = _names("declare typeset local export readonly")


def _evaluated(command: SimpleCommand) -> list[Inner]:
    """Quoted text bash still evaluates, so what it substitutes runs: a subscript holding a
    substitution (`test -v 'a[$(cmd)]'`, `x='a[$(cmd)]'`) and a quoted compound assignment
    given to declare (`declare -a 'x=([0]=$(cmd))'`)."""
    words = [*(Word(t, command.assignment_kinds[i:i + 1] or LITERAL)
               for i, t in enumerate(command.assignments)), *command.args]
    declares = bool(command.argv) and base(command.argv[0]) in _DECLARES
    found: list[Inner] = []
    via = "bash's evaluation of a quoted name or assignment"
    for word in words[:len(command.assignments)]:
        variable, _, value = word.text.partition("=")
        if variable in ("BASH_ENV", "ENV") and "<(" in value:
            found.append(Blind(f"the shell runs at start what {value} writes: cannot tell "
                               f"what runs"))
    for word in words:  # read as the argument of `:`, which runs what it substitutes
        compound = _COMPOUND_ASSIGNMENT.match(word.text) if declares else None
        if word.kind == LITERAL and compound and ("$(" in word.text or "`" in word.text):
            found.append(Script(f": {compound.group(1)}", via, True, strict=False))
        elif word.kind == LITERAL and _SUBSCRIPT_SUBSTITUTION.search(word.text):
            found.append(Script(f": {word.text}", via, True, strict=False))
        elif word.kind == EXPANDS and compound:
            found.append(Blind(f"{command.argv[0]} evaluates {word.text!r} as an assignment: "
                               f"cannot tell what runs"))
    return found


def inner_commands(command: SimpleCommand, feeder: SimpleCommand | None) -> list[Inner]:
    """What `command` runs besides itself. `feeder` is the command piped into it, if any."""
    evaluated = _evaluated(command)
    return [*evaluated, *_runs(command, feeder)] if evaluated else _runs(command, feeder)


def _runs(command: SimpleCommand, feeder: SimpleCommand | None) -> list[Inner]:
    words = command.args
    if not words:
        return []
    program = words[0]
    name = base(program.text)
    if program.kind not in (LITERAL, TILDE):
        return [Blind(f"the program name {program.text!r} is an expansion: cannot tell "
                      f"which program runs")]
    if name in WRAPPERS:
        return _wrapped(name, WRAPPERS[name], words, feeder)
    if name in SHELLS:
        return _shell_script(name, command, words, feeder)
    if name == "eval":
        return [Script(" ".join(w.text for w in words[1:]), "eval", _literal(words[1:]))]
    if name == "find":
        return _find_execs(words)
    if name in _OPTION_SCRIPTS:
        return _option_scripts(name, words, _OPTION_SCRIPTS[name])
    if name == "git":
        return _git_config(words)
    if name == "alias":
        return [Script(w.text.split("=", 1)[1], "alias", _literal([w]), strict=False)
                for w in words[1:] if "=" in w.text]
    if name == "trap":
        handler = words[2:3] if words[1:2] and words[1].text == "--" else words[1:2]
        if handler and len(words) > words.index(handler[0]) + 1 and handler[0].text not in (
                "-", "-p", "-l", ""):
            return [Script(handler[0].text, "trap", _literal(handler), strict=False)]
        return []
    if name in ("source", "."):
        operands = [w for w in words[1:] if w.text != "--"]
        return _script_file(name, command, operands[0], feeder) if operands else []
    if name == "hash" and any(w.text.startswith("-") and "p" in w.text for w in words[1:]):
        return [Blind("hash -p makes a name run another program: cannot tell what runs")]
    if name == "enable" and any(w.text.startswith("-") and "f" in w.text for w in words[1:]):
        return [Blind("enable -f loads a builtin from a file: cannot tell what runs")]
    return []
