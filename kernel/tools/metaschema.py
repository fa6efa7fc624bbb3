"""A quick, sufficient check of the JSON Schema Draft 2020-12 meta-schema, without jsonschema.

`plainly_valid(schema)` is True only for a schema built of a small set of keywords whose
values it can see are what the meta-schema asks for (the keywords `@tool` writes and a few
more): such a schema passes `Draft202012Validator.check_schema`, and the registry skips that
check (about 5 ms a tool, and importing jsonschema at start-up). False means "not shown
here", never "invalid": the registry then asks jsonschema, which refuses what is invalid. A
hypothesis test holds it to that: whatever it accepts, check_schema accepts.

Counts are `int` only (jsonschema also takes 2.0), arrays `list` only and objects `dict`
only, as jsonschema's type checks are; `pattern` (a regex format check), `$ref`, `$schema`
and every keyword not named below are left to jsonschema.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

SIMPLE_TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})


def _simple_type(value: Any) -> bool:
    return isinstance(value, str) and value in SIMPLE_TYPES


def _type(value: Any) -> bool:
    if isinstance(value, list):
        return bool(value) and all(map(_simple_type, value)) and len(set(value)) == len(value)
    return _simple_type(value)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _names(value: Any) -> bool:
    return (isinstance(value, list) and all(isinstance(v, str) for v in value)
            and len(set(value)) == len(value))


def _anything(value: Any) -> bool:
    return True


_VALUES: Mapping[str, Callable[[Any], bool]] = {
    "type": _type,
    "enum": lambda v: isinstance(v, list),
    "const": _anything,
    "default": _anything,
    "examples": lambda v: isinstance(v, list),
    "title": lambda v: isinstance(v, str),
    "description": lambda v: isinstance(v, str),
    "format": lambda v: isinstance(v, str),
    "deprecated": lambda v: isinstance(v, bool),
    "readOnly": lambda v: isinstance(v, bool),
    "writeOnly": lambda v: isinstance(v, bool),
    "uniqueItems": lambda v: isinstance(v, bool),
    "minimum": _number,
    "maximum": _number,
    "exclusiveMinimum": _number,
    "exclusiveMaximum": _number,
    "minLength": _count,
    "maxLength": _count,
    "minItems": _count,
    "maxItems": _count,
    "minProperties": _count,
    "maxProperties": _count,
    "required": _names,
}
_SUBSCHEMA = frozenset({"items", "additionalProperties", "not", "propertyNames"})
_SUBSCHEMA_LISTS = frozenset({"anyOf", "allOf", "oneOf", "prefixItems"})


def plainly_valid(schema: Any) -> bool:
    """True when `schema` is seen to satisfy the Draft 2020-12 meta-schema (see above)."""
    if isinstance(schema, bool):
        return True
    if not isinstance(schema, dict):
        return False
    for key, value in schema.items():
        check = _VALUES.get(key) if isinstance(key, str) else None
        if check is not None:
            if not check(value):
                return False
        elif key in _SUBSCHEMA:
            if not plainly_valid(value):
                return False
        elif key in _SUBSCHEMA_LISTS:
            if not isinstance(value, list) or not value or not all(map(plainly_valid, value)):
                return False
        elif key == "properties":
            if not isinstance(value, dict) or not all(
                    isinstance(name, str) and plainly_valid(sub) for name, sub in value.items()):
                return False
        else:
            return False
    return True
