"""Every place Reins keeps things on disk. This module is the only one that knows them.

`REINS_HOME`, when set, holds everything (data, config and cache) under one folder: tests
and portable installs use it. Otherwise data goes to `platformdirs.user_data_dir("reins")`,
settings to `platformdirs.user_config_dir("reins")`, what can be made again (a built
llama-server, a downloaded model) to `platformdirs.user_cache_dir("reins")`.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import platformdirs

ENV_HOME = "REINS_HOME"
APP_NAME = "reins"
_SESSION_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
_CALL_ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


class UnsafeIdentifier(ValueError):
    """An identifier that is not safe to use as a path component."""


def check_session_id(session_id: str) -> str:
    if not isinstance(session_id, str) or not _SESSION_ID.match(session_id):
        raise UnsafeIdentifier(f"session id {session_id!r} must match {_SESSION_ID.pattern}")
    return session_id


def check_call_id(call_id: str) -> str:
    if not isinstance(call_id, str) or not _CALL_ID.match(call_id):
        raise UnsafeIdentifier(f"call id {call_id!r} must match {_CALL_ID.pattern}")
    return call_id


@dataclass(frozen=True)
class AppPaths:
    data: Path
    config: Path
    cache_root: Path | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> AppPaths:
        env = os.environ if environ is None else environ
        home = env.get(ENV_HOME)
        if home:
            root = Path(home).expanduser().resolve()
            return cls(data=root / "data", config=root / "config")
        return cls(
            data=Path(platformdirs.user_data_dir(APP_NAME)),
            config=Path(platformdirs.user_config_dir(APP_NAME)),
            cache_root=Path(platformdirs.user_cache_dir(APP_NAME)),
        )

    @property
    def cache(self) -> Path:
        """What can be made again (a built llama-server, a downloaded model): the user's
        cache folder, or `cache` beside the data (under REINS_HOME)."""
        return self.cache_root or self.data.parent / "cache"

    @property
    def database(self) -> Path:
        return self.data / "reins.sqlite3"

    @property
    def settings_file(self) -> Path:
        return self.config / "settings.json"

    @property
    def logs(self) -> Path:
        return self.data / "logs"

    @property
    def sandbox_homes(self) -> Path:
        """The folder of the sandbox homes, one per workspace (commands write them)."""
        return self.data / "sandbox-homes"

    def sandbox_home_for(self, workspace: Path) -> Path:
        """The home folder commands in `workspace` see (and may write) inside the sandbox: one
        per workspace, so nothing a command plants there (a `.pth`, a `~/.gitconfig`) runs in
        another workspace's commands. Named `BASENAME-HASH`, the hash of the resolved path."""
        resolved = str(workspace.resolve())
        digest = hashlib.sha256(resolved.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        base = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(resolved))[:40].lstrip(".")
        return self.sandbox_homes / f"{base or 'root'}-{digest}"

    @property
    def scratch(self) -> Path:
        """The scratch workspaces: one folder per session started without a project folder
        (`new_scratch_workspace`). Beside the data folder, not in it: Reins' own folders
        (`protected`) are closed to every tool and hidden from every command, and a
        workspace is the tools' to read and write."""
        return self.data.with_name(self.data.name + "-scratch")

    def new_scratch_workspace(self, now: float) -> Path:
        """A new, empty scratch workspace (0700), named by its time `now` and a random tail
        (`2026-12-05-121530-a1b2c3`)."""
        import secrets
        import time

        stamp = time.strftime("%Y-%m-%d-%H%M%S", time.localtime(now))
        self.scratch.mkdir(mode=0o700, parents=True, exist_ok=True)
        folder = self.scratch / f"{stamp}-{secrets.token_hex(3)}"
        folder.mkdir(mode=0o700)
        return folder

    def is_scratch(self, workspace: Path | str) -> bool:
        """`workspace` is one of the scratch workspaces (a folder directly in `scratch`)."""
        return Path(os.path.realpath(workspace)).parent == Path(os.path.realpath(self.scratch))

    @property
    def api_key_file(self) -> Path:
        """The API key, for a system with no keyring whose user chose to keep it in a file
        (kernel.shared.keyfile: mode 0600), as Claude Code does on Linux."""
        return self.config / "api-key"

    @property
    def checkpoints(self) -> Path:
        """What undo needs: the bytes applied changes replaced, and their index."""
        return self.data / "checkpoints"

    def session_dir(self, session_id: str) -> Path:
        return self.data / "sessions" / check_session_id(session_id)

    def tool_results_dir(self, session_id: str) -> Path:
        return self.session_dir(session_id) / "tool-results"

    def protected(self) -> tuple[Path, ...]:
        """Reins' own settings, data and cache (which holds programs Reins runs, such as a
        built llama-server): never writable by a tool."""
        return (self.config, self.data, self.cache)
