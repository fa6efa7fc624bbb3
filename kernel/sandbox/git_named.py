"""What a repository's git configuration names that git runs or reads as configuration.

A git directory's `config` is read-only in the sandbox (kernel.pathrules.GIT_DANGEROUS), but
it may name files and folders elsewhere in the workspace that git then runs or reads: the
hooks folder `core.hooksPath` names (husky's `.husky/_`, a `.githooks/`), a file
`include.path` or `includeIf.<condition>.path` pulls in as more configuration, the template
folder `init.templateDir` copies hooks from, and the programs a command-valued key runs
(`core.fsmonitor = .git-fsmonitor`, `alias.x = !./tools/x.sh`, `diff.<driver>.textconv =
python3 tools/conv.py`). Each such path inside the workspace is protected as if it had a
protected name: bound read-only for commands and servers when it exists, undone when one
makes it (kernel.sandbox.revert), and asked about for the file tools (kernel.sandbox.guard).

Read are the configs git reads for a repository of the workspace: its git directory's
`config` and `config.worktree` (for a linked worktree, through its `.git` file's
`gitdir:` and that directory's `commondir`), the user's and the system's
(`~/.gitconfig`, `$XDG_CONFIG_HOME/git/config`, `/etc/gitconfig`: a relative
`core.hooksPath` there applies to every repository), and every file they include, to git's
depth. Conditions of `includeIf` are taken as true (what might be read is protected).

Where git takes a relative path from (measured with git 2.39, a script planted in every
folder and git run from a subfolder; GIT_RUNS in tests/sandbox/test_git_named_table.py runs
the cases again against the git installed):
- an included file: from the including file's folder;
- hooks and what a repository's commands run (editor, sequence editor, fsmonitor, filters,
  diff drivers, credential helpers, `!` aliases, `git log`'s pager): from the worktree's
  top, git having moved there with `GIT_PREFIX` set; the worktree is `core.worktree`'s
  folder when set (read from the repository's `config` and `config.worktree` only, not
  from an include or the user's config, relative to the git directory; git runs the hooks
  there even from the folder holding `.git`); a bare repository's from its git directory;
- from the git directory: `git push` into a non-bare repository runs its receive hooks
  there (a relative `core.hooksPath` included);
- from whichever folder the user is in, git staying there: the pager of a command that sets
  up no repository (`git -p version`, `git help`, `git -p <external command>`: the
  repository's `core.pager` still applies); everything when run inside a git directory
  (`.git/`, a bare repository's `refs/`), when GIT_DIR is set without a worktree, and an
  alias when the user is outside `core.worktree`'s folder; the user's configs outside any
  repository (an alias, `git config --global -e`'s editor, `git init`'s template folder).
So the user's folder decides for some keys in some runs, and a future git or a flag decides
for others: rather than judge key by key, every relative path is taken from each folder
git runs from that can be listed (the git directory, the worktree's top, the folders of a
repository around the workspace down to it) and, the user's folder being unknown, from
EVERY folder at any depth below the folders the user may run git in: where its `.git` is
and its worktree (the whole workspace for the user's and the system's configs).
`core.pager = ./p.sh` names each `p.sh` below them, `../p.sh` those and the ones `..`
reaches above. The cost: the same name elsewhere in the repository is read-only for
commands too (a sub-package's own `tools/t.sh`). The workspace index notes every entry
called by the first name of such a path (kernel.sandbox.workspace_index `follow`); where the
path leads from it, links followed as the kernel follows them, is marked (`met`); the file
tools match it at any depth (`at_any_depth`).

A command-valued key is read as git's shell reads it: its words with a `/`, an
interpreter's script with or without one (`sh p.sh`, `python3 conv.py`, `. ./env.sh`), what
`sh -c` code names, what `git -c key=value` names as that key would (in a shell command or
a git alias: `alias.y = -c core.hooksPath=h commit`); `$HOME/x` and `~user/x` as that home;
`$GIT_DIR/x` from the git directory and from `/` (git leaves it unset for some commands);
`$PWD`, `$GIT_PREFIX`, `$GIT_WORK_TREE` and a command substitution (`$(git rev-parse
--show-toplevel)/x.sh`) as the folder git runs from. A path ending in `/`, `.` or `..`
names a folder, which no program is (`cd sub/`): left out.

Out of reach, and why:
- folders inside a git directory below its top, and inside a bare repository: git run
  there stays there, but the index does not walk them (the objects are most of a
  repository) and git is not run from `.git/refs/heads`;
- a repository git is pointed at from elsewhere (GIT_DIR, GIT_WORK_TREE, `--git-dir`, `-C`
  from a folder outside it; a git directory outside the workspace that no `.git` in it
  leads to, such as a dotfiles repository whose `core.worktree` is the home), and a
  relative path of the user's config used from a folder outside the workspace that leads
  into it: nothing in the workspace says where these run from;
- another variable (`$TOOLS/x`), a substitution that prints another folder, a relative
  folder in PATH: the user's environment;
- what a program finds by its own rules from where it runs: `python3 -m mod` (packages,
  `__pycache__`), `make`'s Makefile, an option's file without a `/` (`vim -u vimrc`), and
  what a named script itself runs or imports (`tools/conv.py` importing `tools/helper.py`):
  as if the user ran that program there.

`parse` follows git's config.c: sections `[name]`, `[name "sub"]` and `[name.sub]`, entries on
the header's line too, keys without a value, quotes, the escapes `\\n \\t \\b \\\\ \\"`, a
backslash before a newline continuing the value, `#` and `;` comments outside quotes. A line
git would refuse makes git refuse the whole file (it then runs nothing it names); here the
line is skipped and the rest read, so a reading that differs from git's only protects more.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from kernel.pathrules import ANY_DEPTH, NAMED_PREFIX, GitNamed, git_key_kind
from kernel.sandbox.marks import EntryKind, Mark

Named = GitNamed
"""What a git config value names (kernel.pathrules, with the one table of keys)."""

BOOLEANS = frozenset({"true", "false", "yes", "no", "on", "off", "1", "0", ""})
"""`core.fsmonitor = true` is git's own monitor, no program."""
MAX_BYTES = 1 << 20
MAX_DEPTH = 10
"""git's own include depth."""

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]*")
_SECTION = re.compile(r"[A-Za-z0-9.-]+")
_ESCAPES = {"n": "\n", "t": "\t", "b": "\b", "\\": "\\", '"': '"'}


