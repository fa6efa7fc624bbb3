"""The one tool registry: every ToolSpec the model can call, checked once at registration.

`register` refuses a spec that could only fail later (bad name, duplicate, empty
description, a schema that is not a valid Draft 2020-12 object schema, a schema the handler
cannot accept). The meta-schema check is kernel.tools.metaschema's where it can vouch for the
schema, else jsonschema's. Validators are compiled once per spec, jsonschema's only when first
needed (jsonschema is not imported to start a run). The model-facing list of tools is built
once per set of tools (`version`) and allowed subset.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kernel.tools.metaschema import plainly_valid
from kernel.tools.quickschema import compile_check
from kernel.tools.schema import context_parameter
from kernel.tools.spec import Risk, ToolSpec

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

NAME_PATTERN = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class RegistrationError(ValueError):
    """A spec the registry refuses; the message says which tool, what is wrong, how to fix it."""


Check = Callable[[Any], bool]


def compile_fast_check(schema: Mapping[str, Any]) -> Check | None:
    """A fast `is_valid` for a tool's input schema (kernel.tools.quickschema's check), or None
    when it does not cover the schema. It says True only where jsonschema would (a hypothesis
    test compares them); False, or "cannot tell", sends the dispatcher to jsonschema, which
    decides and gives the messages."""
    check = compile_check(schema)
    if check is None:
        return None
    return lambda args: check(args) is True


@dataclass(frozen=True)
class RegisteredTool:
    """A registered spec with what the dispatcher needs precomputed."""

    spec: ToolSpec
    context_param: str | None
    """The handler parameter that receives the ToolContext, if any."""
    is_async: bool
    fast_check: Check | None
    """compile_fast_check's plain-Python check, when the schema allows one."""

    @functools.cached_property
    def validator(self) -> Draft202012Validator:
        """jsonschema's validator, made when first asked for (for the error messages, or a
        schema with no fast check): jsonschema is not imported to start a run."""
        from jsonschema import Draft202012Validator

        return Draft202012Validator(self.spec.input_schema)

    @property
    def is_valid(self) -> Check:
        """The fastest exact validity check: compiled plain Python when the schema allows it."""
        return self.fast_check or self.validator.is_valid


def _handler_params(spec: ToolSpec, context_param: str | None) -> tuple[set[str], set[str], bool]:
    """(accepted names, names without default, accepts **kwargs) of the handler."""
    try:
        sig = inspect.signature(spec.handler)
    except (TypeError, ValueError) as exc:
        raise RegistrationError(
            f"tool {spec.name!r}: cannot read the handler's signature ({exc}); "
            f"use a plain function or method"
        ) from exc
    accepted: set[str] = set()
    mandatory: set[str] = set()
    var_kw = False
    for pname, param in sig.parameters.items():
        if pname == context_param:
            continue
        if param.kind is param.VAR_KEYWORD:
            var_kw = True
        elif param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            accepted.add(pname)
            if param.default is param.empty:
                mandatory.add(pname)
        elif param.kind is param.POSITIONAL_ONLY and param.default is param.empty:
            raise RegistrationError(
                f"tool {spec.name!r}: handler parameter {pname!r} is positional-only; "
                f"the dispatcher passes arguments by name, so make it a normal parameter"
            )
    return accepted, mandatory, var_kw


