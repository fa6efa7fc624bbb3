"""The protected and secret entries of each workspace, before and after every command.

One `WorkspaceGuards` per executor keeps a workspace index (kernel.sandbox.workspace_index)
for each workspace its commands run in, refreshed in a worker thread (the first walk of a
large workspace takes a while; the event loop never waits on it):

- `marks(workspace)` before a command: what its sandbox hides and binds read-only;
- `undo(workspace, before, label)` after it: what it made anew that is not inert is moved to
  `<data>/quarantine/<label>`, and a protected link it removed or replaced is made again
  (kernel.sandbox.revert);
- `protected_links(workspace)` for the file tools: where each protected name that is a
  link (`.vscode -> shared`) leads, so a write there by its own name is protected too.
Reins' own folders (and the sandbox home in them) are not part of any workspace's index.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path

from kernel.pathrules import describe_secret, secret_match
from kernel.paths import AppPaths
from kernel.sandbox.marks import Mark
from kernel.sandbox.refusal import CommandRefused
from kernel.sandbox.revert import Reverted, quarantine, restore, to_restore, to_revert
from kernel.sandbox.workspace_index import WorkspaceIndex, with_led

KEPT = 8
"""Workspaces whose index is kept (each holds one inotify instance)."""


class WorkspaceGuards:
    def __init__(self, paths: AppPaths) -> None:
        self.paths = paths
        self._indexes: OrderedDict[str, WorkspaceIndex] = OrderedDict()
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
            index = self._indexes.get(key)
            if index is None:
                index = await asyncio.to_thread(self._current, key)
            else:
                self._indexes.move_to_end(key)
                if not index.current:  # else no thread hop: the usual case, nothing changed
                    await asyncio.to_thread(self._current, key)
            return with_led(key, index.marks)

    def _current(self, key: str) -> WorkspaceIndex:
        """The workspace's index, made or refreshed now (blocking)."""
        with self._using:
            index = self._indexes.get(key)
            if index is None:
                index = WorkspaceIndex(key, excluded=self._excluded())
                self._keep(key, index)
            elif not index.current:
                index.refresh()
            return index

    def protected_links(self, workspace: Path) -> dict[Path, str]:
        """Where each protected link of the workspace leads (resolved) → the link's path
        in the workspace. Blocking when the workspace was never indexed (a run makes its
        index as it starts, kernel.sandbox.executor.prepare) or changed a lot."""
        root = os.path.realpath(workspace)
        marks = self._current(root).marks
        return {Path(os.path.realpath(os.path.join(root, mark.path))): mark.path
                for mark in marks.values()
                if mark.entry == "link" and mark.kind in ("protected", "git-entry")}

    def _keep(self, key: str, index: WorkspaceIndex) -> None:
        self._indexes[key] = index
        while len(self._indexes) > KEPT:
            _key, evicted = self._indexes.popitem(last=False)
            evicted.close()

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
        for index in self._indexes.values():
            index.close()
        self._indexes.clear()