@dataclass(frozen=True)
class Entry:
    key: str
    """`section.name` or `section.subsection.name`: section and name lower case, the
    subsection as written (of `[section "Sub"]`; lower case for `[section.Sub]`)."""
    value: str | None
    """None for a key without `=` (a boolean true)."""


def parse(text: str) -> list[Entry]:
    """The entries of a git config file, in order (see the module's notes)."""
    entries: list[Entry] = []
    section: str | None = None
    lines = text.removeprefix("\ufeff").replace("\r\n", "\n").split("\n")
    at = 0
    while at < len(lines):
        line, at = lines[at], at + 1
        rest = line.lstrip(" \t")
        while rest.startswith("["):
            header = _header(rest)
            if header is None:
                section, rest = None, ""  # git refuses the file; what follows is skipped
                break
            section, rest = header[0], header[1].lstrip(" \t")
        if not rest or rest[0] in "#;" or section is None:
            continue
        match = _NAME.match(rest)
        if match is None:
            continue
        key = f"{section}.{match.group(0).lower()}"
        after = rest[match.end():].lstrip(" \t")
        if not after or after[0] in "#;":
            entries.append(Entry(key, None))
            continue
        if after[0] != "=":
            continue
        value, at = _value(after[1:], lines, at)
        if value is not None:
            entries.append(Entry(key, value))
    return entries


