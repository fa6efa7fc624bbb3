"""What happened to a run besides its tool calls, in words a person understands: the chat
shows these as notices (desktop.chat.feed) and the timeline lists them under its calls
(desktop.timeline.notices). Pure: one event in, one sentence (or None) out.

- `context_compacted`: older turns were summarized, why, and that nothing is lost;
- `model_retry`: the model could not answer, why, and when it is asked again;
- `run_finished` with `empty_answer`: the model ended without writing anything;
- `mcp_sampling`: a server had the model answer something (or was refused).

Text that came from a server or the model passes through `kernel.visible.one_line`.
"""

from __future__ import annotations

from desktop.words import format_duration
from kernel import events as ev
from kernel.visible import one_line

_COMPACT_WHY = {
    "auto": "to fit the context window",
    "prompt_too_long": "because the model refused a request that was too long",
    "user": "as you asked",
}


def notice_text(event: ev.Event) -> str | None:
    """The sentence for `event`, or None when it is not such a notice."""
    if isinstance(event, ev.ContextCompacted):
        why = _COMPACT_WHY.get(event.reason, "to fit the context window")
        sizes = (f" (about {event.tokens_before:,} → {event.tokens_after:,} tokens)"
                 if event.tokens_before and event.tokens_after else "")
        return f"Older turns were summarized {why}{sizes}; the full history is kept."
    if isinstance(event, ev.ModelRetry):
        void = " The answer shown so far broke off and is void." if event.discarded else ""
        return one_line(f"The model could not answer ({event.reason}); asked again after "
                        f"{format_duration(event.delay_s)} (attempt {event.attempt + 1} of "
                        f"{event.of}).{void}")
    if isinstance(event, ev.RunFinished) and event.empty_answer:
        return ("The model ended its turn without writing an answer. Ask again, or say what "
                "you expected.")
    if isinstance(event, ev.McpSampling):
        server = one_line(event.server)
        if event.action != "accept":
            return one_line(f"The MCP server “{server}” asked the model for an answer; it "
                            f"was not sent: {event.reason}.")
        tokens = sum(int(v) for v in event.usage.values())
        return one_line(f"The MCP server “{server}” had the model answer ({tokens:,} tokens, "
                        "counted in this run).")
    return None
