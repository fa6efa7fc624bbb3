"""What a server may ask of Reins: its roots, an elicitation form, a sampling request.

Reins declares the `roots`, `elicitation` and `sampling` capabilities to every server, so a
server shows the tools that need them; what each answer is, the host decides (`reins exec`
from its `--approve` flag, the app by asking the user), through one `ServerAsks` per
manager. The connection turns these into the SDK's callbacks: a handler that raises, or
answers something that is not an MCP result, becomes an error answer to the server, never a
crash (fail closed: nothing was accepted).

The decisions themselves are pure functions here: `roots_result` (the session workspaces as
`file://` roots), `elicitation_defaults` (what "accept" fills a form with headless: each
field's schema default; a required field without one declines).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types

Elicit = Callable[[str, mcp_types.ElicitRequestParams], Awaitable[mcp_types.ElicitResult]]
"""(server, request) → the user's answer."""
Sample = Callable[[str, mcp_types.CreateMessageRequestParams],
                  Awaitable[mcp_types.CreateMessageResult | mcp_types.ErrorData]]
"""(server, request) → the model's answer, or an error (declined, over budget)."""

DECLINED_SAMPLING = "the user did not approve this sampling request"


async def decline_elicitation(_server: str,
                              _request: mcp_types.ElicitRequestParams) -> mcp_types.ElicitResult:
    return mcp_types.ElicitResult(action="decline")


async def decline_sampling(_server: str, _request: mcp_types.CreateMessageRequestParams
                           ) -> mcp_types.ErrorData:
    return mcp_types.ErrorData(code=mcp_types.INVALID_REQUEST, message=DECLINED_SAMPLING)


@dataclass
class ServerAsks:
    """The host's answers to server requests; mutable so a host can set the workspace and
    its askers after the servers started (the manager reads them at each request)."""

    roots: tuple[Path, ...] = ()
    elicit: Elicit = decline_elicitation
    sample: Sample = decline_sampling


def roots_result(roots: Sequence[Path]) -> mcp_types.ListRootsResult:
    """The roots as MCP `file://` roots, each named after its folder (duplicates once)."""
    seen: dict[str, mcp_types.Root] = {}
    for root in roots:
        uri = root.resolve().as_uri()
        seen.setdefault(uri, mcp_types.Root.model_validate(
            {"uri": uri, "name": root.name or str(root)}))
    return mcp_types.ListRootsResult(roots=list(seen.values()))


@dataclass(frozen=True)
class FormAnswer:
    """What a headless "accept" can answer: the content, or why it must decline."""

    content: Mapping[str, Any] | None
    missing: tuple[str, ...] = ()
    """Required fields without a default (the form is declined)."""


def elicitation_defaults(schema: Mapping[str, Any]) -> FormAnswer:
    """A form's answer from its schema's defaults: every field with a `default` (or the
    only value of a `const`/one-value `enum`), and `missing` for required ones without."""
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = schema.get("required")
    required = [r for r in required if isinstance(r, str)] if isinstance(required, list) else []
    content: dict[str, Any] = {}
    for name, prop in properties.items():
        if not isinstance(prop, Mapping):
            continue
        if "default" in prop:
            content[name] = prop["default"]
        elif "const" in prop:
            content[name] = prop["const"]
        elif isinstance(prop.get("enum"), list) and len(prop["enum"]) == 1:
            content[name] = prop["enum"][0]
    missing = tuple(r for r in required if r not in content)
    return FormAnswer(None if missing else content, missing)


def form_fields(schema: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The fields of a requested form, for the event that shows it: name, type, title,
    description, required, default (what a form UI is built from)."""
    properties = schema.get("properties")
    properties = properties if isinstance(properties, Mapping) else {}
    required = schema.get("required")
    required = required if isinstance(required, list) else []
    fields = []
    for name, prop in properties.items():
        prop = prop if isinstance(prop, Mapping) else {}
        entry: dict[str, Any] = {"name": str(name), "type": str(prop.get("type", "string")),
                                 "required": name in required}
        for key in ("title", "description", "default", "enum", "format"):
            if key in prop:
                entry[key] = prop[key]
        fields.append(entry)
    return fields