def _header(text: str) -> tuple[str, str] | None:
    """(`section` or `section.sub`, what follows `]` on the line) of `[...]`, else None."""
    name = _SECTION.match(text, 1)
    if name is None:
        return None
    end = name.end()
    if text[end:end + 1] == "]":
        section, _, sub = name.group(0).partition(".")
        full = f"{section.lower()}.{sub.lower()}" if sub else section.lower()
        return full, text[end + 1:]
    if "." in name.group(0) or text[end:end + 1] not in (" ", "\t"):
        return None
    at = end
    while text[at:at + 1] in (" ", "\t"):
        at += 1
    if text[at:at + 1] != '"':
        return None
    chars: list[str] = []
    at += 1
    while at < len(text) and text[at] != '"':
        if text[at] == "\\" and at + 1 < len(text):
            at += 1
        chars.append(text[at])
        at += 1
    if text[at + 1:at + 2] != "]":
        return None
    return f"{name.group(0).lower()}.{''.join(chars)}", text[at + 2:]


def _value(text: str, lines: Sequence[str], at: int) -> tuple[str | None, int]:
    """The value starting at `text` (after `=`), reading continued lines from `lines[at]`;
    (the value or None when git would refuse it, the next line's index)."""
    out: list[str] = []
    spaces = ""
    quoted = False
    started = False
    index = 0
    while True:
        if index >= len(text):
            if quoted:
                return None, at
            return "".join(out), at
        ch = text[index]
        index += 1
        if ch == "\\":
            if index >= len(text):  # a backslash before the newline: the value goes on
                if at >= len(lines):
                    return None, at
                text, at, index = lines[at], at + 1, 0
                continue
            escaped = _ESCAPES.get(text[index])
            if escaped is None:
                return None, at
            out.append(spaces + escaped)
            spaces, started, index = "", True, index + 1
            continue
        if not quoted and ch in " \t":
            if started:
                spaces += ch
            continue
        if not quoted and ch in "#;":
            return "".join(out), at
        if ch == '"':
            quoted = not quoted
            out.append(spaces)
            spaces, started = "", True
            continue
        out.append(spaces + ch)
        spaces, started = "", True


@functools.lru_cache(maxsize=4096)
def named(entry: Entry) -> tuple[tuple[Named, str], ...]:
    """What `entry` names: (kind, the path as written, `~` not yet expanded; a program's
    path may start with `$GIT_DIR/`, see `_spelled`)."""
    value = entry.value
    if not value:
        return ()
    key = entry.key.lower()
    kind = git_key_kind(key)
    if kind in ("folder", "config"):
        return ((kind, value),)
    if kind != "program" or (key == "core.fsmonitor" and value.lower() in BOOLEANS):
        return ()
    if key.startswith("alias.") and not value.startswith("!"):  # git's own arguments
        found = _command_words(["git", *_tokens(value)])
    else:
        found = _words(value.removeprefix("!"))
    return tuple(dict.fromkeys((kind, path) for kind, path in found
                               if kind != "program" or _a_file(path)))


def _a_file(path: str) -> bool:
    """`path` may name a file (`./`, `sub/`, `..` name folders, which no program is)."""
    return not path.endswith("/") and path.rsplit("/", 1)[-1] not in (".", "..")


SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "yash", "csh", "tcsh",
                    "fish"})
INTERPRETER = re.compile(r"python[0-9.]*|pypy[0-9.]*|perl[0-9.]*|ruby[0-9.]*|nodejs|node"
                         r"|php[0-9.]*|lua[0-9.]*|luajit|tclsh[0-9.]*|Rscript|\.|source")
"""Programs whose first operand is a script they read from git's current folder, `/` or not
(`sh p.sh`, `python3 conv.py`, `. ./env.sh`); shells are these too."""
INLINE = frozenset({"-e", "-E", "-m", "-p", "--eval", "--print"})
"""An interpreter's options after which no script operand follows (code or a module given
inline); a shell's are `-c` (its code is read as commands) and `-s` (stdin)."""
VALUED = frozenset({"-W", "-X", "-I", "-l", "-r", "--require"})
"""An interpreter's options that take the next word as their value; a shell's are `-o`,
`+o`, `-O`, `+O`."""
SHELL_VALUED = frozenset({"-o", "+o", "-O", "+O"})
PREFIXES = frozenset({"exec", "command", "builtin", "env", "nohup", "nice", "time", "!", "{",
                      "}", "if", "then", "else", "elif", "while", "until", "do"})
