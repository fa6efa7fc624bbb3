"""A quick, exact check of a document against a JSON Schema (Draft 2020-12), without jsonschema.

`compile_check(schema)` turns a schema built of a small set of keywords (those of
settings.json's schema and of the tools' input schemas, below) into a function answering what
`Draft202012Validator(schema).is_valid(doc)` answers: True, False, or None where it cannot
tell (`uniqueItems` over anything but strings). A schema using any other keyword, or a
keyword's value in a form not covered here, compiles to None: it is not checked here at all.
As with kernel.tools.metaschema, only True is taken at its word: anything else goes to
jsonschema, which decides and explains. So settings.json that loads needs no jsonschema (its
import is about 0.1 s of `reins doctor`'s start), a bad one is still explained by
jsonschema, naming the line, and the tool registry's `is_valid` (every call the dispatcher
validates) is this check. A table and hypothesis tests hold it to jsonschema's answers.

Each keyword is applied as jsonschema applies it (jsonschema._keywords): to the instances of
its type only, with jsonschema's type checks (`integer` is an int, not a bool, or a float with
no fraction; `number` any numbers.Number but a bool; `object` a dict, `array` a list); `pattern`
is `re.search`, `enum` holds strings only (then equality is str's), annotations are ignored.
"""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]
"""True when the instance is valid; raises _Unsure when it cannot tell."""

DIALECT = "https://json-schema.org/draft/2020-12/schema"
ANNOTATIONS = frozenset({"title", "description", "$comment"})
"""Annotations whose values must be strings (as in settings.json's schema)."""
FREE_ANNOTATIONS = frozenset({"default", "examples", "format"})
"""Annotations of any value: `@tool` writes `default`; `format` only annotates (jsonschema
checks formats only when given a format checker, which the kernel never gives)."""
TYPES: Mapping[str, Check] = {
    "array": lambda v: isinstance(v, list),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: not isinstance(v, bool) and (
        isinstance(v, int) or (isinstance(v, float) and v.is_integer())),
    "null": lambda v: v is None,
    "number": lambda v: not isinstance(v, bool) and isinstance(v, numbers.Number),
    "object": lambda v: isinstance(v, dict),
    "string": lambda v: isinstance(v, str),
}


class _Unsure(Exception):
    """The check cannot tell (jsonschema can)."""


class _Unknown(Exception):
    """The schema uses what this module does not cover."""


def compile_check(schema: Any) -> Callable[[Any], bool | None] | None:
    """The check of `schema` (see the module's docstring), or None when it is not covered."""
    try:
        check = _compile(schema, root=True)
    except _Unknown:
        return None

    def verdict(instance: Any) -> bool | None:
        try:
            return check(instance)
        except _Unsure:
            return None

    return verdict


def _always(instance: Any) -> bool:
    return True


