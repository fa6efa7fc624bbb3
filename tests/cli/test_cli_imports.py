"""What each command loads: `reins --help` and `reins doctor` no model or MCP SDK,
`reins exec` with no MCP server configured not the MCP SDK (it costs start-up time)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kernel.fakemodel import reply
from tests.cli.conftest import Cli

CHECK = ("import json, sys\n"
         "from kernel.cli import main\n"
         "try:\n"
         "    rc = main({argv!r})\n"
         "except SystemExit as exc:\n"
         "    rc = exc.code\n"
         "loaded = sorted({{m.split('.')[0] for m in sys.modules}} & {{'anthropic', 'mcp',"
         " 'mcp_types', 'httpx2'}})\n"
         "sys.stderr.write('LOADED ' + json.dumps(loaded) + '\\n')\n"
         "sys.exit(rc)\n")


def _loaded(cli: Cli, argv: list[str]) -> tuple[int, list[str]]:
    done = subprocess.run([sys.executable, "-c", CHECK.format(argv=argv)], env=cli.env,
                          cwd=cli.workspace, capture_output=True, text=True, timeout=120,
                          check=False)
    line = next(x for x in done.stderr.splitlines() if x.startswith("LOADED "))
    return done.returncode, json.loads(line.removeprefix("LOADED "))


@pytest.mark.parametrize("argv", [["--help"], ["exec", "--help"], ["doctor"]])
def test_help_and_doctor_load_no_sdk(cli: Cli, argv: list[str]) -> None:
    code, loaded = _loaded(cli, argv)
    assert code in (0, 1)
    assert loaded == []


def test_exec_without_mcp_servers_loads_the_model_sdk_only(cli: Cli) -> None:
    cli.server.add(reply("Hello."))
    code, loaded = _loaded(cli, ["exec", "--json", "say hello"])
    assert code == 0
    assert "anthropic" in loaded and "mcp" not in loaded and "mcp_types" not in loaded
    assert len(cli.server.requests) == 1
