"""Fingerprints of tool definitions, and the "changed since it was granted" check.

A grant of an MCP tool records the tool's fingerprint (a hash of its name, description and
input schema, and of its title, annotations and output schema when it has them). When the
server later describes that tool differently, the fingerprint no longer matches, the grant
is suspended and the user is asked again: a server cannot swap a tool's behaviour behind an
approval the user gave to something else. The definition compared is the one the server
lists at call time (kernel.mcp.definitions), not the one a call was dispatched with.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ANNOTATION_KEY = "fingerprint"
"""Where an MCP ToolSpec keeps its fingerprint, in `ToolSpec.annotations`."""


def tool_fingerprint(name: str, description: str, input_schema: Mapping[str, Any],
                     extra: Mapping[str, Any] | None = None) -> str:
    """`sha256:<hex>` of the canonical JSON of name, description, schema and the `extra`
    parts of the definition that are set (title, annotations, output schema: a hint that
    turns "read-only" into "destructive" is a different tool). Parts that are absent leave
    the hash as it was before they were counted, so older grants stay valid."""
    parts = {k: v for k, v in (extra or {}).items() if v not in (None, {}, "")}
    canonical = json.dumps(
        {"name": name, "description": description, "input_schema": input_schema, **parts},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def spec_fingerprint(spec: Any) -> str | None:
    """The fingerprint recorded on an MCP ToolSpec; None for a tool that has none."""
    value = spec.annotations.get(ANNOTATION_KEY) if spec.annotations else None
    return value if isinstance(value, str) else None


@dataclass(frozen=True)
class GrantCheck:
    valid: bool
    reason: str = ""


def check_grant(spec: Any, granted: Mapping[str, str] | None,
                current: str | None = None) -> GrantCheck:
    """Whether a grant that recorded `granted` (tool name → fingerprint) still covers `spec`
    whose definition is now `current` (default: the spec's own fingerprint).

    Tools without a fingerprint (built-in tools) are always covered. An MCP tool is covered
    only when the grant recorded its name with the very fingerprint it has now; a tool the
    grant never saw (added to the server afterwards) is not covered either.
    """
    own = spec_fingerprint(spec)
    if own is None:
        return GrantCheck(True)
    current = current or own
    recorded = (granted or {}).get(spec.name)
    if recorded is None:
        return GrantCheck(False, f"{spec.name} was not part of the grant: it appeared on the "
                                 f"server after the grant was given")
    if recorded != current:
        return GrantCheck(False, f"{spec.name} changed since it was granted (its description, "
                                 f"input schema or annotations are different): the grant is "
                                 f"suspended")
    return GrantCheck(True)
