"""The command environment is built from an allowlist; secrets are withheld and named."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel.sandbox.env import FIXED, SANE_PATH, build_env, looks_secret
from kernel.sandbox.settings import ExecSettings

SOURCE = {
    "USER": "ada",
    "LOGNAME": "ada",
    "SHELL": "/bin/zsh",
    "LANG": "de_DE.UTF-8",
    "LC_TIME": "en_GB.UTF-8",
    "TZ": "Europe/Berlin",
    "PATH": "/home/ada/evil-bin:/usr/bin",
    "HOME": "/home/ada",
    "TERM": "xterm-256color",
    "DISPLAY": ":0",
    "LD_PRELOAD": "/tmp/x.so",
    "ANTHROPIC_API_KEY": "sk-ant-canary",
    "GITHUB_TOKEN": "ghp-canary",
    "AWS_SECRET_ACCESS_KEY": "aws-canary",
    "DB_PASSWORD": "pw-canary",
    "NPM_CONFIG_REGISTRY": "https://registry.example",
    "MY_CREDENTIALS_FILE": "/home/ada/creds",
}


def env_for(settings: ExecSettings) -> tuple[dict[str, str], list[str]]:
    return build_env(settings, home=Path("/sbx/home"), tmpdir=Path("/tmp"), source=SOURCE)


def test_only_the_allowlist_is_inherited() -> None:
    env, withheld = env_for(ExecSettings())
    assert env["USER"] == "ada" and env["LOGNAME"] == "ada" and env["SHELL"] == "/bin/zsh"
    assert env["LANG"] == "de_DE.UTF-8" and env["LC_TIME"] == "en_GB.UTF-8"
    assert env["TZ"] == "Europe/Berlin"
    assert env["HOME"] == "/sbx/home" and env["TMPDIR"] == "/tmp"
    assert env["PATH"] == ":".join(SANE_PATH)
    for name, value in FIXED.items():
        assert env[name] == value
    assert env["TERM"] == "dumb" and env["GIT_TERMINAL_PROMPT"] == "0"
    for name in ("DISPLAY", "LD_PRELOAD", "NPM_CONFIG_REGISTRY", "ANTHROPIC_API_KEY"):
        assert name not in env
    assert not any("canary" in v for v in env.values())
    assert withheld == sorted(
        ["ANTHROPIC_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD",
         "MY_CREDENTIALS_FILE"]
    )


def test_passthrough_by_exact_name_but_secrets_need_an_opt_in() -> None:
    settings = ExecSettings(
        env_passthrough=("NPM_CONFIG_REGISTRY", "GITHUB_TOKEN", "DB_PASSWORD", "NOT_SET"),
        env_secret_opt_in=("DB_PASSWORD",),
    )
    env, withheld = env_for(settings)
    assert env["NPM_CONFIG_REGISTRY"] == "https://registry.example"
    assert env["DB_PASSWORD"] == "pw-canary"
    assert "GITHUB_TOKEN" not in env and "GITHUB_TOKEN" in withheld
    assert "DB_PASSWORD" not in withheld and "NOT_SET" not in env


def test_opt_in_alone_passes_nothing_and_passthrough_cannot_replace_fixed_values() -> None:
    settings = ExecSettings(
        env_secret_opt_in=("GITHUB_TOKEN",), env_passthrough=("HOME", "PATH", "TERM")
    )
    env, withheld = env_for(settings)
    assert "GITHUB_TOKEN" not in env and "GITHUB_TOKEN" in withheld
    assert env["HOME"] == "/sbx/home" and env["TERM"] == "dumb"
    assert "/home/ada/evil-bin" not in env["PATH"]


def test_extra_path_comes_first() -> None:
    env, _ = env_for(ExecSettings(extra_path=("/opt/node/bin",)))
    assert env["PATH"].split(":") == ["/opt/node/bin", *SANE_PATH]


@pytest.mark.parametrize(
    ("name", "secret"),
    [("ANTHROPIC_API_KEY", True), ("api_key", True), ("GH_TOKEN", True), ("SECRET", True),
     ("PGPASSWORD", True), ("GOOGLE_APPLICATION_CREDENTIALS", True), ("KEYRING", True),
     ("PATH", False), ("LANG", False), ("NODE_ENV", False)],
)
def test_looks_secret(name: str, secret: bool) -> None:
    assert looks_secret(name) is secret


def test_inside_the_sandbox_only_allowlisted_names_exist(
    run_cmd, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env-canary")
    monkeypatch.setenv("REINS_TEST_UNLISTED", "unlisted-canary")
    monkeypatch.setenv("LC_MESSAGES", "C")
    outcome, text = run_cmd("env")
    assert outcome.exit_code == 0
    names = {line.split("=", 1)[0] for line in text.splitlines() if "=" in line}
    allowed = {*FIXED, "PATH", "HOME", "TMPDIR", "USER", "LOGNAME", "SHELL", "LANG", "TZ",
               "PWD", "SHLVL", "OLDPWD", "_"}
    assert names - allowed <= {n for n in names if n.startswith("LC_")}
    assert "LC_MESSAGES" in names
    assert "canary" not in text
    assert "ANTHROPIC_API_KEY" in outcome.withheld_env


def test_nothing_waits_for_an_editor_or_a_prompt(run_cmd, workspace: Path) -> None:
    outcome, text = run_cmd(
        "git init -q . && git -c user.name=t -c user.email=t@example.com commit --allow-empty;"
        " echo rc=$?",
        timeout_s=30,
    )
    assert "rc=0" not in text and "rc=" in text
    assert "editor" in text.lower()
    assert not outcome.timed_out
