"""The command line's exit codes and its usage error (shared by `reins` and its commands)."""

from __future__ import annotations

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_LIMIT = 0, 1, 2, 3


class UsageError(Exception):
    """Bad usage: exit code 2 with this message."""