"""Words before a command's program (`exec sh p.sh`, `f() { ./x; }`)."""
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.DOTALL)
_SUBSTITUTION = re.compile(r"\$\(([^()]*)\)|`([^`]*)`")
_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_CURRENT_FOLDER = frozenset({"PWD", "GIT_PREFIX", "GIT_WORK_TREE"})


def _words(command: str) -> Iterator[tuple[Named, str]]:
    """What a shell command names (`_command_words`), and the commands its substitutions
    run; a substitution (`$(git rev-parse --show-toplevel)/x.sh`) stands for the folder git
    runs the command from (`$PWD`)."""
    inner: list[str] = []
    while (match := _SUBSTITUTION.search(command)) is not None:
        inner.append(match.group(1) if match.group(1) is not None else match.group(2))
        command = f"{command[:match.start()]}$PWD{command[match.end():]}"
    for text in (command, *inner):
        yield from _command_words(_tokens(text))


def _tokens(text: str) -> list[str]:
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote: git's shell would refuse it; words as they are
        return text.split()


def _command_words(tokens: Sequence[str]) -> Iterator[tuple[Named, str]]:
    """What the tokens of shell commands name (`;`, `&&`, `|`, `(` start a new command):
    each word with a `/` that is not an option (the value of `NAME=value` and
    `--option=value` words) and an interpreter's script, `/` or not, as programs (spelled
    by `_spelled`); what a shell's `-c` code names; what `git -c key=value` names as that
    key would."""
    start, script, shell, git, after = True, False, False, False, ""
    for token in tokens:
        word = ""
        if after:
            what, after = after, ""
            if what == "code":
                yield from _words(token)
                continue
            if what == "config":
                yield from _set(token)
                continue
            word = token
        elif token and all(ch in "();<>|&" for ch in token):
            if "<" in token or ">" in token:
                after = "file"
            else:
                start, script, git = True, False, False
            continue
        elif start:
            if token in PREFIXES or token.startswith("-") or _ASSIGNMENT.fullmatch(token):
                word = token.partition("=")[2]
            else:
                program = token.rsplit("/", 1)[-1]
                start, shell, git = False, program in SHELLS, program == "git"
                script = shell or INTERPRETER.fullmatch(program) is not None
                word = token
        elif script and token.startswith(("-", "+")):
            if shell and token == "-c":
                after, script = "code", False
            elif token in (("-s",) if shell else INLINE):
                script = False
            elif token in (SHELL_VALUED if shell else VALUED):
                after = "value"
            continue
        elif script:
            script = False
            spelled = _spelled(token)
            if spelled:
                yield "program", spelled
            continue
        elif git and token == "-c":
            after = "config"
            continue
        else:
            word = token.partition("=")[2] if "=" in token and not token.startswith(
                ("/", ".")) else token
        if ("/" in word or word.startswith("$")) and not word.startswith("-"):
            spelled = _spelled(word)
            if spelled:
                yield "program", spelled


def _set(setting: str) -> Iterator[tuple[Named, str]]:
    """What `git -c section.name=value` names (a relative include git refuses there)."""
    name, equals, value = setting.partition("=")
    section, _, rest = name.partition(".")
    subsection, dot, key = rest.rpartition(".")
    if not equals or not rest:
        return
    full = f"{section.lower()}.{subsection}{dot}{key.lower()}"
    for kind, written in named(Entry(full, value)):
        if kind != "config" or written.startswith(("/", "~")):
            yield kind, written


def _spelled(word: str) -> str | None:
    """`word` with the variables git's shell would expand to a known place written as
    `found_in` takes them: `$HOME/x` as `~/x`; `$PWD/x`, `${GIT_PREFIX}x`, `$GIT_WORK_TREE/x`
    as `./x` (the folder git runs the command from, or a folder below it); `$GIT_DIR/x` kept.
    None when another variable decides where it leads (the user's environment)."""
    if "$" not in word:
        return word
    match = _VARIABLE.match(word)
    rest = "" if match is None else word[match.end():]
    if match is None or "$" in rest:
        return None
    name = match.group(1) or match.group(2)
    if name in _CURRENT_FOLDER:
        return "./" + rest.lstrip("/")
    if name == "HOME" and rest.startswith("/"):
        return "~" + rest
    if name == "GIT_DIR" and rest.startswith("/"):
        return "$GIT_DIR/" + rest.lstrip("/")
    return None


