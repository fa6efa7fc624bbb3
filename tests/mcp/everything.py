"""`@modelcontextprotocol/server-everything` (the MCP reference test server, from npm) for
the tests: installed once into a cache folder, started with the system's `node`.

    python -m tests.mcp.everything      # install it now (tests/system_deps.sh does)

The tests that need it skip, saying why, when Node or npm is missing or the package cannot
be fetched (offline); here both are expected, so a skip is visible in the summary.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

PACKAGE = "@modelcontextprotocol/server-everything"
VERSION = "2026.8.31"
INSTALL_TIMEOUT_S = 600


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "reins-tests" / f"server-everything-{VERSION}"


def entry_script() -> Path:
    return cache_dir() / "node_modules" / PACKAGE / "dist" / "index.js"


def install() -> str:
    """Install the package into the cache when it is not there; '' when ready, else why
    it cannot be used."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return "node and npm are not installed (Debian: apt-get install nodejs npm)"
    if entry_script().is_file():
        return ""
    folder = cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix",
                               str(folder), f"{PACKAGE}@{VERSION}"], capture_output=True,
                              text=True, timeout=INSTALL_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"npm install {PACKAGE}@{VERSION} failed: {exc}"
    if done.returncode != 0 or not entry_script().is_file():
        tail = " | ".join(done.stderr.strip().splitlines()[-3:])
        return f"npm install {PACKAGE}@{VERSION} failed (offline?): {tail}"
    return ""


def everything_entry(**extra: Any) -> dict[str, Any]:
    """The mcpServers entry that runs it over stdio (the package must be installed)."""
    return {"command": shutil.which("node") or "node", "args": [str(entry_script()), "stdio"],
            **extra}


if __name__ == "__main__":
    problem = install()
    sys.stdout.write(f"server-everything: {problem or 'cached in ' + str(cache_dir())}\n")
    sys.exit(0)
