"""What a simple command runs besides itself: the command a wrapper starts (`nice rm …`,
`sudo`, `xargs`, `find -exec`, `busybox`, `fakeroot`), the program a package runner or an
environment manager runs (`npx tsc`, `npm exec`, `pnpm dlx`, `uvx black`, `uv run`, `poetry
run`, `conda run -n E`, `direnv exec DIR`, `bundle exec`: RUNNERS), the script a shell or
`eval` reads (`sh -c BODY`, `bash <<EOF`, `echo … | sh`, `alias`, `trap`, `script -c`, `npx
-c`, `nix-shell --run`), a command in an option's value (`tar --to-command`, `rsync -e`, `git
-c core.pager=…`), or a note that it cannot be read (`cat x | sh`).

Each wrapper and runner is read by its own grammar (`_Wrapper`): its options with and
without a value, as getopt reads them or as the program does where it differs (npm reads its
options anywhere before `--`; npx hands npm what it did not take), `--`, a package's spec
that names the program (`npx tsc@5`, `uvx 'black>=24'`, unless `-p`/`--from` name the
package), the words it takes itself (`timeout 5`, `direnv exec DIR`). Where a runner's
grammar is listed in full, an option it does not list that a word follows cannot be read
(its value, or the program?): that is said (`Blind`), so the command asks.

A wrapped program is a command of the line like any other, so a rule sees it: an allow rule
must cover it too (`run_command(sudo *)` alone does not allow `sudo rm x`, nor does
`run_command(npx *)` allow `npx tsc`: `run_command(tsc *)` must too), a deny or ask rule for
it applies through any wrapper (`deny run_command(rm *)` stops `poetry run rm x`), and what it
writes is judged (kernel.shell.writes). A runner's own words are judged as well: it is no
plain wrapper (`npx` needs the network, `npm install` writes). Not read, as before: what a
runner takes from a file or a name only the project or the package knows (`npm run`, `yarn
SCRIPT`, `cargo run`, `go run`, `dotnet run`, `nix run`, `make`); a word `pdm run`, `hatch
run` or `pixi run` may take for a script the project defines is read as the program of that
name. A program run in a container (`docker run`, `podman run`) is no program of this machine.

Pure functions over words; kernel.shell.parse turns the results into simple commands.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from kernel.pathrules import git_key_kind
from kernel.shell.words import EXPANDS, LITERAL, TILDE, SimpleCommand, Word

SHELLS = frozenset(
    {"sh", "bash", "dash", "zsh", "ksh", "ash", "mksh", "yash", "posh", "rbash", "fish",
     "csh", "tcsh"}
)  # fmt: skip
PRIVILEGE = frozenset({"sudo", "doas", "su", "pkexec", "run0", "runuser"})
PYTHONS = frozenset({"python", "python3", *(f"python3.{n}" for n in range(6, 16)), "pypy3"})
_PY_FLAGS = frozenset("bBdEhiIOPqsSuvVx")
XARGS_INPUT = "{xargs input}"


@dataclass(frozen=True)
class Exec:
    """A command run directly: its words, and what ran it (for `SimpleCommand.via`)."""

    words: tuple[Word, ...]
    via: str
    elsewhere: bool = False
    """It runs in another folder than the line's (`SimpleCommand.elsewhere`)."""


@dataclass(frozen=True)
class Script:
    """Shell text a command runs. `strict`: a parse error is the whole line's parse error
    (the body of `sh -c`); otherwise the text is read as far as it can be."""

    text: str
    via: str
    literal: bool
    strict: bool = True
    elsewhere: bool = False


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
    flags: frozenset[str] | None = None
    """All its options that take no value, when its whole grammar is listed (a runner's): an
    option in none of its lists that a word follows cannot be read (is that word its value,
    or the program?), so what runs cannot be told. None: an option not listed takes none."""
    options: bool = True
    """False: every word after its name is the program's (`pnpm exec`; a first `--` goes)."""
    joins_with: frozenset[str] = frozenset()
    """Flags after which it runs the words after its options as one shell text (`pnpm -c
    exec`, `env-cmd --use-shell`), also when given before its subcommand."""
    expands: bool = False
    """It puts variables' values for `$X`/`${X}` in the program's words itself (`pipenv run
    tee '$HOME/x'`, `pdm run`), so a word with `$` is only known when it runs."""
    expands_with: frozenset[str] = frozenset()
    """Flags after which it does (`env-cmd --expand-envs`)."""
    subcommands: Mapping[str, _Wrapper | None] = field(default_factory=dict)
    """A runner's subcommands that run a program, with their grammar (`uv run`, `npm exec`),
    or None for one that runs none (`dotenv list`). Another word is the program only with
    `runs_rest` (`dotenv -e FILE CMD`)."""
    package: Callable[[str], str | None] | None = None
    """How its first word, a package's spec, names the program it runs (`uvx black@24` runs
    `black`); None from it when the spec names no program that can be told (a URL, a
    package's folder): that is not read, as `npm run SCRIPT` is not."""
    package_options: frozenset[str] = frozenset()
    """Options that name the package instead (`npx -p`, `uvx --from`): with one, the first
    word is the program."""
    starts_after: frozenset[str] = frozenset()
    """Words after which the rest is the program, wherever they are (`mise x TOOLS -- CMD`,
    `nix shell PKGS --command CMD`); without one it runs no program."""
    chdir: frozenset[str] = frozenset()
    """Options that run the program in another folder (`env -C DIR`, `uv --directory DIR`,
    `pnpm -r`: each package's), also when given before its subcommand."""
    reader: Callable[[str, Sequence[Word], bool], list[Inner]] | None = None
    """Its own reading, for a grammar no field above describes (npm reads its options
    anywhere in the line, hatch takes `ENV:CMD`); told whether `chdir` options were given."""

    @property
    def known(self) -> frozenset[str]:
        """Its options the table names."""
        return self.with_value | self.script_options | self.no_exec | (self.flags or frozenset())


def _opts(*names: str) -> frozenset[str]:
    return frozenset(names)


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


