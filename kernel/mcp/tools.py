"""MCP tools as ToolSpecs, and MCP call results as tool_result content.

An MCP tool becomes one more ToolSpec named `mcp__<server>__<tool>` with origin
`mcp:<server>`. Trust comes from the user's configuration, never from the server: the spec's
risk is `execute` whatever the server says (the policy asks before any outside tool runs),
and the server's `readOnlyHint` / `destructiveHint` only set the risk *shown* to the user,
kept in `annotations["display_risk"]`.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import mcp_types
from mcp.shared.dispatcher import ProgressFnT

from kernel.mcp.config import DEFAULT_TOOL_TIMEOUT_S
from kernel.mcp.definitions import ANNOTATION_KEY as DEFINITIONS_KEY
from kernel.mcp.definitions import ToolDefinitions
from kernel.mcp.fingerprint import ANNOTATION_KEY, tool_fingerprint
from kernel.mcp.naming import tool_name
from kernel.tools.spec import (
    Content,
    ErrorCode,
    Progress,
    Risk,
    ToolContext,
    ToolResult,
    ToolSpec,
)

MAX_CALL_S = 3600.0
"""The longest one MCP call may take however often its server reports progress (the MCP
spec asks clients to keep such a ceiling); the gap between answers and progress
notifications is the server's `tool_timeout_s` (kernel.mcp.client.McpConnection.call)."""

IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""Image types a tool_result may carry; others are described in words."""

McpCall = Callable[[str, dict[str, Any], ProgressFnT | None, str],
                   Awaitable[mcp_types.CallToolResult]]
"""Calls one tool of one server by its MCP name: (tool, arguments, progress, fingerprint of
the definition the call was approved for) → result."""


def origin_of(server: str) -> str:
    return f"mcp:{server}"


def display_risk(annotations: mcp_types.ToolAnnotations | None) -> Risk:
    """The risk shown to the user, from the server's hints (display only)."""
    if annotations is None:
        return Risk.EXECUTE
    if annotations.read_only_hint:
        return Risk.READ
    if annotations.destructive_hint:
        return Risk.DESTRUCTIVE
    if annotations.destructive_hint is False:
        return Risk.WRITE
    return Risk.EXECUTE


def definition_fingerprint(server: str, tool: mcp_types.Tool) -> str:
    """The fingerprint of one tool as the server defines it (kernel.mcp.fingerprint)."""
    hints = tool.annotations
    return tool_fingerprint(
        tool_name(server, tool.name), tool.description or "", tool.input_schema,
        {"title": tool.title,
         "annotations": hints.model_dump(by_alias=True, exclude_none=True) if hints else None,
         "output_schema": tool.output_schema})


def to_spec(server: str, tool: mcp_types.Tool, call: McpCall,
            definitions: ToolDefinitions | None = None, *,
            tool_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S) -> ToolSpec:
    """The ToolSpec of one MCP tool; `call` runs it on the server; `definitions` are the
    server's live definitions, against which grants and calls are checked. The spec's own
    time limit is the ceiling: at least MAX_CALL_S, and room for waiting for a restart and
    then a call that is silent for `tool_timeout_s`.

    The spec is not validated here: `ToolRegistry.register` checks the name, the
    description and the input schema against the Draft 2020-12 meta-schema, like our own.
    """
    name = tool_name(server, tool.name)
    original = tool.name
    description = tool.description or ""
    hints = tool.annotations
    fingerprint = definition_fingerprint(server, tool)
    annotations: dict[str, Any] = {
        ANNOTATION_KEY: fingerprint,
        DEFINITIONS_KEY: definitions,
        "mcp_server": server,
        "mcp_tool": original,
        "display_risk": display_risk(hints).value,
    }
    if tool.title or (hints and hints.title):
        annotations["title"] = tool.title or (hints.title if hints else None)
    if hints is not None:
        annotations["hints"] = hints.model_dump(by_alias=True, exclude_none=True)

    async def handler(_reins_ctx: ToolContext, **arguments: Any) -> Content | ToolResult:
        return result_content(server, await call(original, arguments,
                                                 progress_reporter(_reins_ctx), fingerprint))

    handler.__name__ = name
    handler.__doc__ = description
    return ToolSpec(
        name=name,
        description=description or f"{original} (from the MCP server {server!r}, which gives "
                                   f"no description)",
        input_schema=tool.input_schema,
        handler=handler,
        risk=Risk.EXECUTE,
        concurrent_safe=False,
        timeout_s=max(MAX_CALL_S, 2 * tool_timeout_s),
        origin=origin_of(server),
        annotations=annotations,
        summarize=_summary,
    )


