"""The protected and secret entries of each workspace, before and after every command.

One `WorkspaceGuards` per executor keeps a workspace index (kernel.sandbox.workspace_index)
for each workspace its commands run in, refreshed in a worker thread (the first walk of a
large workspace takes a while; the event loop never waits on it):

- `marks(workspace)` before a command: what its sandbox hides and binds read-only;
- `undo(workspace, before, label)` after it: what it made anew that is not inert is moved to
  `<data>/quarantine/<label>`, and a protected link it removed or replaced is made again
  (kernel.sandbox.revert);
- `protected_links(workspace)` for the file tools: where each protected name that is a
  link (`.vscode -> shared`) leads, so a write there by its own name is protected too,
  each other name (hard link) of a secret or protected file (kernel.sandbox.samefiles),
  and what a repository's git config names that git runs or reads (kernel.sandbox.git_named:
  `core.hooksPath`'s folder, included files, at any depth where git may run from any
  folder), whether it exists yet or not.
Reins' own folders (and the sandbox home in them) are not part of any workspace's index.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path

from kernel.hardlinks import Named, verdict_text
from kernel.pathrules import describe_secret, secret_match
from kernel.paths import AppPaths
from kernel.sandbox.bwrap import hidden_secrets
from kernel.sandbox.git_named import NamedPaths, named_paths, protected_paths
from kernel.sandbox.marks import Mark
from kernel.sandbox.refusal import CommandRefused
from kernel.sandbox.revert import Reverted, quarantine, restore, to_restore, to_revert
from kernel.sandbox.samefiles import SameFiles, look_up, same_marks, with_same
from kernel.sandbox.view import holds_home
from kernel.sandbox.workspace_index import WorkspaceIndex, sandbox_marks

KEPT = 8
"""Workspaces whose index is kept (each holds one inotify instance)."""


def _named(root: str, index: WorkspaceIndex) -> NamedPaths:
    return named_paths(root, index.marks, home=str(Path.home()), environ=os.environ)


def folder_secrets(folder: str, index: WorkspaceIndex, home: str) -> tuple[tuple[str, bool], ...]:
    """The secret locations of a folder shown read-only (its `index`'s, at any depth), and
    the other names (hard links) there of a secret file of it or of the home
    (kernel.sandbox.samefiles): (absolute path, is a folder), outermost first."""
    same = same_marks(folder, look_up(home, folder, index.marks), index.linked)
    return tuple(hidden_secrets(folder, with_same(index.marks, same).values()))


class WorkspaceGuards:
    def __init__(self, paths: AppPaths) -> None:
        self.paths = paths
        self._indexes: OrderedDict[str, WorkspaceIndex] = OrderedDict()
        self._shown: dict[str, WorkspaceIndex] = {}
        """The folders of `exec.read_only_paths`, indexed for their secrets."""
        self._shown_found: dict[str, tuple[tuple[str, bool], ...]] = {}
        """Each of those folders' secrets, as last found (`folder_secrets`)."""
        self._shown_lock = asyncio.Lock()
        """One caller of those indexes at a time (commands of one batch run together)."""
        self._same: dict[str, SameFiles] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._using = threading.Lock()
        """Held while an index is built or refreshed (a worker thread, or the loop's
        `protected_links`): an index takes one caller at a time."""

    def _excluded(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(
            os.path.realpath(p) for p in (self.paths.config, self.paths.data)))

    async def marks(self, workspace: Path) -> dict[str, Mark]:
        """The workspace's marks now (a copy). Raises CommandRefused for a workspace in
        a secret location (every command would show it)."""
        secret = secret_match(workspace.as_posix())
        if secret is not None:
            raise CommandRefused(
                f"The command was not run: the workspace {workspace} lies in a secret "
                f"location ({describe_secret(secret)}), which commands never see.",
                hint="Open a session on a project folder instead.",
                kind="permission_denied")
        key = str(workspace)
        async with self._locks.setdefault(key, asyncio.Lock()):
            known = self._indexes.get(key)
            if known is None:
                index, named = await asyncio.to_thread(self._current, key)
            else:
                self._indexes.move_to_end(key)
                index, named = known, _named(key, known)
                if (not index.current or not self._same[key].quiet(index.marks)
                        or named.names != index.names):
                    index, named = await asyncio.to_thread(self._current, key)  # else no
                    # thread hop: the usual case, nothing changed
            return sandbox_marks(key, index, self._same[key].marks(index.linked), named)

    async def shown_secrets(self, folders: Sequence[Path], home: Path
                            ) -> tuple[tuple[str, bool], ...]:
        """The secret locations at any depth of the folders the user shows every command
        read-only (`exec.read_only_paths`; none that holds the home: kernel.sandbox.view
        does not show those): (absolute path, is a folder), outermost first. A project
        shown there (`/srv/projects`) is no route to its `.env`: the one list of secret
        locations holds inside what is shown, as inside a workspace. One index of each,
        kept current by inotify as a workspace's (the first command pays its walk; later
        ones, when nothing changed, no thread hop)."""
        shown = [str(f) for f in folders if f.is_dir() and not holds_home(str(f), str(home))]
        if not shown:
            return ()
        async with self._shown_lock:
            if not all(folder in self._shown_found and self._shown[folder].current
                       for folder in shown):
                await asyncio.to_thread(self._shown_now, shown, str(home))
            found = [secret for folder in shown for secret in self._shown_found[folder]]
            return tuple(sorted(dict.fromkeys(found)))

    def _shown_now(self, folders: Sequence[str], home: str) -> None:
        """Index the folders not indexed yet, refresh those that changed, and find their
        secrets again (`_shown_found`)."""
        with self._using:
            for folder in folders:
                index = self._shown.get(folder)
                if index is None:
                    index = WorkspaceIndex(folder, excluded=self._excluded())
                    self._shown[folder] = index
                elif index.current and folder in self._shown_found:
                    continue
                else:
                    index.refresh()
                self._shown_found[folder] = folder_secrets(folder, index, home)

    def _current(self, key: str) -> tuple[WorkspaceIndex, NamedPaths]:
        """The workspace's index, made or refreshed now (blocking), following what its git
        configs name at any depth, and that."""
        with self._using:
            index = self._indexes.get(key)
            if index is None:
                index = WorkspaceIndex(key, excluded=self._excluded())
                self._keep(key, index)
            elif not index.current:
                index.refresh()
            named = _named(key, index)
            index.follow(named.names)
            same = self._same.setdefault(key, SameFiles(str(Path.home()), key))
            if same.current(index.marks, index.linked):
                index.rescan()
                same.current(index.marks, index.linked)
            return index, named

    def protected_links(self, workspace: Path) -> dict[Path, str]:
        """Where each protected link of the workspace leads (resolved) → the link's path
        in the workspace; each other name in the workspace of a secret or protected file →
        that file (kernel.hardlinks.verdict_text), and each such file with other names →
        itself, for a name the walk does not meet (PathPolicy compares inodes). Blocking
        when the workspace was never indexed (a run makes its index as it starts,
        kernel.sandbox.executor.prepare) or changed a lot."""
        root = os.path.realpath(workspace)
        index, configs_name = self._current(root)
        with self._using:  # the file tools' threads call this while a command's refresh runs
            marks, same = list(index.marks.values()), self._same[root].marks(index.linked)
            several = [n for n in self._same[root].files.values() if n.nlink > 1]
            found = dict(index.named)
        links = {Path(os.path.realpath(os.path.join(root, mark.path))): mark.path
                 for mark in marks
                 if mark.entry == "link" and mark.kind in ("protected", "git-entry")}
        for rel, mark in same.items():
            links[Path(root, rel)] = verdict_text(Named(
                mark.same_as, "secret" if mark.kind == "secret" else "protected", mark.rule, 0))
        for named in several:  # for names the walk does not meet (inside .git, outside)
            links.setdefault(Path(named.path), verdict_text(named))
        for path, text in protected_paths(root, configs_name, found).items():
            links.setdefault(path, text)
        return links

    def _keep(self, key: str, index: WorkspaceIndex) -> None:
        self._indexes[key] = index
        while len(self._indexes) > KEPT:
            evicted, index = self._indexes.popitem(last=False)
            index.close()
            same = self._same.pop(evicted, None)
            if same is not None:
                same.close()

    async def undo(self, workspace: Path, before: Mapping[str, Mark], label: str
                   ) -> tuple[Reverted, ...]:
        """Move what the command made anew (see kernel.sandbox.revert) into the quarantine."""
        after = await self.marks(workspace)
        marks = to_revert(workspace, before, after)
        links = to_restore(before, after)
        if not marks and not links:
            return ()
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        folder = self.paths.data / "quarantine" / f"{stamp}-{label}"

        def undo_now() -> list[Reverted]:
            return quarantine(workspace, marks, folder) + restore(workspace, links)

        return tuple(await asyncio.to_thread(undo_now))

    def close(self) -> None:
        for index in (*self._indexes.values(), *self._shown.values()):
            index.close()
        for same in self._same.values():
            same.close()
        self._indexes.clear()
        self._shown.clear()
        self._shown_found.clear()
        self._same.clear()

