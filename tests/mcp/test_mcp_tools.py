"""MCP tools as ToolSpecs, and MCP results as Anthropic tool_result content."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import mcp_types as t
import pytest

from kernel.mcp.fingerprint import spec_fingerprint, tool_fingerprint
from kernel.mcp.tools import display_risk, result_content, to_spec
from kernel.tools.externalize import OutputStore
from kernel.tools.pathpolicy import PathPolicy
from kernel.tools.registry import RegistrationError, ToolRegistry
from kernel.tools.spec import ErrorCode, Progress, Risk, ToolContext, ToolResult, ToolSpec

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n-not-really").decode()
SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}


def _tool(**kw: Any) -> t.Tool:
    return t.Tool(**{"name": "read", "description": "Reads.", "input_schema": SCHEMA, **kw})


async def _never(tool: str, args: dict[str, Any], report: Any,
                 fingerprint: str) -> t.CallToolResult:
    raise AssertionError("not called")


def test_spec_fields() -> None:
    spec = to_spec("my.fs", _tool(title="Read a file"), _never)
    assert spec.name == "mcp__my_fs__read"
    assert spec.origin == "mcp:my.fs"
    assert spec.description == "Reads."
    assert dict(spec.input_schema) == SCHEMA
    assert spec.risk is Risk.EXECUTE
    assert spec.annotations["mcp_tool"] == "read"
    assert spec.annotations["title"] == "Read a file"
    assert spec_fingerprint(spec) == tool_fingerprint("mcp__my_fs__read", "Reads.", SCHEMA,
                                                      {"title": "Read a file"})
    ToolRegistry([spec])


OUTPUT = {"type": "object", "properties": {"n": {"type": "integer"}}}
CHANGES = [
    ("description", {"description": "Reads, and sends a copy elsewhere."}),
    ("description emptied", {"description": None}),
    ("schema gains a parameter", {"input_schema": {**SCHEMA, "properties": {
        **SCHEMA["properties"], "target": {"type": "string"}}}}),
    ("schema loses required", {"input_schema": {**SCHEMA, "required": []}}),
    ("title", {"title": "Read a file"}),
    ("read-only hint", {"annotations": t.ToolAnnotations(read_only_hint=True)}),
    ("destructive hint", {"annotations": t.ToolAnnotations(destructive_hint=True)}),
    ("open-world hint", {"annotations": t.ToolAnnotations(open_world_hint=False)}),
    ("annotation title", {"annotations": t.ToolAnnotations(title="Reader")}),
    ("output schema", {"output_schema": OUTPUT}),
    ("renamed", {"name": "read2"}),
]


@pytest.mark.parametrize(("what", "change"), CHANGES, ids=[c[0] for c in CHANGES])
def test_every_part_of_a_definition_changes_its_fingerprint(what: str,
                                                            change: dict[str, Any]) -> None:
    before = spec_fingerprint(to_spec("s", _tool(), _never))
    assert spec_fingerprint(to_spec("s", _tool(**change), _never)) != before, what


def test_the_same_definition_keeps_its_fingerprint_whatever_the_key_order() -> None:
    reordered = {"required": ["path"], "properties": {"path": {"type": "string"}},
                 "type": "object"}
    hints = t.ToolAnnotations(destructive_hint=True, read_only_hint=False)
    one = to_spec("s", _tool(annotations=hints), _never)
    two = to_spec("s", _tool(input_schema=reordered, annotations=hints), _never)
    assert spec_fingerprint(one) == spec_fingerprint(two)
    assert spec_fingerprint(to_spec("s", _tool(annotations=t.ToolAnnotations()), _never)) == \
        spec_fingerprint(to_spec("s", _tool(), _never))


@pytest.mark.parametrize(
    ("hints", "shown"),
    [
        (None, Risk.EXECUTE),
        (t.ToolAnnotations(read_only_hint=True), Risk.READ),
        (t.ToolAnnotations(destructive_hint=True), Risk.DESTRUCTIVE),
        (t.ToolAnnotations(destructive_hint=False), Risk.WRITE),
        (t.ToolAnnotations(title="x"), Risk.EXECUTE),
    ],
)
def test_hints_change_only_the_displayed_risk(hints: Any, shown: Risk) -> None:
    spec = to_spec("s", _tool(annotations=hints), _never)
    assert display_risk(hints) is shown
    assert spec.annotations["display_risk"] == shown.value
    assert spec.shown_risk == shown.value
    assert spec.risk is Risk.EXECUTE


def test_only_mcp_tools_show_a_hinted_risk() -> None:
    builtin = ToolSpec(name="wipe", description="d", input_schema={"type": "object"},
                       handler=lambda: None, risk=Risk.WRITE,
                       annotations={"display_risk": "read"})
    assert builtin.shown_risk == "write"


def test_missing_description_is_filled_for_the_model_but_fingerprinted_as_given() -> None:
    spec = to_spec("s", _tool(description=None), _never)
    assert "gives no description" in spec.description
    assert spec_fingerprint(spec) == tool_fingerprint("mcp__s__read", "", SCHEMA)


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ({"type": "object", "properties": {"x": {"type": "strng"}}}, "meta-schema"),
        ({"type": "array"}, '"type": "object"'),
    ],
)
def test_the_registry_refuses_invalid_server_schemas(schema: dict[str, Any], why: str) -> None:
    spec = to_spec("s", _tool(input_schema=schema), _never)
    with pytest.raises(RegistrationError, match=why):
        ToolRegistry([spec])


def test_the_handler_passes_arguments_through_and_reports_progress(tmp_path: Path) -> None:
    seen: list[tuple[str, dict[str, Any], str]] = []
    progress: list[Progress] = []

    async def call(tool: str, args: dict[str, Any], report: Any,
                   fingerprint: str) -> t.CallToolResult:
        seen.append((tool, args, fingerprint))
        await report(1, 4, "reading")
        await report(2.5, None, None)
        return t.CallToolResult(content=[t.TextContent(type="text", text="ok")])

    spec = to_spec("s", _tool(name="odd name"), call)
    ctx = ToolContext(session_id="s", call_id="c7", workspace=tmp_path,
                      path_policy=PathPolicy(tmp_path), outputs=OutputStore(tmp_path / "out"),
                      progress=progress.append)
    assert asyncio.run(spec.handler(ctx, **{"file-path": "a", "path": "b"})) == "ok"
    assert seen == [("odd name", {"file-path": "a", "path": "b"}, spec_fingerprint(spec))]
    assert [(p.call_id, p.last_line) for p in progress] == [("c7", "reading (1/4)"),
                                                            ("c7", "2.5")]


def _result(*blocks: Any, **kw: Any) -> t.CallToolResult:
    return t.CallToolResult(content=list(blocks), **kw)


def test_all_text_becomes_one_string() -> None:
    text = result_content("s", _result(t.TextContent(type="text", text="a"),
                                       t.TextContent(type="text", text="b")))
    assert text == "a\nb"


def test_images_resources_and_links_map_to_blocks() -> None:
    content = result_content("s", _result(
        t.TextContent(type="text", text="see"),
        t.ImageContent(type="image", data=PNG, mime_type="image/png"),
        t.ImageContent(type="image", data=PNG, mime_type="image/tiff"),
        t.ImageContent(type="image", data="!!not base64!!", mime_type="image/png"),
        t.AudioContent(type="audio", data=PNG, mime_type="audio/wav"),
        t.ResourceLink(type="resource_link", name="spec", uri="file:///spec.md",
                       mime_type="text/markdown"),
        t.EmbeddedResource(type="resource", resource=t.TextResourceContents(
            uri="file:///a.txt", mime_type="text/plain", text="hello")),
        t.EmbeddedResource(type="resource", resource=t.BlobResourceContents(
            uri="file:///a.pdf", mime_type="application/pdf", blob=PNG)),
        t.EmbeddedResource(type="resource", resource=t.BlobResourceContents(
            uri="file:///a.png", mime_type="image/png", blob=PNG)),
        t.EmbeddedResource(type="resource", resource=t.BlobResourceContents(
            uri="file:///a.bin", mime_type="application/octet-stream", blob=PNG)),
    ))
    assert isinstance(content, tuple)
    kinds = [b["type"] for b in content]
    assert kinds == ["text", "image", "text", "text", "text", "text", "text", "document",
                     "image", "text"]
    assert content[1]["source"] == {"type": "base64", "media_type": "image/png", "data": PNG}
    assert "image/tiff" in content[2]["text"] and "not shown" in content[2]["text"]
    assert "not shown" in content[3]["text"]
    assert "audio/wav" in content[4]["text"]
    assert content[5]["text"] == ("[resource link spec <file:///spec.md>, text/markdown; open "
                                  "it with mcp_resources, server 's', uri 'file:///spec.md']")
    assert content[6]["text"] == "[resource file:///a.txt (text/plain)]\nhello"
    assert content[7]["source"]["media_type"] == "application/pdf"
    assert "file:///a.bin" in content[9]["text"]


def test_structured_content_alone_is_shown_as_json() -> None:
    assert result_content("s", _result(structured_content={"n": 1})) == '{\n "n": 1\n}'


def test_is_error_becomes_an_error_result_that_keeps_the_servers_words() -> None:
    result = result_content("git", _result(t.TextContent(type="text", text="no such repo"),
                                           is_error=True))
    assert isinstance(result, ToolResult)
    assert result.is_error and result.error_code is ErrorCode.EXECUTION_ERROR
    assert result.content == "The MCP server 'git' reported an error:\nno such repo"