WRAPPERS: dict[str, _Wrapper] = {
    "sudo": _Wrapper(_opts("-u", "-g", "-C", "-p", "-h", "-U", "-r", "-t", "-D", "-R", "-T",
                           "--user", "--group", "--prompt", "--chdir", "--host",
                           "--close-from", "--role", "--type"), assignments=True,
                     no_exec=_opts("-l", "-v", "-k", "-K", "-V", "--list", "--validate"),
                     chdir=_opts("-D", "--chdir")),
    "doas": _Wrapper(_opts("-u", "-C")),
    "su": _Wrapper(_opts("-g", "-G", "-s", "-w", "--group", "--shell"), operands=1,
                   script_options=_opts("-c", "--command")),
    "runuser": _Wrapper(_opts("-u", "-g", "-G", "-s", "-w", "--user", "--group"),
                        script_options=_opts("-c", "--command")),
    "pkexec": _Wrapper(_opts("--user")),
    "run0": _Wrapper(_opts("-u", "--user", "-D", "--chdir", "--setenv"),
                     chdir=_opts("-D", "--chdir")),
    "env": _Wrapper(_opts("-u", "-C", "--unset", "--chdir"), assignments=True,
                    script_options=_opts("-S", "--split-string"), chdir=_opts("-C", "--chdir")),
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
    "unshare": _Wrapper(_opts("-S", "-G", "--setuid", "--setgid", "--wd", "--root"),
                        chdir=_opts("--wd", "--root")),
    "nsenter": _Wrapper(_opts("-t", "-S", "-G", "--target", "--setuid", "--setgid",
                              "--wd", "--root"), chdir=_opts("--wd", "--root", "-w", "-r")),
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
                                  "--description", "--on-calendar", "--on-active"),
                            chdir=_opts("-D", "--working-directory")),
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


def _skip_options(name: str, spec: _Wrapper,
                  words: Sequence[Word]) -> tuple[int, list[Inner], frozenset[str]]:
    """Where the wrapped command starts in `words` (after the wrapper's name), or -1 when
    the wrapper runs nothing else or what it runs cannot be told; the scripts given as option
    values (`su -c TEXT`) and what cannot be read; and the options given."""
    found: list[Inner] = []
    given: set[str] = set()
    i = 1
    operands = spec.operands
    while i < len(words):
        word = words[i]
        text = word.text
        if text == "--":
            i += 1
            break
        if not spec.options:
            break
        if spec.assignments and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", text):
            i += 1
            continue
        if text.startswith("-") and len(text) > 1:
            i += 1
            for flag, attached in _option_word(text, spec):
                given.add(flag)
                if flag in spec.no_exec:
                    return -1, found, frozenset(given)
                if flag not in spec.with_value and flag not in spec.script_options:
                    after = words[i] if i < len(words) and attached is None else None
                    if (spec.flags is not None and flag not in spec.known and after is not None
                            and not after.text.startswith("-")):
                        found.append(Blind(
                            f"{name} is given {text}, an option it is not known to take: cannot "
                            f"tell whether {after.text!r} is its value or the program it runs"))
                        return -1, found, frozenset(given)
                    continue
                value = Word(attached, word.kind) if attached is not None else (
                    words[i] if i < len(words) else None)
                if attached is None:
                    i += 1
                if flag in spec.script_options:
                    if value is not None:
                        found.append(Script(value.text, f"{name} {flag}", _literal([value]),
                                            elsewhere=bool(given & spec.chdir)))
                    return -1, found, frozenset(given)
            continue
        if operands and (name != "timeout" or _DURATION.match(text) or word.kind == EXPANDS):
            operands -= 1
            i += 1
            continue
        break
    return i, found, frozenset(given)


def python_module(words: Sequence[Word]) -> tuple[Word, tuple[Word, ...]] | None:
    """`python [OPTIONS] -m MODULE ARGS`: the module and the words after it, None when python
    runs no module (a script, `-c`, an option it does not take)."""
    i = 1
    while i < len(words):
        text = words[i].text
        i += 1
        if not text.startswith("-") or text in ("-", "--"):
            return None
        for at, letter in enumerate(text[1:], 1):
            rest = text[at + 1:]
            if letter == "m":
                module = Word(rest) if rest else (words[i] if i < len(words) else None)
                return None if module is None else (module, tuple(words[i + (not rest):]))
            if letter in "WX":
                i += not rest
                break
            if letter not in _PY_FLAGS:
                return None
    return None


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


def _wrapped(name: str, spec: _Wrapper, words: Sequence[Word], feeder: SimpleCommand | None,
             given: frozenset[str] = frozenset()) -> list[Inner]:
    """What a wrapper or runner called `name` (with its subcommand: `uv run`) runs, read by
    its grammar `spec`; `given`: the options given before its subcommand."""
    if spec.reader is not None:
        return spec.reader(name, words, bool(given & spec.chdir))
    if spec.starts_after:
        return _after_marker(name, spec, words, bool(given & spec.chdir))
    start, found, options = _skip_options(name, spec, words)
    if start < 0:
        return found
    given |= options
    rest = tuple(words[start:])
    if spec.subcommands and rest:
        if rest[0].kind != LITERAL:
            return [*found, Blind(f"{name}'s subcommand {rest[0].text!r} is only known when it "
                                  f"runs: cannot tell what it runs")]
        if rest[0].text in spec.subcommands:
            sub = spec.subcommands[rest[0].text]
            return found if sub is None else [
                *found, *_wrapped(f"{name} {rest[0].text}", sub, rest, feeder, given)]
    if name == "xargs":
        marker = _xargs_replace(words[1:start])
        if marker is not None:  # `-I{}`: its input is put where the words say `{}`, and
            rest = tuple(Word(w.text, EXPANDS) if marker in w.text else w for w in rest)
        if marker is None or not rest:  # nowhere else
            rest = (rest or (Word("echo"),)) + _fed_words(feeder)
    if not rest or not spec.runs_rest:
        return found
    moved = bool(given & spec.chdir)
    if spec.joins or given & spec.joins_with:
        return [*found, Script(" ".join(w.text for w in rest), name, _literal(rest),
                               elsewhere=moved)]
    if spec.package is not None and not given & spec.package_options:
        program = _package_program(rest[0], spec.package)
        if program is None:
            return found
        rest = (program, *rest[1:])
    if spec.expands or given & spec.expands_with:
        rest = tuple(Word(w.text, EXPANDS) if "$" in w.text else w for w in rest)
    return [*found, Exec(rest, name, moved)]


