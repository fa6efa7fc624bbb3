"""What each command loads (each costs start-up time): `reins --help` and `reins doctor` no
model or MCP SDK, nor keyring (read in a child), nor the policy's deciding, events or tools
(the settings are read without them); `doctor` neither the session store nor asyncio;
`reins exec` with no MCP server configured not the MCP SDK, nor PIL with no image; neither
loads jsonschema for settings that load (kernel.tools.quickschema vouches for them; the built-in
tools' schemas are vouched for by kernel.tools.metaschema) nor the UI protocol; a bad
settings file is still explained by jsonschema, naming its line."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bench.bench_startup import SETTINGS as BENCH_SETTINGS
from kernel.fakemodel import reply
from tests.cli.conftest import Cli

CHECK = ("import json, sys\n"
         "from kernel.cli.main import main\n"
         "try:\n"
         "    rc = main({argv!r})\n"
         "except SystemExit as exc:\n"
         "    rc = exc.code\n"
         "loaded = [name for name in {watched!r} if name in sys.modules]\n"
         "sys.stderr.write('LOADED ' + json.dumps(loaded) + '\\n')\n"
         "sys.exit(rc)\n")


WATCHED = ("anthropic", "mcp", "mcp_types", "httpx2", "keyring", "jsonschema", "sqlite3",
           "kernel.agent.store", "kernel.protocol", "PIL", "asyncio",
           # the policy's deciding, the events and the tools: not for reading the settings
           "kernel.policy.decide", "kernel.events", "kernel.tools.spec")


def _loaded(cli: Cli, argv: list[str]) -> tuple[int, list[str]]:
    done = subprocess.run([sys.executable, "-c", CHECK.format(argv=argv, watched=WATCHED)],
                          env=cli.env,
                          cwd=cli.workspace, capture_output=True, text=True, timeout=120,
                          check=False)
    line = next(x for x in done.stderr.splitlines() if x.startswith("LOADED "))
    return done.returncode, json.loads(line.removeprefix("LOADED "))


@pytest.mark.parametrize("argv", [["--help"], ["exec", "--help"], ["export", "--help"],
                                  ["undo", "--help"]])
def test_help_loads_nothing_watched(cli: Cli, argv: list[str]) -> None:
    code, loaded = _loaded(cli, argv)
    assert code == 0
    assert loaded == []


def test_doctor_loads_nothing_watched(cli: Cli) -> None:
    """Not even keyring: the key is read in a child interpreter (kernel.runtime.ahead.in_child)."""
    assert not cli.paths.settings_file.exists()
    code, loaded = _loaded(cli, ["doctor"])
    assert code in (0, 1)
    assert loaded == []


def test_exec_without_mcp_servers_or_settings_loads_the_model_sdk(cli: Cli) -> None:
    assert not cli.paths.settings_file.exists()
    cli.server.add(reply("Hello."))
    code, loaded = _loaded(cli, ["exec", "--json", "say hello"])
    assert code == 0
    assert {"anthropic", "sqlite3", "asyncio"} <= set(loaded)
    assert "keyring" not in loaded  # read in a child interpreter
    assert not {"mcp", "mcp_types", "jsonschema", "kernel.protocol", "PIL"} & set(loaded)
    assert len(cli.server.requests) == 1


def test_a_settings_file_is_still_validated_with_jsonschema(cli: Cli) -> None:
    cli.paths.settings_file.parent.mkdir(parents=True, exist_ok=True)
    cli.paths.settings_file.write_text('{"default_mode": "sometimes"}')
    code, loaded = _loaded(cli, ["doctor"])
    assert code == 1
    assert "jsonschema" in loaded


def test_settings_that_load_need_no_jsonschema(cli: Cli) -> None:
    """The bench's settings file: rules, an `exec` section and an MCP server."""
    cli.paths.settings_file.parent.mkdir(parents=True, exist_ok=True)
    cli.paths.settings_file.write_text(json.dumps(BENCH_SETTINGS, indent=2))
    code, loaded = _loaded(cli, ["doctor"])
    assert code in (0, 1)
    assert "jsonschema" not in loaded
    assert "INVALID" not in cli.run("doctor").stdout


@pytest.mark.parametrize("command", [["doctor"], ["exec", "--json", "say hello"]])
def test_a_bad_settings_file_is_reported_naming_its_line(cli: Cli, command: list[str]) -> None:
    cli.paths.settings_file.parent.mkdir(parents=True, exist_ok=True)
    bad = BENCH_SETTINGS | {"exec": {"env": ["JAVA_HOME"], "limits": {"memory_mb": 15}}}
    text = json.dumps(bad, indent=2)
    assert text.splitlines()[21] == '      "memory_mb": 15'
    cli.paths.settings_file.write_text(text)
    done = cli.run(*command)
    said = done.stdout + done.stderr
    assert (f"{cli.paths.settings_file}:22: exec/limits/memory_mb: 15 is less than the "
            f"minimum of 16") in said
    assert done.returncode in (1, 2) and cli.server.requests == []
