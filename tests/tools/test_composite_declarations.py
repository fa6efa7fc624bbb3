"""Composite and fallback declarations: parsed, checked by name (settings.json, with the
line) and by schema (the registry), as tables; pointers and summaries as pure functions."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from kernel.policy.settings import SettingsError, parse_settings
from kernel.tools.builtin import builtin_tools
from kernel.tools.compose import (
    Declarations,
    Fallback,
    StepArgsError,
    child_id,
    parse_declarations,
    parse_pointer,
    schema_mismatch,
)
from kernel.tools.errors import ErrorCode
from kernel.tools.registry import RegistrationError, ToolRegistry
from kernel.tools.spec import Risk, ToolSpec

READ_STEP = {"tool": "read_file", "args": {"path": "/input/path"}}
GOOD = {"description": "Read, then grep", "input_schema": {
    "type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}},
    "steps": [READ_STEP, {"tool": "grep", "args": {"path": "/input/path"},
                          "const": {"pattern": "x"}}]}


def _composite(**entry: Any) -> dict[str, Any]:
    return {"composites": {"c": {**GOOD, **entry}}}


def _settings_text(tools: dict[str, Any]) -> str:
    return json.dumps({"model": "m", "tools": tools}, indent=2)


@pytest.mark.parametrize(("tools", "words", "key"), [
    (_composite(steps=[{"tool": "reed_file"}]), "unknown step: there is no tool 'reed_file'",
     "reed_file"),
    (_composite(steps=[READ_STEP, {"tool": "grep", "args": {"pattern": "/steps/1/text"}}]),
     "reads step 1's result, but step 1 runs before", "pattern"),
    (_composite(steps=[{"tool": "grep", "args": {"pattern": "/steps/0/text"}}]),
     "reads step 0's result", "pattern"),
    (_composite(steps=[{"tool": "grep", "args": {"pattern": "/output/x"}}]),
     "does not match", "pattern"),
    (_composite(steps=[{"tool": "grep", "args": {"pattern": "/steps/0/text/a"}}]),
     "", "pattern"),
    (_composite(steps=[{"tool": "grep", "args": {"pattern": "/input/p"},
                        "const": {"pattern": "x"}}]),
     "['pattern'] given both in args and in const", "const"),
    ({"composites": {"a": {"description": "a", "steps": [{"tool": "b"}]},
                     "b": {"description": "b", "steps": [{"tool": "a"}]}}},
     "'a' contains itself: a → b → a", '"a"'),
    ({"composites": {"a": {"description": "a", "steps": [{"tool": "a"}]}}},
     "'a' contains itself: a → a", '"a"'),
    ({"composites": {"read_file": {"description": "x", "steps": [READ_STEP]}}},
     "'read_file' is the name of a tool", '"read_file"'),
    ({"fallbacks": {"grep": {"to": "grap", "on": ["timeout"]}}}, "unknown tool 'grap'", "to"),
    ({"fallbacks": {"grep": {"to": "glob", "on": ["approval_denied"]}}}, "", "approval_denied"),
    ({"fallbacks": {"grep": {"to": "glob", "on": ["timeout"]},
                    "glob": {"to": "grep", "on": ["timeout"]}}},
     "'grep' falls back to itself: grep → glob → grep", '"grep"'),
    ({"composites": {"c": {"description": "c", "steps": [], }}}, "", "steps"),
])
def test_a_bad_tools_section_names_the_problem_and_its_line(
        tools: dict[str, Any], words: str, key: str) -> None:
    text = _settings_text(tools)
    with pytest.raises(SettingsError) as caught:
        parse_settings(text, "settings.json")
    error = caught.value
    assert words in error.problem
    assert error.line is not None and key in text.splitlines()[error.line - 1], (
        error.line, text)


@pytest.mark.parametrize("tools", [
    _composite(),
    {"composites": {"outer": {"description": "o", "steps": [{"tool": "c"}]}, **_composite()[
        "composites"]}},
    {"composites": {"web": {"description": "w", "steps": [
        {"tool": "mcp__web__fetch", "args": {"url": "/input/url"}},
        {"tool": "write_file", "args": {"content": "/steps/0/text", "path": "/input/path"}},
        {"tool": "grep", "args": {"pattern": "/steps/0/json/items/0/name"}}]}}},
    {"fallbacks": {"mcp__a__search": {"to": "mcp__b__search",
                                      "on": ["timeout", "execution_error"]}}},
])
def test_good_declarations_load(tools: dict[str, Any]) -> None:
    settings = parse_settings(_settings_text(tools))
    assert settings.tools == parse_declarations(tools) and settings.tools


@pytest.mark.parametrize(("pointer", "args", "texts", "value"), [
    ("/input/path", {"path": "a.txt"}, [], "a.txt"),
    ("/input", {"path": "a.txt"}, [], {"path": "a.txt"}),
    ("/input/list/1", {"list": [1, 2]}, [], 2),
    ("/input/a~1b/c~0d", {"a/b": {"c~d": 5}}, [], 5),
    ("/steps/0/text", {}, ["out"], "out"),
    ("/steps/1/json/items/0/name", {}, ["", '{"items": [{"name": "n"}]}'], "n"),
    ("/steps/0/json", {}, ["[1, 2]"], [1, 2]),
])
def test_pointers_find_their_value(pointer: str, args: dict[str, Any], texts: list[str],
                                   value: Any) -> None:
    assert parse_pointer(pointer).value(args, texts) == value


@pytest.mark.parametrize(("pointer", "args", "texts", "words"), [
    ("/input/missing", {"path": "a"}, [], "no 'missing' there"),
    ("/input/list/5", {"list": [1]}, [], "no '5' there"),
    ("/steps/0/json/a", {}, ["not json"], "is not JSON"),
    ("/steps/2/text", {}, ["a"], "step 2 has no result"),
])
def test_pointers_that_lead_nowhere_say_so(pointer: str, args: dict[str, Any],
                                           texts: list[str], words: str) -> None:
    with pytest.raises(StepArgsError, match=words):
        parse_pointer(pointer).value(args, texts)


def _obj(required: list[str], additional: bool = True, **props: str) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "required": required,
                              "properties": {k: {"type": t} for k, t in props.items()}}
    if not additional:
        schema["additionalProperties"] = False
    return schema


@pytest.mark.parametrize(("primary", "fallback", "words"), [
    (_obj(["q"], q="string"), _obj(["q"], q="string"), ""),
    (_obj(["q"], q="string"), _obj(["q"], False, q="string", n="integer"), ""),
    (_obj(["q"], q="string"), _obj(["q", "n"], q="string", n="integer"),
     "it requires ['n']"),
    (_obj(["q"], q="string", n="integer"), _obj(["q"], False, q="string"),
     "it has no parameter ['n']"),
    (_obj(["q"], q="string"), _obj(["q"], q="integer"), "'q' is 'integer' there"),
])
def test_a_fallback_must_take_the_primary_s_arguments(primary: dict[str, Any],
                                                      fallback: dict[str, Any],
                                                      words: str) -> None:
    found = schema_mismatch(primary, fallback)
    assert (words in found) if words else found == ""


def _spec(name: str, schema: dict[str, Any], risk: Risk = Risk.READ) -> ToolSpec:
    return ToolSpec(name=name, description=name, input_schema=schema,
                    handler=lambda **kw: "", risk=risk)


@pytest.mark.parametrize(("tools", "words"), [
    (_composite(steps=[{"tool": "read_file", "args": {"path": "/input/path", "x": "/input/path"}}]),
     "read_file has no parameter ['x']"),
    (_composite(steps=[{"tool": "write_file", "args": {"path": "/input/path"}}]),
     "write_file requires ['content']"),
    (_composite(steps=[{"tool": "read_file", "args": {"path": "/input/file"}}]),
     "input_schema has no property 'file'"),
    ({"fallbacks": {"grep": {"to": "read_file", "on": ["timeout"]}}},
     "the input schema of 'read_file' does not take the arguments of the primary 'grep': "
     "it requires ['path']"),
    ({"fallbacks": {"grep": {"to": "nothing", "on": ["timeout"]}}}, "unknown tool 'nothing'"),
    ({"composites": {"c": {"description": "c", "input_schema": {"type": "array"},
                           "steps": [READ_STEP]}}}, 'must have "type": "object"'),
])
def test_the_registry_refuses_what_the_schemas_show(tools: dict[str, Any], words: str) -> None:
    registry = ToolRegistry(builtin_tools())
    before = registry.version
    with pytest.raises(RegistrationError, match=re.escape(words)):
        registry.declare(parse_declarations(tools))
    assert "c" not in registry and registry.fallback("grep") is None
    assert registry.version >= before


def test_a_composite_is_offered_while_its_steps_are_registered() -> None:
    search = _obj(["q"], q="string")
    registry = ToolRegistry(builtin_tools())
    registry.declare(parse_declarations({
        "composites": {"find": {"description": "Search, then read", "input_schema": {
            "type": "object", "properties": {"q": {"type": "string"},
                                             "path": {"type": "string"}}},
            "steps": [{"tool": "mcp__web__search", "args": {"q": "/input/q"}},
                      {"tool": "write_file", "args": {"content": "/steps/0/text",
                                                      "path": "/input/path"}}]}},
        "fallbacks": {"mcp__web__search": {"to": "mcp__mirror__search", "on": ["timeout"]}}}))
    assert "find" not in registry and "find" in registry.problems()["composites/find"] + "find"
    assert "waits for ['mcp__web__search']" in registry.problems()["composites/find"]
    registry.register(_spec("mcp__web__search", search))
    assert registry.get("find") is not None
    entry = registry.entry("find")
    assert entry is not None and entry.composite is not None
    assert entry.spec.risk is Risk.WRITE and "then write_file" in entry.spec.description
    assert [s["name"] for s in registry.schemas()][-1] == "find"
    assert registry.fallback("mcp__web__search") is None
    registry.register(_spec("mcp__mirror__search", _obj(["q"], q="integer")))
    assert registry.fallback("mcp__web__search") is None
    assert "does not take" in registry.problems()["fallbacks/mcp__web__search"]
    registry.unregister("mcp__mirror__search")
    registry.register(_spec("mcp__mirror__search", search))
    assert registry.fallback("mcp__web__search") == Fallback(
        "mcp__web__search", "mcp__mirror__search", frozenset({ErrorCode.TIMEOUT}))
    registry.unregister("mcp__web__search")
    assert "find" not in registry and registry.fallback("mcp__web__search") is None
    with pytest.raises(KeyError):
        registry.unregister("find")
    registry.declare(Declarations())
    assert registry.problems() == {}


@pytest.mark.parametrize(("parent", "part"), [("toolu_1", "step1"), ("a" * 128, "fallback"),
                                              ("b" * 120, "step12")])
def test_child_ids_are_valid_call_ids(parent: str, part: str) -> None:
    from kernel.paths import check_call_id

    made = check_call_id(child_id(parent, part))
    assert made.endswith(f"-{part}") and made != child_id(parent + "x", part)