def _after_marker(name: str, spec: _Wrapper, words: Sequence[Word], moved: bool) -> list[Inner]:
    """`mise x TOOLS -- CMD`, `nix shell PKGS --command CMD`: the program follows the first
    of `spec.starts_after` before any `--` (the words after that are the program's: `nix run
    PKG -- -c x`); a script given before it (`mise x -c TEXT`) runs too."""
    at = next((i for i, w in enumerate(words)
               if i and (w.text in spec.starts_after or w.text == "--")), len(words))
    if at < len(words) and words[at].text not in spec.starts_after:
        return []
    found = [replace(f, elsewhere=moved) if isinstance(f, Script) else f
             for f in _option_scripts(name, words[:at], spec.script_options)]
    rest = tuple(words[at + 1:])
    return [*found, Exec(rest, name, moved)] if rest else found


def _package_program(word: Word, package: Callable[[str], str | None]) -> Word | None:
    """The program a package's spec names (`tsc@5` is `tsc`); None when it cannot be told.
    A spec only known when it runs stays as it is (so it cannot be told which runs)."""
    if word.kind != LITERAL:
        return word
    program = package(word.text)
    return Word(program) if program else None


def _npm_package(spec: str) -> str | None:
    """npm's spec to its program (`tsc@5`, `@biomejs/biome@1` is `biome`); a path to a file
    or a folder (`/bin/rm`, `./x`, GitHub's `user/repo`) is the program it names; a URL or
    an alias (`git+https:…`, `npm:x@1`) cannot be told."""
    if ":" in spec:
        return None
    if spec.startswith("@") and "/" in spec:
        spec = spec.partition("/")[2]
    elif "/" in spec:
        return spec
    return spec.partition("@")[0] or None


_PYTHON_SPEC = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*(?:[@=<>!~;].*)?\Z",
                          re.S)


def _python_package(spec: str) -> str | None:
    """A Python requirement to its program (`black==24.1`, `black[d]@24`, `'black>=24'` are
    `black`); a path, a URL or a VCS spec cannot be told."""
    match = _PYTHON_SPEC.match(spec)
    return match.group(1) if match else None


_NPM_VALUES = _names("""
    _auth access allow-directory allow-file allow-git allow-remote allow-scripts also
    audit-level auth-type before ca cache cache-max cache-min cafile call cert cidr cpu
    depth diff diff-dst-prefix diff-src-prefix diff-unified editor expect-result-count
    expires fetch-retries fetch-retry-factor fetch-retry-maxtimeout fetch-retry-mintimeout
    fetch-timeout git globalconfig heading https-proxy include init-author-email
    init-author-name init-author-url init-license init-module init-type init-version
    init.author.email init.author.name init.author.url init.license init.module init.version
    install-strategy key libc local-address location lockfile-version loglevel logs-dir
    logs-max maxsockets message min-release-age min-release-age-exclude name node-gyp
    node-options noproxy omit only orgs orgs-permission os otp pack-destination package
    packages packages-and-scopes-permission password prefix preid provenance-file proxy
    registry replace-registry-host save-prefix sbom-format sbom-type scope scopes
    script-shell searchexclude searchlimit searchopts searchstaleness shell tag
    tag-version-prefix token-description umask user-agent userconfig viewer which workspace
""")
"""npm's settings that take a value (npm 11's definitions; a test compares them with the npm
installed, where there is one)."""
_NPM_FLAGS = _names("""
    all allow-same-version allow-scripts-pending allow-scripts-pin audit bin-links browser
    bypass-2fa color commit-hooks dangerously-allow-all-scripts description dev
    diff-ignore-all-space diff-name-only diff-no-prefix diff-text dry-run engine-strict
    expect-results force foreground-scripts format-package-lock fund git-tag-version global
    global-style if-present ignore-scripts include-attestations include-staged
    include-workspace-root init-private install-links json legacy-bundling legacy-peer-deps
    link long offline omit-lockfile-registry-resolved optional package-lock
    package-lock-only packages-all parseable prefer-dedupe prefer-offline prefer-online
    production progress provenance read-only rebuild-bundle save save-bundle save-dev
    save-exact save-optional save-peer save-prod shrinkwrap sign-git-commit sign-git-tag
    strict-allow-scripts strict-peer-deps strict-ssl timing unicode
    update-notifier usage version versions workspaces workspaces-update yes
""")
"""npm's settings that are true or false (the word `true` or `false` after one is its value;
`null` too after those that may be null, `always` after --color, a word after --browser)."""
_NPM_NULLABLE = frozenset({"browser", "expect-results", "optional", "production", "workspaces",
                           "yes"})
_NPM_SHORT: dict[str, str] = {
    "enjoy-by": "--before", "d": "--loglevel info", "dd": "--loglevel verbose",
    "ddd": "--loglevel silly", "quiet": "--loglevel warn", "q": "--loglevel warn",
    "s": "--loglevel silent", "silent": "--loglevel silent", "verbose": "--loglevel verbose",
    "desc": "--description", "help": "--usage", "local": "--no-global", "n": "--no-yes",
    "no": "--no-yes", "porcelain": "--parseable", "readonly": "--read-only",
    "reg": "--registry", "iwr": "--include-workspace-root", "ws": "--workspaces",
    "a": "--all", "c": "--call", "f": "--force", "g": "--global", "L": "--location",
    "l": "--long", "m": "--message", "p": "--parseable", "C": "--prefix", "S": "--save",
    "B": "--save-bundle", "D": "--save-dev", "E": "--save-exact", "O": "--save-optional",
    "P": "--save-prod", "?": "--usage", "H": "--usage", "h": "--usage", "v": "--version",
    "w": "--workspace", "y": "--yes",
}
"""npm's shorthands and the words they stand for (one-letter ones may be bundled: `-yc`)."""
_NPM_EXEC = frozenset({"exec", "exe", "x"})
_NPM_ELSEWHERE = frozenset({"workspace", "workspaces"})
"""Settings with which npm exec runs the program in each workspace's folder."""
_NPX_SWITCHES = _NPM_FLAGS | frozenset({"always-spawn", "ignore-existing", "shell-auto-fallback",
                                        "no-install", "quiet", "q", "version", "v", "help",
                                        "h"})
