"""Tool fingerprints and the changed-since-grant check."""

from __future__ import annotations

from kernel.mcp.fingerprint import ANNOTATION_KEY, check_grant, spec_fingerprint, tool_fingerprint
from kernel.tools.spec import ToolSpec

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}


def _spec(name: str, fingerprint: str | None) -> ToolSpec:
    annotations = {ANNOTATION_KEY: fingerprint} if fingerprint else {}
    return ToolSpec(name=name, description="d", input_schema=SCHEMA,
                    handler=lambda **_: None, annotations=annotations)


def test_fingerprint_is_stable_and_ignores_key_order() -> None:
    reordered = {"required": ["path"], "properties": {"path": {"type": "string"}},
                 "type": "object"}
    fp = tool_fingerprint("t", "reads a file", SCHEMA)
    assert fp.startswith("sha256:") and len(fp) == 71
    assert tool_fingerprint("t", "reads a file", reordered) == fp


def test_fingerprint_changes_with_name_description_or_schema() -> None:
    fp = tool_fingerprint("t", "reads a file", SCHEMA)
    wider = {**SCHEMA, "properties": {**SCHEMA["properties"], "to": {"type": "string"}}}
    assert tool_fingerprint("u", "reads a file", SCHEMA) != fp
    assert tool_fingerprint("t", "reads a file and mails it", SCHEMA) != fp
    assert tool_fingerprint("t", "reads a file", wider) != fp


def test_grant_covers_only_the_definition_it_recorded() -> None:
    granted = {"mcp__s__t": "sha256:aaa"}
    assert check_grant(_spec("mcp__s__t", "sha256:aaa"), granted).valid
    changed = check_grant(_spec("mcp__s__t", "sha256:bbb"), granted)
    assert not changed.valid and "changed since it was granted" in changed.reason
    unseen = check_grant(_spec("mcp__s__new", "sha256:ccc"), granted)
    assert not unseen.valid and "appeared on the server after the grant" in unseen.reason
    assert not check_grant(_spec("mcp__s__t", "sha256:aaa"), None).valid


def test_tools_without_a_fingerprint_are_not_affected() -> None:
    builtin = _spec("read_file", None)
    assert spec_fingerprint(builtin) is None
    assert check_grant(builtin, {}).valid