def _check_spec(spec: ToolSpec) -> RegisteredTool:
    if not isinstance(spec, ToolSpec):
        raise RegistrationError(f"expected a ToolSpec, got {type(spec).__name__}")
    name = spec.name
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise RegistrationError(
            f"tool name {name!r} is invalid: names must match {NAME_PATTERN.pattern} "
            f"(1-64 letters, digits, '_' or '-'); rename the tool"
        )
    if not isinstance(spec.description, str) or not spec.description.strip():
        raise RegistrationError(
            f"tool {name!r} has an empty description; the model needs one to know when to "
            f"use it (write a docstring or pass description=)"
        )
    if not callable(spec.handler):
        raise RegistrationError(f"tool {name!r}: handler {spec.handler!r} is not callable")
    if not isinstance(spec.risk, Risk):
        raise RegistrationError(f"tool {name!r}: risk must be a Risk, got {spec.risk!r}")
    if not spec.timeout_s > 0:
        raise RegistrationError(f"tool {name!r}: timeout_s must be > 0, got {spec.timeout_s}")
    if not isinstance(spec.retries, int) or spec.retries < 0:
        raise RegistrationError(f"tool {name!r}: retries must be an int ≥ 0, got {spec.retries}")
    if not isinstance(spec.output_limit, int) or spec.output_limit < 100:
        raise RegistrationError(
            f"tool {name!r}: output_limit must be an int ≥ 100 characters, "
            f"got {spec.output_limit!r}"
        )
    schema = spec.input_schema
    if not isinstance(schema, Mapping):
        raise RegistrationError(
            f"tool {name!r}: input_schema must be a JSON object, got {type(schema).__name__}"
        )
    try:
        json.dumps(schema)
    except (TypeError, ValueError) as exc:
        raise RegistrationError(
            f"tool {name!r}: input_schema is not plain JSON ({exc}); use only dicts, lists, "
            f"strings, numbers, booleans and None"
        ) from exc
    if not plainly_valid(schema):
        _check_metaschema(name, schema)
    if schema.get("type") != "object":
        raise RegistrationError(
            f'tool {name!r}: input_schema must have "type": "object" (tool input is always '
            f"a JSON object), got type {schema.get('type')!r}"
        )
    properties = schema.get("properties", {})
    required = list(schema.get("required", []))
    context_param = context_parameter(spec.handler)
    accepted, mandatory, var_kw = _handler_params(spec, context_param)
    if not var_kw:
        unknown = [p for p in (*required, *properties) if p not in accepted]
        if unknown:
            raise RegistrationError(
                f"tool {name!r}: the schema declares {sorted(set(unknown))} but the handler "
                f"has no parameter of that name; add the parameter(s) or **kwargs, or remove "
                f"them from the schema"
            )
    missing = sorted(mandatory - set(required))
    if missing:
        raise RegistrationError(
            f"tool {name!r}: handler parameter(s) {missing} have no default but the schema "
            f'does not require them; add them to "required" or give them defaults'
        )
    bad_paths = [p for p in spec.path_params if p not in properties]
    if bad_paths:
        raise RegistrationError(
            f"tool {name!r}: path_params {bad_paths} are not properties of the input schema"
        )
    return RegisteredTool(
        spec=spec,
        context_param=context_param,
        is_async=inspect.iscoroutinefunction(spec.handler),
        fast_check=compile_fast_check(schema),
    )


def _check_metaschema(name: str, schema: Mapping[str, Any]) -> None:
    """jsonschema's meta-schema check, for what kernel.tools.metaschema cannot vouch for."""
    import jsonschema

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = exc.json_path if hasattr(exc, "json_path") else "$"
        raise RegistrationError(
            f"tool {name!r}: input_schema fails the JSON Schema Draft 2020-12 meta-schema at "
            f"{where}: {exc.message}"
        ) from exc


class ToolRegistry:
    """The tools the model may call; registration and removal work at run time."""

    def __init__(self, specs: Iterable[ToolSpec] = ()) -> None:
        self._tools: dict[str, RegisteredTool] = {}
        self._version = 0
        self._schema_cache: dict[frozenset[str] | None, tuple[dict[str, Any], ...]] = {}
        for spec in specs:
            self.register(spec)

    def register(self, spec: ToolSpec) -> None:
        """Add a tool, or raise RegistrationError saying what is wrong and how to fix it."""
        try:
            entry = _check_spec(spec)
        except RecursionError as exc:  # an MCP server's schema is untrusted input
            raise RegistrationError(
                f"tool {spec.name!r}: input_schema is nested too deeply to check"
            ) from exc
        if spec.name in self._tools:
            existing = self._tools[spec.name].spec
            raise RegistrationError(
                f"tool {spec.name!r} is already registered (from {existing.origin}); "
                f"unregister it first or choose another name"
            )
        self._tools[spec.name] = entry
        self._changed()

    def unregister(self, name: str) -> None:
        """Remove a tool; unknown names raise KeyError."""
        if name not in self._tools:
            raise KeyError(f"tool {name!r} is not registered")
        del self._tools[name]
        self._changed()

    def _changed(self) -> None:
        self._version += 1
        self._schema_cache.clear()

    @property
    def version(self) -> int:
        return self._version

    def get(self, name: str) -> ToolSpec | None:
        entry = self._tools.get(name)
        return entry.spec if entry is not None else None

    def entry(self, name: str) -> RegisteredTool | None:
        """The spec with its compiled validator and handler facts (for the dispatcher)."""
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def validator(self, name: str) -> Draft202012Validator:
        """The compiled validator of a registered tool (KeyError when unknown)."""
        return self._tools[name].validator

    def schemas(self, allowed: Collection[str] | None = None) -> list[dict[str, Any]]:
        """Tool definitions in the Anthropic `tools` format, in registration order.

        `allowed` restricts the list to those names (unknown names are ignored). The list
        is cached until the set of tools changes; the schemas are plain-JSON copies of the
        specs'; treat the dicts as read-only.
        """
        key = frozenset(allowed) if allowed is not None else None
        cached = self._schema_cache.get(key)
        if cached is None:
            cached = tuple(
                {
                    "name": e.spec.name,
                    "description": e.spec.description,
                    "input_schema": json.loads(json.dumps(e.spec.input_schema)),
                }
                for e in self._tools.values()
                if key is None or e.spec.name in key
            )
            self._schema_cache[key] = cached
        return list(cached)