_NPX_TAKES = frozenset({"npm", "node-arg", "n", "package", "p", "cache", "userconfig", "call",
                        "c", "shell"})
_NPX_REMOVED = frozenset({"always-spawn", "ignore-existing", "shell-auto-fallback", "npm",
                          "node-arg", "n"})
_DASHES = re.compile(r"-{2,}\Z")


def _npx_words(words: Sequence[Word]) -> list[Word]:
    """The words npx hands `npm exec` (npm's bin/npx-cli.js): `-p` is `--package`, `--shell`
    `--script-shell`, `--no-install` `--yes=false`, a shorthand is expanded, a removed
    option is dropped with its value, and `--` goes before the first word that is no option
    and not taken for the value of the option before it (any option not a switch takes the
    next word unless that starts with `-`; npm may then read that word otherwise)."""
    args = list(words)
    i = 0
    while i < len(args):
        word = args[i]
        if word.text == "--":
            break
        if not word.text.startswith("-"):
            args.insert(i, Word("--"))
            break
        key, eq, value = word.text.lstrip("-").partition("=")
        renamed = {"p": "--package", "shell": "--script-shell", "no-install": "--yes"}.get(key)
        if renamed is not None:
            given = "=false" if key == "no-install" else f"={value}" if eq else ""
            args[i] = Word(renamed + given, word.kind)
        elif key in _NPM_SHORT and key not in _NPX_REMOVED:
            args[i:i + 1] = [Word(w) for w in _NPM_SHORT[key].split()] + (
                [Word(value, word.kind)] if eq else [])
            continue
        after = args[i + 1] if i + 1 < len(args) else None
        takes = not eq and key not in _NPX_SWITCHES and (
            key in _NPX_TAKES or after is None or not after.text.startswith("-"))
        if key in _NPX_REMOVED:
            del args[i:i + 1 + takes]
            continue
        i += 1 + takes
    return args


def _npm_short(flag: str) -> list[str] | None:
    """The words an npm shorthand stands for (`-y`, `-yc`, `--ws`), None for another word."""
    key = flag.lstrip("-")
    if not key or key in _NPM_VALUES or key in _NPM_FLAGS:
        return None
    if key in _NPM_SHORT:
        return _NPM_SHORT[key].split()
    if all(letter in _NPM_SHORT for letter in key):
        return [w for letter in key for w in _NPM_SHORT[letter].split()]
    return None


def _npm_flag_takes(name: str, after: str) -> bool:
    """Does npm take the word after a true-or-false setting as its value?"""
    return after in ("true", "false") or (name in _NPM_NULLABLE and after == "null") or (
        name == "color" and after == "always") or (
        name == "browser" and not re.match(r"-[^-]", after))


@dataclass(frozen=True)
class _NpmLine:
    """How npm (its option parser, nopt) reads its words."""

    rest: tuple[Word, ...]
    """The words no option takes, in order (all those after `--`)."""
    values: Mapping[str, Word]
    """The value of each setting given one."""
    given: frozenset[str]
    """Every setting given."""
    unread: str = ""
    """What cannot be read ('' when all can)."""


def _nopt(who: str, words: Sequence[Word]) -> _NpmLine:
    """`words` as npm reads them: options anywhere before `--`, by their full name with one
    dash or two (`-cache`), `--no-X`, `--X=V`, a shorthand or a bundle of one-letter ones;
    `true`/`false` after a true-or-false one is its value. An option npm does not list is
    true or false to npm, but one that a word follows cannot be read (a newer npm's, or
    a prefix npm expands): is the word its value or the program? `who`: npm or npx."""
    args = list(words)
    rest: list[Word] = []
    values: dict[str, Word] = {}
    given: set[str] = set()
    i = 0
    while i < len(args):
        word = args[i]
        flag, eq, attached = word.text.partition("=")
        if _DASHES.match(word.text):
            rest += args[i + 1:]
            break
        if not word.text.startswith("-") or word.text == "-":
            rest.append(word)
            i += 1
            continue
        if eq:
            args[i:i + 1] = [Word(flag, word.kind), Word(attached, word.kind)]
        expanded = _npm_short(flag)
        if expanded is not None:
            args[i:i + 1] = [Word(w) for w in expanded]
            continue
        name = flag.lstrip("-")
        negated = False
        while name.lower().startswith("no-"):
            name, negated = name[3:], True
        given.add(name)
        after = args[i + 1] if i + 1 < len(args) else None
        if (name in _NPM_VALUES and not negated) or (eq and name not in _NPM_FLAGS):
            if after is None or _DASHES.match(after.text):
                i += 1
                continue
            if after.text.startswith("-") and not eq:
                return _NpmLine(tuple(rest), values, frozenset(given),
                                f"{who}'s {flag} takes a value and {after.text!r} follows it")
            values[name] = after
            i += 2
            continue
        if after is not None and _npm_flag_takes(name, after.text):
            i += 2
            continue
        if (name not in _NPM_FLAGS and name not in _NPM_VALUES and after is not None
                and not after.text.startswith("-")):
            return _NpmLine(tuple(rest), values, frozenset(given),
                            f"{who} is given {flag}, an option it is not known to take: cannot "
                            f"tell whether {after.text!r} is its value or the program it runs")
        i += 1
    return _NpmLine(tuple(rest), values, frozenset(given))


