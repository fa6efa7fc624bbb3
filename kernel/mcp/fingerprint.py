"""Fingerprints of tool definitions, and the "changed since it was granted" check.

A grant of an MCP tool records the tool's fingerprint (a hash of its name, description and
input schema). When the server later describes that tool differently, the fingerprint no
longer matches, the grant is suspended and the user is asked again: a server cannot swap a
tool's behaviour behind an approval the user gave to something else.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

ANNOTATION_KEY = "fingerprint"
"""Where an MCP ToolSpec keeps its fingerprint, in `ToolSpec.annotations`."""


def tool_fingerprint(name: str, description: str, input_schema: Mapping[str, Any]) -> str:
    """`sha256:<hex>` of the canonical JSON of name, description and schema."""
    canonical = json.dumps(
        {"name": name, "description": description, "input_schema": input_schema},
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


def check_grant(spec: Any, granted: Mapping[str, str] | None) -> GrantCheck:
    """Whether a grant that recorded `granted` (tool name → fingerprint) still covers `spec`.

    Tools without a fingerprint (built-in tools) are always covered. An MCP tool is covered
    only when the grant recorded its name with the very fingerprint it has now; a tool the
    grant never saw (added to the server afterwards) is not covered either.
    """
    current = spec_fingerprint(spec)
    if current is None:
        return GrantCheck(True)
    recorded = (granted or {}).get(spec.name)
    if recorded is None:
        return GrantCheck(False, f"{spec.name} was not part of the grant: it appeared on the "
                                 f"server after the grant was given")
    if recorded != current:
        return GrantCheck(False, f"{spec.name} changed since it was granted (its description "
                                 f"or input schema is different): the grant is suspended")
    return GrantCheck(True)
