"""read_tool_output: page through a large output that was stored instead of shown."""

from __future__ import annotations

from typing import Annotated

from kernel.paths import UnsafeIdentifier, check_call_id
from kernel.tools.schema import tool
from kernel.tools.spec import ErrorCode, Risk, ToolContext, ToolError

MAX_PAGE_BYTES = 25_000
"""Below the default output limit, so a page is never externalized again."""


@tool(
    risk=Risk.READ,
    concurrent_safe=True,
    timeout_s=30,
    summarize=lambda a: f"{a.get('call_id', '')} from byte {a.get('offset', 0)}",
)
def read_tool_output(
    ctx: ToolContext,
    call_id: Annotated[str, "The id of the earlier tool call whose full output was stored."],
    offset: Annotated[int, "Byte offset to start from (0 = beginning).", {"minimum": 0}] = 0,
    limit: Annotated[
        int, "How many bytes to return at most.", {"minimum": 1, "maximum": MAX_PAGE_BYTES}
    ] = 20_000,
) -> str:
    """Read part of a tool output that was too long to show in full.

    When a result says "[… N bytes omitted; full output at PATH …]", the whole output was
    stored. Pass that call's id to read it page by page: each page ends with the offset of
    the next one. Pages never split a character.
    """
    try:
        check_call_id(call_id)
    except UnsafeIdentifier as exc:
        raise ToolError(
            f"{call_id!r} is not a tool call id: {exc}.",
            hint="Pass the id of an earlier call of this session, e.g. 'toolu_01A…'.",
            code=ErrorCode.INVALID_ARGUMENTS,
        ) from exc
    try:
        page = ctx.outputs.read_page(call_id, offset, limit)
    except FileNotFoundError as exc:
        raise ToolError(
            f"No stored output for call {call_id!r} in this session.",
            hint="Only outputs whose result said 'full output at …' are stored; use the id "
            "from that result.",
        ) from exc
    if page.start >= page.total and page.total > 0:
        raise ToolError(
            f"Offset {offset} is at or past the end of the output of {call_id} "
            f"({page.total} bytes).",
            hint=f"Use an offset below {page.total}.",
            code=ErrorCode.INVALID_ARGUMENTS,
        )
    header = f"[bytes {page.start}–{page.end} of {page.total} of the output of {call_id}]\n"
    if page.end < page.total:
        footer = f"\n[… continue with offset={page.end} …]"
    else:
        footer = "\n[end of output]"
    return header + page.text + footer
