"""What a command sees of this machine, built from nothing, as data: `plan_view` (pure) says
for each path how it is shown and why; kernel.sandbox.bwrap renders it as bubblewrap's
argv and `reins doctor` prints it.

The root is an empty file system made read-only at the end; on it are shown only
- the system's program and library folders read-only: `/usr`, and `/bin`, `/sbin`, `/lib*`
  as the links they are on a merged-/usr system (else bound read-only);
- `/etc` read-only, minus every entry others may not read (`shadow`, `gshadow`, `sudoers`,
  ssh host keys, `security/opasswd`, `ssl/private`, a database's `pg_hba.conf`, …) and any
  socket or device in it. That is a boundary, not a table: the sandbox sees of `/etc` what
  every account of this machine already sees, so a credential file no list names (a new
  daemon's key, a package's token) is hidden because its owner made it private, which is
  how credentials in `/etc` are kept. An allowlist of `/etc` names would instead break
  every program whose configuration it forgot and still be a list. A link in `/etc` to a
  file elsewhere (`resolv.conf` into `/run`) shows that one file, if others may read it;
- `/dev` (bubblewrap's own: null, zero, random, tty, a private `/dev/shm`), a `/proc` of
  the sandbox's own PID namespace, a private `/tmp`;
- `/sys/devices/system/cpu` read-only and nothing else of `/sys`: glibc's `get_nprocs`,
  `nproc`, `os.cpu_count()`, make/ninja job counts and Node's `os.cpus()` read it; the
  rest of `/sys` (the host's devices, network interfaces, firmware tables, DMI serial
  numbers readable by root) is no command's business;
- the folders the login `PATH` (the kernel's, and the user's `exec.path`) points into
  outside those, read-only: a `bin`, `sbin` or `shims` folder brings its parent (nvm's
  version folder, pyenv's root, cargo's home, Homebrew's prefix: the tool's own files lie
  beside its `bin`) unless that parent is `/`, a top-level folder, the home, above it, or
  `~/.local` (whose `share` is every application's data), then only the folder itself;
- the folders the user lists in `exec.read_only_paths`, read-only;
- in those shown folders, the secret locations of kernel.pathrules anchored at each of them
  and at the home hidden;
- then (kernel.sandbox.bwrap) the workspace; after it Reins' own folders hidden where
  something shown holds them, the sandbox home (HOME) writable, and the root sealed.
So `/run`, `/var`, `/srv`, `/opt`, `/mnt`, `/media`, `/home` and `/root` are absent unless
named (a workspace under one of them shows only itself), and no Unix socket outside the
sandbox's own folders can be reached by path (sockets live under /run, /var, /tmp and the
home; /etc is walked, the tool folders are not). Abstract sockets belong to the network
namespace: a command without the network, or with the internet through pasta, has its own.
In the folders of `exec.read_only_paths` the secret locations are hidden at any depth too,
from an index of each (kernel.sandbox.guard.WorkspaceGuards.shown_secrets, mounted by
kernel.sandbox.bwrap). Not covered: a secret deeper in a tool folder of the PATH than the
patterns anchored there (a tool's own files, large, and no place for a project).

What does not change between commands (the top-level links, the walk of `/etc`) is cached
and followed with inotify, or checked by one stat per folder it came from where inotify is
unavailable (`host_facts`); a PATH entry's resolved name is kept while it leads to the same
folder. The rest is looked at for each command (about half a millisecond).
"""

from __future__ import annotations

import functools
import glob
import os
import stat
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from kernel.hardlinks import anchored
from kernel.pathrules import SECRET_PATTERNS
from kernel.sandbox.inotify import FOLDER_CHANGES, Inotify, InotifyError

How = Literal["read-only", "writable", "hidden", "symlink", "private", "sealed", "refused"]
"""read-only / writable: a host path bound; hidden: covered by something empty (a folder
by an empty read-only tmpfs, a file by /dev/null); symlink: a link made in the sandbox;
private: a file system of the sandbox's own (tmpfs, /dev, /proc); sealed: made read-only
once everything inside it is in place; refused: named by the settings and not shown
(mounts nothing; `reins doctor` says why)."""

