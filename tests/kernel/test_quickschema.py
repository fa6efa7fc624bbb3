"""kernel.tools.quickschema answers what jsonschema answers: a table of settings documents (valid
ones it must vouch for, invalid ones it must refuse), the documents of
tests/policy/test_settings.py, and hypothesis-made schemas and documents; a schema it does
not cover compiles to None."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from bench.bench_startup import SETTINGS as BENCH_SETTINGS
from kernel.policy.settings import SETTINGS_SCHEMA
from kernel.tools.quickschema import compile_check

SETTINGS_CHECK = compile_check(SETTINGS_SCHEMA)
JSONSCHEMA = Draft202012Validator(SETTINGS_SCHEMA)

VALID: list[Any] = [
    {},
    BENCH_SETTINGS,
    {"$schema": "anything", "model": "m", "base_url": "https://x", "default_mode": "read-only"},
    {"permissions": {"allow": [], "ask": ["read_file"], "deny": ["run_command(rm *)"]}},
    {"exec": {"path": ["/opt/bin", "/x"], "env": ["A", "_B1"], "secret_env": [],
              "read_only_paths": ["/a", "~/b"], "grace_s": 60, "bwrap": "b", "pasta": "p",
              "local_network": True,
              "limits": {"memory_mb": 16, "file_size_mb": 1, "processes": 8, "cpu_s": 1}}},
    {"exec": {"grace_s": 0.001, "limits": {"memory_mb": 16.0}}},
    {"mcpServers": {"a": {"command": "c", "args": [], "env": {"K": "v"}, "cwd": "/",
                          "type": "stdio", "disabled": False, "sandbox": True,
                          "startup_timeout_s": 1, "tool_timeout_s": 86400},
                    "b": {"url": "http://u", "headers": {"H": "v"}, "type": "streamableHttp"}}},
    {"models": {"m": {"context_window": 200000, "max_tokens": 1}, "n": {}}},
    {"tool_search_threshold": 1},
    {"checkpoints": {}},
    {"checkpoints": {"max_bytes": 0}},
    {"checkpoints": {"max_bytes": 1 << 40}},
    {"exec": {"grace_s": math.nan}},
]
INVALID: list[Any] = [
    [], "x", 1, None, True,
    {"modle": "x"},
    {"model": ""},
    {"model": 3},
    {"base_url": "ftp://x"},
    {"default_mode": "yolo"},
    {"default_mode": None},
    {"permissions": []},
    {"permissions": {"alow": []}},
    {"permissions": {"allow": "read_file"}},
    {"permissions": {"allow": [""]}},
    {"permissions": {"allow": [7]}},
    {"exec": {"path": ["relative"]}},
    {"exec": {"env": ["OK", "not ok"]}},
    {"exec": {"env": ["A", "A"]}},
    {"exec": {"env": ["A", 1, "A"]}},
    {"exec": {"secret_env": [True]}},
    {"exec": {"read_only_paths": ["~user/x"]}},
    {"exec": {"limits": {"memory_mb": 15}}},
    {"exec": {"limits": {"memory_mb": 16.5}}},
    {"exec": {"limits": {"memory_mb": True}}},
    {"exec": {"limits": {"swap": 1}}},
    {"exec": {"grace_s": 0}},
    {"exec": {"grace_s": 60.5}},
    {"exec": {"grace_s": math.inf}},
    {"exec": {"grace_s": "1"}},
    {"exec": {"bwrap": ""}},
    {"exec": {"local_network": 1}},
    {"exec": {"colour": "red"}},
    {"mcpServers": []},
    {"mcpServers": {"": {"command": "c"}}},
    {"mcpServers": {"x" * 65: {"command": "c"}}},
    {"mcpServers": {"a": {}}},
    {"mcpServers": {"a": {"command": "c", "url": "http://u"}}},
    {"mcpServers": {"a": {"command": "c", "headers": {}}}},
    {"mcpServers": {"a": {"url": "http://u", "args": []}}},
    {"mcpServers": {"a": {"url": "ws://u"}}},
    {"mcpServers": {"a": {"command": "c", "autoApprove": []}}},
    {"mcpServers": {"a": {"command": "c", "env": {"K": 1}}}},
    {"mcpServers": {"a": {"command": "c", "type": "sse"}}},
    {"mcpServers": {"a": {"command": "c", "startup_timeout_s": 0}}},
    {"mcpServers": {"a": "c"}},
    {"models": {"m": {"context_window": 1}}},
    {"models": {"m": {"max_tokens": 0}}},
    {"models": {"m": {"max_output": 5}}},
    {"models": {"m": 5}},
    {"tool_search_threshold": 0},
    {"tool_search_threshold": 2.5},
    {"checkpoints": {"max_bytes": -1}},
    {"checkpoints": {"max_bytes": 1.5}},
    {"checkpoints": {"max_bytes": "1G"}},
    {"checkpoints": {"bytes": 1}},
    {"checkpoints": 5},
]


def test_the_settings_schema_is_covered() -> None:
    assert SETTINGS_CHECK is not None


@pytest.mark.parametrize("doc", VALID, ids=lambda d: json.dumps(d)[:60])
def test_valid_settings_are_vouched_for(doc: Any) -> None:
    assert JSONSCHEMA.is_valid(doc)
    assert SETTINGS_CHECK is not None and SETTINGS_CHECK(doc) is True


@pytest.mark.parametrize("doc", INVALID, ids=lambda d: json.dumps(d)[:60])
def test_invalid_settings_are_refused(doc: Any) -> None:
    assert not JSONSCHEMA.is_valid(doc)
    assert SETTINGS_CHECK is not None and SETTINGS_CHECK(doc) is False


def _paths(doc: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [here]
    if isinstance(doc, dict):
        for key, value in doc.items():
            found += _paths(value, (*here, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            found += _paths(value, (*here, i))
    return found


REPLACEMENTS = [None, True, 0, 1, 16, 2.5, -1, "", "x", "/x", "~/x", "http://x", "A B", [],
                ["A"], ["A", "A"], {}, {"command": "c"}, math.nan]


@settings(max_examples=300, deadline=None)
@given(base=st.sampled_from(VALID[1:9]), data=st.data())
def test_any_change_of_a_document_is_judged_as_jsonschema_judges_it(base: Any,
                                                                      data: st.DataObject
                                                                      ) -> None:
    """Each valid document with one value replaced, or one key added."""
    doc = copy.deepcopy(base)
    path = data.draw(st.sampled_from(_paths(doc)[1:]))
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    if data.draw(st.booleans()) and isinstance(parent, dict):
        parent[data.draw(st.sampled_from(["extra", "command", "url", "env", "limits"]))] = (
            data.draw(st.sampled_from(REPLACEMENTS)))
    else:
        parent[path[-1]] = data.draw(st.sampled_from(REPLACEMENTS))
    assert SETTINGS_CHECK is not None
    assert SETTINGS_CHECK(doc) in (JSONSCHEMA.is_valid(doc), None)


names = st.sampled_from(["a", "b", "c"])
scalars = st.none() | st.booleans() | st.integers(-3, 20) | st.floats(-3, 20) | names
documents = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                         | st.dictionaries(names, inner, max_size=3), max_leaves=8)
keywords: dict[str, st.SearchStrategy[Any]] = {
    "type": st.sampled_from(["array", "boolean", "integer", "null", "number", "object",
                             "string"]) | st.lists(st.sampled_from(["integer", "string"]),
                                                   min_size=1, max_size=2, unique=True),
    "enum": st.lists(names, max_size=3),
    "minLength": st.integers(0, 2),
    "maxLength": st.integers(0, 2),
    "pattern": st.sampled_from(["^a", "b$", "[ab]+"]),
    "minimum": st.integers(-1, 3) | st.floats(-1, 3),
    "maximum": st.integers(-1, 3),
    "exclusiveMinimum": st.integers(-1, 3),
    "exclusiveMaximum": st.floats(-1, 3),
    "required": st.lists(names, max_size=2, unique=True),
    "uniqueItems": st.booleans(),
    "title": st.text(max_size=2),
}
leaves = st.fixed_dictionaries({}, optional=keywords) | st.booleans()


def _nested(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.fixed_dictionaries({}, optional={
        **keywords,
        "items": inner,
        "additionalProperties": inner,
        "propertyNames": inner,
        "not": inner,
        "anyOf": st.lists(inner, min_size=1, max_size=2),
        "allOf": st.lists(inner, min_size=1, max_size=2),
        "oneOf": st.lists(inner, min_size=1, max_size=2),
        "properties": st.dictionaries(names, inner, max_size=2),
    })


schemas = st.recursive(leaves, _nested, max_leaves=6)


@settings(max_examples=600, deadline=None)
@given(schema=schemas, doc=documents)
def test_any_covered_schema_and_document_are_judged_as_jsonschema_judges_them(
        schema: Any, doc: Any) -> None:
    Draft202012Validator.check_schema(schema)
    check = compile_check(schema)
    assert check is not None
    assert check(doc) in (Draft202012Validator(schema).is_valid(doc), None)


@pytest.mark.parametrize("schema", [
    {"$ref": "#"},
    {"const": 1},
    {"readOnly": True},
    {"patternProperties": {"^a": {}}},
    {"prefixItems": [{}]},
    {"enum": [1, "a"]},
    {"minLength": 2.0},
    {"pattern": "(unclosed"},
    {"type": "strnig"},
    {"properties": {"a": {"if": {}}}},
    {"items": {"anyOf": []}},
    {"properties": {"a": {"$schema": "https://json-schema.org/draft/2020-12/schema"}}},
])
def test_what_it_does_not_cover_compiles_to_none(schema: dict[str, Any]) -> None:
    assert compile_check(schema) is None


def test_format_default_and_examples_only_annotate() -> None:
    """As for jsonschema without a format checker (the kernel never gives one)."""
    from jsonschema import Draft202012Validator

    schema = {"type": "object", "properties": {
        "when": {"type": "string", "format": "date", "default": 3, "examples": [[1]]},
        "n": {"type": "array", "minItems": 1, "maxItems": 2}}}
    check = compile_check(schema)
    assert check is not None
    for doc in ({"when": "not a date"}, {"when": 1}, {"n": []}, {"n": [1]}, {"n": [1, 2, 3]},
                {"n": "x"}):
        assert check(doc) == Draft202012Validator(schema).is_valid(doc), doc


def test_unique_items_over_other_values_is_left_to_jsonschema() -> None:
    check = compile_check({"uniqueItems": True})
    assert check is not None
    assert check([1, 1.0]) is None and not Draft202012Validator({"uniqueItems": True}
                                                               ).is_valid([1, 1.0])
    assert check(["a", "b"]) is True
    assert check(["a", "a"]) is False

