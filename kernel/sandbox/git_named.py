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

`parse` follows git's config.c: sections `[name]`, `[name "sub"]` and `[name.sub]`, entries on
the header's line too, keys without a value, quotes, the escapes `\\n \\t \\b \\\\ \\"`, a
backslash before a newline continuing the value, `#` and `;` comments outside quotes. A line
git would refuse makes git refuse the whole file (it then runs nothing it names); here the
line is skipped and the rest read, so a reading that differs from git's only protects more.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import shlex
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from kernel.sandbox.marks import EntryKind, Mark

Named = Literal["folder", "config", "program"]
"""folder: git runs what it holds (hooks, templates); config: read as configuration (and
read on: what it names counts too); program: a command's program or script."""

FOLDER_KEYS = ("core.hookspath", "init.templatedir")
CONFIG_KEYS = ("include.path", "includeif.*.path")
PROGRAM_KEYS = (
    "core.sshcommand", "core.pager", "core.editor", "core.askpass", "core.fsmonitor",
    "core.gitproxy", "sequence.editor", "diff.external", "diff.*.command", "diff.*.textconv",
    "difftool.*.cmd", "difftool.*.path", "mergetool.*.cmd", "mergetool.*.path",
    "merge.*.driver", "filter.*.clean", "filter.*.smudge", "filter.*.process", "alias.*",
    "credential.helper", "credential.*.helper", "gpg.program", "gpg.*.program", "pager.*",
    "interactive.difffilter", "sendemail.sendmailcmd", "sendemail.smtpserver",
    "uploadpack.packobjectshook", "remote.*.uploadpack", "remote.*.receivepack",
    "web.browser", "browser.*.cmd", "browser.*.path", "man.*.cmd", "man.*.path",
    "guitool.*.cmd", "instaweb.httpd",
)
"""Keys whose value is a command git runs (its words that are paths are protected), matched
case-blind with `*` for a subsection."""
BOOLEANS = frozenset({"true", "false", "yes", "no", "on", "off", "1", "0", ""})
"""`core.fsmonitor = true` is git's own monitor, no program."""
NAMED_PREFIX = "git-named:"
"""How the file tools' path policy is told a path is one a git config names:
`git-named:<rule>` (kernel.sandbox.guard.protected_links)."""
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


_TABLES: tuple[tuple[Named, tuple[str, ...]], ...] = (
    ("folder", FOLDER_KEYS), ("config", CONFIG_KEYS), ("program", PROGRAM_KEYS))


@functools.cache
def _kind_of(key: str) -> Named | None:
    """What the value of `key` (lower case) names, by the key tables (`*` stands for any
    subsection or name)."""
    for kind, patterns in _TABLES:
        if any(fnmatch.fnmatchcase(key, pattern) for pattern in patterns):
            return kind
    return None


@functools.lru_cache(maxsize=4096)
def named(entry: Entry) -> tuple[tuple[Named, str], ...]:
    """What `entry` names: (kind, the path as written, `~/` not yet expanded)."""
    value = entry.value
    if not value:
        return ()
    key = entry.key.lower()
    kind = _kind_of(key)
    if kind in ("folder", "config"):
        return ((kind, value),)
    if kind != "program" or (key == "core.fsmonitor" and value.lower() in BOOLEANS):
        return ()
    return tuple(("program", word) for word in _words(value.removeprefix("!")))