SYSTEM = ("/usr", "/etc")
TOP_LINKS = ("bin", "sbin")
"""Top-level names shown like `/usr` (with every `lib*`): links on merged-/usr systems."""
ETC = "/etc"
CPU = "/sys/devices/system/cpu"
IN_ATTRIB = 0x00000004
WATCHED = FOLDER_CHANGES | IN_ATTRIB
"""A cached folder's entries made, removed, renamed, or their mode or owner changed."""
TOOL_FOLDERS = ("bin", "sbin", "shims")
"""A PATH folder of these names is shown with its parent: the tool's files lie beside it."""


@dataclass(frozen=True)
class Mount:
    """One path of the view: how it is shown and why, in words."""

    path: str
    how: How
    why: str
    source: str = ""
    """For read-only/writable: the host path (default: `path`); symlink: the target;
    private: "tmpfs", "dev" or "proc"."""
    folder: bool = True
    """For hidden: a folder (else a file)."""

    def argv(self) -> list[str]:
        if self.how in ("read-only", "writable"):
            flag = "--ro-bind" if self.how == "read-only" else "--bind"
            return [flag, self.source or self.path, self.path]
        if self.how == "hidden":
            return (["--tmpfs", self.path, "--remount-ro", self.path] if self.folder
                    else ["--ro-bind", "/dev/null", self.path])
        if self.how == "refused":
            return []
        if self.how == "symlink":
            return ["--symlink", self.source, self.path]
        if self.how == "private":
            return [f"--{self.source}", self.path]
        return ["--remount-ro", self.path]


@dataclass(frozen=True)
class View:
    """The mounts before the workspace (`system`) and after it and its marks (`after`)."""

    system: tuple[Mount, ...]
    after: tuple[Mount, ...]

    def system_argv(self) -> list[str]:
        return [arg for mount in self.system for arg in mount.argv()]

    def after_argv(self) -> list[str]:
        return [arg for mount in self.after for arg in mount.argv()]


@dataclass(frozen=True)
class HostFacts:
    """What the view takes from this machine's system folders (`host_facts`)."""

    top: tuple[tuple[str, str], ...]
    """(path, link target or "" for a folder) of `/bin`, `/sbin`, `/lib*`."""
    etc_hidden: tuple[tuple[str, bool], ...]
    """(path, is a folder) of each entry of /etc others may not read."""
    etc_named: tuple[tuple[str, str], ...] = ()
    """(file, the /etc link naming it) of the files outside the system folders that links
    in /etc name and others may read."""
    cpu: bool = True
    has_usr: bool = True
    has_etc: bool = True


@dataclass(frozen=True)
class ViewFacts:
    """Everything `plan_view` decides from (`view_facts` gathers it; paths resolved)."""

    host: HostFacts
    workspace: str | None
    """None for a sandbox without one (an MCP server's, kernel.sandbox.server)."""
    sandbox_home: str
    home: str
    own_folders: tuple[str, ...] = ()
    """Reins' config and data folders that exist."""
    path_folders: tuple[str, ...] = ()
    """The PATH folders that exist, in PATH order."""
    read_only_paths: tuple[str, ...] = ()
    """The user's `exec.read_only_paths` that exist."""
    secrets: tuple[tuple[str, bool], ...] = ()
    """(path, is a folder) of the secret locations in the shown folders (`shown_folders`)."""


def inside(path: str, root: str) -> bool:
    """`path` is `root` or below it (both absolute and normalized)."""
    return path == root or root == "/" or path.startswith(root + "/")


def overlaps(path: str, others: Iterable[str]) -> bool:
    """`path` lies under or above one of `others`."""
    return any(inside(path, other) or inside(other, path) for other in others)


def _system_roots(host: HostFacts) -> list[str]:
    return [*SYSTEM, *(path for path, _ in host.top)]


def too_broad(folder: str, home: str) -> bool:
    """Showing `folder` would show far more than a tool: `/`, a top-level folder, the home,
    a folder above it, or `~/.local` (every application's data)."""
    return (folder.count("/") < 2 or inside(home, folder)
            or folder == os.path.join(home, ".local"))


def holds_home(folder: str, home: str) -> bool:
    """`folder` is the home, a folder above it, or the root: shown, it would show the whole
    home (and, for `/`, every socket and secret of the machine), everything the view is
    built to leave out. `exec.read_only_paths` cannot show one."""
    return inside(home, folder)


