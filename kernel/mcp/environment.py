"""The environment of a stdio MCP server: the user's own, minus secrets, never the sandbox's.

A stdio server runs outside the sandbox, so nothing a sandboxed command can write may reach
it as configuration or code. `server_env` (the one function that builds it) gives, as
Claude Desktop does:
- `HOME`: the user's real home, so git identity and npm/uv caches work; never the sandbox
  home, which every command can write (a `.pth`, `sitecustomize.py` or `.gitconfig` planted
  there would run outside the sandbox at the server's next start or git call);
- `PATH`: the user's login PATH (nvm or Homebrew `node`, `~/.local/bin/uvx`), asked once per
  kernel process from the login shell (`login_path`), else the kernel's own PATH;
- the user's identity and locale, and where their files are: USER, LOGNAME, SHELL, LANG,
  LANGUAGE, LC_*, TZ, TMPDIR and the XDG base folders (XDG_CONFIG_HOME, XDG_DATA_HOME,
  XDG_CACHE_HOME, XDG_STATE_HOME, XDG_CONFIG_DIRS, XDG_DATA_DIRS);
- the variables the user passes to commands by name (`exec.env`; secret-looking ones only
  when opted in, as for commands);
- the entry's `env`, exactly as written (the user typed it: a secret there is their choice).

Withheld, whatever their value:
- every secret-looking name (`kernel.sandbox.env.looks_secret`, the one secret detector);
- the handles on the user's desktop session: DISPLAY, WAYLAND_DISPLAY,
  DBUS_SESSION_BUS_ADDRESS, XDG_RUNTIME_DIR (the D-Bus, keyring and agent sockets) and
  SSH_AUTH_SOCK (an agent signs with keys whose passphrase the server never had): a server
  that needs one gets it through its entry's `env`; Claude Desktop passes none of them;
- TERM: no terminal is attached, stdin and stdout are pipes;
- everything not named above (PYTHONPATH, NODE_OPTIONS, LD_PRELOAD, GIT_CONFIG_*, …).

A path that lies in a folder sandboxed commands can write (`writable`: the sandbox homes) is
never handed over: such PATH entries are dropped, as are relative and empty entries (they
mean the current folder), and so is a path variable pointing there. (Where the server starts
and how: kernel.mcp.launch.)
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import pwd
import signal
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from kernel.mcp.config import McpServerConfig
from kernel.sandbox.env import looks_secret
from kernel.sandbox.settings import ExecSettings

log = logging.getLogger(__name__)

IDENTITY = ("USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ")
"""Passed when set (plus every LC_* variable)."""
PATH_VARIABLES = ("TMPDIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME",
                  "XDG_STATE_HOME", "XDG_CONFIG_DIRS", "XDG_DATA_DIRS")
"""Passed when set, unless one of their folders is writable by sandboxed commands."""
LOGIN_SHELL_TIMEOUT_S = 3.0
_MARK = "__REINS_LOGIN_PATH_7d1f__"
_PRINT_PATH = f"echo '{_MARK}'\"$PATH\"'{_MARK}'"
"""Builtins only, one spelling for sh, bash, zsh, fish and csh (fish joins a quoted $PATH
with colons); the markers set the PATH apart from what the profile prints."""

class UnsafeEnvironment(ValueError):
    """No home outside the folders sandboxed commands can write: the server is not started."""


def server_env(
    config: McpServerConfig,
    *,
    source: Mapping[str, str],
    login_path: str,
    writable: Iterable[Path],
    settings: ExecSettings | None = None,
) -> dict[str, str]:
    """The complete environment of the stdio server `config` (see the module docstring).

    `source` is the kernel's environment, `login_path` the user's login PATH, `writable`
    the folders sandboxed commands can write. Raises UnsafeEnvironment when the user's
    home is one of them.
    """
    roots = real_roots(writable)
    env = user_variables(source, roots)
    settings = settings or ExecSettings()
    opted_in = set(settings.env_secret_opt_in)
    for name in settings.env_passthrough:
        if name in source and (not looks_secret(name) or name in opted_in):
            env[name] = source[name]
    env["PATH"] = clean_path(login_path, roots)
    return {**env, **config.env}


def user_variables(source: Mapping[str, str], roots: Sequence[str]) -> dict[str, str]:
    """HOME (the real one), identity, locale and the XDG folders of `source`, none in the
    writable `roots` (resolved folders); no secret."""
    env = {name: source[name] for name in IDENTITY if name in source}
    env.update((n, v) for n, v in source.items() if n.startswith("LC_"))
    for name in PATH_VARIABLES:
        value = source.get(name)
        if value and all(_safe_folder(p, roots) for p in value.split(os.pathsep)):
            env[name] = value
    env["HOME"] = real_home(source, roots)
    return {n: v for n, v in env.items() if not looks_secret(n)}


def real_home(source: Mapping[str, str], roots: Sequence[str]) -> str:
    """The user's home: `$HOME`, else the password database's; never in the writable
    `roots`."""
    for home in (source.get("HOME", ""), _passwd_home()):
        if home and _safe_folder(home, roots):
            return home
    raise UnsafeEnvironment("the user's home is not set, or lies in a folder sandboxed "
                            "commands can write; a server started there would run what "
                            "they planted")


def clean_path(path: str, roots: Sequence[str]) -> str:
    """`path` without empty, relative or repeated entries and without folders in the
    writable `roots`."""
    kept = [p for p in path.split(os.pathsep) if _safe_folder(p, roots)]
    return os.pathsep.join(dict.fromkeys(kept))


def real_roots(writable: Iterable[Path | str]) -> list[str]:
    """The folders sandboxed commands can write, symlinks resolved."""
    return [os.path.realpath(p) for p in writable]


def _safe_folder(path: str, roots: Sequence[str]) -> bool:
    if not os.path.isabs(path):
        return False
    real = os.path.realpath(path)
    return not any(real == r or real.startswith(r.rstrip("/") + "/") for r in roots)


def _passwd_home() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return ""


def _passwd_shell() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_shell
    except KeyError:
        return ""


# ---------------------------------------------------------------- the login PATH

_resolved: dict[tuple[str, str], str] = {}
_running: dict[tuple[str, str, int], asyncio.Task[str]] = {}


async def login_path(source: Mapping[str, str], home: str,
                     timeout_s: float = LOGIN_SHELL_TIMEOUT_S) -> str:
    """The PATH the user's login shell sets up (`$SHELL -l -i -c`), once per shell and
    home in this process; the kernel's own PATH when the shell cannot tell in `timeout_s`.

    Runs as an asyncio subprocess (the loop is never blocked); concurrent callers share
    one run; the answer, found or not, is kept for the life of the process.
    """
    shell = source.get("SHELL") or _passwd_shell()
    key = (shell, home)
    if key in _resolved:
        return _resolved[key]
    run_key = (shell, home, id(asyncio.get_running_loop()))
    task = _running.get(run_key)
    if task is None:
        task = asyncio.create_task(_resolve(shell, home, source, timeout_s))
        _running[run_key] = task
        task.add_done_callback(lambda _t: _running.pop(run_key, None))
    found = await asyncio.shield(task)
    _resolved[key] = found
    return found


async def _resolve(shell: str, home: str, source: Mapping[str, str], timeout_s: float) -> str:
    fallback = source.get("PATH", os.defpath)
    if not os.path.isabs(shell) or not os.access(shell, os.X_OK):
        log.warning("no usable login shell (%r); MCP servers get Reins' own PATH", shell)
        return fallback
    env = {**user_variables(source, ()), "HOME": home, "PATH": fallback, "TERM": "dumb"}
    try:
        found = await _ask_shell(shell, home, env, timeout_s)
    except (OSError, TimeoutError) as exc:
        log.warning("the login shell %s gave no PATH within %g s (%s); MCP servers get "
                    "Reins' own PATH", shell, timeout_s, exc or type(exc).__name__)
        return fallback
    if not found:
        log.warning("the login shell %s printed no PATH; MCP servers get Reins' own PATH",
                    shell)
        return fallback
    return found


async def _ask_shell(shell: str, home: str, env: Mapping[str, str], timeout_s: float) -> str:
    """What the shell prints between the markers; its whole process group ends after."""
    process = await asyncio.create_subprocess_exec(
        shell, "-l", "-i", "-c", _PRINT_PATH, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, env=dict(env),
        cwd=home if os.path.isdir(home) else "/", start_new_session=True)
    assert process.stdout is not None
    output = b""
    try:
        async with asyncio.timeout(timeout_s):
            while output.count(_MARK.encode()) < 2:
                chunk = await process.stdout.read(65536)
                if not chunk:
                    break
                output += chunk
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        await process.wait()
    parts = output.decode("utf-8", "replace").split(_MARK)
    return parts[1].strip() if len(parts) >= 3 and "\0" not in parts[1] else ""
