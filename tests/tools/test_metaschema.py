"""kernel.tools.metaschema vouches only for schemas that pass jsonschema's meta-schema check."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, SchemaError

from kernel.tools.builtin import builtin_tools
from kernel.tools.metaschema import SIMPLE_TYPES, plainly_valid

TYPES = sorted(SIMPLE_TYPES)
odd = st.sampled_from([None, True, False, 0, -1, 1.5, 2.0, math.nan, "", "x", "strnig", [],
                       ["a", "a"], [1], {}, {"a": 1}, ("a",)])
names = st.sampled_from(["a", "b", "c"])
values: dict[str, st.SearchStrategy[Any]] = {
    "type": st.sampled_from(TYPES) | st.lists(st.sampled_from(TYPES), max_size=3) | odd,
    "enum": st.lists(st.integers(0, 2) | names, max_size=3) | odd,
    "const": odd,
    "default": odd,
    "examples": st.lists(names, max_size=2) | odd,
    "title": st.text(max_size=3) | odd,
    "description": st.text(max_size=3) | odd,
    "format": st.sampled_from(["date", "nonsense"]) | odd,
    "uniqueItems": st.booleans() | odd,
    "readOnly": st.booleans() | odd,
    "minimum": st.integers(-3, 3) | st.floats(allow_nan=True) | odd,
    "exclusiveMaximum": st.floats(-3, 3) | odd,
    "minLength": st.integers(-2, 3) | odd,
    "maxItems": st.integers(-2, 3) | odd,
    "minProperties": st.integers(-1, 2) | odd,
    "required": st.lists(names, max_size=3) | odd,
    "pattern": st.sampled_from(["^a+$", "(unclosed"]) | odd,
    "multipleOf": st.integers(-1, 2) | odd,
    "$ref": st.sampled_from(["#", "#/$defs/x"]) | odd,
    "x-unknown": odd,
}
leaves = st.fixed_dictionaries({}, optional=values) | st.booleans() | odd


def _with_subschemas(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.fixed_dictionaries({}, optional={
        **values,
        "items": inner,
        "additionalProperties": inner,
        "not": inner,
        "propertyNames": inner,
        "anyOf": st.lists(inner, max_size=2) | odd,
        "oneOf": st.lists(inner, max_size=2),
        "prefixItems": st.lists(inner, max_size=2),
        "properties": st.dictionaries(names, inner, max_size=3) | odd,
    })


schemas = st.recursive(leaves, _with_subschemas, max_leaves=8)


def _passes_check_schema(schema: Any) -> bool:
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError:
        return False
    return True


@settings(max_examples=400, deadline=None)
@given(schema=schemas)
def test_what_it_vouches_for_passes_jsonschema(schema: Any) -> None:
    if plainly_valid(schema):
        assert _passes_check_schema(schema)


def test_the_builtin_tools_schemas_are_vouched_for() -> None:
    for spec in builtin_tools():
        assert plainly_valid(spec.input_schema), spec.name


@pytest.mark.parametrize("schema", [
    {"type": "strnig"},
    {"type": []},
    {"type": ["string", "string"]},
    {"type": ("string",)},
    {"enum": "a"},
    {"required": "a"},
    {"required": ["a", "a"]},
    {"required": [1]},
    {"minLength": -1},
    {"maxItems": True},
    {"minimum": "1"},
    {"description": 5},
    {"uniqueItems": "yes"},
    {"items": 3},
    {"anyOf": []},
    {"properties": []},
    {"properties": {"a": 3}},
    {"properties": {"a": {"items": {"anyOf": [{"type": "nope"}]}}}},
    {"additionalProperties": "no"},
])
def test_invalid_schemas_are_never_vouched_for(schema: dict[str, Any]) -> None:
    assert not plainly_valid(schema)
    assert not _passes_check_schema(schema)


@pytest.mark.parametrize("schema", [
    {"pattern": "^a$"},
    {"$ref": "#"},
    {"minLength": 2.0},
    {"x-vendor": 1},
])
def test_valid_schemas_it_cannot_see_into_go_to_jsonschema(schema: dict[str, Any]) -> None:
    assert not plainly_valid(schema)
    assert _passes_check_schema(schema)
