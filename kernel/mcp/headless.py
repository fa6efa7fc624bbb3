"""`reins exec`'s side of MCP: how servers' requests are answered without a person, and the
record of how each server came up.

- roots: the session's workspace;
- elicitation: declined, unless `--approve allow`: then a form is accepted with its schema's
  defaults (`kernel.mcp.asks.elicitation_defaults`), and declined when a required field has
  none; a URL elicitation (open a web page) is always declined (no browser here). Each
  request and its answer is an `mcp_elicitation` event;
- every configured server's outcome is an `mcp_server` event once they settled;
- `--mcp-prompt SERVER/NAME` asks the server for the run's prompt (kernel.mcp.prompts).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

import mcp_types

from kernel.events import Event, McpElicitation
from kernel.mcp.asks import Elicit, ServerAsks, elicitation_defaults, form_fields
from kernel.mcp.manager import McpManager, ServerStatus
from kernel.mcp.prompts import PromptRefError, get_prompt, parse_prompt_args, parse_prompt_ref
from kernel.mcp.report import server_event
from kernel.mcp.sampling import SamplingTarget, exec_sampler

Record = Callable[[Event], None]
"""Stores an event and shows it (the CLI's printer)."""

NOT_APPROVED = "reins exec declines forms unless it runs with --approve allow"
NO_BROWSER = "a URL elicitation needs a browser, which reins exec does not open"


def headless_elicitation(params: mcp_types.ElicitRequestParams, approve: str | None
                         ) -> tuple[mcp_types.ElicitResult, str]:
    """The answer to one elicitation without a person, and why (pure)."""
    if isinstance(params, mcp_types.ElicitRequestURLParams):
        return mcp_types.ElicitResult(action="decline"), NO_BROWSER
    if approve != "allow":
        return mcp_types.ElicitResult(action="decline"), NOT_APPROVED
    answer = elicitation_defaults(params.requested_schema)
    if answer.content is None:
        return (mcp_types.ElicitResult(action="decline"),
                f"--approve allow accepts a form with its defaults, and these required "
                f"fields have none: {', '.join(answer.missing)}")
    return (mcp_types.ElicitResult(action="accept", content=dict(answer.content)),
            "--approve allow: accepted with the form's defaults")


def exec_elicit(session_id: str, approve: str | None, record: Record) -> Elicit:
    async def elicit(server: str, params: mcp_types.ElicitRequestParams
                     ) -> mcp_types.ElicitResult:
        result, reason = headless_elicitation(params, approve)
        schema = getattr(params, "requested_schema", None)
        record(McpElicitation(session_id, server, params.message,
                              form_fields(schema) if isinstance(schema, dict) else [],
                              result.action, "cli", reason))
        return result

    return elicit


def exec_asks(workspace: Path, approve: str | None, record: Record,
              target: SamplingTarget) -> ServerAsks:
    """How `reins exec` answers the servers of one session (sampling goes to the target's
    model and is charged to its run of the session)."""
    session_id = target.session_id
    return ServerAsks(roots=(workspace,), elicit=exec_elicit(session_id, approve, record),
                      sample=exec_sampler(target, approve, record))


async def report_settled(manager: McpManager, session_id: str, record: Record) -> None:
    """Wait for each server's first outcome (ready, failed or disabled; a failed one may be
    restarting again by the time another settles) and record them in the settings' order."""
    outcomes = await asyncio.gather(*(
        manager.wait_for(state.name, lambda s: s.status is not ServerStatus.STARTING)
        for state in manager.states()))
    for state in outcomes:
        record(server_event(session_id, state))


async def server_prompt(manager: McpManager | None, ref: str, pairs: Sequence[str],
                        typed: str | None) -> str:
    """`--mcp-prompt SERVER/NAME` (with `--mcp-prompt-arg NAME=VALUE` pairs) as the run's
    prompt; text typed as PROMPT too follows it. Raises PromptRefError, or ToolError when
    the server cannot answer."""
    server, name = parse_prompt_ref(ref)
    if manager is None:
        raise PromptRefError(f"--mcp-prompt {ref}: no MCP servers are configured in "
                             f"settings.json")
    text = await get_prompt(manager, server, name, parse_prompt_args(pairs))
    return f"{text}\n\n{typed}" if typed else text
