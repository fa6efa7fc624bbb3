"""The one path policy: where a tool may read and write.

Every tool that touches the filesystem (file tools, commands, MCP roots, the approval policy)
goes through `PathPolicy`. A raw path from the model is resolved the same way everywhere:
`~` expanded, relative to the workspace, `..` and symlinks resolved. Anything that ends
outside the workspace is refused unless the user allowed that path for this call
(`allowing`). Writes inside the workspace are also refused for protected files (git hooks
and config, shell start-up files, editor settings, Reins' own folders).

A file may have other names (hard links): one that is another name of a secret or protected
file (kernel.hardlinks: `ln ~/.ssh/id_ed25519 notes.txt`, `ln .git/config gitconfig.txt`) is
a secret or protected as that file is, by inode, whatever its own name. The workspace
index knows those files and their names in the workspace (through `links`); without an
index the home's secret and protected files are compared directly.

Checking a path and then opening it by name leaves a gap: a symlink swapped in between
would redirect the write. So writes (and reads) go through file descriptors: the parent
directory is opened one component at a time with O_NOFOLLOW starting from the workspace
(or the approved root), and the file is created and renamed relative to that directory fd.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from kernel.hardlinks import SAME_FILE_PREFIX, Named, at_home, parse_verdict
from kernel.pathrules import (
    ANY_DEPTH,
    GIT_DIR_MARKERS,
    NAMED_PREFIX,
    PROTECTED_PATTERNS,
    at_any_depth,
    describe_secret,
    first_match,
    fold_name,
    git_dangerous_match,
    is_git_dir,
    looks_like_git_dir,
    secret_match,
    subtree_root,
)
from kernel.paths import AppPaths
from kernel.tools.errors import ErrorCode, ToolError


def _read_umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current


_UMASK = _read_umask()
REINS_PROTECTED_PREFIX = "reins:"
"""PathVerdict.protected starts with this for Reins' own folders (never writable, even with
the user's approval); the rest of the value is the folder."""
GIT_DIR_PREFIX = "git-dir:"
"""PathVerdict.protected starts with this for git configuration or code in a bare repository
(`git-dir:<folder>: <entry>`)."""
LINK_PREFIX = "link:"
"""PathVerdict.protected starts with this for where a protected link leads (the link's path
in the workspace follows)."""
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_MADE_AS = {"HEAD": stat.S_IFREG, "commondir": stat.S_IFREG, "objects": stat.S_IFDIR,
            "refs": stat.S_IFDIR}
"""What writing a path through each git marker makes of it: the file, or a folder above it."""


def _marker(name: str) -> str | None:
    """The git marker (kernel.pathrules.GIT_DIR_MARKERS) a file system that folds names may
    take `name` for (`head`, `HEAD.`), else None."""
    folded = fold_name(name)
    return next((m for m in GIT_DIR_MARKERS if m.casefold() == folded), None)


def _would_be_git_dir(folder: Path, creating: str) -> bool:
    """`folder` is a git directory, or would be once the entry `creating` exists in it (as
    git tells one: kernel.pathrules.looks_like_git_dir)."""
    if is_git_dir(folder):
        return True
    marker = _marker(creating)
    if marker is None:
        return False

    def mode_of(name: str) -> int | None:
        if name == marker:
            return _MADE_AS[name]
        try:
            return os.lstat(folder / name).st_mode
        except OSError:
            return None

    return looks_like_git_dir(mode_of)


def _holds_git_code(folder: Path, creating: str) -> bool:
    """Writing `creating` completes a git directory in `folder` that already holds entries
    git would read as code or configuration."""
    if _marker(creating) is None or is_git_dir(folder):
        return False
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    return any(git_dangerous_match(name) is not None for name in names)


class PathRefused(ToolError):
    """A path the policy does not allow; the message says why and what to do instead."""

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message, hint=hint, code=ErrorCode.PERMISSION_DENIED)


