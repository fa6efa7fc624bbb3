"""@tool: Python signatures become JSON Schemas the registry accepts."""

from __future__ import annotations

import enum
from typing import Annotated, Any, Literal

import pytest

from kernel.tools.registry import ToolRegistry
from kernel.tools.schema import ToolDefinitionError, json_schema_for, tool
from kernel.tools.spec import DEFAULT_OUTPUT_LIMIT, Risk, ToolContext


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


@pytest.mark.parametrize(
    ("annotation", "expected"),
    [
        (str, {"type": "string"}),
        (int, {"type": "integer"}),
        (float, {"type": "number"}),
        (bool, {"type": "boolean"}),
        (list[str], {"type": "array", "items": {"type": "string"}}),
        (
            list[list[int]],
            {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
        ),
        (tuple[int, ...], {"type": "array", "items": {"type": "integer"}}),
        (list, {"type": "array"}),
        (dict[str, int], {"type": "object", "additionalProperties": {"type": "integer"}}),
        (Literal["a", "b"], {"enum": ["a", "b"], "type": "string"}),
        (Literal[1, 2], {"enum": [1, 2], "type": "integer"}),
        (Literal["a", 1], {"enum": ["a", 1]}),
        (Color, {"enum": ["red", "green"], "type": "string"}),
        (str | None, {"type": ["string", "null"]}),
        (Literal["x"] | None, {"anyOf": [{"enum": ["x"], "type": "string"}, {"type": "null"}]}),
        (int | str, {"anyOf": [{"type": "integer"}, {"type": "string"}]}),
        (Annotated[int, "How many."], {"type": "integer", "description": "How many."}),
        (
            Annotated[int, "N", {"minimum": 1}],
            {"type": "integer", "description": "N", "minimum": 1},
        ),
        (Any, {}),
    ],
)
def test_type_mapping(annotation: Any, expected: dict[str, Any]) -> None:
    assert json_schema_for(annotation) == expected


@pytest.mark.parametrize("annotation", [set[int], bytes, tuple[int, str], dict[int, str], object])
def test_unmappable_types_are_refused_with_the_fix(annotation: Any) -> None:
    with pytest.raises(ToolDefinitionError) as exc:
        json_schema_for(annotation, where="f(x)")
    assert "f(x)" in str(exc.value)


def test_signature_defaults_required_and_descriptions() -> None:
    @tool(risk=Risk.WRITE, concurrent_safe=True, timeout_s=5, retries=2, path_params=("path",))
    def sample(
        ctx: ToolContext,
        path: Annotated[str, "Where."],
        count: int = 3,
        color: Color = Color.RED,
        note: str | None = None,
        flags: list[bool] | None = None,
    ) -> str:
        """Do a sample thing.

        More detail.
        """
        return ""

    assert sample.name == "sample"
    assert sample.description == "Do a sample thing.\n\nMore detail."
    assert sample.risk is Risk.WRITE and sample.concurrent_safe and sample.retries == 2
    assert sample.timeout_s == 5 and sample.path_params == ("path",)
    assert sample.output_limit == DEFAULT_OUTPUT_LIMIT
    assert sample.input_schema == {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Where."},
            "count": {"type": "integer", "default": 3},
            "color": {"enum": ["red", "green"], "type": "string", "default": "red"},
            "note": {"type": ["string", "null"], "default": None},
            "flags": {"type": ["array", "null"], "items": {"type": "boolean"}, "default": None},
        },
        "required": ["path"],
        "additionalProperties": False,
    }
    ToolRegistry([sample])  # the generated schema passes every registration check


def test_name_description_and_explicit_schema_overrides() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}

    @tool(name="search-web", description="Search.", input_schema=schema)
    def whatever(**kwargs: Any) -> str:
        return ""

    assert whatever.name == "search-web"
    assert whatever.description == "Search."
    assert whatever.input_schema == schema


def test_no_parentheses_form_and_summarize() -> None:
    @tool
    def bare(x: int) -> int:
        """Bare."""
        return x

    assert bare.name == "bare" and bare.summarize({"x": 1}) == "x=1"

    @tool(summarize=lambda a: f"x is {a['x']}")
    def summarized(x: int) -> int:
        """Summarized."""
        return x

    assert summarized.summarize({"x": 2}) == "x is 2"


def test_definition_errors_name_the_parameter() -> None:
    with pytest.raises(ToolDefinitionError, match=r"f\(x\).*type annotation"):

        @tool
        def f(x) -> None:  # type: ignore[no-untyped-def]
            """F."""

    with pytest.raises(ToolDefinitionError, match=r"\*args"):

        @tool
        def g(*args: int) -> None:
            """G."""

    with pytest.raises(ToolDefinitionError, match="positional-only"):

        @tool
        def h(x: int, /) -> None:
            """H."""


def test_enum_parameters_reach_the_handler_as_members(env: Any) -> None:
    seen: list[Any] = []

    @tool
    def paint(color: Color, fallback: Color | None = None) -> str:
        """Paint."""
        seen.append((color, fallback))
        return color.name

    result = env.call(env.dispatcher([paint]), "paint", {"color": "green", "fallback": "red"})
    assert not result.is_error and result.content == "GREEN"
    assert seen == [(Color.GREEN, Color.RED)]
    bad = env.call(env.dispatcher([paint]), "paint", {"color": "blue"})
    assert bad.is_error and bad.error_code == "invalid_arguments" and "$.color" in bad.text


def test_async_enum_handler_stays_async(env: Any) -> None:
    @tool
    async def shade(color: Color) -> str:
        """Shade."""
        return color.value.upper()

    registry = ToolRegistry([shade])
    entry = registry.entry("shade")
    assert entry is not None and entry.is_async
    assert env.call(env.dispatcher([shade]), "shade", {"color": "red"}).content == "RED"
