"""The risk label of a command line: destructive, opaque, network, privilege, or harmless.

A pure function over the reading of `kernel.shell.parse`: every simple command of the line is
looked at, the programs wrappers and runners start included (`sudo rm …`, `uv run rm …`).
Destructive: recursive deletes of `/`, `~`, the workspace or broad globs, disk tools, fork
bombs, `curl … | sh`, a redirection or `dd` into a system folder, history-destroying git
commands. Opaque: what runs cannot be seen (`CommandLine.blind`), reported as a reason so
the command asks. The sandbox, not this label, bounds what a command can touch, and what it
changed is judged after it ran (kernel.transaction); `network` is a hint for the prompt.
A command that cannot be parsed is destructive: we cannot tell what it does.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Sequence
from dataclasses import dataclass

from kernel.events import RiskLevel
from kernel.shell.nested import PRIVILEGE, SHELLS, base
from kernel.shell.parse import parse_line
from kernel.shell.words import (
    EXPANDS,
    GLOB,
    LITERAL,
    TILDE,
    CommandLine,
    ShellParseError,
    SimpleCommand,
    Word,
    normalized,
)


@dataclass(frozen=True)
class Classification:
    destructive: bool
    reasons: tuple[str, ...]
    """One short sentence per finding, for the approval prompt."""
    network: bool = False
    """The command obviously needs the network (curl, git clone, pip install, …): a hint."""
    privilege: bool = False
    """Its only findings are that it runs as another user (`sudo`, `doas`, …)."""
    harmless: bool = False
    """Every program it runs only reads (`date`, `ls`, `git status`) and nothing is written."""

    @property
    def level(self) -> RiskLevel:
        """How alarming it is for a person (kernel.events.RiskLevel)."""
        if self.destructive and not self.privilege:
            return "destructive"
        if self.privilege:
            return "privilege"
        if self.network:
            return "network"
        return "harmless" if self.harmless else "ordinary"


_FORK_BOMB = re.compile(r"([A-Za-z_:][\w:]*)\s*\(\s*\)\s*\{[^}]*\1\s*\|\s*\1\s*&")
_HOME_FORMS = ("~", "$HOME", "${HOME}")
_SYSTEM_DIRS = (
    "/etc", "/boot", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/usr", "/var", "/sys",
    "/proc", "/dev", "/opt", "/root", "/home", "/srv", "/System", "/Library", "/Applications",
)  # fmt: skip
_HARMLESS_DEVICES = frozenset(
    {"/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty",
     "/dev/random", "/dev/urandom", "/dev/full"}
)  # fmt: skip
_DISK_TOOLS = frozenset(
    {"mke2fs", "mkswap", "wipefs", "fdisk", "sfdisk", "cfdisk", "parted", "gdisk", "sgdisk",
     "blkdiscard", "cryptsetup", "diskutil", "format"}
)  # fmt: skip
_POWER = frozenset({"shutdown", "reboot", "halt", "poweroff", "kexec"})
_DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "http", "https", "xh"})
_INTERPRETERS = SHELLS | frozenset(
    {"python", "python3", "perl", "ruby", "node", "php", "source", ".", "eval"}
)
_NET_PROGRAMS = frozenset(
    {"curl", "wget", "ssh", "scp", "sftp", "telnet", "ftp", "nc", "ncat", "netcat", "aria2c",
     "http", "https", "xh", "ping", "dig", "nslookup", "host", "npx", "pnpx", "bunx", "uvx"}
)  # fmt: skip
_NET_SUBCOMMANDS = {
    "git": frozenset({"clone", "fetch", "pull", "push", "ls-remote", "submodule", "remote"}),
    "pip": frozenset({"install", "download", "search"}),
    "pip3": frozenset({"install", "download", "search"}),
    "pipx": frozenset({"install", "run", "upgrade"}),
    "uv": frozenset({"pip", "sync", "add", "lock", "run", "tool"}),
    "poetry": frozenset({"install", "add", "update", "lock", "publish"}),
    "npm": frozenset({"install", "i", "ci", "add", "update", "publish", "exec", "view"}),
    "pnpm": frozenset({"install", "i", "add", "update", "dlx", "publish"}),
    "yarn": frozenset({"install", "add", "upgrade", "dlx", "publish"}),
    "bun": frozenset({"install", "add", "update", "x"}),
    "cargo": frozenset({"install", "fetch", "update", "add", "publish", "search"}),
    "go": frozenset({"get", "install", "mod"}),
    "gem": frozenset({"install", "update", "fetch"}),
    "apt": frozenset({"install", "update", "upgrade", "download"}),
    "apt-get": frozenset({"install", "update", "upgrade", "download", "source"}),
    "dnf": frozenset({"install", "update", "upgrade"}),
    "yum": frozenset({"install", "update", "upgrade"}),
    "brew": frozenset({"install", "update", "upgrade", "fetch"}),
    "docker": frozenset({"pull", "push", "login", "search"}),
    "conda": frozenset({"install", "update", "create"}),
}


def classify(command: str | CommandLine) -> Classification:
    """Destructive or not (with reasons), and whether it obviously needs the network.
    Pass the `CommandLine` already read (kernel.shell.parse.read) to classify that reading."""
    if isinstance(command, str):
        try:
            command = parse_line(command)
        except ShellParseError as exc:
            return Classification(True, (f"the command could not be parsed ({exc})",))
    reasons: list[str] = []
    privileged: list[str] = []
    if _FORK_BOMB.search(command.text):
        reasons.append("defines a function that forks itself without end (a fork bomb)")
    network = False
    for cmd in command.commands:
        reasons.extend(_redirect_reasons(cmd))
        if not cmd.argv or cmd.kind(0) not in (LITERAL, TILDE):
            continue
        name = base(cmd.argv[0])
        if name in PRIVILEGE:
            privileged.append(f"runs as another user with {name}")
        reasons.extend(_command_reasons(cmd.args))
        network = network or _needs_network(list(cmd.argv))
    reasons.extend(command.blind)
    reasons.extend(_pipe_to_shell(command.commands))
    found = tuple(dict.fromkeys([*reasons, *privileged]))
    return Classification(bool(found), found, network, privilege=bool(privileged) and not
                          reasons, harmless=not found and not network and _reads_only(command))


_READERS = frozenset(
    {"date", "ls", "pwd", "echo", "printf", "cat", "head", "tail", "wc", "grep", "egrep",
     "fgrep", "rg", "which", "whoami", "id", "uname", "hostname", "stat", "file", "du", "df",
     "diff", "cmp", "cut", "tr", "nl", "basename", "dirname",
     "realpath", "readlink", "true", "false", "test", "[", "[[", ":", "seq", "sleep", "jq",
     "md5sum", "sha1sum", "sha256sum", "less", "more", "type", "uptime", "free", "ps"}
)  # fmt: skip
"""Programs that only read and print, whatever their options (no `sort -o`, `uniq IN OUT`)."""
_GIT_READERS = frozenset(
    {"status", "log", "diff", "show", "blame", "rev-parse", "describe", "shortlog",
     "ls-files", "grep", "cat-file", "reflog", "version", "help"}
)  # fmt: skip


def _reads_only(line: CommandLine) -> bool:
    """Every program of the line (wrapped ones included) is one that only reads, named
    literally, and no redirection writes a file."""
    for cmd in line.commands:
        if any(r.writes_file for r in cmd.redirects):
            return False
        if not cmd.argv:
            continue
        name = base(cmd.argv[0])
        if cmd.kind(0) != LITERAL:
            return False
        if name == "git":
            at = _git_subcommand(cmd.argv)
            if at >= len(cmd.argv) or cmd.argv[at] not in _GIT_READERS or cmd.kind(at) != LITERAL:
                return False
        elif name not in _READERS:
            return False
    return bool(line.commands)


def _options(argv: Sequence[str]) -> tuple[set[str], list[str]]:
    """Short flags (split: `-rf` gives r and f), long options, and the other words."""
    flags: set[str] = set()
    operands: list[str] = []
    after_dashdash = False
    for word in argv[1:]:
        if after_dashdash or not word.startswith("-") or word == "-":
            operands.append(word)
        elif word == "--":
            after_dashdash = True
        elif word.startswith("--"):
            flags.add(word.split("=", 1)[0])
        else:
            flags.update(word[1:])
    return flags, operands


def _is_home(path: str) -> bool:
    return path in _HOME_FORMS or (path.startswith("~") and "/" not in path)


def _is_broad(target: str) -> bool:
    """`/`, `~`, `.`, `*` and the like, a top-level folder, or something right under `~`."""
    t = target.rstrip("/") or "/"
    climbed = normalized(t)
    if climbed == "/" or set(climbed.split("/")) <= {".", ".."} or _is_home(t):
        return True  # `.`, `../..`, `/tmp/..`, `$HOME/..`: the workspace or above it
    if t in ("*", ".*", "./*", "../*", "/*", "./.*"):
        return True
    for home in _HOME_FORMS:
        if t.startswith(home + "/"):
            rest = t[len(home) + 1 :].strip("/")
            return "/" not in rest
    if t.startswith("/") and t.count("/") == 1:
        return True
    if t.startswith("/") and t.count("/") == 2 and t.endswith("/*"):
        return True
    return t.startswith("$") and "/" not in t.lstrip("${")


def _system_path(path: str) -> str | None:
    if path in _HARMLESS_DEVICES or path.startswith("/dev/fd/"):
        return None
    for top in _SYSTEM_DIRS:
        if path == top or path.startswith(top + "/"):
            return top
    return None


def _redirect_reasons(cmd: SimpleCommand) -> list[str]:
    """Redirections into a system folder (names the path rules protect are judged after the
    command ran, with what it changed)."""
    targets = [r.target.text for r in cmd.redirects if r.writes_file]
    return [f"writes to {path} (inside the system folder {top})"
            for path in targets if (top := _system_path(path))]


_PROBES = ("src", "README.md", "a", "Makefile", "x1")
"""Names a glob that deletes "everything" matches (besides `.git`)."""


def _glob_everything(pattern: str) -> str | None:
    """What a glob deletes when it matches (nearly) every name in the workspace or a broad
    folder: `*`, `?*`, `.[!.]*`, `[a-z]*`, `./*`… ; None for `*.pyc`, `build/*`."""
    folder, _, last = normalized(pattern).rpartition("/")
    if folder and not _is_broad(folder) and not (set(folder) & set("*?[")):
        return None
    hits = sum(fnmatch.fnmatchcase(name, last) for name in _PROBES)
    if hits == len(_PROBES):
        return f"everything in {folder or 'the workspace'} ({pattern})"
    if fnmatch.fnmatchcase(".git", last) and not last.startswith(".git"):
        return f"every hidden file in {folder or 'the workspace'}, .git included ({pattern})"
    return None


def _git_dir(path: str) -> bool:
    return ".git" in normalized(path).split("/")


def _cannot_tell(name: str, words: Sequence[Word]) -> list[str]:
    unseen = [w.text for w in words if w.kind == EXPANDS]
    if not unseen:
        return []
    return [f"cannot tell what {name} is given: {', '.join(unseen)} is only known when it runs"]


def _rm_reasons(words: Sequence[Word]) -> list[str]:
    flags, operands = _options([w.text for w in words])
    recursive = bool(flags & {"r", "R", "--recursive"})
    reasons = _cannot_tell("rm", words[1:])
    if "--no-preserve-root" in flags:
        reasons.append("rm --no-preserve-root: allows deleting /")
    kinds = {w.text: w.kind for w in words[1:]}
    broad = [t for t in operands if _is_broad(t)]
    if recursive and broad:
        reasons.append(f"recursive delete of {', '.join(broad)}")
    gitdirs = [t for t in operands if _git_dir(t)]
    if recursive and gitdirs:
        reasons.append(f"deletes the repository's history: {', '.join(gitdirs)}")
    for target in operands:
        if kinds.get(target) == GLOB:
            what = _glob_everything(target)
            if what:
                reasons.append(f"deletes {what} by a glob")
    return reasons


def _command_reasons(words: Sequence[Word]) -> list[str]:
    argv = [w.text for w in words]
    name = base(argv[0])
    flags, operands = _options(argv)
    reasons: list[str] = []
    if name == "rm":
        reasons.extend(_rm_reasons(words))
    if name.partition("@")[0] == "rimraf":  # npm's `rm -r` (`npx rimraf@5`)
        reasons.extend(_rm_reasons([Word("rm"), Word("-r"), *words[1:]]))
    if name in ("shred", "rmdir", "unlink", "truncate"):
        reasons.extend(_cannot_tell(name, words[1:]))
    if name in ("chmod", "chown", "chgrp") and flags & {"R", "--recursive"}:
        reasons.extend(_cannot_tell(name, words[1:]))
        broad = [t for t in operands[1:] if _is_broad(t)]
        if broad:
            reasons.append(f"recursive {name} of {', '.join(broad)}")
    if name == "mv":
        broad = [t for t in operands[:-1] if _is_broad(t) or _git_dir(t)]
        if broad:
            reasons.append(f"moves {', '.join(broad)} away")
    if name == "rsync" and any(f.startswith("--delete") or f == "--remove-source-files"
                               for f in flags) and operands:
        target = operands[-1]
        if _is_broad(target) or _git_dir(target) or normalized(target) in (".", "..") or (
                _glob_everything(target)):
            reasons.append(f"rsync --delete removes what is not in the source from {target}")
    if name.startswith("mkfs") or name in _DISK_TOOLS:
        reasons.append(f"{name} formats or repartitions a disk")
    if name == "dd":  # onto a disk or a system file, or somewhere only known when it runs
        reasons += [f"dd writes to {w.text[3:]}" for w in words[1:] if w.text.startswith("of=")
                    and (w.kind == EXPANDS or _system_path(w.text[3:]))]
    if name == "shred":
        reasons.append("shred destroys file contents beyond recovery")
    if name == "find":
        reasons.extend(_find_reasons(words))
    if name in _POWER or (name in ("systemctl", "loginctl") and set(operands) & {
        "poweroff", "reboot", "halt", "kexec", "suspend", "hibernate"
    }) or (name in ("init", "telinit") and set(operands) & {"0", "6"}):
        reasons.append(f"{name} shuts down or restarts the computer")
    if name in ("kill", "pkill", "killall") and "-1" in argv[1:]:
        reasons.append(f"{name} -1 signals every process of the user")
    if name == "killall5":
        reasons.append("killall5 signals every process")
    if name == "crontab" and "r" in flags:
        reasons.append("crontab -r deletes every scheduled job")
    if name == "git":
        reasons.extend(_git_reasons(words))
    if name in SHELLS | {"source", ".", "eval"} and any(
        ("$(" in w or "`" in w or "<(" in w) and re.search(r"\b(curl|wget)\b", w) for w in argv
    ):
        reasons.append(f"{name} runs a script downloaded from the network")
    return reasons


_FIND_NARROWING = frozenset(
    {"-name", "-iname", "-path", "-ipath", "-wholename", "-iwholename", "-regex", "-iregex",
     "-mtime", "-mmin", "-atime", "-amin", "-ctime", "-cmin", "-size", "-empty", "-perm",
     "-user", "-group", "-nouser", "-nogroup", "-lname", "-ilname", "-inum", "-samefile",
     "-links", "-used"}
)  # fmt: skip
_DELETERS = frozenset({"rm", "rmdir", "unlink", "shred", "truncate", "mv"})


def _find_reasons(words: Sequence[Word]) -> list[str]:
    """`find` that deletes (`-delete`, `-exec rm …`): under a broad folder, under the
    workspace with nothing narrowing what it matches, or under a folder it cannot name."""
    argv = [w.text for w in words]
    starts = []
    for word in words[1:]:
        if word.text.startswith("-") or word.text in ("(", "!"):
            break
        starts.append(word)
    deletes = "-delete" in argv or any(
        w in ("-exec", "-execdir", "-ok", "-okdir") and i + 1 < len(argv)
        and base(argv[i + 1]) in _DELETERS for i, w in enumerate(argv))
    if not deletes:
        return []
    reasons = _cannot_tell("find", starts)
    names = [w.text for w in starts] or ["."]
    narrowed = any(w in _FIND_NARROWING or w.startswith("-newer") for w in argv)
    broad = [n for n in names if _is_broad(n) and normalized(n) not in (".", "..")
             and n not in ("*", "./*")]
    if broad:
        reasons.append(f"find deletes under {', '.join(broad)}")
    here = [n for n in names if n not in broad and (normalized(n) in (".", "..") or
                                                       _glob_everything(n) or _git_dir(n))]
    if here and not narrowed:
        reasons.append(f"find deletes everything under {', '.join(here)}")
    return reasons


def _git_subcommand(argv: Sequence[str]) -> int:
    """`git -C dir -c k=v push -f`: the index of `push`."""
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        takes = argv[i] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace")
        i += 2 if takes else 1
    return i


def _git_reasons(words: Sequence[Word]) -> list[str]:
    argv = [w.text for w in words]
    at = _git_subcommand(argv)
    if at >= len(argv):
        return []
    if words[at].kind == EXPANDS:
        return [f"cannot tell which git command runs: {argv[at]} is only known when it runs"]
    sub, rest = argv[at], argv[at + 1 :]
    flags, operands = _options(["git", *rest])
    if sub == "reset" and {"--hard", "--merge"} & flags:
        return ["git reset --hard discards uncommitted work"]
    if sub == "clean" and not flags & {"n", "--dry-run"}:
        return ["git clean deletes untracked files"]
    if sub == "push" and (flags & {"f", "d", "--force", "--force-with-lease", "--mirror",
                                   "--delete", "--force-if-includes", "--prune"}
                          or any(w.startswith(("+", ":")) for w in operands)):
        return ["git push --force or --delete rewrites or deletes history on the remote"]
    if sub == "checkout" and (flags & {"f", "--force"} or "--" in rest
                              or (operands and operands[-1] in (".", ":/"))):
        return ["git checkout discards uncommitted changes"]
    if sub == "restore" and ("--staged" not in flags or "--worktree" in flags):
        return ["git restore discards uncommitted changes"]
    if sub == "switch" and flags & {"f", "--force", "--discard-changes"}:
        return ["git switch --discard-changes discards uncommitted changes"]
    if sub == "branch" and ("D" in flags or (flags & {"d", "--delete"}
                                             and flags & {"f", "--force"})):
        return ["git branch -D deletes a branch that may not be merged"]
    if sub == "stash" and operands[:1] in (["drop"], ["clear"]):
        return [f"git stash {operands[0]} deletes stashed work"]
    if sub in ("filter-branch", "filter-repo"):
        return [f"git {sub} rewrites the history"]
    if sub == "reflog" and operands[:1] in (["expire"], ["delete"]):
        return ["git reflog expire drops the record of earlier commits"]
    if sub == "update-ref" and "d" in flags:
        return ["git update-ref -d deletes a reference"]
    if sub == "rm" and flags & {"r"} and any(_is_broad(t) or _glob_everything(t)
                                              for t in operands):
        return [f"git rm -r {' '.join(operands)} deletes the tracked files"]
    return []


def _needs_network(argv: list[str]) -> bool:
    name = base(argv[0])
    if name in _NET_PROGRAMS:
        return True
    if name == "rsync":
        return any(":" in w and not w.startswith("-") for w in argv[1:])
    if name == "git":
        at = _git_subcommand(argv)
        return at < len(argv) and argv[at] in _NET_SUBCOMMANDS["git"]
    subs = _NET_SUBCOMMANDS.get(name)
    if subs is not None:
        operands = [w for w in argv[1:] if not w.startswith("-")]
        return bool(operands) and operands[0] in subs
    if name.startswith("python") and argv[1:3] == ["-m", "pip"]:
        return _needs_network(["pip", *argv[3:]])
    return False


def _pipe_to_shell(commands: Sequence[SimpleCommand]) -> list[str]:
    """`curl … | sh`: a downloader earlier in a pipeline that ends in an interpreter."""
    reasons = []
    seen_downloader: dict[int, str] = {}
    for cmd in commands:
        if not cmd.argv:
            continue
        name = base(cmd.argv[0])
        if name in _DOWNLOADERS:
            seen_downloader.setdefault(cmd.pipeline, name)
        elif name in _INTERPRETERS and cmd.pipeline in seen_downloader:
            reasons.append(
                f"pipes a download ({seen_downloader[cmd.pipeline]}) into {name}: runs code "
                f"from the network"
            )
    return reasons