@dataclass(frozen=True)
class PathVerdict:
    """What the policy thinks of one raw path (no decision is taken here)."""

    resolved: Path
    inside_workspace: bool
    protected: str | None
    """The protected pattern or folder this write would touch, else None (always None for reads)."""
    approved: bool = False
    """The user allowed this path, or a folder above it, for the current call (`allowing`)."""
    approved_exactly: bool = False
    """The user allowed this very path; only that lifts a protection."""
    secret: str | None = None
    """The secret-location pattern (kernel.pathrules.SECRET_PATTERNS) the path matches, for
    reads and writes alike, else None."""
    secret_approved: bool = False
    """The user allowed this path, or a folder above it INSIDE the matched secret location
    (`.ssh` for `.ssh/id_rsa`), for the current call; approving `~` does not open `~/.ssh`."""
    same_file: str = ""
    """The secret or protected file (absolute path) this file is another name of (a hard
    link, kernel.hardlinks), else ''. Then `secret` is that file's pattern (only this very
    path approved lifts it), or, for a write, `protected` is SAME_FILE_PREFIX + the path."""

    @property
    def allowed(self) -> bool:
        """True when resolve_read/resolve_write would accept the path (and its content)."""
        if self.secret is not None and not self.secret_approved:
            return False
        return self.names_allowed

    @property
    def own_data(self) -> bool:
        """The write would touch Reins' own settings or data: refused whoever approves."""
        return self.protected is not None and self.protected.startswith(REINS_PROTECTED_PREFIX)

    @property
    def names_allowed(self) -> bool:
        """True when the names below the path may be listed: a secret location's names are
        not secret (list_directory and glob show them), its contents are."""
        if self.protected is None:
            return self.inside_workspace or self.approved
        return self.approved_exactly and not self.own_data


