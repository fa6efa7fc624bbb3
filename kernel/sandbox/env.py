"""The environment of a command: built from an allowlist, never inherited.

Nothing of the kernel's own environment reaches a command except the allowlisted names, the
user's exact-name additions, and (only with an explicit opt-in) secret-looking variables.
The names that were held back are returned so the model can be told (names only).
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
from collections.abc import Mapping
from pathlib import Path

from kernel.sandbox.settings import ExecSettings

SANE_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
INHERITED = ("USER", "LOGNAME", "SHELL", "LANG", "TZ")
"""Copied from the kernel's environment when set (plus every LC_* variable)."""
FIXED = {
    "TERM": "dumb",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
    "EDITOR": "false",
    "VISUAL": "false",
    "GIT_EDITOR": "false",
}
"""Set so that nothing waits on a prompt, a pager or an editor (`false` fails at once)."""
SECRET_PATTERNS = ("*KEY*", "*SECRET*", "*TOKEN*", "*PASSWORD*", "*CREDENTIAL*")
API_KEY_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


_SECRET = re.compile("|".join(fnmatch.translate(p) for p in SECRET_PATTERNS))


@functools.lru_cache(maxsize=4096)
def looks_secret(name: str) -> bool:
    upper = name.upper()
    return upper in API_KEY_VARIABLES or _SECRET.match(upper) is not None


def build_env(
    settings: ExecSettings,
    *,
    home: Path,
    tmpdir: Path,
    source: Mapping[str, str] | None = None,
) -> tuple[dict[str, str], list[str]]:
    """The child environment and the sorted names withheld from it.

    Withheld: every secret-looking variable of `source` (default: the kernel's environment)
    that is not explicitly opted in, and every passthrough name that was dropped.
    """
    parent = dict(os.environ if source is None else source)
    env = {name: parent[name] for name in INHERITED if name in parent}
    env.update((name, value) for name, value in parent.items() if name.startswith("LC_"))
    withheld: set[str] = set()
    opted_in = set(settings.env_secret_opt_in)
    for name in settings.env_passthrough:
        if name not in parent:
            continue
        if looks_secret(name) and name not in opted_in:
            withheld.add(name)
        else:
            env[name] = parent[name]
    withheld.update(n for n in parent if n not in env and looks_secret(n))
    env.update(FIXED)
    env["PATH"] = os.pathsep.join((*settings.extra_path, *SANE_PATH))
    env["HOME"] = str(home)
    env["TMPDIR"] = str(tmpdir)
    return env, sorted(withheld)
