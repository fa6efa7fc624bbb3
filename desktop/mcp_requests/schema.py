"""A server's form (MCP elicitation) as fields a person can fill in, and their values read
back (pure: no Qt, tested as tables).

`form_fields(schema)` turns the requested JSON Schema into `FormField`s, or raises
`UnsupportedForm` saying what it cannot show. MCP asks for a flat object of primitive
properties, and that is what is shown: text (with `format` email, uri, date, date-time and
`minLength`/`maxLength`), number and integer (`minimum`/`maximum`), boolean, one choice
(`enum`, `enum` with `enumNames`, `oneOf` of `const`/`title`) and several choices (an
`array` whose `items` are an `enum` or an `anyOf` of `const`/`title`, with
`minItems`/`maxItems`). Anything else — a nested object, a `$ref`, a type it does not know —
is refused as a whole: a form shown in part would let a person accept what they never saw.

`read_values(fields, raw)` turns what the widgets hold (text, a bool, chosen values) into
the answer's content and an error per field; the answer is sent only when there is none.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

KINDS = ("text", "email", "uri", "date", "date-time", "number", "integer", "boolean",
         "choice", "choices")
_FORMATS = {"email": "email", "uri": "uri", "date": "date", "date-time": "date-time"}
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s.]+")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


class UnsupportedForm(ValueError):
    """A requested schema the form cannot show (the request is declined, saying why)."""


@dataclass(frozen=True)
class Choice:
    value: Any
    title: str


@dataclass(frozen=True)
class FormField:
    name: str
    kind: str
    """One of KINDS."""
    title: str
    description: str = ""
    required: bool = False
    default: Any = None
    """The schema's default (None: none)."""
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    choices: tuple[Choice, ...] = ()
    min_items: int | None = None
    max_items: int | None = None


def form_fields(schema: Any) -> tuple[FormField, ...]:
    """The fields of a requested form, in the schema's order; UnsupportedForm otherwise."""
    if not isinstance(schema, Mapping):
        raise UnsupportedForm("the requested form is not a JSON Schema object")
    if schema.get("type", "object") != "object":
        raise UnsupportedForm(f"the requested form is of type {schema.get('type')!r}, not an "
                              "object of fields")
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping):
        raise UnsupportedForm("the form's 'properties' is not an object")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise UnsupportedForm("the form's 'required' is not a list of field names")
    unknown = [r for r in required if r not in properties]
    if unknown:
        raise UnsupportedForm(f"the form requires fields it does not describe: "
                              f"{', '.join(unknown)}")
    return tuple(_field(str(name), prop, str(name) in required)
                 for name, prop in properties.items())


def _field(name: str, prop: Any, required: bool) -> FormField:
    if not isinstance(prop, Mapping):
        raise UnsupportedForm(f"the field {name!r} is not described by an object")
    for key in ("$ref", "properties", "allOf", "not", "if"):
        if key in prop:
            raise UnsupportedForm(f"the field {name!r} uses {key!r}, which a form cannot show")
    kind = prop.get("type")
    title = _text(prop.get("title")) or name
    common: dict[str, Any] = {"name": name, "title": title, "required": required,
                              "description": _text(prop.get("description")),
                              "default": prop.get("default")}
    if kind == "string" or (kind is None and ("enum" in prop or "oneOf" in prop)):
        choices = _choices(name, prop)
        if choices:
            return FormField(kind="choice", choices=choices, **common)
        fmt = prop.get("format")
        if fmt is not None and fmt not in _FORMATS:
            raise UnsupportedForm(f"the field {name!r} has the format {fmt!r}, which a form "
                                  "cannot check")
        return FormField(kind=_FORMATS.get(str(fmt), "text"),
                         min_length=_count(name, prop, "minLength"),
                         max_length=_count(name, prop, "maxLength"), **common)
    if kind in ("number", "integer"):
        return FormField(kind=str(kind), minimum=_bound(name, prop, "minimum"),
                         maximum=_bound(name, prop, "maximum"), **common)
    if kind == "boolean":
        return FormField(kind="boolean", **common)
    if kind == "array":
        items = prop.get("items")
        choices = _choices(name, items, "anyOf") if isinstance(items, Mapping) else ()
        if not choices:
            raise UnsupportedForm(f"the list field {name!r} offers no choices to pick from")
        return FormField(kind="choices", choices=choices,
                         min_items=_count(name, prop, "minItems"),
                         max_items=_count(name, prop, "maxItems"), **common)
    raise UnsupportedForm(f"the field {name!r} is of type {kind!r}, which a form cannot show")


def _choices(name: str, prop: Mapping[str, Any], titled: str = "oneOf") -> tuple[Choice, ...]:
    if isinstance(prop.get(titled), list):
        options = prop[titled]
        if not all(isinstance(o, Mapping) and "const" in o for o in options):
            raise UnsupportedForm(f"the choices of {name!r} are not a list of const/title")
        return tuple(Choice(o["const"], _text(o.get("title")) or str(o["const"]))
                     for o in options)
    values = prop.get("enum")
    if values is None:
        return ()
    if not isinstance(values, list) or not values:
        raise UnsupportedForm(f"the choices of {name!r} are not a list")
    names = prop.get("enumNames")
    if names is not None and (not isinstance(names, list) or len(names) != len(values)):
        raise UnsupportedForm(f"the choice names of {name!r} do not match its choices")
    titles = [_text(n) for n in names] if names is not None else [str(v) for v in values]
    return tuple(Choice(v, t or str(v)) for v, t in zip(values, titles, strict=True))


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _bound(name: str, prop: Mapping[str, Any], key: str) -> float | None:
    value = prop.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UnsupportedForm(f"the {key} of {name!r} is not a number")
    return float(value)