Base = Literal["absolute", "cwd", "git-dir"]


@dataclass(frozen=True)
class Found:
    path: str
    """Where git takes it from (`~` expanded), by `base`: absolute (an included file, resolved
    from its config's folder); relative, as written (`./x`, `../x`, `a/../b`), to the folder
    git runs the command or looks for the hooks from; relative to the git directory
    (`$GIT_DIR/x`)."""
    kind: Named
    key: str
    config: str
    """The config file (absolute) the key is in."""
    base: Base = "absolute"


def _expand(path: str, home: str) -> str:
    """`~` and `~/x` from `home`, `~user/x` from that user's home, as git and the shell take
    them."""
    if path == "~" or path.startswith("~/"):
        return home + path[1:]
    return os.path.expanduser(path) if path.startswith("~") else path


def _real(path: str) -> str:
    """`path` as the kernel resolves it (links on the way followed, a `..` after a link taken
    from where it leads); its last entry is not followed (a link is named as the link)."""
    head, tail = os.path.split(path)
    if tail in ("", ".", ".."):
        return os.path.realpath(path)
    return os.path.join(os.path.realpath(head), tail)


_READ: dict[str, tuple[tuple[int, int, int, int], str | None, tuple[Entry, ...]]] = {}
"""path → (its identity and change time, its text, its entries) of the configs read: every
command and file-tool write looks, and the files seldom change."""


def _read(path: str) -> tuple[str | None, tuple[Entry, ...]]:
    try:
        info = os.stat(path)
    except OSError:
        return None, ()
    identity = (info.st_dev, info.st_ino, info.st_mtime_ns, info.st_size)
    known = _READ.get(path)
    if known is not None and known[0] == identity:
        return known[1], known[2]
    text: str | None = None
    if info.st_size <= MAX_BYTES:
        try:
            with open(path, "rb") as file:
                text = file.read(MAX_BYTES + 1).decode("utf-8", "replace")
        except OSError:
            text = None
    entries = tuple(parse(text)) if text is not None else ()
    if len(_READ) >= 256:
        _READ.clear()
    _READ[path] = (identity, text, entries)
    return text, entries


def read_config(path: str) -> str | None:
    """A config file's text (None when it cannot be read: missing, a folder, too big)."""
    return _read(path)[0]


def config_entries(path: str) -> tuple[Entry, ...]:
    """The entries of the config file `path` (none when it cannot be read)."""
    return _read(path)[1]


Entries = Callable[[str], Sequence[Entry]]
"""A config file's path → its entries (`config_entries`; tests give texts)."""


def found_in(configs: Sequence[str], home: str, entries: Entries = config_entries
             ) -> list[Found]:
    """Every path the config files `configs` (and what they include, to git's depth) name,
    as `Found.base` says."""
    out: list[Found] = []
    seen: set[str] = set()

    def visit(config: str, depth: int) -> None:
        if config in seen or depth > MAX_DEPTH:
            return
        seen.add(config)
        for entry in entries(config):
            for kind, written in named(entry):
                if kind == "config":
                    target = _real(os.path.join(os.path.dirname(config),
                                                _expand(written, home)))
                    out.append(Found(target, kind, entry.key, config))
                    visit(target, depth + 1)
                elif written.startswith("$GIT_DIR/"):
                    out.append(Found(written.removeprefix("$GIT_DIR/"), kind, entry.key,
                                     config, "git-dir"))
                else:
                    path = _expand(written, home)
                    out.append(Found(path, kind, entry.key, config,
                                     "absolute" if os.path.isabs(path) else "cwd"))

    for config in configs:
        visit(config, 0)
    return out


