"""ToolRegistry: every refusal at registration, run-time changes, cached schemas/validators."""

from __future__ import annotations

from typing import Any

import pytest

from kernel.tools.registry import RegistrationError, ToolRegistry
from kernel.tools.schema import tool
from kernel.tools.spec import ToolContext, ToolSpec


def handler(a: str, b: int = 0) -> str:
    return a * b


def spec(**overrides: Any) -> ToolSpec:
    base: dict[str, Any] = {
        "name": "t",
        "description": "A test tool.",
        "input_schema": {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
            "required": ["a"],
            "additionalProperties": False,
        },
        "handler": handler,
    }
    base.update(overrides)
    return ToolSpec(**base)


@pytest.mark.parametrize("name", ["", "has space", "x" * 65, "naïve", "a.b", "a/b", "tool!"])
def test_bad_names_are_refused(name: str) -> None:
    with pytest.raises(RegistrationError, match="invalid"):
        ToolRegistry().register(spec(name=name))


@pytest.mark.parametrize("name", ["a", "x" * 64, "Read_File-2", "mcp__srv__tool"])
def test_good_names_are_accepted(name: str) -> None:
    registry = ToolRegistry([spec(name=name)])
    assert registry.names() == [name]


def test_duplicates_are_refused() -> None:
    registry = ToolRegistry([spec()])
    with pytest.raises(RegistrationError, match="already registered"):
        registry.register(spec(description="Other."))


@pytest.mark.parametrize("description", ["", "   \n"])
def test_empty_description_is_refused(description: str) -> None:
    with pytest.raises(RegistrationError, match="empty description"):
        ToolRegistry().register(spec(description=description))


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        ({"type": "object", "properties": {"a": {"type": "strnig"}}, "required": ["a"]}, "$"),
        ({"type": "object", "properties": {"a": {}}, "required": "a"}, "required"),
        ({"type": "object", "properties": {"a": {"minLength": -1}}, "required": ["a"]}, "min"),
        ({"type": "object", "properties": [], "required": []}, "properties"),
        ({"type": "object", "properties": {"a": {"type": []}}, "required": ["a"]}, "type"),
        ({"type": "object", "properties": {"a": {}}, "required": ["a", "a"]}, "required"),
        ({"type": "object", "properties": {"a": {"maxItems": True}}, "required": ["a"]}, "max"),
        ({"type": "object", "properties": {"a": {"anyOf": []}}, "required": ["a"]}, "anyOf"),
        ({"type": "object", "properties": {"a": {"items": {"minimum": "1"}}},
          "required": ["a"]}, "minimum"),
        ({"type": "object", "properties": {"a": {"pattern": "(unclosed"}}, "required": ["a"]},
         "pattern"),
        ({"type": ["object", "object"], "properties": {}}, "type"),
    ],
)
def test_schemas_failing_the_metaschema_are_refused(schema: dict[str, Any], where: str) -> None:
    with pytest.raises(RegistrationError, match="Draft 2020-12") as exc:
        ToolRegistry().register(spec(input_schema=schema))
    assert where in str(exc.value)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string"},
        {"properties": {"a": {"type": "string"}}, "required": ["a"]},
        {"type": "array"},
    ],
)
def test_non_object_schemas_are_refused(schema: dict[str, Any]) -> None:
    with pytest.raises(RegistrationError, match='"type": "object"'):
        ToolRegistry().register(spec(input_schema=schema))


@pytest.mark.parametrize("schema", [["not", "a", "mapping"], "object", None])
def test_schema_must_be_a_mapping(schema: Any) -> None:
    with pytest.raises(RegistrationError, match="must be a JSON object"):
        ToolRegistry().register(spec(input_schema=schema))


@pytest.mark.parametrize("keyword", ["not", "items", "additionalProperties"])
def test_a_schema_nested_too_deeply_is_refused_not_raised(keyword: str) -> None:
    """An MCP server's schema is untrusted: nesting past the interpreter's recursion limit
    is a clear refusal, like any other bad schema."""
    schema: dict[str, Any] = {"type": "object", "properties": {}, "required": []}
    inner = schema
    for _ in range(5000):
        inner[keyword] = {"type": "object"}
        inner = inner[keyword]
    with pytest.raises(RegistrationError, match="nested too deeply"):
        ToolRegistry().register(spec(input_schema=schema))