def _words(command: str) -> Iterator[str]:
    """The words of a shell command that may be paths: those with a `/`, not options; the
    value of `NAME=value` and `--option=value` words (`;`, `&&`, `|`, `(` split words)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError:  # an unclosed quote: git's shell would refuse it; words as they are
        words = command.split()
    for word in words:
        if "=" in word and not word.startswith(("/", ".")):
            word = word.partition("=")[2]
        if "/" in word and not word.startswith("-") and "$" not in word:
            yield word


@dataclass(frozen=True)
class Found:
    path: str
    """Absolute and normalized, as git would take it (`~/` expanded, relative to its base)."""
    kind: Named
    key: str
    config: str
    """The config file (absolute) the key is in."""


def _expand(path: str, home: str) -> str:
    if path == "~" or path.startswith("~/"):
        return home + path[1:]
    return path


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


def found_in(configs: Sequence[str], bases: Sequence[str], home: str,
             read: Mapping[str, str | None] | None = None) -> list[Found]:
    """Every path the config files `configs` (and what they include) name, absolute: a
    config's own includes relative to its folder, everything else relative to each of
    `bases` (the worktree top, the git directory; the folder a relative hook or command is
    run from). `read` maps a config path to its text (for tests); else it is read."""
    out: list[Found] = []
    seen: set[str] = set()

    def visit(config: str, depth: int) -> None:
        if config in seen or depth > MAX_DEPTH:
            return
        seen.add(config)
        if read is not None:
            text = read.get(config)
            entries: Sequence[Entry] = () if text is None else parse(text)
        else:
            entries = _read(config)[1]
        for entry in entries:
            for kind, written in named(entry):
                path = _expand(written, home)
                if kind == "config":
                    target = os.path.normpath(os.path.join(os.path.dirname(config), path))
                    out.append(Found(target, kind, entry.key, config))
                    visit(target, depth + 1)
                    continue
                for base in bases if not os.path.isabs(path) else ("/",):
                    out.append(Found(os.path.normpath(os.path.join(base, path)), kind,
                                     entry.key, config))

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


def _repositories(root: str, marks: Mapping[str, Mark]) -> list[tuple[str, tuple[str, ...]]]:
    """(git directory, folders a relative hook or command runs from) of each repository of
    the workspace `root` (a real path), and of the one it lies in, if any."""
    found: list[tuple[str, tuple[str, ...]]] = []
    for mark in marks.values():
        path = os.path.join(root, mark.path)
        if mark.kind == "git-dir":
            top = os.path.dirname(path)
            found.append((path, (top,) if mark.rule == ".git" else (path,)))
        elif mark.rule == ".git" and mark.entry == "file":
            pointed = git_dir_of(path)
            if pointed is not None:
                found.append((pointed, (os.path.dirname(path),)))
        elif mark.rule == ".git" and mark.entry == "link" and os.path.isdir(path):
            found.append((os.path.realpath(path), (os.path.dirname(path),)))
    above = os.path.dirname(root)
    while above != os.path.dirname(above):
        dot_git = os.path.join(above, ".git")
        if os.path.isdir(dot_git):
            found.append((dot_git, (above,)))
            break
        if os.path.isfile(dot_git):
            pointed = git_dir_of(dot_git)
            if pointed is not None:
                found.append((pointed, (above,)))
            break
        above = os.path.dirname(above)
    return found


def named_paths(root: str, marks: Mapping[str, Mark], *, home: str,
                environ: Mapping[str, str]) -> dict[str, str]:
    """Relative to the workspace `root` (a real path): each path inside it that a git config
    of its repositories names (`found_in`) → the rule (`core.hookspath in .git/config`). A
    folder of hooks that is the workspace or holds a repository is named by its hooks' names
    instead (the rest of it is the user's work)."""
    tops = {os.path.join(root, m.path) for m in marks.values() if m.kind == "git-dir"}
    out: dict[str, str] = {}
    for git_dir, bases in _repositories(root, marks):
        configs = (*repository_configs(git_dir), *user_configs(environ, home))
        for found in found_in(configs, bases, home):
            real = os.path.join(os.path.realpath(os.path.dirname(found.path)),
                                os.path.basename(found.path))
            wide = found.kind == "folder" and (real == root or any(
                t.startswith(real + "/") for t in tops))
            if not real.startswith(root + "/") and not (wide and real == root):
                continue
            rel = real[len(root) + 1:]
            config = (found.config[len(root) + 1:] if found.config.startswith(root + "/")
                      else "~" + found.config[len(home):]
                      if found.config.startswith(home + "/") else found.config)
            rule = f"{found.key} in {config}"
            for path in ([f"{rel}/{hook}".lstrip("/") for hook in HOOK_NAMES] if wide
                         else [rel]):
                out.setdefault(path, rule)
    return out


def with_named(root: str, marks: Mapping[str, Mark], *, home: str,
               environ: Mapping[str, str]) -> dict[str, Mark]:
    """`marks` and, marked as protected, each `named_paths` entry that exists (what does not
    and a command makes is new, and undone after it); an entry marked already keeps its
    mark."""
    added: dict[str, Mark] = {}
    for rel, rule in named_paths(root, marks, home=home, environ=environ).items():
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