def _is_link(dir_fd: int, name: str) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _open_child_dir(fd: int, part: str, *, create: bool, target: Path) -> int:
    """Open (or create, then open) the folder `part` below `fd` without following a link."""
    try:
        try:
            return os.open(part, _DIR_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            if not create:
                raise
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, dir_fd=fd)
            return os.open(part, _DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_link(fd, part):
            raise PathRefused(
                f"The folder {part!r} on the way to {target} is now a symlink (it changed "
                f"after the path was checked), so it is not followed.",
                hint="Check the path again; tools never write through symlinks.",
            ) from exc
        if exc.errno == errno.ENOTDIR:
            raise ToolError(
                f"Cannot reach {target}: {part!r} is a file, not a folder.",
                hint="Choose a path whose parent folders are folders.",
            ) from exc
        raise


def _through_link(resolved: Path, links: Mapping[Path, str]) -> str | None:
    """`LINK_PREFIX`<link> when `resolved` is, or is inside, where a protected link leads;
    the `NAMED_PREFIX` text when it is, or is inside, what a git config names (at any depth
    for a key with `**`: kernel.pathrules.at_any_depth)."""
    for target, link in links.items():
        if link.startswith(SAME_FILE_PREFIX):
            continue
        if ANY_DEPTH in target.parts:
            if link.startswith(NAMED_PREFIX) and at_any_depth(resolved, target):
                return link
        elif resolved.is_relative_to(target):
            return link if link.startswith(NAMED_PREFIX) else f"{LINK_PREFIX}{link}"
    return None


class PathPolicy:
    """Resolves raw paths and decides which of them a tool may read or write."""

    def __init__(
        self,
        workspace: Path,
        protected: Sequence[Path | str] = (),
        *,
        app_paths: AppPaths | None = None,
        extra: Iterable[Path] = (),
        links: Callable[[], Mapping[Path, str]] | None = None,
    ) -> None:
        """`links()`: where each protected link of the workspace leads (resolved) → the
        link's path (kernel.sandbox.guard); a write there is protected as the link is. It
        also maps each other name of a secret or protected file to that file
        (kernel.hardlinks.verdict_text)."""
        self.workspace = Path(os.path.realpath(Path(workspace).expanduser()))
        self._links = links
        self._protected_input = tuple(protected)
        self._app_paths = app_paths if app_paths is not None else AppPaths.from_env()
        patterns: list[str] = list(PROTECTED_PATTERNS)
        self._protected_roots: list[Path] = []
        for item in self._protected_input:
            if isinstance(item, Path) or os.path.isabs(os.path.expanduser(item)):
                self._protected_roots.append(Path(os.path.realpath(Path(item).expanduser())))
            else:
                patterns.append(str(item))
        self._patterns = tuple(patterns)
        self._reins_roots = tuple(Path(os.path.realpath(p)) for p in self._app_paths.protected())
        self.extra: tuple[Path, ...] = tuple(Path(os.path.realpath(p)) for p in extra)

    # -- decisions -------------------------------------------------------------------------

    def allowing(self, paths: Iterable[Path]) -> PathPolicy:
        """The same policy, also accepting `paths` (and anything below them)."""
        paths = tuple(paths)
        if not paths:
            return self
        return PathPolicy(
            self.workspace,
            self._protected_input,
            app_paths=self._app_paths,
            extra=(*self.extra, *paths),
            links=self._links,
        )

    def resolve(self, raw: str) -> Path:
        """`raw` made absolute: `~` expanded, relative to the workspace, `..` and links resolved."""
        if not isinstance(raw, str) or not raw.strip():
            raise ToolError(
                "The path is empty.",
                hint="Pass a file or folder path, relative to the workspace or absolute.",
                code=ErrorCode.INVALID_ARGUMENTS,
            )
        if "\x00" in raw:
            raise ToolError(
                "The path contains a NUL character, which no filesystem path can hold.",
                hint="Remove the NUL character from the path.",
                code=ErrorCode.INVALID_ARGUMENTS,
            )
        expanded = os.path.expanduser(raw)
        joined = os.path.join(self.workspace, expanded)
        return Path(os.path.realpath(joined))

    def classify(self, raw: str, *, write: bool) -> PathVerdict:
        resolved = self.resolve(raw)
        inside = resolved.is_relative_to(self.workspace)
        protected = self._protected_reason(resolved, inside) if write else None
        if write and protected is None:  # `.vscode/x` through a link `.vscode -> shared`:
            named = Path(os.path.normpath(  # the editor opens it by this name
                os.path.join(self.workspace, os.path.expanduser(raw))))
            if named != resolved and named.is_relative_to(self.workspace):
                protected = self._protected_reason(named, True)
        if write and protected is None and self._links is not None:
            protected = _through_link(resolved, self._links())
        approved = any(resolved.is_relative_to(root) for root in self.extra)
        secret = secret_match(resolved.as_posix())
        secret_approved = False
        if secret is not None:
            top = Path(subtree_root(resolved.as_posix(), secret))
            secret_approved = any(resolved.is_relative_to(root) and root.is_relative_to(top)
                                  for root in self.extra)
        same = self._same_file(resolved, inside)
        if same is not None and same.kind == "secret" and secret is None:
            secret, secret_approved = same.rule, resolved in self.extra
        elif same is not None and same.kind == "protected" and write and protected is None:
            protected = f"{SAME_FILE_PREFIX}{same.path}"
        return PathVerdict(resolved, inside, protected, approved, resolved in self.extra,
                           secret, secret_approved, "" if same is None else same.path)

    def _same_file(self, resolved: Path, inside: bool) -> Named | None:
        """The secret or protected file `resolved` is another name of (kernel.hardlinks),
        else None. Only a file with several names is looked up."""
        try:
            info = os.stat(resolved)
        except (OSError, ValueError):
            return None
        if not stat.S_ISREG(info.st_mode) or info.st_nlink < 2:
            return None
        key = (info.st_dev, info.st_ino)
        if self._links is None:
            named = at_home(str(Path.home())).get(key)
            return None if named is None or named.path == str(resolved) else named
        found = [(path, parse_verdict(text)) for path, text in self._links().items()
                 if text.startswith(SAME_FILE_PREFIX)]
        for path, named in found:  # a name the workspace index knows
            if path == resolved and named is not None and named.path != str(resolved):
                return named
        for path, named in found:  # a secret or protected file that has other names
            if named is None or named.path != str(path) or named.path == str(resolved):
                continue
            try:
                other = os.stat(path, follow_symlinks=False)
            except OSError:
                continue
            if (other.st_dev, other.st_ino) == key:
                return named
        return None

    def _protected_reason(self, resolved: Path, inside: bool) -> str | None:
        for root in self._reins_roots:
            if resolved.is_relative_to(root):
                return f"{REINS_PROTECTED_PREFIX}{root}"
        for root in self._protected_roots:
            if resolved.is_relative_to(root):
                return str(root)
        if resolved == self.workspace:
            return None
        rel = resolved.relative_to(self.workspace).as_posix() if inside else resolved.as_posix()
        found = first_match(rel, self._patterns)
        if found is None and inside:
            found = self._in_bare_git_dir(resolved)
        return found

    def _in_bare_git_dir(self, resolved: Path) -> str | None:
        """`GIT_DIR_PREFIX`<folder>/<entry> when the write is git configuration or code of a
        bare repository in the workspace (a folder with HEAD, objects/ and refs/), or would
        turn a folder holding such entries into one; else None."""
        folder = resolved.parent
        while folder.is_relative_to(self.workspace):
            rel = resolved.relative_to(folder)
            dangerous = git_dangerous_match(rel.as_posix())
            if _would_be_git_dir(folder, rel.parts[0]) and (
                dangerous is not None or _holds_git_code(folder, rel.parts[0])
            ):
                return f"{GIT_DIR_PREFIX}{folder}: {dangerous or rel.parts[0]}"
            if folder == self.workspace:
                break
            folder = folder.parent
        return None

    def resolve_read(self, raw: str, *, names_only: bool = False) -> Path:
        """`raw` resolved for reading; `names_only` for tools that show only the names below
        it (a secret location's names may be listed, its contents need the user's approval)."""
        verdict = self.classify(raw, write=False)
        return self._check(replace(verdict, secret=None) if names_only else verdict, raw,
                           write=False)

    def resolve_write(self, raw: str) -> Path:
        return self._check(self.classify(raw, write=True), raw, write=True)

    def _check(self, verdict: PathVerdict, raw: str, *, write: bool) -> Path:
        if verdict.allowed:
            return verdict.resolved
        where = f"{raw!r} (resolves to {verdict.resolved})"
        if verdict.own_data and verdict.protected is not None:
            raise PathRefused(
                f"Writing {where} is refused: it is inside Reins' own settings or data folder "
                f"({verdict.protected.removeprefix(REINS_PROTECTED_PREFIX)}), which tools may "
                f"never change.",
                hint="Write somewhere in the workspace instead.",
            )
        protected = verdict.protected
        if protected is not None:
            if protected.startswith(SAME_FILE_PREFIX):
                why = (f"it is another name (a hard link) of the protected file "
                       f"{protected.removeprefix(SAME_FILE_PREFIX)}: writing it changes that "
                       f"file")
            elif protected.startswith(GIT_DIR_PREFIX):
                why = (f"it would change what git runs or reads as configuration in the git "
                       f"directory {protected.removeprefix(GIT_DIR_PREFIX)}")
            elif protected.startswith(NAMED_PREFIX):
                why = (f"git runs it or reads it as configuration: it is what "
                       f"{protected.removeprefix(NAMED_PREFIX)} names")
            elif protected.startswith(LINK_PREFIX):
                why = (f"it is where the protected link {protected.removeprefix(LINK_PREFIX)} "
                       f"leads, and editors and git read it by that name")
            elif protected in self._patterns:
                why = (f"it matches the protected pattern {protected!r} (files that can run "
                       f"code or change tool settings)")
            else:
                why = f"it is inside the protected folder {protected}"
            raise PathRefused(
                f"Writing {where} is refused: {why}.",
                hint="Ask the user to make this change, or to approve writing this file.",
            )
        if verdict.secret is not None and not verdict.secret_approved:
            action = "Writing" if write else "Reading"
            what = (f"another name (a hard link) of the secret location {verdict.same_file}"
                    if verdict.same_file else "a secret location")
            raise PathRefused(
                f"{action} {where} is refused: it is {what} "
                f"({describe_secret(verdict.secret)}) and the user has not approved it for "
                f"this call.",
                hint="Only a call the user approves may read or change it; do without it if "
                "you can.",
            )
        action = "Writing" if write else "Reading"
        raise PathRefused(
            f"{action} {where} is refused: it is outside the workspace {self.workspace}.",
            hint="Use a path inside the workspace, or ask the user to allow this path.",
        )

    # -- I/O through directory file descriptors --------------------------------------------

    def _root_for(self, resolved: Path) -> Path:
        if resolved.is_relative_to(self.workspace):
            return self.workspace
        for root in sorted(self.extra, key=lambda p: len(p.parts), reverse=True):
            if resolved.is_relative_to(root):
                return root if root != resolved else root.parent
        return Path(resolved.anchor)

    @contextlib.contextmanager
    def open_parent(self, resolved: Path, *, create: bool = False) -> Iterator[int]:
        """A file descriptor of `resolved`'s parent folder, opened without following links.

        Walks from the workspace (or the approved root) one component at a time with
        O_NOFOLLOW, creating missing folders when `create` is set. A component that became
        a symlink or a file since the check makes this fail with PathRefused.
        """
        root = self._root_for(resolved)
        if resolved == root:
            root = Path(resolved.anchor)
        rel_parts = resolved.parent.relative_to(root).parts
        fd = os.open(root, _DIR_FLAGS)
        try:
            for part in rel_parts:
                next_fd = _open_child_dir(fd, part, create=create, target=resolved)
                os.close(fd)
                fd = next_fd
            yield fd
        finally:
            os.close(fd)

    def read_bytes(self, resolved: Path, *, max_bytes: int | None = None) -> bytes:
        """The content of an already-resolved file, opened without following a swapped link."""
        with self.open_parent(resolved) as dir_fd:
            fd = self._open_file(resolved, dir_fd, os.O_RDONLY | os.O_NONBLOCK)
            with os.fdopen(fd, "rb") as f:
                return f.read() if max_bytes is None else f.read(max_bytes)

    def open_read(self, resolved: Path) -> int:
        """A read-only fd of an already-resolved file (the caller closes it).

        Opened non-blocking, so a FIFO cannot hang the caller; check the type with fstat.
        """
        with self.open_parent(resolved) as dir_fd:
            return self._open_file(resolved, dir_fd, os.O_RDONLY | os.O_NONBLOCK)

    @staticmethod
    def _open_file(resolved: Path, dir_fd: int, flags: int) -> int:
        try:
            return os.open(
                resolved.name, flags | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), dir_fd=dir_fd
            )
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise PathRefused(
                    f"{resolved} became a symlink after the path was checked.",
                    hint="Check the path again; do not read or write through symlinks.",
                ) from exc
            raise

    def write_bytes(self, resolved: Path, data: bytes) -> bool:
        """Atomically replace (or create) an already-resolved file; creates parent folders.

        Returns True when the file existed before. The new content goes to a temporary file
        in the same folder (by dir fd) and is renamed over the target, so a reader never
        sees half a file and a symlink swapped in after the check is replaced, not followed.
        """
        with self.open_parent(resolved, create=True) as dir_fd:
            name = resolved.name
            mode = 0o666 & ~_UMASK
            existed = False
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
                existed = True
                if stat.S_ISREG(st.st_mode):
                    mode = stat.S_IMODE(st.st_mode)
            except FileNotFoundError:
                pass
            tmp = f".{name}.reins-{os.getpid()}-{os.urandom(4).hex()}.tmp"
            fd = os.open(
                tmp,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                0o600,
                dir_fd=dir_fd,
            )
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                    f.flush()
                    os.fchmod(f.fileno(), mode)
                os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp, dir_fd=dir_fd)
                raise
            return existed