def tool_folder(folder: str, home: str) -> str | None:
    """The folder shown for the PATH folder `folder`: its parent for a `bin`, `sbin` or
    `shims`, unless too broad (then itself); None when itself is too broad."""
    parent = os.path.dirname(folder)
    if os.path.basename(folder) in TOOL_FOLDERS and not too_broad(parent, home):
        return parent
    return None if too_broad(folder, home) else folder


def shown_folders(facts: ViewFacts) -> list[tuple[str, str]]:
    """(folder, why) of the PATH and settings folders shown read-only, outermost only,
    none inside the system folders."""
    candidates: list[tuple[str, str]] = []
    for folder in facts.path_folders:
        shown = tool_folder(folder, facts.home)
        if shown is not None:
            why = ("a folder of the login PATH" if shown == folder
                   else f"the tool folder of {folder} (in the login PATH)")
            candidates.append((shown, why))
    candidates += [(p, "named in exec.read_only_paths") for p in facts.read_only_paths
                   if not holds_home(p, facts.home)]
    system = _system_roots(facts.host)
    kept: list[tuple[str, str]] = []
    for folder, why in sorted(candidates, key=lambda c: (c[0].count("/"), c[0])):
        if any(inside(folder, root) for root in system):
            continue
        if any(inside(folder, other) for other, _ in kept):
            continue
        kept.append((folder, why))
    return sorted(kept)


def system_mounts(host: HostFacts) -> list[Mount]:
    """The system folders, /etc, /dev, /proc, /tmp and the processor folder of /sys."""
    system: list[Mount] = []
    if host.has_usr:
        system.append(Mount("/usr", "read-only", "system programs and libraries"))
    for path, target in host.top:
        system.append(Mount(path, "symlink", f"as on this system (merged /usr): -> {target}",
                            source=target) if target
                      else Mount(path, "read-only", "system programs and libraries"))
    if host.has_etc:
        system.append(Mount(ETC, "read-only", "system configuration (users' names, locale, "
                            "time zone, CA certificates, resolver)"))
        system += [Mount(path, "hidden", "others may not read it", folder=folder)
                   for path, folder in host.etc_hidden]
    system += [Mount(path, "read-only", f"named by {link}") for path, link in host.etc_named]
    system += [
        Mount("/dev", "private", "devices of the sandbox's own (null, random, tty, /dev/shm)",
              source="dev"),
        Mount("/proc", "private", "the processes of the sandbox only", source="proc"),
        Mount("/tmp", "private", "a private, empty /tmp", source="tmpfs"),
    ]
    if host.cpu:
        system.append(Mount(CPU, "read-only", "the processor count and topology"))
    return system


def plan_view(facts: ViewFacts) -> View:
    """The view of one command (see the module docstring). Pure: the same facts give the
    same view, so a sandbox made ahead can be compared (kernel.sandbox.standby)."""
    system = system_mounts(facts.host)
    folders = shown_folders(facts)
    system += [Mount(p, "refused", "named in exec.read_only_paths, not shown: it holds the "
                     "home, everything this view leaves out") for p in facts.read_only_paths
               if holds_home(p, facts.home)]
    system += [Mount(folder, "read-only", why) for folder, why in folders]
    for path, folder in sorted(facts.secrets):
        if any(inside(path, shown) for shown, _ in folders) and not (
                facts.workspace is not None and inside(path, facts.workspace)):
            system.append(Mount(path, "hidden", "a secret location (kernel.pathrules)",
                                folder=folder))
    return View(tuple(system), tuple(_after(facts, [f for f, _ in folders])))


SEALED_ROOT = Mount("/", "sealed", "nothing can be made outside the writable folders")


