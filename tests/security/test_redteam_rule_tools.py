"""Red team: a permission rule naming a tool Reins does not have is refused when the settings
load, never kept as a rule that silently matches nothing. A user who copies Claude Code's
`Bash(curl *)` into `permissions.deny` believes curl is denied; in Reins no tool is called
Bash, so the rule would deny nothing. The error names the entry and its line and, for Claude
Code's tool names, says what to write in Reins."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernel.mcp.naming import tool_name
from kernel.mcp.resources import TOOL_NAME as MCP_RESOURCES
from kernel.paths import AppPaths
from kernel.policy.rules import (
    BUILTIN_TOOLS,
    COMMAND_TOOLS,
    RuleError,
    SpecKind,
    parse_rule,
    parse_setting_rule,
)
from kernel.policy.settings import (
    SettingsError,
    change_settings,
    load_settings,
    parse_settings,
    settings_problems,
)
from kernel.runtime.assemble import open_kernel
from kernel.setting_records import SettingChange

# (rule, what the error must say: the Reins spelling to write, or why)
REFUSED = [
    ("Bash(curl *)", "`run_command(curl *)`"),
    ("Bash", "`run_command`"),
    ("Bash(rm -rf *)", "`run_command(rm -rf *)`"),
    ("Bash(npm run test:*)", "run_command(npm run test *)"),
    ("Bash(git push:*)", "run_command(git push *)"),
    ("  Bash ( curl * ) ", "`run_command(curl *)`"),
    ("bash(curl *)", "`run_command(curl *)`"),
    ("BASH(curl *)", "`run_command(curl *)`"),
    ("Read(./.env)", "`read_file(.env)`"),
    ("Read(/src/**)", "relative to the settings file"),
    ("Edit(//etc/**)", "`edit_file(/etc/**)`"),
    ("Read(~/.ssh/**)", "`read_file(~/.ssh/**)`"),
    ("Read(./secrets/**)", "grep"),
    ("Read", "`read_file`"),
    ("Edit(src/**)", "`edit_file(src/**)`"),
    ("Edit(.git/hooks/*)", "`write_file(.git/hooks/*)`"),
    ("Write(*.py)", "`write_file(*.py)`"),
    ("MultiEdit(docs/**)", "`edit_file(docs/**)`"),
    ("NotebookEdit(nb/*.ipynb)", "`edit_file(nb/*.ipynb)`"),
    ("NotebookRead", "`read_file`"),
    ("Glob", "`glob`"),
    ("Glob(src/**)", "`glob(src/**)`"),
    ("Grep", "`grep`"),
    ("Grep(**/*.key)", "`grep(**/*.key)`"),
    ("LS", "`list_directory`"),
    ("LS(/etc)", "`list_directory(/etc)`"),
    ("WebFetch(domain:example.com)", "no tool that fetches"),
    ("WebFetch", "run_command(curl *)"),
    ("WebSearch", "no tool that searches the web"),
    ("Task", "no such tool"),
    ("Agent", "no such tool"),
    ("TodoWrite", "no such tool"),
    ("BashOutput", "no such tool"),
    ("KillShell", "no such tool"),
    ("READ_FILE(x)", "`read_file(x)`"),
    ("Read_File", "`read_file`"),
    ("Run_Command(ls)", "`run_command(ls)`"),
    ("wirte_file(docs/**)", "`write_file(docs/**)`"),
    ("run_commands(ls)", "`run_command(ls)`"),
    ("glob_files(*.py)", "`glob(*.py)`"),
    ("Glob_Files", "`glob`"),
    ("nonesuch", "not a Reins tool"),
    ("shell(ls)", "not a Reins tool"),
    ("mcp__git", "`mcp__git__*`"),
    ("mcp__puppeteer", "`mcp__puppeteer__*`"),
    ("mcp__git__", "not a Reins tool"),
    ("mcp____status", "not a Reins tool"),
    ("mcp__git__status(x)", "takes no (spec)"),
    ("mcp__git__status(/etc/**)", "takes no (spec)"),
    ("read_tool_output(x/**)", "takes no (spec)"),
    ("find_tools(x)", "takes no (spec)"),
    ("mcp_resources(git)", "takes no (spec)"),
    ("Bash*", "matches no Reins tool"),
    ("B*", "matches no Reins tool"),
    ("Read*", "matches no Reins tool"),
]

ACCEPTED = [
    *BUILTIN_TOOLS,
    "run_command(curl *)", "read_file(./.env)", "write_file(.git/hooks/*)", "grep(**/*.key)",
    "list_directory(/etc)", "glob(src/**)", "edit_file(src/**)",
    "mcp__git__status", "mcp__git__*", "mcp__*", "mcp__*__status", "mcp*", "m*", "*",
    "*_file", "read_*", "*command", "r*_output", "*Fetch", "mcp_*_x",
    tool_name("a-server", "a.tool"), tool_name("s" * 40, "t" * 40), "mcp__my_server__my__tool",
]


@pytest.mark.parametrize(("text", "says"), REFUSED)
def test_a_rule_for_a_tool_reins_does_not_have_is_refused(text: str, says: str) -> None:
    with pytest.raises(RuleError) as caught:
        parse_setting_rule(text)
    assert says in str(caught.value)
    assert repr(text) in str(caught.value)


@pytest.mark.parametrize("text", ACCEPTED)
def test_rules_for_reins_tools_are_kept(text: str) -> None:
    assert parse_setting_rule(text) == parse_rule(text)


@pytest.mark.parametrize(("text", "says"), [r for r in REFUSED if "`" in r[1]])
def test_what_the_hint_says_to_write_is_accepted(text: str, says: str) -> None:
    suggested = says.strip("`")
    if "(" in suggested or suggested in BUILTIN_TOOLS or suggested.startswith("mcp__"):
        parse_setting_rule(suggested)


def test_the_tool_names_rules_accept_are_the_tools_the_registry_registers(
        reins_home: AppPaths) -> None:
    """One list: a tool added, renamed or removed in the registry fails here until the
    rules' list follows (and what kind of spec each takes follows its parameters)."""
    kernel = open_kernel(reins_home)
    try:
        specs = {n: s for n in kernel.registry.names() if (s := kernel.registry.get(n))}
    finally:
        kernel.close()
    assert set(BUILTIN_TOOLS) == {*specs, MCP_RESOURCES}
    for name, spec in specs.items():
        expected = (SpecKind.COMMAND if name in COMMAND_TOOLS else
                    SpecKind.PATH if spec.path_params else SpecKind.NONE)
        assert BUILTIN_TOOLS[name] is expected, name
    assert BUILTIN_TOOLS[MCP_RESOURCES] is SpecKind.NONE


