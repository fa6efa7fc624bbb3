"""The mcpServers object: accepted forms, clear errors, the schema, Claude Desktop import."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from kernel.mcp.config import (
    MCP_SERVERS_SCHEMA,
    McpConfigError,
    claude_desktop_config_path,
    find_claude_desktop_config,
    parse_mcp_servers,
    plan_import,
    read_claude_desktop_servers,
)

SCHEMA = jsonschema.Draft202012Validator(MCP_SERVERS_SCHEMA)


def test_claude_desktop_forms_parse_in_order() -> None:
    configs = parse_mcp_servers({
        "git": {"command": "uvx", "args": ["mcp-server-git", "--repository", "/r"],
                "env": {"GIT_AUTHOR_NAME": "me"}},
        "docs": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer x"}},
        "off": {"command": "npx", "disabled": True, "type": "stdio"},
        "remote": {"url": "http://localhost:8000/mcp", "type": "streamable-http"},
    })
    assert [c.name for c in configs] == ["git", "docs", "off", "remote"]
    git, docs, off, remote = configs
    assert (git.transport, git.command, git.args, dict(git.env), git.enabled) == (
        "stdio", "uvx", ("mcp-server-git", "--repository", "/r"), {"GIT_AUTHOR_NAME": "me"}, True)
    assert git.describe() == "uvx mcp-server-git --repository /r"
    assert (docs.transport, docs.url, dict(docs.headers)) == (
        "http", "https://example.com/mcp", {"Authorization": "Bearer x"})
    assert off.enabled is False
    assert remote.transport == "http"


@pytest.mark.parametrize(
    ("servers", "message"),
    [
        ([], "mcpServers must be an object of server name → definition, got an array"),
        ({"a": "uvx"}, 'mcpServers.a must be an object with "command" or "url", got a string'),
        ({"a": {}}, 'mcpServers.a needs exactly one of "command"'),
        ({"a": {"command": "x", "url": "http://y"}}, "not both"),
        ({"a": {"command": "x", "autoApprove": ["t"]}}, "unknown key(s) 'autoApprove'"),
        ({"a": {"command": "x", "args": "--flag"}}, "a.args: expected array, got a string"),
        ({"a": {"command": "x", "args": ["ok", 3]}}, "mcpServers.a.args[1]: expected string"),
        ({"a": {"command": "x", "env": {"TOKEN": 1}}}, "mcpServers.a.env.TOKEN: expected string"),
        ({"a": {"command": ""}}, "mcpServers.a.command: must not be empty"),
        ({"a": {"url": "ftp://host/x"}}, "'ftp://host/x' must start with http:// or https://"),
        ({"a": {"url": "http://h", "args": []}}, "'args' does not apply to a URL server"),
        ({"a": {"command": "x", "headers": {}}}, "'headers' does not apply to a stdio server"),
        ({"a": {"command": "x", "type": "http"}}, "contradicts its command"),
        ({"a": {"command": "x", "disabled": "yes"}}, "mcpServers.a.disabled: expected boolean"),
        ({"": {"command": "x"}}, "server name '' must be 1–64 characters"),
    ],
)
def test_bad_entries_name_the_server_and_the_key(servers: Any, message: str) -> None:
    with pytest.raises(McpConfigError) as err:
        parse_mcp_servers(servers)
    assert message in str(err.value)


@pytest.mark.parametrize(
    "entry",
    [
        {"command": "x"},
        {"command": "x", "args": ["a"], "env": {"A": "b"}, "cwd": "/tmp", "disabled": False},
        {"url": "https://h/mcp", "headers": {"A": "b"}},
        {"command": "x", "url": "http://h"},
        {},
        {"command": "x", "extra": 1},
        {"url": "http://h", "env": {}},
        {"command": "x", "args": "a"},
        {"url": "file:///x"},
    ],
)
def test_schema_and_parser_agree(entry: dict[str, Any]) -> None:
    """The settings loader validates with the schema; the parser must accept the same set."""
    schema_ok = SCHEMA.is_valid({"s": entry})
    try:
        parse_mcp_servers({"s": entry})
        parser_ok = True
    except McpConfigError:
        parser_ok = False
    assert schema_ok == parser_ok


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(MCP_SERVERS_SCHEMA)
    validator = jsonschema.Draft202012Validator(MCP_SERVERS_SCHEMA)
    assert validator.is_valid({"git": {"command": "uvx", "args": ["mcp-server-git"]}})
    assert not validator.is_valid({"git": {"args": "not-a-list"}})


def test_claude_desktop_locations_per_os(tmp_path: Path) -> None:
    home = tmp_path
    assert claude_desktop_config_path("darwin", home, {}) == (
        home / "Library/Application Support/Claude/claude_desktop_config.json")
    assert claude_desktop_config_path("win32", home, {"APPDATA": str(home / "Roam")}) == (
        home / "Roam/Claude/claude_desktop_config.json")
    assert claude_desktop_config_path("linux", home, {}) == (
        home / ".config/Claude/claude_desktop_config.json")
    assert claude_desktop_config_path("linux", home, {"XDG_CONFIG_HOME": str(home / "x")}) == (
        home / "x/Claude/claude_desktop_config.json")


def test_find_and_read_an_existing_claude_desktop_file(tmp_path: Path) -> None:
    assert find_claude_desktop_config("linux", tmp_path, {}) is None
    path = claude_desktop_config_path("linux", tmp_path, {})
    path.parent.mkdir(parents=True)
    servers = {"time": {"command": "uvx", "args": ["mcp-server-time"]}}
    path.write_text(json.dumps({"mcpServers": servers, "globalShortcut": "Ctrl+Space"}))
    assert find_claude_desktop_config("linux", tmp_path, {}) == path
    assert read_claude_desktop_servers(path) == servers


def test_unusable_claude_desktop_files_say_why(tmp_path: Path) -> None:
    path = tmp_path / "claude_desktop_config.json"
    path.write_text('{"mcpServers": {"a": {"command": "x",}}}')
    with pytest.raises(McpConfigError, match=r"is not valid JSON: .* line 1"):
        read_claude_desktop_servers(path)
    path.write_text('{"mcpServers": {"a": {"args": ["x"]}}}')
    with pytest.raises(McpConfigError, match=r"claude_desktop_config.json: mcpServers\.a needs"):
        read_claude_desktop_servers(path)
    with pytest.raises(McpConfigError, match="cannot read"):
        read_claude_desktop_servers(tmp_path / "missing.json")


def test_import_never_overwrites_the_users_entries() -> None:
    current = {"git": {"command": "uvx", "args": ["mcp-server-git"]}, "x": {"command": "x"}}
    imported = {"git": {"command": "npx", "args": ["git"]}, "x": {"command": "x"},
                "time": {"command": "uvx", "args": ["mcp-server-time"]}}
    plan = plan_import(current, imported)
    assert plan.added == ("time",)
    assert plan.unchanged == ("x",)
    assert plan.conflicts == ("git",)
    assert plan.merged["git"] == current["git"]
    assert plan.merged["time"] == imported["time"]
    assert current == {"git": {"command": "uvx", "args": ["mcp-server-git"]},
                       "x": {"command": "x"}}