def user_configs(environ: Mapping[str, str], home: str) -> tuple[str, ...]:
    """The user's and the system's git configs, as git finds them."""
    xdg = environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    found = [environ.get("GIT_CONFIG_GLOBAL") or os.path.join(home, ".gitconfig"),
             os.path.join(xdg, "git", "config"),
             environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"]
    return tuple(dict.fromkeys(found))


def repository_configs(git_dir: str) -> tuple[str, ...]:
    """The configs of the repository whose git directory is `git_dir`: the common
    directory's `config` (a linked worktree's `commondir`), its own `config.worktree`."""
    common = git_dir
    pointer = read_config(os.path.join(git_dir, "commondir"))
    if pointer is not None and pointer.strip():
        common = os.path.normpath(os.path.join(git_dir, pointer.strip()))
    return tuple(dict.fromkeys((os.path.join(common, "config"),
                                os.path.join(common, "config.worktree"),
                                os.path.join(git_dir, "config.worktree"))))


def git_dir_of(dot_git_file: str) -> str | None:
    """The git directory a `.git` file (`gitdir: PATH`) points at, absolute; else None."""
    text = read_config(dot_git_file)
    if text is None or not text.startswith("gitdir:"):
        return None
    pointed = text.removeprefix("gitdir:").strip()
    return os.path.normpath(os.path.join(os.path.dirname(dot_git_file), pointed))


HOOK_NAMES = (
    "applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
    "prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout",
    "post-merge", "pre-push", "pre-receive", "update", "proc-receive", "post-receive",
    "post-update", "reference-transaction", "push-to-checkout", "pre-auto-gc", "post-rewrite",
    "sendemail-validate", "fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist",
    "p4-post-changelist", "p4-pre-submit", "post-index-change",
)
"""githooks(5): the names git runs a hook by."""


@dataclass(frozen=True)
class Repository:
    git_dir: str
    """Absolute and real; '' for git run outside any repository (the user's configs)."""
    tops: tuple[str, ...]
    """The folders git runs hooks and commands from: the worktree's top (`core.worktree`'s
    folder when set), a bare repository's git directory."""
    regions: tuple[str, ...]
    """The folders at any depth below which the user may run git for it, where git may stay
    (see the module's notes): the folder its `.git` is in, the worktree."""
    configs: tuple[str, ...] = ()
    """Its own configs (`repository_configs`)."""


def repository(git_dir: str, found_at: str | None, entries: Entries = config_entries
               ) -> Repository:
    """The repository whose git directory is `git_dir`, found through the `.git` in the
    folder `found_at` (None: a bare repository). Its worktree is where `core.worktree` in
    its own configs says (git reads it from no include and no user's config), from the git
    directory."""
    configs = repository_configs(git_dir)
    values = [entry.value for config in configs for entry in entries(config)
              if entry.key == "core.worktree" and entry.value]
    trees = tuple(dict.fromkeys(os.path.realpath(os.path.join(git_dir, v)) for v in values))
    if found_at is None:
        return Repository(git_dir, trees or (git_dir,), trees, configs)
    return Repository(git_dir, trees or (found_at,), tuple(dict.fromkeys((found_at, *trees))),
                      configs)


def _repositories(root: str, marks: Mapping[str, Mark], entries: Entries
                  ) -> list[Repository]:
    """Each repository of the workspace `root` (a real path), and the one it lies in, if
    any."""
    found: list[Repository] = []
    for mark in marks.values():
        path = os.path.join(root, mark.path)
        if mark.kind == "git-dir":
            found.append(repository(path, os.path.dirname(path) if mark.rule == ".git"
                                    else None, entries))
        elif mark.rule == ".git" and mark.entry == "file":
            pointed = git_dir_of(path)
            if pointed is not None:
                found.append(repository(os.path.realpath(pointed), os.path.dirname(path),
                                        entries))
        elif mark.rule == ".git" and mark.entry == "link" and os.path.isdir(path):
            found.append(repository(os.path.realpath(path), os.path.dirname(path),
                                    entries))
    above = os.path.dirname(root)
    while above != os.path.dirname(above):
        dot_git = os.path.join(above, ".git")
        if os.path.isdir(dot_git):
            found.append(repository(dot_git, above, entries))
            break
        if os.path.isfile(dot_git):
            pointed = git_dir_of(dot_git)
            if pointed is not None:
                found.append(repository(os.path.realpath(pointed), above, entries))
            break
        above = os.path.dirname(above)
    return found


def peel(path: str) -> tuple[int, str]:
    """(the `..` `path` starts with, the rest), `.` and empty names left out: from a folder,
    `path` leads to the rest from that many folders up."""
    names = [name for name in path.split("/") if name not in ("", ".")]
    ups = 0
    while ups < len(names) and names[ups] == "..":
        ups += 1
    return ups, "/".join(names[ups:])


def within(region: str, root: str) -> tuple[tuple[str, ...], str | None]:
    """Where the folders below `region` meet the workspace `root` (both absolute): the
    folders from `region` down to the one above `root` when `root` lies below it, and the
    folder (relative to `root`, '' for all of it) all folders below which are `region`'s;
    None when the two do not meet."""
    if region == root or region.startswith(root + "/"):
        return (), region[len(root) + 1:]
    if not root.startswith(region.rstrip("/") + "/"):
        return (), None
    chain = [os.path.dirname(root)]
    while chain[-1] != region:
        chain.append(os.path.dirname(chain[-1]))
    return tuple(reversed(chain)), ""


def places(found: Found, repo: Repository, root: str
           ) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """Where `found` (of `repo`'s configs) may lead inside the workspace `root`: the paths
    (absolute, to resolve) it leads to from each folder git may run from that can be listed,
    and (a folder of the workspace, a relative path) for the path at every folder at any
    depth below that folder: git runs from whichever of them the user is in."""
    if found.base == "absolute":
        return (found.path,), ()
    if found.base == "git-dir":  # $GIT_DIR/x, or /x where git leaves GIT_DIR unset
        return tuple(os.path.join(d, found.path) for d in (repo.git_dir, "/") if d), ()
    exact = [os.path.join(base, found.path) for base in (repo.git_dir, *repo.tops) if base]
    anywhere: list[tuple[str, str]] = []
    for spelled in dict.fromkeys((found.path, os.path.normpath(found.path))):
        ups, rest = peel(spelled)
        for region in repo.regions:
            chain, inside = within(region, root)
            exact += [os.path.join(folder, spelled) for folder in chain]
            if inside is None:
                continue
            start = os.path.join(root, inside) if inside else root
            exact += [os.path.join(start, *[".."] * up, rest) for up in range(1, ups + 1)]
            if rest:
                anywhere.append((inside, rest))
            elif found.kind == "folder":
                anywhere += [(inside, hook) for hook in HOOK_NAMES]
    return tuple(dict.fromkeys(exact)), tuple(dict.fromkeys(anywhere))


def placed(root: str, real: str, kind: Named, git_dirs: Sequence[str]) -> tuple[str, ...]:
    """The paths of the workspace `root` (relative) that protect the real path `real` named
    as `kind`: itself, when inside the workspace; a folder of hooks that is the workspace, a
    git directory or holds one, by its hooks' names (the rest of it is the user's work)."""
    wide = kind == "folder" and (real == root or any(
        g == real or g.startswith(real + "/") for g in git_dirs))
    if wide and real == root:
        return HOOK_NAMES
    if not real.startswith(root + "/"):
        return ()
    rel = real[len(root) + 1:]
    return tuple(f"{rel}/{hook}" for hook in HOOK_NAMES) if wide else (rel,)


@dataclass(frozen=True)
class Anywhere:
    folder: str
    """Relative to the workspace; '' for all of it."""
    path: str
    """Relative, without `.`; the workspace index notes where it meets its first name."""
    kind: Named
    rule: str


@dataclass(frozen=True)
class NamedPaths:
    """What the git configs of a workspace's repositories name inside it."""

    exact: dict[str, str]
    """Relative to the workspace: each path named → the rule (`core.hookspath in
    .git/config`)."""
    anywhere: tuple[Anywhere, ...]
    """Each relative path named at every folder below a folder."""
    names: frozenset[str]
    """The first names of `anywhere`'s paths: the entries so named are what the index notes
    (kernel.sandbox.workspace_index.WorkspaceIndex.follow)."""
    git_dirs: tuple[str, ...]
    """The git directories of the workspace (absolute)."""


def _shown(config: str, root: str, home: str) -> str:
    if config.startswith(root + "/"):
        return config[len(root) + 1:]
    return "~" + config[len(home):] if config.startswith(home + "/") else config


def named_paths(root: str, marks: Mapping[str, Mark], *, home: str,
                environ: Mapping[str, str]) -> NamedPaths:
    """What the git configs of the repositories of the workspace `root` (a real path; its
    index's `marks`) and the user's configs name inside it (`found_in`, `places`)."""
    git_dirs = tuple(os.path.join(root, m.path) for m in marks.values() if m.kind == "git-dir")
    entries = functools.cache(config_entries)  # each file looked at once
    users = found_in(user_configs(environ, home), home, entries)
    sources = [(repo, [*found_in(repo.configs, home, entries), *users])
               for repo in _repositories(root, marks, entries)]
    sources.append((Repository("", (), (root,)), users))  # git run outside a repository
    exact: dict[str, str] = {}
    anywhere: dict[tuple[str, str], Anywhere] = {}
    for repo, founds in sources:
        for found in founds:
            rule = f"{found.key} in {_shown(found.config, root, home)}"
            paths, depths = places(found, repo, root)
            for path in paths:
                for rel in placed(root, _real(path), found.kind, git_dirs):
                    exact.setdefault(rel, rule)
            for folder, path in depths:
                anywhere.setdefault((folder, path), Anywhere(folder, path, found.kind, rule))
    return NamedPaths(exact, tuple(anywhere.values()),
                      frozenset(a.path.split("/", 1)[0] for a in anywhere.values()), git_dirs)


def met(root: str, named: NamedPaths, found: Mapping[str, EntryKind]) -> dict[str, str]:
    """Relative to the workspace `root`: where each of `named.anywhere` leads from each folder
    the workspace index met its first name in (`found`: path → kind) → its rule."""
    folders: dict[str, list[str]] = {}
    for path in found:
        folder, _, name = path.rpartition("/")
        folders.setdefault(name, []).append(folder)
    out: dict[str, str] = {}
    for where in named.anywhere:
        for folder in folders.get(where.path.split("/", 1)[0], ()):
            if where.folder and not (folder + "/").startswith(where.folder + "/"):
                continue
            real = _real(os.path.join(root, folder, where.path))
            for rel in placed(root, real, where.kind, named.git_dirs):
                out.setdefault(rel, where.rule)
    return out


def protected_paths(root: str, named: NamedPaths, found: Mapping[str, EntryKind]
                    ) -> dict[Path, str]:
    """For the file tools' path policy: each path `named` names, resolved, and each of
    `named.anywhere` as a key with `**` (`at_any_depth`) → `git-named:<rule>`; whether it
    exists yet or not."""
    out = {Path(os.path.realpath(os.path.join(root, rel))): f"{NAMED_PREFIX}{rule}"
           for rel, rule in {**met(root, named, found), **named.exact}.items()}
    for where in named.anywhere:
        if ".." not in where.path.split("/"):
            out.setdefault(Path(root, where.folder, ANY_DEPTH, where.path),
                           f"{NAMED_PREFIX}{where.rule}")
    return out


def with_named(root: str, marks: Mapping[str, Mark], named: NamedPaths,
               found: Mapping[str, EntryKind]) -> dict[str, Mark]:
    """`marks` and, marked as protected, each path `named` names that exists (`exact`, and
    `anywhere` where the index met its first name: `found`); what does not exist and a
    command makes is new, and undone after it. An entry marked already keeps its mark."""
    added: dict[str, Mark] = {}
    for rel, rule in {**met(root, named, found), **named.exact}.items():
        path = os.path.join(root, rel)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        entry: EntryKind = ("link" if stat.S_ISLNK(info.st_mode) else
                            "dir" if stat.S_ISDIR(info.st_mode) else
                            "file" if stat.S_ISREG(info.st_mode) else "other")
        try:
            led = os.readlink(path) if entry == "link" else ""
        except OSError:
            continue  # gone since the lstat: the next look sees what is there
        added[rel] = Mark(rel, "protected", rule, entry, info.st_ino, led)
    return {**added, **marks}
