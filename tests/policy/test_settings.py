"""settings.json: schema validation, errors naming the line and rule, rule writes."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from kernel.paths import AppPaths
from kernel.policy.decide import Mode
from kernel.policy.jsonpos import line_of
from kernel.policy.settings import (
    SettingsError,
    add_rule,
    change_settings,
    load_settings,
    parse_settings,
    remove_rule,
    set_mcp_server_disabled,
    update_settings,
)
from kernel.protocol import SettingChange
from kernel.sandbox.limits import MiB, ResourceLimits
from kernel.sandbox.settings import ExecSettings
from kernel.tools.spec import Risk, ToolSpec

FULL = """{
  "model": "claude-sonnet-4-5",
  "base_url": "http://127.0.0.1:8080",
  "default_mode": "auto-edit",
  "permissions": {
    "allow": ["run_command(git status)", "run_command(npm test *)", "write_file(docs/**)"],
    "ask": ["mcp__git__*"],
    "deny": ["read_file(~/.ssh/**)"]
  },
  "exec": {"path": ["/opt/tools/bin"], "env": ["JAVA_HOME", "NPM_TOKEN"],
           "secret_env": ["NPM_TOKEN"], "read_only_paths": ["~/.nvm"],
           "limits": {"memory_mb": 2048, "processes": 256}, "grace_s": 0.5,
           "max_output_mb": 64},
  "mcpServers": {"git": {"command": "uvx", "args": ["mcp-server-git"]}}
}
"""


def test_missing_file_means_defaults(reins_home: AppPaths) -> None:
    settings = load_settings(reins_home)
    assert settings.exec == ExecSettings()
    assert parse_settings("{}").exec == ExecSettings()
    assert settings.default_mode is Mode.ASK
    assert settings.model is None
    assert len(settings.permissions.allow) == 0


def test_full_file_loads(reins_home: AppPaths) -> None:
    reins_home.settings_file.parent.mkdir(parents=True)
    reins_home.settings_file.write_text(FULL)
    s = load_settings(reins_home)
    assert (s.model, s.base_url, s.default_mode) == (
        "claude-sonnet-4-5", "http://127.0.0.1:8080", Mode.AUTO_EDIT)
    assert [r.text for r in s.permissions.allow.rules] == [
        "run_command(git status)", "run_command(npm test *)", "write_file(docs/**)"]
    assert [r.text for r in s.permissions.deny.rules] == ["read_file(~/.ssh/**)"]
    assert s.exec == ExecSettings(
        extra_path=("/opt/tools/bin",), env_passthrough=("JAVA_HOME", "NPM_TOKEN"),
        env_secret_opt_in=("NPM_TOKEN",), read_only_paths=("~/.nvm",),
        limits=ResourceLimits(address_space=2048 * MiB, file_size=ResourceLimits().file_size,
                              processes=256),
        grace_s=0.5, max_output_bytes=64 * MiB)
    assert s.mcp_servers["git"]["command"] == "uvx"


def _error(text: str) -> SettingsError:
    with pytest.raises(SettingsError) as info:
        parse_settings(text, "/x/settings.json")
    return info.value


def test_the_checkpoint_bound_is_a_setting(reins_home: AppPaths) -> None:
    """`checkpoints.max_bytes`: 1 GiB unless set; written and read back like any key."""
    assert load_settings(reins_home).checkpoint_bytes == 1 << 30
    assert parse_settings('{"checkpoints": {"max_bytes": 0}}').checkpoint_bytes == 0
    assert change_settings(reins_home, [SettingChange(("checkpoints", "max_bytes"),
                                                      5 << 20)]) == ()
    assert load_settings(reins_home).checkpoint_bytes == 5 << 20
    problems = change_settings(reins_home, [SettingChange(("checkpoints", "max_bytes"), -5)])
    assert [p.path for p in problems] == [("checkpoints", "max_bytes")]
    assert load_settings(reins_home).checkpoint_bytes == 5 << 20


def test_an_unparsable_rule_stops_the_load_naming_rule_and_line() -> None:
    text = FULL.replace('"write_file(docs/**)"',
                        '"write_file(docs/**)",\n      "run_command(a && b)"')
    err = _error(text)
    assert err.line == 7
    assert "'run_command(a && b)'" in str(err)
    assert "permissions/allow/3" in str(err)
    assert str(err).startswith("/x/settings.json:7: ")


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ('{\n  "default_mode": "yolo"\n}', 2, ["default_mode", "'yolo' is not one of"]),
        ('{\n  "model": "x",\n  "modle": "x"\n}', 3, ["Additional properties", "'modle'"]),
        ('{\n "permissions": {\n  "allow": [\n   "read_file",\n   7\n  ]\n }\n}', 5,
         ["permissions/allow/1", "7 is not of type 'string'"]),
        ('{\n "permissions": {\n  "allow": [],\n  "alow": []}\n}', 4, ["permissions", "'alow'"]),
        ('{\n "exec": {\n  "env": ["OK", "not ok"]\n }\n}', 3, ["exec/env/1", "does not match"]),
        ('{\n "exec": {\n  "limits": {"memory_mb": 1}\n }\n}', 3, ["exec/limits/memory_mb"]),
        ('{\n "base_url": "ftp://x"\n}', 2, ["base_url"]),
        ('{\n "mcpServers": {\n  "x": {"command": "a", "url": "http://b"}\n }\n}', 3,
         ["mcpServers/x"]),
        ('{\n "checkpoints": {\n  "max_bytes": -1\n }\n}', 3,
         ["checkpoints/max_bytes", "less than the minimum of 0"]),
        ('{\n "checkpoints": {\n  "max_bytes": "1G"\n }\n}', 3,
         ["checkpoints/max_bytes", "is not of type 'integer'"]),
        ('{\n  "model": "x",\n}', 3, ["not valid JSON"]),
        ("[1, 2]", 1, ["(top level)", "is not of type 'object'"]),
    ],
)
def test_schema_errors_name_line_and_key(text: str, line: int, words: list[str]) -> None:
    err = _error(text)
    assert err.line == line, str(err)
    for word in words:
        assert word in str(err)


def test_unreadable_file_is_an_error_not_defaults(reins_home: AppPaths) -> None:
    reins_home.settings_file.parent.mkdir(parents=True)
    reins_home.settings_file.write_bytes(b"\xff\xfe{")
    with pytest.raises(SettingsError, match="cannot be read"):
        load_settings(reins_home)


def test_line_of_finds_nested_values() -> None:
    text = '{"a": {\n "b": [1,\n  {"c": "x"}]},\n "d": 2}'
    assert line_of(text, ["a", "b", 1, "c"]) == 3
    assert line_of(text, ["d"]) == 4
    assert line_of(text, ["a", "missing"]) == 1
    assert line_of("{", ["a"]) is None


def test_add_and_remove_rules_round_trip(reins_home: AppPaths) -> None:
    s = add_rule(reins_home, "allow", "run_command(git   status)")
    assert [r.text for r in s.permissions.allow.rules] == ["run_command(git status)"]
    s = add_rule(reins_home, "allow", 'run_command("git" status)')
    assert len(s.permissions.allow) == 1
    on_disk = json.loads(reins_home.settings_file.read_text())
    assert on_disk == {"permissions": {"allow": ["run_command(git status)"]}}
    assert load_settings(reins_home).permissions.allow.rules[0].text == "run_command(git status)"
    s = remove_rule(reins_home, "allow", "run_command(git status)")
    assert len(s.permissions.allow) == 0
    with pytest.raises(KeyError, match="no rule"):
        remove_rule(reins_home, "allow", "run_command(git status)")


def test_add_rule_keeps_the_rest_of_the_file(reins_home: AppPaths) -> None:
    reins_home.settings_file.parent.mkdir(parents=True)
    reins_home.settings_file.write_text(FULL)
    add_rule(reins_home, "allow", "read_file(~/notes/**)")
    s = load_settings(reins_home)
    assert s.model == "claude-sonnet-4-5"
    assert s.mcp_servers == {"git": {"command": "uvx", "args": ["mcp-server-git"]}}
    assert s.permissions.allow.rules[-1].text == "read_file(~/notes/**)"


def test_writes_refuse_a_broken_file_and_an_invalid_rule(reins_home: AppPaths) -> None:
    with pytest.raises(SettingsError, match="run_command"):
        add_rule(reins_home, "allow", "run_command(")
    assert not reins_home.settings_file.exists() or \
        "run_command(" not in reins_home.settings_file.read_text()
    reins_home.settings_file.parent.mkdir(parents=True, exist_ok=True)
    reins_home.settings_file.write_text('{"default_mode": "yolo"}')
    with pytest.raises(SettingsError):
        add_rule(reins_home, "allow", "read_file")
    assert reins_home.settings_file.read_text() == '{"default_mode": "yolo"}'


def test_concurrent_writers_lose_no_rule(reins_home: AppPaths) -> None:
    def writer(k: int) -> None:
        for i in range(10):
            add_rule(reins_home, "allow", f"run_command(tool{k} {i})")

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(load_settings(reins_home).permissions.allow) == 40
    leftovers = [p for p in Path(reins_home.config).iterdir() if p.suffix == ".tmp"]
    assert leftovers == []


def test_the_documented_example_is_valid() -> None:
    import kernel.policy.settings as module

    doc = module.__doc__ or ""
    example = doc.split("```json", 1)[1].split("```", 1)[0]
    settings = parse_settings(example)
    assert settings.exec.env_secret_opt_in == ("NPM_TOKEN",)
    assert len(settings.permissions.allow) == 3


def test_rules_that_can_never_match_are_reported() -> None:
    from kernel.policy.settings import rule_warnings
    from kernel.tools.builtin import builtin_tools

    settings = parse_settings(json.dumps({"permissions": {
        "allow": ["read_file(docs/**)", "read_tool_output", "mcp__git__*", "run_command(ls)"],
        "deny": ["mcp__time__nwo"]}}))
    warnings = rule_warnings(settings, [*builtin_tools(), _mcp_tool("mcp__time__now")])
    assert warnings == [
        "permissions/allow: mcp__git__* matches no tool at the moment",
        "permissions/allow: run_command(ls) names no tool",
        "permissions/deny: mcp__time__nwo names no tool (did you mean mcp__time__now?)",
    ]


def _mcp_tool(name: str) -> ToolSpec:
    return ToolSpec(name=name, description="d", input_schema={"type": "object"},
                    handler=lambda: "", risk=Risk.READ, origin="mcp:time")


def test_update_settings_is_public_and_refuses_an_invalid_result(reins_home: AppPaths) -> None:
    reins_home.config.mkdir(parents=True, exist_ok=True)
    reins_home.settings_file.write_text('{"model": "m1"}\n')
    settings = update_settings(reins_home, lambda data: data.update(model="m2"))
    assert settings.model == "m2" and load_settings(reins_home).model == "m2"
    with pytest.raises(SettingsError, match="default_mode"):
        update_settings(reins_home, lambda data: data.update(default_mode="yolo"))
    assert json.loads(reins_home.settings_file.read_text()) == {"model": "m2"}


def test_mcp_servers_are_written_and_disabled_by_name(reins_home: AppPaths) -> None:
    servers = {"time": {"command": "uvx", "args": ["mcp-server-time"]},
               "web": {"url": "https://example.com/mcp"}}
    assert change_settings(reins_home, [SettingChange(("mcpServers",), servers)]) == ()
    assert load_settings(reins_home).mcp_servers == servers
    settings = set_mcp_server_disabled(reins_home, "time", True)
    assert settings.mcp_servers["time"] == {"command": "uvx", "args": ["mcp-server-time"],
                                            "disabled": True}
    on_disk = json.loads(reins_home.settings_file.read_text())
    assert on_disk["mcpServers"]["time"]["disabled"] is True
    assert "disabled" not in set_mcp_server_disabled(reins_home, "time", False
                                                     ).mcp_servers["time"]
    with pytest.raises(KeyError, match="nope"):
        set_mcp_server_disabled(reins_home, "nope", True)
    [refused] = change_settings(reins_home, [SettingChange(
        ("mcpServers",), {"bad": {"command": "x", "url": "http://y"}})])
    assert refused.path == ("mcpServers", "bad") and "exactly one of" in refused.message
    assert set(load_settings(reins_home).mcp_servers) == {"time", "web"}
    assert change_settings(reins_home, [SettingChange(("mcpServers",), remove=True)]) == ()
    assert "mcpServers" not in load_settings(reins_home).raw