def _npm_runs(via: str, line: _NpmLine, command: Sequence[Word]) -> list[Inner]:
    """What `npm exec` runs: `--call`'s shell text, or the program its first word names
    (the package's spec, or with `--package` the program itself) with the words after it;
    given `--script-shell` (npx's `--shell`) that is no shell, that program with `-c` and the
    text, as npm runs it."""
    if line.unread:
        return [Blind(line.unread)]
    moved = bool(line.given & _NPM_ELSEWHERE)
    call = line.values.get("call")
    if call is not None and call.kind == LITERAL and not call.text:
        call = None  # npm runs the words when `--call` is empty
    shell = line.values.get("script-shell")
    if shell is not None and base(shell.text) not in SHELLS:  # it runs `SHELL -c TEXT`
        given = [call] if call is not None else list(command)
        text = call.text if call is not None else shlex.join(w.text for w in command)
        return [Exec((shell, Word("-c"), Word(text, LITERAL if _literal(given) else EXPANDS)),
                     via, moved)] if given else []
    if call is not None:
        return [Script(call.text, f"{via} -c", _literal([call]), elsewhere=moved)]
    if not command:
        return []
    program = command[0] if "package" in line.values else _package_program(command[0],
                                                                            _npm_package)
    return [Exec((program, *command[1:]), via, moved)] if program is not None else []


def _npx(name: str, words: Sequence[Word], _moved: bool) -> list[Inner]:
    """`npx [OPTIONS] PKG ARGS`: npx's reading, then npm exec's."""
    line = _nopt(name, _npx_words(words[1:]))
    return _npm_runs(name, line, line.rest)


def _npm(name: str, words: Sequence[Word], _moved: bool) -> list[Inner]:
    """`npm exec` (`exe`, `x`): npm reads its options anywhere before `--`, so in `npm exec
    tsc --outDir D x.ts` it takes `--outDir` for itself and runs `tsc D x.ts`."""
    line = _nopt(name, words[1:])
    if line.unread:
        return [Blind(line.unread)] if any(w.text in _NPM_EXEC for w in words[1:]) else []
    if not line.rest:
        return []
    if line.rest[0].kind != LITERAL:
        return [Blind(f"npm's command {line.rest[0].text!r} is only known when it runs: cannot "
                      f"tell what it runs")]
    if line.rest[0].text not in _NPM_EXEC:
        return []
    return _npm_runs(f"{name} exec", line, line.rest[1:])


_YARN1_FLAGS = _names("""
    --check-files --disable-pnp --enable-pnp --pnp --flat --focus --force --frozen-lockfile
    --har --ignore-engines --ignore-optional --ignore-platform --ignore-scripts --json
    --link-duplicates --no-bin-links --no-default-rc --no-lockfile --non-interactive
    --no-node-version-check --no-progress --offline --prefer-offline --pure-lockfile -s
    --silent --skip-integrity-check --strict-semver --update-checksums --verbose -v --version
    -h --help
""")
"""Yarn 1's options that take no value."""
_PLAIN = re.compile(r"[\w./@+,:%-]+\Z")
"""A word the shell reads as itself, as a program's name (no `X=1` assignment)."""


def _yarn_exec(name: str, words: Sequence[Word], moved: bool) -> list[Inner]:
    """`yarn exec CMD ARGS`. Yarn 2 and later run CMD as shell text, ARGS added to its last
    command; Yarn 1 reads its own options anywhere in the line (an option not among its
    flags takes the next word for its value) and runs the other words. Both readings count:
    which Yarn runs is not known here."""
    rest = tuple(words[2:] if words[1:2] and words[1].text == "--" else words[1:])
    if not rest:
        return []
    head = rest[0]
    found: list[Inner]
    if head.kind != LITERAL or _PLAIN.match(head.text):
        found = [Exec(rest, name, moved)]
    else:
        text = " ".join([head.text, *(shlex.quote(w.text) for w in rest[1:])])
        found = [Script(text, name, _literal(rest), elsewhere=moved)]
    yarn1: list[Word] = []
    i = 1
    while i < len(words):
        text = words[i].text
        if text == "--":
            yarn1 += words[i + 1:]
            break
        if text.startswith("-") and len(text) > 1:
            takes = ("=" not in text and text not in _YARN1_FLAGS and i + 1 < len(words)
                     and not words[i + 1].text.startswith("-"))
            i += 1 + takes
            continue
        yarn1.append(words[i])
        i += 1
    if yarn1 and tuple(yarn1) != rest:
        found.append(Exec(tuple(yarn1), name, moved))
    return found


def _yarn_workspace(name: str, words: Sequence[Word], _moved: bool) -> list[Inner]:
    """`yarn workspace NAME CMD …` runs `yarn CMD …` in that workspace's folder."""
    return [Exec((Word("yarn"), *words[2:]), name, True)] if len(words) > 2 else []


def _hatch_run(name: str, words: Sequence[Word], _moved: bool) -> list[Inner]:
    """`hatch run [+VAR=…|-VAR=…]… [ENV:]CMD ARGS`: the words before CMD starting with `+`
    or `-` pick matrix variables; what follows the last `:` of CMD's word is the program (or
    a script the project defines under that name, which is not read)."""
    rest = list(words[1:])
    if rest[:1] and rest[0].text in ("-h", "--help"):
        return []
    while rest and rest[0].text[:1] in ("+", "-"):
        rest.pop(0)
    if not rest:
        return []
    head = rest[0]
    if head.kind == LITERAL and ":" in head.text:
        program = head.text.rpartition(":")[2]
        if not program:
            return []
        head = Word(program)
    return [Exec((head, *rest[1:]), name)]


_NONE: frozenset[str] = frozenset()
_UV_GLOBAL = _names("--cache-dir --color --allow-insecure-host --directory --project "
                    "--config-file --python-preference --preview-features")
_UV_GLOBAL_FLAGS = _names("-n --no-cache -q --quiet -v --verbose --managed-python "
                          "--no-managed-python --no-python-downloads --system-certs --offline "
                          "--no-progress --no-config --preview --no-preview --native-tls "
                          "--no-native-tls --no-cache-dir --allow-python-downloads "
                          "--show-settings")