def test_tool_names_the_policy_names_are_reins_tools() -> None:
    from kernel.policy.decide import NAMES_ONLY
    from kernel.policy.rules import WRITES_AS

    assert {*COMMAND_TOOLS, WRITES_AS, *NAMES_ONLY} <= set(BUILTIN_TOOLS)


def _settings_text(which: str, rules: list[str]) -> str:
    return json.dumps({"model": "m", "permissions": {which: rules}}, indent=2)


@pytest.mark.parametrize("which", ["allow", "ask", "deny"])
@pytest.mark.parametrize(("text", "says"), [REFUSED[0], REFUSED[8], REFUSED[24],
                                             REFUSED[-2]])
def test_settings_naming_an_unknown_tool_do_not_load_and_name_the_line(
        which: str, text: str, says: str) -> None:
    source = _settings_text(which, ["run_command(ls)", text])
    with pytest.raises(SettingsError) as caught:
        parse_settings(source)
    error = caught.value
    assert error.line == 6  # the entry's own line
    assert error.path == ("permissions", which, "1")
    assert f"permissions/{which}/1" in str(error) and says in str(error)
    [problem] = settings_problems(json.loads(source))
    assert problem.path == ("permissions", which, "1") and says in problem.message


def test_the_settings_dialog_cannot_save_such_a_rule(reins_home: AppPaths) -> None:
    reins_home.settings_file.parent.mkdir(parents=True, exist_ok=True)
    reins_home.settings_file.write_text(_settings_text("deny", ["run_command(curl *)"]))
    before = reins_home.settings_file.read_bytes()
    problems = change_settings(reins_home, [SettingChange(
        ("permissions", "deny"), ["run_command(curl *)", "Bash(wget *)", "Read(./.env)"])])
    assert [p.path for p in problems] == [("permissions", "deny", "1"),
                                          ("permissions", "deny", "2")]
    assert "`run_command(wget *)`" in problems[0].message
    assert "`read_file(.env)`" in problems[1].message
    assert reins_home.settings_file.read_bytes() == before
    assert len(load_settings(reins_home).permissions.deny) == 1


def test_reins_exec_with_such_a_deny_rule_runs_nothing(reins_home: AppPaths,
                                                        tmp_path: Path) -> None:
    """Fail closed: the kernel does not run with the rest of the settings and the deny rule
    dropped; `reins exec` says which entry, on which line, and what to write."""
    reins_home.settings_file.parent.mkdir(parents=True, exist_ok=True)
    reins_home.settings_file.write_text(_settings_text("deny", ["Bash(curl *)"]))
    reins = str(Path(sys.executable).with_name("reins"))
    env = {**os.environ, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_API_KEY": "k",
           "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring"}
    done = subprocess.run([reins, "exec", "--workspace", str(tmp_path), "curl it"], env=env,
                          capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, check=False)
    assert done.returncode == 2, done.stderr
    assert f"{reins_home.settings_file}:5:" in done.stderr
    assert "permissions/deny/0" in done.stderr and "`run_command(curl *)`" in done.stderr


def test_the_settings_dialog_shows_the_hint_under_the_rule() -> None:
    """The dialog puts the kernel's problem under the line of the rule's box."""
    from desktop.settings.dialog import sort_problems

    data = {"permissions": {"deny": ["run_command(curl *)", "WebFetch(domain:x.com)"]}}
    by_list, other = sort_problems(tuple(settings_problems(data)), {"allow": [], "ask": [],
                                                                    "deny": [1, 2]})
    [shown] = by_list["deny"]
    assert shown.startswith("line 2: ") and "no tool that fetches" in shown
    assert other == []
