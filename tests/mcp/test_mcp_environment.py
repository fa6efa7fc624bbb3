"""The environment of a stdio MCP server (kernel.mcp.environment), as tables; the login PATH
from real (fake) login shells."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from kernel.mcp.config import parse_server
from kernel.mcp.environment import (
    UnsafeEnvironment,
    clean_path,
    login_path,
    server_env,
)
from kernel.mcp.launch import ServerLaunch, direct_launch
from kernel.sandbox.settings import ExecSettings

SANDBOX_HOME = "/data/reins/sandbox-home"
HOME = "/home/ada"


def _env(source: dict[str, str], *, entry_env: dict[str, str] | None = None,
         settings: ExecSettings | None = None, login: str = "/usr/bin:/bin") -> dict[str, str]:
    config = parse_server("s", {"command": "x", "env": entry_env or {}})
    return server_env(config, source={"HOME": HOME, **source}, login_path=login,
                      writable=[Path(SANDBOX_HOME)], settings=settings)


PASSED = [
    ("USER", "ada"), ("LOGNAME", "ada"), ("SHELL", "/bin/zsh"), ("LANG", "de_DE.UTF-8"),
    ("LANGUAGE", "de:en"), ("LC_ALL", "C.UTF-8"), ("LC_MESSAGES", "C"), ("LC_TIME", "de_DE"),
    ("TZ", "Europe/Berlin"), ("TMPDIR", "/var/tmp/ada"), ("XDG_CONFIG_HOME", "/home/ada/.config"),
    ("XDG_CACHE_HOME", "/home/ada/.cache"), ("XDG_DATA_HOME", "/home/ada/.local/share"),
    ("XDG_STATE_HOME", "/home/ada/.local/state"), ("XDG_DATA_DIRS", "/usr/local/share:/usr/share"),
    ("XDG_CONFIG_DIRS", "/etc/xdg"),
]


@pytest.mark.parametrize(("name", "value"), PASSED)
def test_the_users_identity_locale_and_folders_are_passed(name: str, value: str) -> None:
    assert _env({name: value})[name] == value


WITHHELD = [
    # secrets, in several spellings
    "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "GITHUB_TOKEN", "gh_token",
    "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "DB_PASSWORD", "pgpassword", "MY_CREDENTIALS",
    "Google_Application_Credentials", "SSH_KEY_PATH", "NPM_TOKEN", "LC_SECRET",
    # the handles on the desktop session
    "DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR", "SSH_AUTH_SOCK",
    # no terminal; and what would make the server load other code
    "TERM", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONUSERBASE", "NODE_OPTIONS", "NODE_PATH",
    "LD_PRELOAD", "LD_LIBRARY_PATH", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_PARAMETERS", "BASH_ENV",
    "ENV", "ZDOTDIR", "npm_config_userconfig", "UV_CONFIG_FILE", "PIP_CONFIG_FILE",
    "REINS_HOME",
]


@pytest.mark.parametrize("name", WITHHELD)
def test_secrets_session_handles_and_code_loaders_are_withheld(name: str) -> None:
    assert name not in _env({name: "value-31f"})


@pytest.mark.parametrize("name", ["TMPDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME",
                                  "XDG_DATA_DIRS", "XDG_CONFIG_DIRS"])
@pytest.mark.parametrize("value", [SANDBOX_HOME, f"{SANDBOX_HOME}/.config",
                                   f"/usr/share:{SANDBOX_HOME}/.local/share",
                                   "relative/folder", f"{SANDBOX_HOME}/../sandbox-home/x"])
def test_a_folder_variable_pointing_where_commands_write_is_withheld(name: str,
                                                                     value: str) -> None:
    assert name not in _env({name: value})


@pytest.mark.parametrize(("login", "expected"), [
    ("/usr/bin:/bin", "/usr/bin:/bin"),
    (f"/opt/node/bin:{SANDBOX_HOME}/.local/bin:/usr/bin", "/opt/node/bin:/usr/bin"),
    (f"{SANDBOX_HOME}:/usr/bin", "/usr/bin"),
    (f"{SANDBOX_HOME}/:/usr/bin", "/usr/bin"),
    (f"{SANDBOX_HOME}//node_modules/.bin:/usr/bin", "/usr/bin"),
    (f"/usr/bin:{SANDBOX_HOME}/../sandbox-home/bin", "/usr/bin"),
    ("::/usr/bin:", "/usr/bin"),
    (".:/usr/bin", "/usr/bin"),
    ("node_modules/.bin:/usr/bin:bin", "/usr/bin"),
    ("/usr/bin:/usr/bin:/bin:/usr/bin", "/usr/bin:/bin"),
    (f"{SANDBOX_HOME}-other/bin", f"{SANDBOX_HOME}-other/bin"),
])
def test_path_keeps_only_absolute_folders_commands_cannot_write(login: str,
                                                                expected: str) -> None:
    assert _env({}, login=login)["PATH"] == expected
    assert clean_path(login, [SANDBOX_HOME]) == expected


def test_a_symlink_into_the_writable_folder_is_dropped_too(tmp_path: Path) -> None:
    writable = tmp_path / "sandbox-home"
    (writable / "bin").mkdir(parents=True)
    (tmp_path / "innocent").symlink_to(writable / "bin")
    assert clean_path(f"{tmp_path}/innocent:/usr/bin", [str(writable)]) == "/usr/bin"


def test_the_entry_env_is_passed_exactly_as_written() -> None:
    typed = {"GITHUB_TOKEN": "ghp_typed", "PYTHONPATH": f"{SANDBOX_HOME}/lib", "HOME": "/srv/x",
             "PATH": "/only/this", "EMPTY": ""}
    env = _env({"GITHUB_TOKEN": "from-the-kernel"}, entry_env=typed)
    assert {k: env[k] for k in typed} == typed


def test_commands_passthrough_applies_with_its_secret_opt_in() -> None:
    settings = ExecSettings(env_passthrough=("JAVA_HOME", "CORP_TOKEN", "ARTIFACT_KEY"),
                            env_secret_opt_in=("CORP_TOKEN",))
    env = _env({"JAVA_HOME": "/opt/jdk", "CORP_TOKEN": "t", "ARTIFACT_KEY": "k"},
               settings=settings)
    assert env["JAVA_HOME"] == "/opt/jdk" and env["CORP_TOKEN"] == "t"
    assert "ARTIFACT_KEY" not in env


@pytest.mark.parametrize("home", [SANDBOX_HOME, f"{SANDBOX_HOME}/x", "", "relative"])
def test_the_home_is_never_a_writable_folder(home: str) -> None:
    config = parse_server("s", {"command": "x"})
    try:
        env = server_env(config, source={"HOME": home}, login_path="/usr/bin",
                         writable=[Path(SANDBOX_HOME)])
    except UnsafeEnvironment:
        return
    assert env["HOME"] != home and os.path.isabs(env["HOME"])  # the password database's


def test_a_server_starts_in_its_cwd_or_its_home_and_its_command_is_found_on_its_path(
        tmp_path: Path) -> None:
    tool = tmp_path / "bin" / "my-server"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    env = {"HOME": HOME, "PATH": f"/nonexistent:{tool.parent}"}
    plain = direct_launch(parse_server("s", {"command": "my-server", "args": ["-v"]}), env)
    assert plain == ServerLaunch((str(tool), "-v"), env, HOME)
    placed = direct_launch(parse_server("s", {"command": "/opt/x", "cwd": "/srv"}), env)
    assert placed.argv == ("/opt/x",) and placed.cwd == "/srv"
    missing = direct_launch(parse_server("s", {"command": "nowhere"}), env)
    assert missing.argv == ("nowhere",)


# ---------------------------------------------------------------- login shells

def _shell(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def _login(source: dict[str, str], home: str, timeout_s: float = 3.0) -> str:
    return asyncio.run(login_path(source, home, timeout_s))


def test_the_login_shell_gets_login_and_interactive_flags_and_no_secret(tmp_path: Path) -> None:
    seen = tmp_path / "seen"
    shell = _shell(tmp_path, "sh1", f'echo "$@" > {seen}; env >> {seen}\n'
                                    'PATH=/from/profile:$PATH; export PATH\n'
                                    'for last; do :; done; exec /bin/sh -c "$last"\n')
    source = {"SHELL": shell, "PATH": "/usr/bin:/bin", "ANTHROPIC_API_KEY": "sk-canary",
              "GITHUB_TOKEN": "ghp-canary", "USER": "ada"}
    assert _login(source, str(tmp_path)) == "/from/profile:/usr/bin:/bin"
    text = seen.read_text()
    assert text.startswith("-l -i -c ")
    assert "canary" not in text and "USER=ada" in text and f"HOME={tmp_path}" in text


@pytest.mark.parametrize("noise", ["echo 'Welcome!'; echo __REINS", "printf 'no newline'",
                                   "echo; echo; echo 'PATH=/not/this'", "cat /etc/hostname"])
def test_what_the_profile_prints_around_the_markers_is_ignored(tmp_path: Path,
                                                               noise: str) -> None:
    shell = _shell(tmp_path, "sh2", f"{noise}\nPATH=/p:$PATH; export PATH\n"
                                    'for last; do :; done; /bin/sh -c "$last"\n'
                                    f"{noise}\n")
    assert _login({"SHELL": shell, "PATH": "/usr/bin"}, str(tmp_path)) == "/p:/usr/bin"


@pytest.mark.parametrize("body", ["exit 3\n", "exec sleep 30\n", ": prints nothing\n",
                                  "printf '%s' __REINS_LOGIN_PATH_7d1f__; sleep 30\n",
                                  "sleep 30 & wait\n"])
def test_a_login_shell_that_fails_hangs_or_says_nothing_gives_the_kernel_path(
        tmp_path: Path, body: str) -> None:
    shell = _shell(tmp_path, "sh3", body)
    started = time.monotonic()
    assert _login({"SHELL": shell, "PATH": "/kernel/bin"}, str(tmp_path), 1.0) == "/kernel/bin"
    assert time.monotonic() - started < 5.0


@pytest.mark.parametrize("shell", ["", "zsh", "/nonexistent/zsh", "/etc/hostname"])
def test_no_usable_shell_gives_the_kernel_path(tmp_path: Path, shell: str) -> None:
    source = {"PATH": "/kernel/bin", **({"SHELL": shell} if shell else {})}
    found = _login(source, str(tmp_path / shell.replace("/", "_")))
    assert found == "/kernel/bin" or not shell  # without SHELL: the password database's shell


def test_the_login_shell_runs_once_per_process_and_concurrent_starts_share_it(
        tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    shell = _shell(tmp_path, "sh4", f"echo run >> {runs}; sleep 0.3\nPATH=/once; export PATH\n"
                                    'for last; do :; done; exec /bin/sh -c "$last"\n')
    source = {"SHELL": shell, "PATH": "/usr/bin"}

    async def main() -> list[str]:
        return list(await asyncio.gather(*(login_path(source, str(tmp_path))
                                           for _ in range(5))))

    assert asyncio.run(main()) == ["/once"] * 5
    assert _login(source, str(tmp_path)) == "/once"
    assert runs.read_text() == "run\n"


def test_the_loop_keeps_running_while_the_shell_answers(tmp_path: Path) -> None:
    shell = _shell(tmp_path, "sh5", "/bin/sleep 0.5\nPATH=/slow; export PATH\n"
                                    'for last; do :; done; exec /bin/sh -c "$last"\n')

    async def main() -> int:
        ticks = 0
        task = asyncio.create_task(login_path({"SHELL": shell, "PATH": "/x"}, str(tmp_path)))
        while not task.done():
            ticks += 1
            await asyncio.sleep(0.01)
        assert task.result() == "/slow"
        return ticks

    assert asyncio.run(main()) > 10
