"""`@tool`: a ToolSpec built from a plain function.

The docstring is the description; each parameter becomes a property of the input schema:
`str`, `int`, `float`, `bool`, `list[...]`, `dict[str, ...]`, `Literal[...]` (→ `enum`),
an `Enum` subclass (→ `enum` of its values; the handler receives the member), `X | None`,
`Any`; a default makes the property optional and is shown as `default`;
`Annotated[T, "text"]` gives the property its description and a dict in the metadata adds
keywords (`Annotated[int, "Line to start at", {"minimum": 1}]`). A parameter annotated
`ToolContext` is filled in by the dispatcher and is not part of the schema.
"""

from __future__ import annotations

import enum
import functools
import inspect
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal, overload

from kernel.tools.spec import (
    DEFAULT_OUTPUT_LIMIT,
    DEFAULT_TIMEOUT_S,
    Handler,
    Risk,
    ToolContext,
    ToolSpec,
)

_SIMPLE: Mapping[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


class ToolDefinitionError(TypeError):
    """A function that cannot become a tool; the message names the parameter and the fix."""


def _annotation_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise ToolDefinitionError(
            f"{getattr(fn, '__qualname__', fn)!r}: its annotations cannot be resolved ({exc}); "
            "import every type it names at module level") from exc


def _is_context(annotation: Any) -> bool:
    return annotation is ToolContext


def context_parameter(fn: Callable[..., Any]) -> str | None:
    """The name of the parameter annotated ToolContext, if any."""
    hints = _annotation_hints(fn)
    for pname in inspect.signature(fn).parameters:
        if _is_context(hints.get(pname)):
            return pname
    return None


def json_schema_for(annotation: Any, *, where: str = "parameter") -> dict[str, Any]:
    """The JSON Schema of one Python type annotation (raises ToolDefinitionError)."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Annotated:
        described = json_schema_for(args[0], where=where)
        texts = [a for a in args[1:] if isinstance(a, str)]
        if texts:
            described["description"] = " ".join(texts)
        for extra in args[1:]:
            if isinstance(extra, Mapping):
                described.update(extra)
        return described
    if annotation is Any:
        return {}
    if annotation in _SIMPLE:
        return {"type": _SIMPLE[annotation]}
    if annotation is type(None):
        return {"type": "null"}
    if origin in (typing.Union, types.UnionType):
        options = [a for a in args if a is not type(None)]
        nullable = len(options) != len(args)
        if len(options) == 1 and nullable:
            inner = json_schema_for(options[0], where=where)
            if isinstance(inner.get("type"), str) and "enum" not in inner:
                inner["type"] = [inner["type"], "null"]
                return inner
            return {"anyOf": [inner, {"type": "null"}]}
        schemas = [json_schema_for(a, where=where) for a in options]
        if nullable:
            schemas.append({"type": "null"})
        return {"anyOf": schemas}
    if origin is Literal:
        return _enum_schema(list(args))
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _enum_schema([m.value for m in annotation])
    if annotation in (list, tuple) or origin in (list, tuple, Sequence):
        schema: dict[str, Any] = {"type": "array"}
        if args and not (origin is tuple and (len(args) != 2 or args[1] is not Ellipsis)):
            schema["items"] = json_schema_for(args[0], where=where)
        elif args:
            raise ToolDefinitionError(
                f"{where}: fixed-length tuple {annotation!r} is not supported; "
                f"use list[T] or tuple[T, ...]"
            )
        return schema
    if annotation is dict or origin in (dict, Mapping):
        schema = {"type": "object"}
        if len(args) == 2:
            if args[0] is not str:
                raise ToolDefinitionError(f"{where}: JSON object keys are strings, not {args[0]!r}")
            schema["additionalProperties"] = json_schema_for(args[1], where=where)
        return schema
    raise ToolDefinitionError(
        f"{where}: the type {annotation!r} has no JSON Schema mapping; use str, int, float, "
        f"bool, list[...], dict[str, ...], Literal[...], an Enum, X | None or Any, "
        f"or pass input_schema= explicitly"
    )


def _enum_schema(values: list[Any]) -> dict[str, Any]:
    schema: dict[str, Any] = {"enum": values}
    kinds = {type(v) for v in values}
    if len(kinds) == 1 and next(iter(kinds)) in _SIMPLE:
        schema["type"] = _SIMPLE[next(iter(kinds))]
    return schema


def _jsonable_default(value: Any) -> Any:
    return value.value if isinstance(value, enum.Enum) else value


def schema_from_signature(fn: Callable[..., Any]) -> dict[str, Any]:
    """The input schema of `fn`: one property per parameter except a ToolContext one."""
    hints = _annotation_hints(fn)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for pname, param in inspect.signature(fn).parameters.items():
        where = f"{fn.__name__}({pname})"
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(
                f"{where}: *args/**kwargs cannot be described to the model; "
                f"declare each parameter, or pass input_schema= explicitly"
            )
        if param.kind is param.POSITIONAL_ONLY:
            raise ToolDefinitionError(
                f"{where}: positional-only parameters cannot be passed by name; remove the '/'"
            )
        annotation = hints.get(pname, inspect.Parameter.empty)
        if _is_context(annotation):
            continue
        if annotation is inspect.Parameter.empty:
            raise ToolDefinitionError(f"{where}: add a type annotation so it has a schema")
        prop = json_schema_for(annotation, where=where)
        if param.default is inspect.Parameter.empty:
            required.append(pname)
        else:
            prop["default"] = _jsonable_default(param.default)
        properties[pname] = prop
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required
    return schema


def _enum_converters(fn: Callable[..., Any]) -> dict[str, type[enum.Enum]]:
    """Parameters typed with an Enum (possibly `| None` or Annotated): value → member."""
    out: dict[str, type[enum.Enum]] = {}
    for pname, annotation in _annotation_hints(fn).items():
        candidates = [annotation]
        while candidates:
            ann = candidates.pop()
            origin = typing.get_origin(ann)
            if origin is Annotated:
                candidates.append(typing.get_args(ann)[0])
            elif origin in (typing.Union, types.UnionType):
                candidates.extend(typing.get_args(ann))
            elif isinstance(ann, type) and issubclass(ann, enum.Enum):
                out[pname] = ann
    out.pop("return", None)
    return out


def _with_enum_members(fn: Handler, converters: dict[str, type[enum.Enum]]) -> Handler:
    def convert(kwargs: dict[str, Any]) -> dict[str, Any]:
        for pname, cls in converters.items():
            value = kwargs.get(pname)
            if value is not None and not isinstance(value, cls):
                kwargs[pname] = cls(value)
        return kwargs

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def async_wrapper(**kwargs: Any) -> Any:
            return await fn(**convert(kwargs))

        return async_wrapper

    @functools.wraps(fn)
    def wrapper(**kwargs: Any) -> Any:
        return fn(**convert(kwargs))

    return wrapper


@overload
def tool(fn: Handler, /) -> ToolSpec: ...
@overload
def tool(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    risk: Risk = Risk.READ,
    concurrent_safe: bool = False,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    retries: int = 0,
    output_limit: int = DEFAULT_OUTPUT_LIMIT,
    summarize: Callable[[Mapping[str, Any]], str] | None = None,
    path_params: Sequence[str] = (),
    input_schema: Mapping[str, Any] | None = None,
    origin: str = "builtin",
) -> Callable[[Handler], ToolSpec]: ...


def tool(
    fn: Handler | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    risk: Risk = Risk.READ,
    concurrent_safe: bool = False,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    retries: int = 0,
    output_limit: int = DEFAULT_OUTPUT_LIMIT,
    summarize: Callable[[Mapping[str, Any]], str] | None = None,
    path_params: Sequence[str] = (),
    input_schema: Mapping[str, Any] | None = None,
    origin: str = "builtin",
) -> ToolSpec | Callable[[Handler], ToolSpec]:
    """Build a ToolSpec from a function (usable as `@tool` or `@tool(...)`).

    The spec is checked when it is registered (`ToolRegistry.register`), not here, except
    for parameter types that have no JSON Schema, which raise ToolDefinitionError at once.
    """

    def build(f: Handler) -> ToolSpec:
        schema = dict(input_schema) if input_schema is not None else schema_from_signature(f)
        converters = _enum_converters(f)
        handler = _with_enum_members(f, converters) if converters else f
        extra: dict[str, Any] = {"summarize": summarize} if summarize is not None else {}
        return ToolSpec(
            name=name or f.__name__,
            description=description if description is not None else inspect.getdoc(f) or "",
            input_schema=schema,
            handler=handler,
            risk=risk,
            concurrent_safe=concurrent_safe,
            timeout_s=timeout_s,
            retries=retries,
            output_limit=output_limit,
            path_params=tuple(path_params),
            origin=origin,
            **extra,
        )

    return build(fn) if fn is not None else build
