"""What a simple command runs besides itself: the command a wrapper starts (`nice rm …`,
`sudo`, `xargs`, `find -exec`, `busybox`, `fakeroot`), the script a shell or `eval` reads
(`sh -c BODY`, `bash <<EOF`, `echo … | sh`, `alias`, `trap`, `script -c`), a command in an
option's value (`tar --to-command`, `rsync -e`, `git -c core.pager=…`), or a note that it
cannot be read (`cat x | sh`).

Pure functions over words; kernel.shell.parse turns the results into simple commands.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

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
    reason: str


Inner = Exec | Script | Blind


@dataclass(frozen=True)
class _Wrapper:
    with_value: frozenset[str] = frozenset()
    """Options that take the next word as their value."""
    operands: int = 0
    """Words the wrapper itself consumes after its options (`timeout 5`, `chroot DIR`)."""
    assignments: bool = False
    """`env A=1 cmd`, `sudo A=1 cmd`."""
    script_options: frozenset[str] = frozenset()
    """Options whose value is shell text (`su -c`, `flock -c`, `env -S`)."""
    no_exec: frozenset[str] = frozenset()
    """Options after which nothing is run (`command -v`)."""
    runs_rest: bool = True
    """The words after its options are a command (`script out.log` names a file)."""
    joins: bool = False
    """It runs the words after its options as one `sh -c` text (`watch`, `sg GROUP`)."""

    @property
    def known(self) -> frozenset[str]:
        """Its options the table names."""
        return self.with_value | self.script_options | self.no_exec


def _opts(*names: str) -> frozenset[str]:
    return frozenset(names)


WRAPPERS: dict[str, _Wrapper] = {
    "sudo": _Wrapper(_opts("-u", "-g", "-C", "-p", "-h", "-U", "-r", "-t", "-D", "-R", "-T",
                           "--user", "--group", "--prompt", "--chdir", "--host",
                           "--close-from", "--role", "--type"), assignments=True,
                     no_exec=_opts("-l", "-v", "-k", "-K", "-V", "--list", "--validate")),
    "doas": _Wrapper(_opts("-u", "-C")),
    "su": _Wrapper(_opts("-g", "-G", "-s", "-w", "--group", "--shell"), operands=1,
                   script_options=_opts("-c", "--command")),
    "runuser": _Wrapper(_opts("-u", "-g", "-G", "-s", "-w", "--user", "--group"),
                        script_options=_opts("-c", "--command")),
    "pkexec": _Wrapper(_opts("--user")),
    "run0": _Wrapper(_opts("-u", "--user", "-D", "--chdir", "--setenv")),
    "env": _Wrapper(_opts("-u", "-C", "--unset", "--chdir"), assignments=True,
                    script_options=_opts("-S", "--split-string")),
    "nice": _Wrapper(_opts("-n", "--adjustment")),
    "ionice": _Wrapper(_opts("-c", "-n", "-t", "--class", "--classdata"),
                       no_exec=_opts("-p", "--pid", "-P", "--pgid", "-u", "--uid")),
    "timeout": _Wrapper(_opts("-s", "-k", "--signal", "--kill-after"), operands=1),
    "stdbuf": _Wrapper(_opts("-i", "-o", "-e", "--input", "--output", "--error")),
    "nohup": _Wrapper(),
    "setsid": _Wrapper(),
    "command": _Wrapper(no_exec=_opts("-v", "-V")),
    "exec": _Wrapper(_opts("-a")),
    "builtin": _Wrapper(),
    "time": _Wrapper(_opts("-f", "-o", "--format", "--output")),
    "chrt": _Wrapper(operands=1, no_exec=_opts("-p", "--pid")),
    "taskset": _Wrapper(operands=1, no_exec=_opts("-p", "--pid")),
    "flock": _Wrapper(_opts("-w", "-E", "--timeout", "--conflict-exit-code"), operands=1,
                      script_options=_opts("-c", "--command")),
    "chroot": _Wrapper(_opts("--userspec", "--groups"), operands=1),
    "unshare": _Wrapper(_opts("-S", "-G", "--setuid", "--setgid", "--wd", "--root")),
    "nsenter": _Wrapper(_opts("-t", "-S", "-G", "--target", "--setuid", "--setgid",
                              "--wd", "--root")),
    "unbuffer": _Wrapper(),
    "strace": _Wrapper(_opts("-o", "-p", "-e", "-s", "-u", "-a", "-P", "-E", "-I", "-b", "-O",
                             "-S", "-X")),
    "ltrace": _Wrapper(_opts("-o", "-p", "-e", "-s", "-u", "-a", "-n", "-l")),
    "catchsegv": _Wrapper(),
    "watch": _Wrapper(_opts("-n", "-d", "--interval", "-q", "--equexit")),
    "xargs": _Wrapper(_opts("-I", "-n", "-P", "-d", "-L", "-s", "-a", "-E", "--max-args",
                            "--max-procs", "--delimiter", "--max-lines", "--max-chars",
                            "--arg-file", "--eof", "--process-slot-var")),
    "busybox": _Wrapper(no_exec=_opts("--list", "--list-full", "--help", "--install")),
    "script": _Wrapper(_opts("-E", "--echo", "-I", "--log-in", "-O", "--log-out", "-T",
                             "--log-timing", "-B", "--log-io", "-m", "--logging-format"),
                       script_options=_opts("-c", "--command"), runs_rest=False),
    "sg": _Wrapper(operands=1, script_options=_opts("-c"), joins=True),
    "mapfile": _Wrapper(_opts("-d", "-n", "-O", "-s", "-u", "-c"), script_options=_opts("-C"),
                        runs_rest=False),
    "readarray": _Wrapper(_opts("-d", "-n", "-O", "-s", "-u", "-c"),
                          script_options=_opts("-C"), runs_rest=False),
    "ssh-agent": _Wrapper(_opts("-a", "-E", "-P", "-t", "-O"),
                          no_exec=_opts("-k", "-l", "-D", "-d", "-T")),
    "dbus-run-session": _Wrapper(_opts("--config-file", "--dbus-daemon")),
    "dbus-launch": _Wrapper(_opts("--config-file", "--autolaunch")),
    "fakeroot": _Wrapper(_opts("-l", "--lib", "--faked", "-s", "-i", "-b")),
    "eatmydata": _Wrapper(),
    "setarch": _Wrapper(operands=1),
    "linux32": _Wrapper(),
    "linux64": _Wrapper(),
    "xvfb-run": _Wrapper(_opts("-n", "--server-num", "-e", "--error-file", "-f",
                               "--auth-file", "-p", "--xauth-protocol", "-s", "--server-args",
                               "-w", "--wait", "-l")),
    "faketime": _Wrapper(_opts("-m", "-p"), operands=1),
    "torsocks": _Wrapper(_opts("-u", "-p", "-a", "-P", "--user", "--pass", "--address",
                               "--port")),
    "proxychains": _Wrapper(_opts("-f")),
    "proxychains4": _Wrapper(_opts("-f")),
    "valgrind": _Wrapper(),
    "numactl": _Wrapper(_opts("-C", "-N", "-m", "-p", "-i", "--physcpubind", "--cpunodebind",
                              "--membind", "--preferred", "--interleave")),
    "prlimit": _Wrapper(no_exec=_opts("-p", "--pid")),
    "setpriv": _Wrapper(),
    "systemd-run": _Wrapper(_opts("-u", "--unit", "-p", "--property", "-E", "--setenv",
                                  "--slice", "-M", "--machine", "-H", "--host", "--uid",
                                  "--gid", "--nice", "-D", "--working-directory",
                                  "--description", "--on-calendar", "--on-active")),
}
_SHELL_WITH_VALUE = _opts("-o", "+o", "-O", "+O", "--rcfile", "--init-file")
_FIND_EXEC = _opts("-exec", "-execdir", "-ok", "-okdir")
_ECHOES = _opts("echo", "printf")
_DURATION = re.compile(r"[0-9.]+[smhd]?\Z")


def base(word: str) -> str:
    """`/usr/bin/rm` is `rm`."""
    return word.rsplit("/", 1)[-1]


def _literal(words: Sequence[Word]) -> bool:
    return all(w.kind in (LITERAL, TILDE) for w in words)


def _long_name(flag: str, spec: _Wrapper) -> str:
    """`--sig` is `--signal`: getopt_long and argparse take an unambiguous prefix of a long
    option (a program that does not refuses the word, and then runs nothing)."""
    if flag in spec.known:
        return flag
    matches = [n for n in spec.known if n.startswith(flag) and n.startswith("--")]
    return matches[0] if len(matches) == 1 else flag


def _option_word(text: str, spec: _Wrapper) -> list[tuple[str, str | None]]:
    """The options one word gives, each with the value written in it (None: none written).
    A long option or a listed one-dash name is one option (`--user=root`, `-TT`); other
    one-dash words are read as getopt reads them: letters bundled up to the first that takes
    a value, which takes the rest of the word (`-Eu root`, `-uroot`, `-o/tmp/log.s`)."""
    flag, eq, attached = text.partition("=")
    if text.startswith("--") or flag in spec.known:
        return [(_long_name(flag, spec) if flag.startswith("--") else flag,
                 attached if eq else None)]
    found: list[tuple[str, str | None]] = []
    for at in range(1, len(text)):
        letter = f"-{text[at]}"
        if letter in spec.with_value or letter in spec.script_options:
            found.append((letter, text[at + 1:] or None))
            break
        found.append((letter, None))
    return found


def _skip_options(name: str, spec: _Wrapper, words: Sequence[Word]) -> tuple[int, list[Inner]]:
    """Where the wrapped command starts in `words` (after the wrapper's name), or -1 when
    the wrapper runs nothing else; and the scripts given as option values (`su -c TEXT`)."""
    found: list[Inner] = []
    i = 1
    operands = spec.operands
    while i < len(words):
        word = words[i]
        text = word.text
        if text == "--":
            i += 1
            break
        if spec.assignments and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", text):
            i += 1
            continue
        if text.startswith("-") and len(text) > 1:
            i += 1
            for flag, attached in _option_word(text, spec):
                if flag in spec.no_exec:
                    return -1, found
                if flag not in spec.with_value and flag not in spec.script_options:
                    continue
                value = Word(attached, word.kind) if attached is not None else (
                    words[i] if i < len(words) else None)
                if attached is None:
                    i += 1
                if flag in spec.script_options:
                    if value is not None:
                        found.append(Script(value.text, f"{name} {flag}", _literal([value])))
                    return -1, found
            continue
        if operands and (name != "timeout" or _DURATION.match(text) or word.kind == EXPANDS):
            operands -= 1
            i += 1
            continue
        break
    return i, found


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


def _wrapped(name: str, words: Sequence[Word], feeder: SimpleCommand | None) -> list[Inner]:
    spec = WRAPPERS[name]
    start, found = _skip_options(name, spec, words)
    if start < 0:
        return found
    rest = tuple(words[start:])
    if name == "xargs":
        replace = _xargs_replace(words[1:start])
        if replace is not None:  # `-I{}`: its input is put where the words say `{}`, and
            rest = tuple(Word(w.text, EXPANDS) if replace in w.text else w for w in rest)
        if replace is None or not rest:  # nowhere else
            rest = (rest or (Word("echo"),)) + _fed_words(feeder)
    if not rest or not spec.runs_rest:
        return found
    if spec.joins:
        return [*found, Script(" ".join(w.text for w in rest), name, _literal(rest))]
    return [*found, Exec(rest, name)]


_OPTION_SCRIPTS: dict[str, frozenset[str]] = {
    "tar": _opts("--to-command", "-I", "--use-compress-program", "-F", "--info-script",
                 "--new-volume-script", "--checkpoint-action"),
    "rsync": _opts("-e", "--rsh", "--rsync-path"),
    "zip": _opts("-TT", "--unzip-command"),
}
"""Options of programs (not wrappers: what they do themselves still counts) whose value is a
command they run (`tar --to-command`, `rsync -e`); `--checkpoint-action=exec=CMD`'s too."""
_GIT_CONFIG_SCRIPTS = re.compile(
    r"core\.(sshcommand|pager|editor|askpass|fsmonitor)|sequence\.editor|diff\.external"
    r"|pager\..+|gpg(\..+)?\.program|credential(\..+)?\.helper|alias\..+"
    r"|(filter|diff|merge)\..+\.(clean|smudge|process|textconv|command|driver)", re.I)
"""`git -c KEY=VALUE` keys whose value git runs as a command (an alias only from `!`)."""
_GIT_CONFIG_ELSEWHERE = re.compile(r"core\.hookspath|include(if\..+)?\.path", re.I)
"""`git -c` keys that make git run or read what another file holds."""


def _option_scripts(name: str, words: Sequence[Word]) -> list[Inner]:
    """The commands in the values of `_OPTION_SCRIPTS` options (`tar -I CMD`, `-ICMD`)."""
    options = _OPTION_SCRIPTS[name]
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
            runs = _GIT_CONFIG_SCRIPTS.fullmatch(key) is not None
            if flag == "--config-env" and (runs or _GIT_CONFIG_ELSEWHERE.fullmatch(key)):
                found.append(Blind(f"git --config-env sets {key} from the environment: "
                                   f"cannot tell what runs"))
            elif _GIT_CONFIG_ELSEWHERE.fullmatch(key):
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


_STDIN_FILES = _opts("-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0")


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
_DECLARES = _opts("declare", "typeset", "local", "export", "readonly")


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
        if name == "busybox" and len(words) > 1 and not words[1].text.startswith("-"):
            return [Exec(tuple(words[1:]), "busybox")]
        return _wrapped(name, words, feeder)
    if name in SHELLS:
        return _shell_script(name, command, words, feeder)
    if name == "eval":
        return [Script(" ".join(w.text for w in words[1:]), "eval", _literal(words[1:]))]
    if name == "find":
        return _find_execs(words)
    if name in _OPTION_SCRIPTS:
        return _option_scripts(name, words)
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