def progress_reporter(ctx: ToolContext) -> ProgressFnT:
    """MCP progress notifications of one call as the call's Progress (the timeline's)."""
    started = time.monotonic()

    async def report(progress: float, total: float | None, message: str | None) -> None:
        done = f"{progress:g}/{total:g}" if total else f"{progress:g}"
        line = f"{message} ({done})" if message else done
        ctx.progress(Progress(ctx.call_id, last_line=line[:200],
                              elapsed_s=time.monotonic() - started))

    return report


def _summary(args: Mapping[str, Any]) -> str:
    text = json.dumps(dict(args), ensure_ascii=False, default=str)
    return text if len(text) <= 80 else text[:79] + "…"


def result_content(server: str, result: mcp_types.CallToolResult) -> Content | ToolResult:
    """Anthropic tool_result content for an MCP result.

    All-text results come back as one string, so the dispatcher externalizes a large one
    like any other output. `isError` becomes an error result (`execution_error`) that keeps
    the server's content; the dispatcher binds it to the call and externalizes it alike.
    """
    blocks = [content_block(block, server) for block in result.content]
    if not blocks and result.structured_content is not None:
        blocks = [_text(json.dumps(result.structured_content, ensure_ascii=False, indent=1))]
    if result.is_error:
        blocks.insert(0, _text(f"The MCP server {server!r} reported an error:"))
    content: Content = (
        "\n".join(b["text"] for b in blocks)
        if all(b["type"] == "text" for b in blocks)
        else tuple(blocks)
    )
    if result.is_error:
        return ToolResult(call_id="", content=content, is_error=True,
                          error_code=ErrorCode.EXECUTION_ERROR)
    return content


def content_block(block: Any, server: str = "") -> dict[str, Any]:
    """One MCP content block as an Anthropic tool_result content block; a resource link
    says how to open it (the `mcp_resources` tool, on `server`)."""
    if isinstance(block, mcp_types.TextContent):
        return _text(block.text)
    if isinstance(block, mcp_types.ImageContent):
        return _image(block.mime_type, block.data) or _text(
            f"[image of type {block.mime_type}, {_size(block.data)} bytes, not shown: "
            f"only {', '.join(sorted(IMAGE_TYPES))} can be passed on]")
    if isinstance(block, mcp_types.AudioContent):
        return _text(f"[audio of type {block.mime_type}, {_size(block.data)} bytes, not shown]")
    if isinstance(block, mcp_types.ResourceLink):
        kind = f", {block.mime_type}" if block.mime_type else ""
        about = f": {block.description}" if block.description else ""
        how = (f"; open it with mcp_resources, server {server!r}, uri {block.uri!r}"
               if server else "")
        return _text(f"[resource link {block.name} <{block.uri}>{kind}{about}{how}]")
    if isinstance(block, mcp_types.EmbeddedResource):
        return resource_block(block.resource)
    return _text(f"[unsupported content of type {getattr(block, 'type', type(block).__name__)}]")


def resource_block(res: Any) -> dict[str, Any]:
    """One resource's contents (text, or a blob) as a tool_result content block."""
    mime = res.mime_type or ""
    if isinstance(res, mcp_types.TextResourceContents):
        return _text(f"[resource {res.uri}{' (' + mime + ')' if mime else ''}]\n{res.text}")
    blob = getattr(res, "blob", "")
    if mime == "application/pdf" and _valid_base64(blob):
        return {"type": "document",
                "source": {"type": "base64", "media_type": mime, "data": blob}}
    image = _image(mime, blob)
    if image is not None:
        return image
    return _text(f"[binary resource {res.uri} ({mime or 'unknown type'}), "
                 f"{_size(blob)} bytes, not shown]")


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _image(mime: str, data: str) -> dict[str, Any] | None:
    if mime not in IMAGE_TYPES or not _valid_base64(data):
        return None
    return {"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}}


def _valid_base64(data: str) -> bool:
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return False
    return bool(data)


def _size(data: str) -> int:
    return len(data) * 3 // 4