_UV_HELP = _names("-h --help -V --version")
_UV_RESOLVE = _UV_GLOBAL | _names(
    "--index --default-index -i --index-url --extra-index-url -f --find-links "
    "--index-strategy --keyring-provider -P --upgrade-package --upgrade-group --resolution "
    "--prerelease --prerelease-package --fork-strategy --exclude-newer --exclude-newer-package "
    "--no-sources-package --reinstall-package --link-mode -C --config-setting "
    "--config-settings-package --no-build-isolation-package --no-build-package "
    "--no-binary-package --refresh-package -p --python --python-platform -w --with "
    "--with-editable --with-requirements --env-file")
_UV_RESOLVE_FLAGS = _UV_GLOBAL_FLAGS | _names(
    "--no-index -U --upgrade --no-sources --reinstall --compile-bytecode --no-build-isolation "
    "--no-build --no-binary --require-build-hashes --no-require-build-hashes --refresh "
    "--isolated --no-env-file")
_UV_RUN = _Wrapper(
    _UV_RESOLVE | _names("--extra --no-extra --group --no-group --only-group "
                         "--no-editable-package --package"),
    flags=_UV_RESOLVE_FLAGS | _names(
        "--all-extras --no-dev --only-dev --no-default-groups --all-groups -m --module "
        "--no-editable --exact --no-exact --active --no-active --no-sync --locked --frozen -s "
        "--script --gui-script --all-packages --no-project"),
    no_exec=_UV_HELP, chdir=_names("--directory"))
_UVX = _Wrapper(
    _UV_RESOLVE | _names("--from -c --constraints -b --build-constraints --overrides "
                         "--torch-backend"),
    flags=_UV_RESOLVE_FLAGS | _names("--lfs"), no_exec=_UV_HELP, package=_python_package,
    package_options=_names("--from"), chdir=_names("--directory"))
_CONDA_RUN = _Wrapper(
    _names("-n --name -p --prefix --cwd -r --root-prefix -a --attach -e --env --label "
           "--rc-file --log-level"),
    flags=_names("-v --verbose -q --quiet -y --yes --json --offline --dry-run --no-rc --no-env "
                 "-d --detach --clean-env --dev --debug-wrapper-scripts -s --no-capture-output "
                 "--live-stream --experimental --no-plugins"),
    no_exec=_names("-h --help -V --version"), chdir=_names("--cwd"))
_CONDA = replace(_CONDA_RUN, runs_rest=False, subcommands={"run": _CONDA_RUN})
_PNPM_ELSEWHERE = _names("-C --dir -r --recursive --filter -F --filter-prod")
"""pnpm runs the program in that folder, or in each package's of the workspace."""
_PNPM_DLX = _Wrapper(_names("--package --allow-build --reporter --loglevel"),
                     flags=_names("-c --shell-mode -s --silent"),
                     joins_with=_names("-c --shell-mode"), no_exec=_names("-h --help"),
                     package=_npm_package, package_options=_names("--package"),
                     chdir=_PNPM_ELSEWHERE)
_PIXI_SHARED = _names("--manifest-path --auth-file --concurrent-downloads --concurrent-solves "
                      "--pinning-strategy --pypi-keyring-provider --tls-root-certs "
                      "--config-file --color")
_PIXI_FLAGS = _names("-v --verbose -q --quiet --no-progress --no-config --tls-no-verify "
                     "--run-post-link-scripts --no-symbolic-links --no-hard-links "
                     "--use-environment-activation-cache --frozen --locked --no-install "
                     "--revalidate --no-lockfile-update --force-activate")
_PIXI_RUN = _Wrapper(_PIXI_SHARED | _names("-e --environment -p --platform"),
                     flags=_PIXI_FLAGS | _names("-x --executable --experimental --clean-env "
                                                "--skip-deps --templated -n --dry-run"),
                     no_exec=_names("-h --help"), joins=True)
_MISE_EXEC = _Wrapper(script_options=_names("-c --command"), starts_after=_names("--"),
                      chdir=_names("-C --cd"))
_ENV_EXEC = _Wrapper(flags=_NONE, no_exec=_names("-h --help"))
"""`rbenv exec CMD …` and its kin: no options."""
_BUNDLE_GLOBAL = _names("-r --retry")
_BUNDLE_FLAGS = _names("--no-color -V --verbose")
_BUNDLE_EXEC = _Wrapper(_BUNDLE_GLOBAL | _names("--gemfile"),
                        flags=_BUNDLE_FLAGS | _names("--keep-file-descriptors"),
                        no_exec=_names("-h --help"))
_BUNDLE = _Wrapper(_BUNDLE_GLOBAL, flags=_BUNDLE_FLAGS, no_exec=_names("-h --help"),
                   runs_rest=False, subcommands=dict.fromkeys(("exec", "e", "ex", "exe"),
                                                              _BUNDLE_EXEC))
_YARN_GLOBAL = _names(
    "--cache-folder --cwd --global-folder --https-proxy --link-folder --modules-folder "
    "--mutex --network-concurrency --network-timeout --otp --preferred-cache-folder --proxy "
    "--registry --use-yarnrc --emoji --prod --production --scripts-prepend-node-path")
_BUNX = _Wrapper(_names("-p --package"),
                 flags=_names("--bun --no-install --silent --verbose --force"),
                 no_exec=_names("-h --help"), package=_npm_package,
                 package_options=_names("-p --package"))
_POETRY = _Wrapper(_names("-P --project -C --directory"),
                   flags=_names("-q --quiet --ansi --no-ansi -n --no-interaction --no-plugins "
                                "--no-cache -v --verbose"),
                   no_exec=_names("-h --help -V --version"), chdir=_names("-C --directory"))
_MISE = _Wrapper(_names("-C --cd -E --env -j --jobs"),
                 flags=_names("-q --quiet -v --verbose -y --yes --raw --locked --offline "
                              "--silent"),
                 no_exec=_names("-h --help -V --version"), runs_rest=False,
                 subcommands={"exec": _MISE_EXEC, "x": _MISE_EXEC})
_DOTENV_RUN = _Wrapper(flags=_names("--override --no-override"), no_exec=_names("--help"))

