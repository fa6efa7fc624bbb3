"""The settings' own change functions, as tables: `apply_changes` (key paths set or dropped,
every other key kept) and `settings_problems` (every bad rule and MCP entry, else the first
schema problem), and `change_settings` writing nothing when anything is wrong."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from kernel.paths import AppPaths
from kernel.policy.settings import apply_changes, change_settings, settings_problems
from kernel.protocol import SettingChange as C
from kernel.protocol import SettingsProblem

BASE: dict[str, Any] = {"model": "m", "exec": {"env": ["A"]},
                        "permissions": {"allow": ["run_command(ls)"]},
                        "mcpServers": {"git": {"command": "uvx"}}}


@pytest.mark.parametrize(("changes", "after"), [
    ((), BASE),
    ((C(("model",), "n"),), {**BASE, "model": "n"}),
    ((C(("model",), remove=True),), {k: v for k, v in BASE.items() if k != "model"}),
    ((C(("base_url",), remove=True),), BASE),  # dropping what is not there: nothing
    ((C(("permissions", "deny"), ["read_file(~/.ssh/**)"]),),
     {**BASE, "permissions": {"allow": ["run_command(ls)"], "deny": ["read_file(~/.ssh/**)"]}}),
    ((C(("permissions", "allow"), []),), {**BASE, "permissions": {"allow": []}}),
    ((C(("mcpServers", "time"), {"command": "uvx"}), C(("mcpServers", "git"), remove=True)),
     {**BASE, "mcpServers": {"time": {"command": "uvx"}}}),
    ((C(("models", "local*", "max_tokens"), 2048),),
     {**BASE, "models": {"local*": {"max_tokens": 2048}}}),  # objects made on the way
    ((C(("models", "x"), remove=True),), BASE),  # through a missing object: nothing
    ((C(("model",), "a"), C(("model",), "b")), {**BASE, "model": "b"}),  # in order
])
def test_changes_set_or_drop_key_paths_and_keep_the_rest(
        changes: tuple[C, ...], after: dict[str, Any]) -> None:
    data = copy.deepcopy(BASE)
    apply_changes(data, changes)
    assert data == after


@pytest.mark.parametrize(("change", "words"), [
    (C((), "x"), "path of key names"),
    (C(("",), "x"), "path of key names"),
    (C(("model", "deeper"), "x"), "model is not an object"),
    (C(("exec", "env", "0"), "x"), "exec/env is not an object"),
    (C(("permissions", "allow", "0"), remove=True), "permissions/allow is not an object"),
])
def test_a_change_that_cannot_be_made_says_why(change: C, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        apply_changes(copy.deepcopy(BASE), [change])


@pytest.mark.parametrize(("data", "paths", "words"), [
    (BASE, [], ""),
    ({"permissions": {"allow": ["run_command(", "read_file", "write_file(a"]}},
     [("permissions", "allow", "0"), ("permissions", "allow", "2")], ""),
    ({"permissions": {"deny": ["run_command(a && b)"]}}, [("permissions", "deny", "0")], ""),
    ({"mcpServers": {"a": {"command": "x", "url": "http://y"}, "b": {"args": []},
                     "c": {"command": "x"}}},
     [("mcpServers", "a"), ("mcpServers", "b")], "exactly one of"),
    ({"mcpServers": {"a": {"url": "https://e", "tool_timeout_s": float("nan")}}},
     [("mcpServers", "a")], "seconds"),
    ({"mcpServers": {"a": {"command": "x", "autoApprove": ["*"]}}}, [("mcpServers", "a")],
     "autoApprove"),
    ({"permissions": {"allow": ["run_command("]}, "mcpServers": {"a": {}}},
     [("permissions", "allow", "0"), ("mcpServers", "a")], ""),
    ({"default_mode": "yolo"}, [("default_mode",)], "'yolo'"),
    ({"modle": "x"}, [("modle",)], "'modle'"),
    ({"exec": {"env": ["not ok"]}}, [("exec", "env", "0")], "does not match"),
    ({"base_url": "ftp://x"}, [("base_url",)], "does not match"),
    ({"permissions": {"allow": [7]}}, [("permissions", "allow", "0")], "not of type"),
    ([1], [()], "is not of type 'object'"),
])
def test_every_problem_is_named_by_its_key(data: Any, paths: list[tuple[str, ...]],
                                           words: str) -> None:
    problems = settings_problems(data)
    assert [p.path for p in problems] == paths
    assert all(isinstance(p, SettingsProblem) and p.message and p.line == 0
               for p in problems)
    assert words in " ".join(p.message for p in problems)


def test_nothing_is_written_when_anything_is_wrong(reins_home: AppPaths) -> None:
    reins_home.settings_file.parent.mkdir(parents=True)
    text = json.dumps(BASE, indent=1)
    reins_home.settings_file.write_text(text)
    found = change_settings(reins_home, [C(("model",), "n"),
                                         C(("permissions", "ask"), ["run_command("])])
    assert [p.path for p in found] == [("permissions", "ask", "0")]
    assert change_settings(reins_home, [C(("model",), "n")], write=False) == ()
    assert reins_home.settings_file.read_text() == text
    assert change_settings(reins_home, [C(("model",), "n")]) == ()
    assert json.loads(reins_home.settings_file.read_text()) == {**BASE, "model": "n"}
