"""The compiled fast check must agree with jsonschema on every instance."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from kernel.tools.builtin import builtin_tools
from kernel.tools.registry import ToolRegistry, compile_fast_check

SIMPLE_TYPES = ["string", "integer", "number", "boolean", "null", "array", "object"]

values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-10, max_value=10)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([0.0, 1.0, -2.0, 2.5, 1e300])
    | st.text(max_size=5)
    | st.sampled_from(["a", "b", "red", ""]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=6,
)

leaf_schemas = st.fixed_dictionaries(
    {},
    optional={
        "type": st.sampled_from(SIMPLE_TYPES)
        | st.lists(st.sampled_from(SIMPLE_TYPES), min_size=1, max_size=3, unique=True),
        "enum": st.lists(st.sampled_from(["a", "b", "red", ""]), min_size=1, max_size=3),
        "minimum": st.integers(-3, 3) | st.floats(-3, 3),
        "maximum": st.integers(-3, 3),
        "exclusiveMinimum": st.integers(-3, 3),
        "exclusiveMaximum": st.floats(-3, 3),
        "minLength": st.integers(0, 3),
        "maxLength": st.integers(0, 3),
        "minItems": st.integers(0, 2),
        "maxItems": st.integers(0, 2),
        "description": st.text(max_size=3),
        "default": values,
    },
)
prop_schemas = st.recursive(
    leaf_schemas,
    lambda inner: st.builds(lambda s, i: {**s, "items": i}, leaf_schemas, inner),
    max_leaves=3,
)


@st.composite
def object_schemas(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), unique=True, max_size=4))
    props = {n: draw(prop_schemas) for n in names}
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if names:
        schema["required"] = draw(st.lists(st.sampled_from(names), unique=True))
    additional = draw(st.none() | st.booleans())
    if additional is not None:
        schema["additionalProperties"] = additional
    return schema


instances = st.dictionaries(st.sampled_from(["a", "b", "c", "d", "e"]), values, max_size=5) | values


@settings(max_examples=250, deadline=None)
@given(schema=object_schemas(), instance=instances)
def test_fast_check_agrees_with_jsonschema(schema: dict[str, Any], instance: Any) -> None:
    Draft202012Validator.check_schema(schema)
    fast = compile_fast_check(schema)
    assert fast is not None
    assert fast(instance) == Draft202012Validator(schema).is_valid(instance)


def test_builtin_tools_all_get_the_fast_check() -> None:
    registry = ToolRegistry(builtin_tools())
    for name in registry.names():
        entry = registry.entry(name)
        assert entry is not None and entry.is_valid != entry.validator.is_valid, name


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"enum": [1, 2]}}},
        {"type": "object", "properties": {"a": {"const": 1}}},
        {"type": "object", "patternProperties": {"^a": {"type": "string"}}},
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}, "$defs": {"x": {}}},
    ],
)
def test_other_schemas_keep_jsonschema(schema: dict[str, Any]) -> None:
    assert compile_fast_check(schema) is None


@pytest.mark.parametrize(("schema", "docs"), [
    ({"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "null"}]}}},
     [{"a": "x"}, {"a": None}, {"a": 1}, {}]),
    ({"type": "object", "properties": {"a": {"type": "string", "pattern": "^x"}}},
     [{"a": "xy"}, {"a": "yx"}, {"a": 3}]),
    ({"type": "object", "additionalProperties": {"type": "string"}},
     [{"a": "x"}, {"a": 1}, {}]),
    ({"type": "object", "properties": {"s": {"type": "array", "uniqueItems": True}}},
     [{"s": ["a", "b"]}, {"s": ["a", "a"]}, {"s": [1, 2]}]),
])
def test_the_richer_tool_schemas_are_checked_as_jsonschema_checks_them(
        schema: dict[str, Any], docs: list[Any]) -> None:
    """kernel.tools.quickschema's check (one for settings and tools): True only where jsonschema
    says valid; where it cannot tell (uniqueItems over numbers) it says False and the
    dispatcher asks jsonschema."""
    fast = compile_fast_check(schema)
    assert fast is not None
    validator = Draft202012Validator(schema)
    for doc in docs:
        unsure = doc == {"s": [1, 2]}  # uniqueItems over numbers: left to jsonschema
        assert fast(doc) == (validator.is_valid(doc) and not unsure), doc


def test_nan_and_integral_floats_follow_jsonschema() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}}}
    fast = compile_fast_check(schema)
    assert fast is not None
    for value in (math.nan, 2.0, 2.5, True, math.inf):
        assert fast({"n": value}) == Draft202012Validator(schema).is_valid({"n": value})