def _after(facts: ViewFacts, folders: Sequence[str]) -> list[Mount]:
    """Reins' own folders hidden where something shown holds them, the sandbox home, and
    the root sealed."""
    workspace = [facts.workspace] if facts.workspace is not None else []
    shown = [*workspace, *folders, *(path for path, _ in facts.host.etc_named)]
    hidden = [own for own in facts.own_folders
              if not any(inside(ws, own) for ws in workspace) and overlaps(own, shown)]
    after = [Mount(own, "private", "Reins' own folder, hidden (it lies in a shown folder)",
                   source="tmpfs") for own in hidden]
    after.append(Mount(facts.sandbox_home, "writable", "the sandbox home (HOME)"))
    after += [Mount(own, "sealed", "Reins' own folder, read-only") for own in hidden]
    after.append(SEALED_ROOT)
    return after


# I/O: the facts, gathered.

Stamp = tuple[str, int, int]
"""(path, inode, mtime in ns) of a folder a cached fact came from."""
T = TypeVar("T")


class Stamped(Generic[T]):
    """`make()`'s value, made again when a folder it came from changed: followed with
    inotify (an entry made, removed, renamed or its mode changed), else by comparing one
    stat of each folder per use. Thread-safe."""

    def __init__(self, make: Callable[[], tuple[tuple[Stamp, ...], T]]) -> None:
        self._make = make
        self._lock = threading.Lock()
        self._held: tuple[tuple[Stamp, ...], T] | None = None
        self._watch: Inotify | None = None

    def get(self) -> T:
        with self._lock:
            if self._held is None or self._changed(self._held[0]):
                self._held = self._remake()
            return self._held[1]

    def _changed(self, stamps: tuple[Stamp, ...]) -> bool:
        if self._watch is not None:
            return self._watch.pending()
        return any(stamp_of(stamp[0]) != stamp for stamp in stamps)

    def _remake(self) -> tuple[tuple[Stamp, ...], T]:
        if self._watch is not None:
            self._watch.close()
            self._watch = None
        held = self._make()
        try:
            watch = Inotify()
        except InotifyError:
            return held
        try:
            for path, _, _ in held[0]:
                watch.add_watch(path, WATCHED)
        except InotifyError:
            watch.close()
            return held
        if any(stamp_of(stamp[0]) != stamp for stamp in held[0]):
            watch.close()  # changed while being read: the stamps will say so next time
        else:
            self._watch = watch
        return held


def stamp_of(path: str) -> Stamp:
    try:
        st = os.stat(path)
    except OSError:
        return path, 0, 0
    return path, st.st_ino, st.st_mtime_ns


def _readable_by_others(mode: int) -> bool:
    if stat.S_ISDIR(mode):
        return mode & (stat.S_IROTH | stat.S_IXOTH) == stat.S_IROTH | stat.S_IXOTH
    return stat.S_ISREG(mode) and bool(mode & stat.S_IROTH)


EtcFacts = tuple[tuple[tuple[str, bool], ...], tuple[tuple[str, str], ...]]


def _walk_etc() -> tuple[tuple[Stamp, ...], EtcFacts]:
    """The folders walked (their stamps), the entries others may not read, and each link
    → where it leads when that lies outside the system folders."""
    stamps = [stamp_of(ETC)]
    hidden: list[tuple[str, bool]] = []
    links: list[tuple[str, str]] = []
    pending = [ETC]
    while pending:
        folder = pending.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            try:
                mode = entry.stat(follow_symlinks=False).st_mode
            except OSError:
                continue
            if stat.S_ISLNK(mode):
                target = os.path.realpath(entry.path)
                if not any(inside(target, root) for root in (*SYSTEM, "/proc", "/dev")):
                    links.append((entry.path, target))
            elif not _readable_by_others(mode):
                hidden.append((entry.path, stat.S_ISDIR(mode)))
            elif stat.S_ISDIR(mode):
                stamps.append(stamp_of(entry.path))
                pending.append(entry.path)
    return tuple(sorted(stamps)), (tuple(sorted(hidden)), tuple(sorted(links)))


def _top() -> tuple[tuple[Stamp, ...], tuple[tuple[str, str], ...]]:
    found: list[tuple[str, str]] = []
    try:
        names = sorted(os.listdir("/"))
    except OSError:
        names = []
    for name in names:
        if name not in TOP_LINKS and not name.startswith("lib"):
            continue
        path = "/" + name
        try:
            mode = os.lstat(path).st_mode
            if stat.S_ISLNK(mode):
                found.append((path, os.readlink(path)))
            elif stat.S_ISDIR(mode):
                found.append((path, ""))
        except OSError:
            continue
    return (stamp_of("/"),), tuple(found)