def _all(checks: list[Check]) -> Check:
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    return lambda instance: all(check(instance) for check in checks)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _count(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _Unknown
    return value


def _compile(schema: Any, root: bool = False) -> Check:
    if schema is True:
        return _always
    if isinstance(schema, bool):
        return lambda instance: schema
    if not isinstance(schema, dict):
        raise _Unknown
    checks: list[Check] = []
    for key, value in schema.items():
        if key in FREE_ANNOTATIONS:
            continue
        if key in ANNOTATIONS:
            if not isinstance(value, str):
                raise _Unknown
        elif key == "$schema":
            if not root or value != DIALECT:
                raise _Unknown
        elif key in _OBJECT_KEYWORDS:
            pass  # one check below for properties, additionalProperties and propertyNames
        elif key in _KEYWORDS:
            checks.append(_KEYWORDS[key](value))
        else:
            raise _Unknown
    if _OBJECT_KEYWORDS & schema.keys():
        checks.append(_object(schema))
    return _all(checks)


def _type(value: Any) -> Check:
    names = value if isinstance(value, list) else [value]
    if not names or not all(isinstance(n, str) and n in TYPES for n in names):
        raise _Unknown
    tests = [TYPES[n] for n in names]
    if len(tests) == 1:
        return tests[0]
    return lambda instance: any(test(instance) for test in tests)


def _enum(value: Any) -> Check:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Unknown
    allowed = frozenset(value)
    return lambda instance: isinstance(instance, str) and instance in allowed


def _string(test: Callable[[str], bool]) -> Check:
    return lambda instance: not isinstance(instance, str) or test(instance)


def _min_length(value: Any) -> Check:
    least = _count(value)
    return _string(lambda s: len(s) >= least)


def _max_length(value: Any) -> Check:
    most = _count(value)
    return _string(lambda s: len(s) <= most)


def _array(test: Callable[[list[Any]], bool]) -> Check:
    return lambda instance: not isinstance(instance, list) or test(instance)


def _min_items(value: Any) -> Check:
    least = _count(value)
    return _array(lambda items: len(items) >= least)


def _max_items(value: Any) -> Check:
    most = _count(value)
    return _array(lambda items: len(items) <= most)


def _pattern(value: Any) -> Check:
    if not isinstance(value, str):
        raise _Unknown
    try:
        search = re.compile(value).search
    except re.error:
        raise _Unknown from None
    return _string(lambda s: search(s) is not None)


def _bound(test: Callable[[Any, Any], bool]) -> Callable[[Any], Check]:
    def make(value: Any) -> Check:
        if not _number(value):
            raise _Unknown
        def check(instance: Any) -> bool:
            if not TYPES["number"](instance):
                return True
            try:
                return test(instance, value)
            except TypeError:  # a number Python cannot order (complex)
                raise _Unsure from None

        return check

    return make


def _required(value: Any) -> Check:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _Unknown
    return lambda instance: not isinstance(instance, dict) or all(k in instance for k in value)


def _items(value: Any) -> Check:
    item = _compile(value)
    return lambda instance: not isinstance(instance, list) or all(map(item, instance))


def _unique_items(value: Any) -> Check:
    if not isinstance(value, bool):
        raise _Unknown
    if not value:
        return lambda instance: True

    def unique(instance: Any) -> bool:
        if not isinstance(instance, list):
            return True
        if not all(isinstance(v, str) for v in instance):
            raise _Unsure  # jsonschema's equality (1 and 1.0 alike, 1 and true not, ...)
        return len(set(instance)) == len(instance)

    return unique


def _subschemas(value: Any) -> list[Check]:
    if not isinstance(value, list) or not value:
        raise _Unknown
    return [_compile(v) for v in value]


def _any_of(value: Any) -> Check:
    subs = _subschemas(value)
    return lambda instance: any(sub(instance) for sub in subs)


def _all_of(value: Any) -> Check:
    return _all(_subschemas(value))


def _one_of(value: Any) -> Check:
    subs = _subschemas(value)
    return lambda instance: sum(1 for sub in subs if sub(instance)) == 1


def _not(value: Any) -> Check:
    sub = _compile(value)
    return lambda instance: not sub(instance)


_KEYWORDS: Mapping[str, Callable[[Any], Check]] = {
    "type": _type,
    "enum": _enum,
    "minLength": _min_length,
    "maxLength": _max_length,
    "pattern": _pattern,
    "minimum": _bound(lambda v, bound: not v < bound),
    "maximum": _bound(lambda v, bound: not v > bound),
    "exclusiveMinimum": _bound(lambda v, bound: not v <= bound),
    "exclusiveMaximum": _bound(lambda v, bound: not v >= bound),
    "required": _required,
    "items": _items,
    "minItems": _min_items,
    "maxItems": _max_items,
    "uniqueItems": _unique_items,
    "anyOf": _any_of,
    "allOf": _all_of,
    "oneOf": _one_of,
    "not": _not,
}
_OBJECT_KEYWORDS = frozenset({"properties", "additionalProperties", "propertyNames"})


def _object(schema: Mapping[str, Any]) -> Check:
    """properties, additionalProperties (for the keys `properties` does not name) and
    propertyNames, together."""
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise _Unknown
    named = {name: _compile(sub) for name, sub in properties.items()}
    extra = _compile(schema.get("additionalProperties", True))
    names = _compile(schema.get("propertyNames", True))

    def check(instance: Any) -> bool:
        if not isinstance(instance, dict):
            return True
        for key, value in instance.items():
            sub = named.get(key, extra)
            if not sub(value) or not names(key):
                return False
        return True

    def check_values(instance: Any) -> bool:
        if not isinstance(instance, dict):
            return True
        return all(named.get(key, extra)(value) for key, value in instance.items())

    return check_values if names is _always else check