RUNNERS: dict[str, _Wrapper] = {
    "npx": _Wrapper(reader=_npx),
    "npm": _Wrapper(reader=_npm),
    "pnpm": _Wrapper(
        _names("-C --dir --filter -F --filter-prod --reporter --loglevel "
               "--workspace-concurrency --resume-from --test-pattern "
               "--changed-files-ignore-pattern"),
        flags=_names("-r --recursive -w --workspace-root -s --silent --parallel --stream "
                     "--aggregate-output --no-bail --bail --sort --no-sort --reverse "
                     "--report-summary --use-stderr --color --no-color --fail-if-no-match "
                     "--include-workspace-root --if-present -c --shell-mode --offline "
                     "--prefer-offline --ignore-scripts -g --global"),
        no_exec=_names("-h --help -v --version"), runs_rest=False,
        subcommands={"exec": _Wrapper(options=False, joins_with=_names("-c --shell-mode"),
                                      chdir=_PNPM_ELSEWHERE),
                     "dlx": _PNPM_DLX}),
    "pnpx": _PNPM_DLX,
    "yarn": _Wrapper(_YARN_GLOBAL, flags=_YARN1_FLAGS - _names("-v --version -h --help"),
                     no_exec=_names("-v --version -h --help"), runs_rest=False,
                     subcommands={"exec": _Wrapper(reader=_yarn_exec, chdir=_names("--cwd")),
                                  "workspace": _Wrapper(reader=_yarn_workspace),
                                  "dlx": _Wrapper(_names("-p --package"),
                                                  flags=_names("-q --quiet"),
                                                  no_exec=_names("-h --help"),
                                                  package=_npm_package,
                                                  package_options=_names("-p --package"),
                                                  chdir=_names("--cwd"))}),
    "bunx": _BUNX,
    "bun": _Wrapper(_names("--cwd -c --config"), flags=_names("--bun --silent --verbose"),
                    no_exec=_names("-h --help -v --version"), runs_rest=False,
                    subcommands={"x": replace(_BUNX, chdir=_names("--cwd"))}),
    "corepack": _Wrapper(flags=_NONE, no_exec=_names("-h --help -v --version"),
                         subcommands=dict.fromkeys(("enable", "disable", "install", "pack",
                                                    "prepare", "use", "up", "cache",
                                                    "hydrate")),
                         package=_npm_package),
    "volta": _Wrapper(flags=_names("--verbose --quiet"), no_exec=_names("-h --help -v --version"),
                      runs_rest=False, subcommands={"run": _Wrapper(
                          _names("--node --npm --pnpm --yarn --env"),
                          flags=_names("--bundled-npm --no-yarn --verbose --quiet"),
                          no_exec=_names("-h --help"))}),
    "fnm": _Wrapper(_names("--log-level --arch --fnm-dir --node-dist-mirror "
                           "--version-file-strategy"),
                    flags=_names("--corepack-enabled"), no_exec=_names("-h --help -V --version"),
                    runs_rest=False, subcommands={"exec": _Wrapper(
                        _names("--using --log-level --arch --fnm-dir --node-dist-mirror "
                               "--version-file-strategy --resolve-engines"),
                        flags=_names("--using-file --corepack-enabled"),
                        no_exec=_names("-h --help"))}),
    "shx": _Wrapper(flags=_names("--silent --verbose --noglob"), no_exec=_names("--help "
                                                                                "--version")),
    "uv": _Wrapper(_UV_GLOBAL, flags=_UV_GLOBAL_FLAGS, no_exec=_UV_HELP, runs_rest=False,
                   subcommands={"run": _UV_RUN, "tool": _Wrapper(
                       _UV_GLOBAL, flags=_UV_GLOBAL_FLAGS, no_exec=_UV_HELP, runs_rest=False,
                       subcommands={"run": _UVX, "uvx": _UVX})}),
    "uvx": _UVX,
    "pipx": _Wrapper(flags=_NONE, no_exec=_names("-h --help --version"), runs_rest=False,
                     subcommands={"run": _Wrapper(
                         _names("--python-args --with --spec --python --fetch-python "
                                "--index-url -i --pip-args --cooldown --backend"),
                         flags=_names("-q --quiet -v --verbose --skip-maintenance --global "
                                      "--no-cache --refresh --no-path-check --path "
                                      "--pypackages --fetch-missing-python "
                                      "--system-site-packages -e --editable"),
                         no_exec=_names("-h --help"), package=_python_package,
                         package_options=_names("--spec")),
                         "exec": _Wrapper(flags=_names("-q --quiet -v --verbose "
                                                       "--skip-maintenance --global"),
                                          no_exec=_names("-h --help"), operands=1)}),
    "poetry": replace(_POETRY, runs_rest=False, subcommands={"run": _POETRY}),
    "pdm": _Wrapper(_names("-c --config --pep582"),
                    flags=_names("-v --verbose -q --quiet --no-cache -I --ignore-python -n "
                                 "--non-interactive"),
                    no_exec=_names("-h --help -V --version"), runs_rest=False,
                    subcommands={"run": _Wrapper(
                        _names("-p --project -k --skip --venv --env --env-file --working-dir"),
                        flags=_names("-v --verbose -q --quiet -g --global -s --site-packages "
                                     "--recreate"),
                        no_exec=_names("-h --help -l --list -j --json"),
                        chdir=_names("--working-dir"), expands=True)}),
    "hatch": _Wrapper(_names("-e --env -p --project --data-dir --cache-dir --config"),
                      flags=_names("-v --verbose -q --quiet --color --no-color --interactive "
                                   "--no-interactive"),
                      no_exec=_names("--version -h --help"), runs_rest=False,
                      subcommands={"run": _Wrapper(reader=_hatch_run), "env": _Wrapper(
                          flags=_NONE, no_exec=_names("-h --help"), runs_rest=False,
                          subcommands={"run": _Wrapper(
                              _names("-e --env -i --include -x --exclude -f --filter"),
                              flags=_names("--force-continue --ignore-compat"),
                              no_exec=_names("-h --help"))})}),
    "rye": _Wrapper(flags=_NONE, no_exec=_names("-h --help -V --version"), runs_rest=False,
                    subcommands={"run": _Wrapper(_names("--pyproject"),
                                                 flags=_names("-v --verbose -q --quiet"),
                                                 no_exec=_names("-l --list -h --help"))}),
    "pipenv": _Wrapper(_names("--pypi-mirror --python"),
                       flags=_names("-v --verbose -q --quiet --clear --site-packages "
                                    "--no-site-packages --bare"),
                       no_exec=_names("-h --help --version --where --venv --py --envs --rm "
                                      "--man --support"),
                       runs_rest=False, subcommands={"run": _Wrapper(
                           flags=_names("--system"), no_exec=_names("-h --help"),
                           assignments=True, expands=True)}),
    "conda": _CONDA,
    "mamba": _CONDA,
    "micromamba": _CONDA,
    "pixi": _Wrapper(_names("--color"), flags=_names("-v --verbose -q --quiet --no-progress"),
                     no_exec=_names("-h --help -V --version"), runs_rest=False,
                     subcommands={"run": _PIXI_RUN, "r": _PIXI_RUN, "exec": _Wrapper(
                         _PIXI_SHARED | _names("-s --spec -w --with -c --channel -p "
                                               "--platform --list"),
                         flags=_PIXI_FLAGS | _names("--force-reinstall"),
                         no_exec=_names("-h --help"))}),
    "nix": _Wrapper(starts_after=_names("-c --command")),
    "direnv": _Wrapper(flags=_NONE, no_exec=_names("-h --help"), runs_rest=False,
                       subcommands={"exec": _Wrapper(flags=_NONE, operands=1)}),
    "dotenv": _Wrapper(_names("-f --file -q --quote -e --export -v -c"),
                       flags=_names("--debug --no-expand"),
                       no_exec=_names("-p -h --help --version"),
                       subcommands={"run": _DOTENV_RUN, "list": None, "get": None, "set": None,
                                    "unset": None}),
    "dotenvx": _Wrapper(flags=_names("-q --quiet -v --verbose -d --debug"),
                        no_exec=_names("-h --help -V --version"), runs_rest=False,
                        subcommands={"run": _Wrapper(
                            _names("-f --env-file -fv --env-vault-file -e --env --convention "
                                   "--ops-off --log-level"),
                            flags=_names("-o --overload --strict -q --quiet -v --verbose -d "
                                         "--debug"),
                            no_exec=_names("-h --help"))}),
    "env-cmd": _Wrapper(_names("-f --file -r --rc-file -e --environments"),
                        flags=_names("--fallback --no-override --silent --use-shell "
                                     "--expand-envs --recursive --verbose"),
                        no_exec=_names("-h --help -v --version"),
                        joins_with=_names("--use-shell"), expands_with=_names("--expand-envs")),
    "cross-env": _Wrapper(assignments=True, flags=_NONE),
    "cross-env-shell": _Wrapper(assignments=True, flags=_NONE, joins=True),
    "op": _Wrapper(_names("--account --config --encoding --format --session"),
                   flags=_names("--debug --cache --no-color --iso-timestamps"),
                   no_exec=_names("-h --help -v --version"), runs_rest=False,
                   subcommands={"run": _Wrapper(_names("--env-file --environment"),
                                                flags=_names("--no-masking"),
                                                no_exec=_names("-h --help"))}),
    "aws-vault": _Wrapper(flags=_names("--debug"), no_exec=_names("-h --help --version"),
                          runs_rest=False, subcommands={"exec": _Wrapper(
                              _names("-d --duration -t --mfa-token --region --prompt "
                                     "--backend"),
                              flags=_names("-n --no-session -j --json --server --ec2-server "
                                           "--ecs-server --lazy --stdout"),
                              no_exec=_names("-h --help"), operands=1)}),
    "mise": _MISE,
    "rtx": _MISE,
    "asdf": _Wrapper(flags=_NONE, no_exec=_names("-h --help --version"), runs_rest=False,
                     subcommands={"exec": _ENV_EXEC}),
    **dict.fromkeys(("rbenv", "pyenv", "nodenv", "goenv", "jenv", "plenv", "phpenv", "luaenv"),
                    _Wrapper(flags=_NONE, no_exec=_names("-h --help --version"),
                             runs_rest=False, subcommands={"exec": _ENV_EXEC})),
    "bundle": _BUNDLE,
    "bundler": _BUNDLE,
    "rustup": _Wrapper(flags=_names("-v --verbose -q --quiet"),
                       no_exec=_names("-h --help -V --version"), runs_rest=False,
                       subcommands={"run": _Wrapper(flags=_names("--install"), operands=1,
                                                    no_exec=_names("-h --help"))}),
    "envdir": _Wrapper(operands=1),
}
"""Package runners and environment managers: programs that run a program named on their line
in an environment they make (`npx tsc`, `uv run pytest`, `conda run -n E python`, `bundle
exec rake`), by each one's grammar. Unlike a wrapper's, their own words are judged too (`npx`
needs the network; what `npm` installs). What they run from a file or a name only the
project knows is not read: `npm run`, `yarn SCRIPT`, `pdm run` of a script the project
defines (the word is judged as the program of that name), `cargo run`, `go run`, `dotnet
run` and `nix run` (the project's or package's own program), `make`."""


_OPTION_SCRIPTS: dict[str, frozenset[str]] = {
    "tar": _opts("--to-command", "-I", "--use-compress-program", "-F", "--info-script",
                 "--new-volume-script", "--checkpoint-action"),
    "rsync": _opts("-e", "--rsh", "--rsync-path"),
    "zip": _opts("-TT", "--unzip-command"),
    "nix-shell": _opts("--run", "--command"),
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
        return _wrapped(name, WRAPPERS[name], words, feeder)
    if name in RUNNERS:
        return _wrapped(name, RUNNERS[name], words, feeder)
    module = python_module(words) if name in PYTHONS else None
    if module is not None and module[0].text in RUNNERS:  # `python -m uv run …` is `uv run …`
        return [Exec((module[0], *module[1]), f"{name} -m")]
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