_TOP = Stamped(_top)
_ETC = Stamped(_walk_etc)


def host_facts() -> HostFacts:
    """This machine's system folders as the view needs them: cached while `/` and the
    folders of /etc walked do not change (`Stamped`: inotify sees a mode changed in place;
    without it, a file made private by chmod alone is seen at the next change of its
    folder). The files /etc's links name outside the system folders are looked at each
    time (a resolver's file comes and goes)."""
    top = _TOP.get()
    hidden, links = _ETC.get()
    named: list[tuple[str, str]] = []
    for link, target in links:
        try:
            mode = os.stat(target).st_mode
        except OSError:
            continue
        if stat.S_ISREG(mode) and mode & stat.S_IROTH:
            named.append((target, link))
    return HostFacts(top=top, etc_hidden=hidden, etc_named=tuple(sorted(set(named))),
                     cpu=os.path.isdir(CPU), has_usr=os.path.isdir("/usr"),
                     has_etc=os.path.isdir(ETC))


def path_folders(path_vars: Iterable[str]) -> tuple[str, ...]:
    """The existing folders of PATH-like strings (`a:b:c`), resolved, in order, once each.
    A folder's resolved name is kept while the entry still leads to the same folder (one
    stat; resolving costs a stat per component of every entry, each command)."""
    found: dict[str, None] = {}
    for value in path_vars:
        for entry in value.split(os.pathsep):
            if not os.path.isabs(entry):
                continue
            try:
                st = os.stat(entry)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                found[_resolved(entry, st.st_dev, st.st_ino)] = None
    return tuple(found)


@functools.lru_cache(maxsize=256)
def _resolved(entry: str, device: int, inode: int) -> str:
    """`entry` resolved, while it leads to the folder (`device`, `inode`)."""
    return os.path.realpath(entry)


def view_facts(*, workspace: str | None, sandbox_home: str, home: str,
               own_folders: Iterable[str], path_vars: Iterable[str],
               read_only_paths: Iterable[str]) -> ViewFacts:
    """The facts of one command's view, as the file system is now (paths resolved)."""
    facts = ViewFacts(
        host=host_facts(), workspace=workspace, sandbox_home=sandbox_home, home=home,
        own_folders=tuple(dict.fromkeys(o for o in own_folders if os.path.isdir(o))),
        path_folders=path_folders(path_vars),
        read_only_paths=tuple(dict.fromkeys(p for p in read_only_paths
                                            if os.path.exists(p))))
    folders = [folder for folder, _ in shown_folders(facts)]
    found: set[str] = set()
    for folder in folders:
        found.update(anchored(folder, SECRET_PATTERNS))
    in_home = {os.path.relpath(f, home).partition("/")[0] for f in folders
               if inside(f, home) and f != home}
    if in_home:  # only the home's patterns that can lead into one of these folders
        patterns = [p for p in SECRET_PATTERNS if p.partition("/")[0] in in_home
                    or glob.has_magic(p.partition("/")[0])]
        found.update(s for s in anchored(home, patterns)
                     if any(inside(s, folder) for folder in folders))
    secrets = []
    for path in sorted(found):
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue
        if not stat.S_ISLNK(mode):
            secrets.append((path, stat.S_ISDIR(mode)))
    return ViewFacts(host=facts.host, workspace=workspace, sandbox_home=sandbox_home,
                     home=home, own_folders=facts.own_folders,
                     path_folders=facts.path_folders, read_only_paths=facts.read_only_paths,
                     secrets=tuple(secrets))


def describe_view(view: View, workspace: str, transactions: bool = False) -> list[str]:
    """The view in words, one line a path (for `reins doctor`). With `transactions`, the
    workspace is an overlay whose changes are judged after the command."""
    shown = Mount(workspace, "writable",
                  "the workspace, as an overlay: what a command changes is read after it, "
                  "protected entries held for you, the rest applied as an undoable step"
                  if transactions else "the workspace")
    rows = [*view.system, shown, *view.after]
    width = max(len(m.path) for m in rows)
    return [f"{m.path:<{width}}  {m.how:<9}  {m.why}" for m in rows]