def test_schema_must_be_plain_json() -> None:
    schema = {"type": "object", "properties": {"a": {"default": object()}}, "required": ["a"]}
    with pytest.raises(RegistrationError, match="plain JSON"):
        ToolRegistry().register(spec(input_schema=schema))


def test_required_properties_the_handler_cannot_accept_are_refused() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "missing": {"type": "string"}},
        "required": ["a", "missing"],
    }
    with pytest.raises(RegistrationError, match=r"\['missing'\].*no parameter"):
        ToolRegistry().register(spec(input_schema=schema))


def test_handler_parameters_the_schema_does_not_require_are_refused() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}
    with pytest.raises(RegistrationError, match=r"\['a'\] have no default"):
        ToolRegistry().register(spec(input_schema=schema))


def test_var_keyword_handlers_accept_any_schema_properties() -> None:
    def anything(**kwargs: Any) -> str:
        return ""

    schema = {"type": "object", "properties": {"x": {}, "y": {}}, "required": ["x"]}
    registry = ToolRegistry([spec(handler=anything, input_schema=schema)])
    assert registry.names() == ["t"]
    assert registry.schemas()[0]["input_schema"]["required"] == ["x"]


def test_context_parameter_is_not_a_schema_property() -> None:
    def with_ctx(ctx: ToolContext, a: str, b: int = 0) -> str:
        return a

    registry = ToolRegistry([spec(handler=with_ctx)])
    entry = registry.entry("t")
    assert entry is not None and entry.context_param == "ctx"


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"handler": "not callable"}, "not callable"),
        ({"timeout_s": 0}, "timeout_s"),
        ({"retries": -1}, "retries"),
        ({"output_limit": 10}, "output_limit"),
        ({"path_params": ("nope",)}, "path_params"),
        ({"risk": "read"}, "risk must be a Risk"),
    ],
)
def test_other_bad_fields_are_refused(overrides: dict[str, Any], match: str) -> None:
    with pytest.raises(RegistrationError, match=match):
        ToolRegistry().register(spec(**overrides))


def test_not_a_spec_is_refused() -> None:
    with pytest.raises(RegistrationError, match="expected a ToolSpec"):
        ToolRegistry().register({"name": "t"})  # type: ignore[arg-type]


def test_version_changes_only_when_the_set_changes() -> None:
    registry = ToolRegistry()
    v0 = registry.version
    registry.register(spec())
    v1 = registry.version
    assert v1 != v0
    with pytest.raises(RegistrationError):
        registry.register(spec())
    assert registry.version == v1
    registry.unregister("t")
    assert registry.version not in (v0, v1)
    assert registry.get("t") is None and "t" not in registry
    with pytest.raises(KeyError):
        registry.unregister("t")


def test_schemas_format_subset_and_cache() -> None:
    @tool
    def second(x: int) -> int:
        """Second tool."""
        return x

    registry = ToolRegistry([spec(), second])
    tools = registry.schemas()
    assert tools == [
        {"name": "t", "description": "A test tool.", "input_schema": spec().input_schema},
        {"name": "second", "description": "Second tool.", "input_schema": second.input_schema},
    ]
    assert [t["name"] for t in registry.schemas(["second", "unknown"])] == ["second"]
    assert registry.schemas([]) == []
    again = registry.schemas()
    assert all(a is b for a, b in zip(tools, again, strict=True))  # built once per version
    assert registry.schemas({"second"})[0] is registry.schemas(["second"])[0]
    registry.unregister("second")
    assert [t["name"] for t in registry.schemas()] == ["t"]
    assert registry.schemas(["second"]) == []


def test_validator_is_compiled_once() -> None:
    registry = ToolRegistry([spec()])
    validator = registry.validator("t")
    assert validator is registry.validator("t")
    assert validator.is_valid({"a": "x"}) and not validator.is_valid({"a": 1})
    with pytest.raises(KeyError):
        registry.validator("nope")
