"""Which commands the user must be asked about, whatever the mode.

A pure function over the parsed command (see `kernel.shell.parse`): every simple command of a
compound command is looked at, after taking off environment assignments, the directory of the
program (`/bin/rm` is `rm`) and wrappers such as `sudo`, `env`, `nice`, `timeout`, `xargs`.
The sandbox, not this classifier, is the security boundary: the classifier exists so that the
user is asked about what matters (recursive deletes of `/`, `~` or broad globs, disk tools,
fork bombs, `curl … | sh`, privilege escalation, writes to system folders, history-destroying
git commands). `network` is a hint for the approval prompt, never a decision.

A command that cannot be parsed is classified destructive: we cannot tell what it does, so
the user is asked.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kernel.shell.parse import SHELLS, ShellParseError, SimpleCommand, parse


@dataclass(frozen=True)
class Classification:
    destructive: bool
    reasons: tuple[str, ...]
    """One short sentence per finding, for the approval prompt."""
    network: bool = False
    """The command obviously needs the network (curl, git clone, pip install, …): a hint."""


_FORK_BOMB = re.compile(r"([A-Za-z_:][\w:]*)\s*\(\s*\)\s*\{[^}]*\1\s*\|\s*\1\s*&")
_PRIVILEGE = frozenset({"sudo", "doas", "su", "pkexec", "run0"})
_WRAPPER_OPTS_WITH_VALUE = {
    "sudo": frozenset({"-u", "-g", "-C", "-p", "-h", "-U", "-r", "-t", "-D", "-R", "-T"}),
    "doas": frozenset({"-u", "-C"}),
    "env": frozenset({"-u", "-C", "-S", "--unset", "--chdir"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "-n", "-p", "-t"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "xargs": frozenset({"-I", "-n", "-P", "-d", "-L", "-s", "-a", "-E", "-i", "-l"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "watch": frozenset({"-n", "-d", "--interval"}),
    "chrt": frozenset(),
    "nohup": frozenset(),
    "setsid": frozenset(),
    "command": frozenset(),
    "exec": frozenset({"-a"}),
    "builtin": frozenset(),
    "time": frozenset({"-f", "-o"}),
    "unbuffer": frozenset(),
    "flock": frozenset({"-w", "-E"}),
}
_WRAPPERS = frozenset(_WRAPPER_OPTS_WITH_VALUE) | _PRIVILEGE
_HOME_FORMS = ("~", "$HOME", "${HOME}")
_SYSTEM_DIRS = (
    "/etc", "/boot", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/usr", "/var", "/sys",
    "/proc", "/dev", "/opt", "/root", "/home", "/srv", "/System", "/Library", "/Applications",
)  # fmt: skip
_HARMLESS_DEVICES = frozenset(
    {"/dev/null", "/dev/zero", "/dev/stdout", "/dev/stderr", "/dev/stdin", "/dev/tty",
     "/dev/random", "/dev/urandom", "/dev/full"}
)  # fmt: skip
_PROTECTED_HOME_FILES = (
    ".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc", ".zprofile", ".zshenv",
    ".ssh", ".gnupg", ".aws", ".config/autostart", ".netrc", ".gitconfig",
)  # fmt: skip
_DISK_TOOLS = frozenset(
    {"mke2fs", "mkswap", "wipefs", "fdisk", "sfdisk", "cfdisk", "parted", "gdisk", "sgdisk",
     "blkdiscard", "cryptsetup", "diskutil", "format"}
)  # fmt: skip
_POWER = frozenset({"shutdown", "reboot", "halt", "poweroff", "kexec"})
_WRITERS_ANY_ARG = frozenset(
    {"rm", "rmdir", "unlink", "shred", "truncate", "touch", "chmod", "chown", "chgrp", "mv",
     "tee", "mkdir", "chattr", "setfacl"}
)  # fmt: skip
_WRITERS_LAST_ARG = frozenset({"cp", "install", "ln", "rsync", "scp"})
_DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "http", "https", "xh"})
_INTERPRETERS = SHELLS | frozenset(
    {"python", "python3", "perl", "ruby", "node", "php", "source", ".", "eval"}
)
_NET_PROGRAMS = frozenset(
    {"curl", "wget", "ssh", "scp", "sftp", "telnet", "ftp", "nc", "ncat", "netcat", "aria2c",
     "http", "https", "xh", "ping", "dig", "nslookup", "host", "npx", "pnpx", "bunx"}
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


def classify(command: str) -> Classification:
    """Destructive or not (with reasons), and whether it obviously needs the network."""
    try:
        commands = parse(command)
    except ShellParseError as exc:
        return Classification(True, (f"the command could not be parsed ({exc})",))
    reasons: list[str] = []
    if _FORK_BOMB.search(command):
        reasons.append("defines a function that forks itself without end (a fork bomb)")
    network = False
    for cmd in commands:
        argv, privileged = _unwrap(cmd.argv)
        if privileged:
            reasons.append(f"runs as another user with {privileged}")
        reasons.extend(_redirect_reasons(cmd))
        if argv:
            reasons.extend(_command_reasons(argv))
            network = network or _needs_network(argv)
    reasons.extend(_pipe_to_shell(commands))
    return Classification(bool(reasons), tuple(dict.fromkeys(reasons)), network)


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _unwrap(argv: Sequence[str]) -> tuple[list[str], str]:
    """The command a chain of wrappers (`sudo env FOO=1 nice -n 5 rm …`) finally runs."""
    words = list(argv)
    privileged = ""
    while words and _base(words[0]) in _WRAPPERS:
        name = _base(words[0])
        if name in _PRIVILEGE:
            privileged = privileged or name
        with_value = _WRAPPER_OPTS_WITH_VALUE.get(name, frozenset())
        i = 1
        while i < len(words):
            word = words[i]
            if word == "--":
                i += 1
                break
            if name == "env" and "=" in word and not word.startswith("-"):
                i += 1
            elif word.startswith("-") and len(word) > 1:
                i += 2 if word in with_value else 1
            elif _wrapper_operand(name, word):
                i += 1
            else:
                break
        words = words[i:]
    return words, privileged


def _wrapper_operand(name: str, word: str) -> bool:
    """A word a wrapper consumes before the command: `timeout 5`, `su user`."""
    if name in ("timeout", "chrt"):
        return bool(re.fullmatch(r"[0-9.]+[smhd]?", word))
    return name == "su"


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
    if t in ("/", ".", "..", "*", ".*", "./*", "../*", "/*", "./.*") or _is_home(t):
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


def _protected_home(path: str) -> bool:
    for home in _HOME_FORMS:
        if path.startswith(home + "/"):
            rest = path[len(home) + 1 :]
            return any(rest == p or rest.startswith(p + "/") for p in _PROTECTED_HOME_FILES)
    return False


def _write_target_reasons(paths: Iterable[str], verb: str) -> list[str]:
    reasons = []
    for path in paths:
        top = _system_path(path)
        if top:
            reasons.append(f"{verb} {path} (inside the system folder {top})")
        elif _protected_home(path):
            reasons.append(f"{verb} {path} (a shell start-up file or credentials folder)")
    return reasons


def _redirect_reasons(cmd: SimpleCommand) -> list[str]:
    targets = [t for op, t in cmd.redirects if ">" in op and not op.endswith("&") and t]
    return _write_target_reasons(targets, "writes to")


def _command_reasons(argv: list[str]) -> list[str]:
    name = _base(argv[0])
    flags, operands = _options(argv)
    reasons: list[str] = []
    if name == "rm":
        recursive = bool(flags & {"r", "R", "--recursive"})
        if "--no-preserve-root" in flags:
            reasons.append("rm --no-preserve-root: allows deleting /")
        broad = [t for t in operands if _is_broad(t)]
        if recursive and broad:
            reasons.append(f"recursive delete of {', '.join(broad)}")
    if name in ("chmod", "chown", "chgrp") and flags & {"R", "--recursive"}:
        broad = [t for t in operands[1:] if _is_broad(t)]
        if broad:
            reasons.append(f"recursive {name} of {', '.join(broad)}")
    if name == "mv":
        broad = [t for t in operands[:-1] if _is_broad(t)]
        if broad:
            reasons.append(f"moves {', '.join(broad)} away")
    if name in _WRITERS_ANY_ARG:
        verb = "changes" if name in ("chmod", "chown", "chgrp", "chattr", "setfacl") else "writes"
        reasons.extend(_write_target_reasons(operands, f"{name} {verb}"))
    if name in _WRITERS_LAST_ARG and operands:
        reasons.extend(_write_target_reasons(operands[-1:], f"{name} writes to"))
    if name == "sed" and flags & {"i", "--in-place"}:
        reasons.extend(_write_target_reasons(operands[1:], "sed -i edits"))
    if name.startswith("mkfs") or name in _DISK_TOOLS:
        reasons.append(f"{name} formats or repartitions a disk")
    if name == "dd":
        for word in argv[1:]:
            if word.startswith("of=") and _system_path(word[3:]):
                reasons.append(f"dd writes to {word[3:]}")
    if name == "shred":
        reasons.append("shred destroys file contents beyond recovery")
    if name == "find":
        reasons.extend(_find_reasons(argv))
    if name in _POWER or (name in ("systemctl", "loginctl") and set(operands) & {
        "poweroff", "reboot", "halt", "kexec", "suspend", "hibernate"
    }) or (name in ("init", "telinit") and set(operands) & {"0", "6"}):
        reasons.append(f"{name} shuts down or restarts the computer")
    if name in ("kill", "pkill", "killall") and "-1" in operands + [w for w in argv[1:]
                                                                      if w == "-1"]:
        reasons.append(f"{name} -1 signals every process of the user")
    if name == "killall5":
        reasons.append("killall5 signals every process")
    if name == "crontab" and "r" in flags:
        reasons.append("crontab -r deletes every scheduled job")
    if name == "git":
        reasons.extend(_git_reasons(argv))
    if name == "eval":
        inner = classify(" ".join(argv[1:]))
        reasons.extend(inner.reasons)
    if name in SHELLS | {"source", ".", "eval"} and any(
        ("$(" in w or "`" in w or "<(" in w) and re.search(r"\b(curl|wget)\b", w) for w in argv
    ):
        reasons.append(f"{name} runs a script downloaded from the network")
    return reasons


def _find_reasons(argv: list[str]) -> list[str]:
    reasons = []
    starts = []
    for word in argv[1:]:
        if word.startswith("-") or word in ("(", "!"):
            break
        starts.append(word)
    broad = [s for s in starts if _is_broad(s) and s not in (".", "..", "*", "./*")]
    if "-delete" in argv and broad:
        reasons.append(f"find -delete under {', '.join(broad)}")
    for i, word in enumerate(argv):
        if word in ("-exec", "-execdir", "-ok", "-okdir"):
            inner = []
            for w in argv[i + 1 :]:
                if w in (";", "+"):
                    break
                inner.append(w)
            if inner:
                reasons.extend(_command_reasons(inner))
                if _base(inner[0]) == "rm" and broad:
                    reasons.append(f"find -exec rm under {', '.join(broad)}")
    return reasons


def _git_subcommand(argv: list[str]) -> tuple[str, list[str]]:
    """`git -C dir -c k=v push -f` gives ("push", ["-f"])."""
    words = argv[1:]
    while words and words[0].startswith("-"):
        words = words[2:] if words[0] in ("-C", "-c") else words[1:]
    return (words[0], words[1:]) if words else ("", [])


def _git_reasons(argv: list[str]) -> list[str]:
    sub, rest = _git_subcommand(argv)
    if sub == "reset" and "--hard" in rest:
        return ["git reset --hard discards uncommitted work"]
    if sub == "clean" and any((w.startswith("-") and not w.startswith("--") and "f" in w)
                              or w == "--force" for w in rest):
        return ["git clean -f deletes untracked files"]
    if sub == "push" and any(w in ("-f", "--force", "--mirror", "--delete", "-d")
                             or w.startswith("+") for w in rest):
        return ["git push --force rewrites history on the remote"]
    if sub in ("checkout", "restore") and rest and rest[-1] in (".", "--", ":/"):
        return [f"git {sub} {rest[-1]} discards uncommitted changes"]
    if sub == "branch" and "-D" in rest:
        return ["git branch -D deletes a branch that may not be merged"]
    return []


def _needs_network(argv: list[str]) -> bool:
    name = _base(argv[0])
    if name in _NET_PROGRAMS:
        return True
    if name == "rsync":
        return any(":" in w and not w.startswith("-") for w in argv[1:])
    if name == "git":
        return _git_subcommand(argv)[0] in _NET_SUBCOMMANDS["git"]
    subs = _NET_SUBCOMMANDS.get(name)
    if subs is not None:
        operands = [w for w in argv[1:] if not w.startswith("-")]
        return bool(operands) and operands[0] in subs
    if name.startswith("python") and argv[1:3] == ["-m", "pip"]:
        return _needs_network(["pip", *argv[3:]])
    return False


def _pipe_to_shell(commands: list[SimpleCommand]) -> list[str]:
    """`curl … | sh`: a downloader earlier in a pipeline that ends in an interpreter."""
    reasons = []
    seen_downloader: dict[int, str] = {}
    for cmd in commands:
        argv, _ = _unwrap(cmd.argv)
        if not argv:
            continue
        name = _base(argv[0])
        if name in _DOWNLOADERS:
            seen_downloader.setdefault(cmd.pipeline, name)
        elif name in _INTERPRETERS and cmd.pipeline in seen_downloader:
            reasons.append(
                f"pipes a download ({seen_downloader[cmd.pipeline]}) into {name}: runs code "
                f"from the network"
            )
    return reasons