def _count(name: str, prop: Mapping[str, Any], key: str) -> int | None:
    value = prop.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UnsupportedForm(f"the {key} of {name!r} is not a count")
    return value


# ---- values ----------------------------------------------------------------------------------


def read_values(fields: Sequence[FormField], raw: Mapping[str, Any]
                ) -> tuple[dict[str, Any], dict[str, str]]:
    """What the widgets hold → (the answer's content, an error per field name).

    `raw[name]` is the text typed (text, number and integer fields), a bool (boolean), the
    chosen value or None (choice), the list of chosen values (choices). An empty optional
    field is left out of the content; an empty required one is an error."""
    content: dict[str, Any] = {}
    errors: dict[str, str] = {}
    for f in fields:
        try:
            value = read_value(f, raw.get(f.name))
        except ValueError as exc:
            errors[f.name] = str(exc)
            continue
        if value is not None:
            content[f.name] = value
    return content, errors


def read_value(f: FormField, raw: Any) -> Any:
    """One field's value (None: left empty); ValueError saying what is wrong."""
    if f.kind == "boolean":
        return bool(raw)
    if f.kind == "choices":
        chosen = list(raw or [])
        return _many(f, chosen) if chosen or f.required else None
    if f.kind == "choice":
        if raw is None:
            if f.required:
                raise ValueError("Pick one.")
            return None
        if raw not in [c.value for c in f.choices]:
            raise ValueError("Pick one of the choices.")
        return raw
    text = str(raw or "").strip()
    if not text:
        if f.required:
            raise ValueError("Required.")
        return None
    if f.kind in ("number", "integer"):
        return _number(f, text)
    return _string(f, text)


def _many(f: FormField, chosen: list[Any]) -> list[Any]:
    allowed = [c.value for c in f.choices]
    if any(v not in allowed for v in chosen):
        raise ValueError("Pick from the choices.")
    low, high = f.min_items, f.max_items
    if low is not None and len(chosen) < low:
        raise ValueError(f"Pick at least {low}.")
    if high is not None and len(chosen) > high:
        raise ValueError(f"Pick at most {high}.")
    if f.required and not chosen:
        raise ValueError("Pick at least one.")
    return [v for v in allowed if v in chosen]


def _number(f: FormField, text: str) -> int | float:
    value: int | float
    try:
        if f.kind == "integer":
            value = int(text)
        else:
            value = float(text)
            if not math.isfinite(value):
                raise ValueError(text)
            if value.is_integer() and re.fullmatch(r"[+-]?\d+", text):
                value = int(value)
    except ValueError:
        raise ValueError("A whole number." if f.kind == "integer" else "A number.") from None
    low, high = f.minimum, f.maximum
    if low is not None and value < low:
        raise ValueError(f"At least {plain_number(low)}.")
    if high is not None and value > high:
        raise ValueError(f"At most {plain_number(high)}.")
    return value


def plain_number(bound: float) -> str:
    """1.0 as "1", 0.5 as "0.5"."""
    return str(int(bound)) if float(bound).is_integer() else str(bound)


def _string(f: FormField, text: str) -> str:
    if f.min_length is not None and len(text) < f.min_length:
        raise ValueError(f"At least {f.min_length} characters.")
    if f.max_length is not None and len(text) > f.max_length:
        raise ValueError(f"At most {f.max_length} characters.")
    if f.kind == "email" and not _EMAIL.fullmatch(text):
        raise ValueError("An email address, like name@example.org.")
    if f.kind == "uri":
        parts = urlsplit(text)
        if not re.fullmatch(r"[a-zA-Z][a-zA-Z0-9+.-]*", parts.scheme or "") or not (
                parts.netloc or parts.path) or " " in text:
            raise ValueError("An address with its scheme, like https://example.org.")
    if f.kind == "date":
        try:
            if not _DATE.fullmatch(text):
                raise ValueError(text)
            dt.date.fromisoformat(text)
        except ValueError:
            raise ValueError("A date as YYYY-MM-DD.") from None
    if f.kind == "date-time":
        try:
            dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise ValueError("A date and time as YYYY-MM-DDTHH:MM:SS.") from None
    return text


def initial_value(f: FormField) -> Any:
    """What a field shows first: its default when it fits, else empty."""
    default = f.default
    if f.kind == "boolean":
        return default if isinstance(default, bool) else False
    if f.kind == "choice":
        return default if default in [c.value for c in f.choices] else None
    if f.kind == "choices":
        values = [c.value for c in f.choices]
        return [v for v in default if v in values] if isinstance(default, list) else []
    if default is None or isinstance(default, bool | dict | list):
        return ""
    return str(default)
