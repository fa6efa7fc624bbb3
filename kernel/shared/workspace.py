"""Which folders are too broad to be a session's workspace without the user's confirmation.

A session's tools read and write its workspace freely (depending on the mode), and commands
get it read-write in their sandbox. The home folder, `/`, a folder holding the home folder,
and the system's own folders expose far more than a project: every file the user owns, other
users' files, the system's configuration. Such a workspace needs an explicit confirmation
(`reins exec --allow-broad-workspace`, `NewSession.confirm_broad_workspace`), given after
the user has read what it exposes (`broad_workspace_reason`).

`broad_reason` is pure (paths in, words out); `broad_workspace_reason` resolves the paths.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

SYSTEM_TREES: tuple[str, ...] = (
    "/etc", "/proc", "/sys", "/dev", "/boot", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
    "/libx32", "/run", "/System",
)
"""Folders that belong to the system all the way down: they and everything in them."""

SYSTEM_FOLDERS: tuple[str, ...] = (
    "/usr", "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib64", "/usr/libexec", "/usr/share",
    "/usr/include", "/usr/local", "/usr/local/bin", "/usr/local/lib", "/var", "/var/lib",
    "/var/log", "/var/cache", "/var/tmp", "/tmp", "/opt", "/srv", "/mnt", "/media", "/home",
    "/Users", "/root", "/snap", "/nix", "/nix/store", "/private", "/Library", "/Applications",
    "/Volumes", "/lost+found",
)
"""Folders that are broad themselves, though a project may live inside them
(`/opt/app`, `/srv/site`, `/usr/local/src/tool`, `/tmp/build`)."""

EXPOSES = ("every file in it and below it: SSH keys, cloud and registry credentials, browser "
           "profiles, shell histories and the configuration of every program (secret "
           "locations still ask before they are read)")


def broad_reason(workspace: PurePosixPath, home: PurePosixPath) -> str | None:
    """Why `workspace` (absolute, resolved) is too broad for a session, else None.

    `home` is the user's home folder, resolved. The answer names the folder and what a
    session there exposes, for the confirmation the user is asked for."""
    if workspace == home:
        return f"{workspace} is your home folder: a session there reaches {EXPOSES}"
    if home.is_relative_to(workspace):
        what = "the root of the file system" if workspace == PurePosixPath("/") else (
            f"a folder that holds your home folder {home}")
        return (f"{workspace} is {what}: a session there reaches other users' files, the "
                f"system's and {EXPOSES}")
    for tree in SYSTEM_TREES:
        if workspace.is_relative_to(tree):
            return (f"{workspace} is a system folder ({tree}): a session there reaches the "
                    f"system's own files and configuration")
    if str(workspace) in SYSTEM_FOLDERS:
        return (f"{workspace} is a system or shared folder: a session there reaches other "
                f"users' and programs' files, and {EXPOSES}")
    return None


def broad_workspace_reason(path: os.PathLike[str] | str, home: os.PathLike[str] | str | None
                           = None) -> str | None:
    """`broad_reason` for a path as given (`~` expanded, links resolved); `home` defaults
    to the current user's home folder."""
    resolved = PurePosixPath(os.path.realpath(os.path.expanduser(os.fspath(path))))
    home_dir = Path.home() if home is None else Path(home)
    return broad_reason(resolved, PurePosixPath(os.path.realpath(home_dir)))
