"""A server's prompts as the user's prompt: `reins exec --mcp-prompt SERVER/NAME`.

`parse_prompt_ref` and `parse_prompt_args` check what the user typed (pure); `get_prompt`
asks the server (with its arguments) and `prompt_text` turns the messages into the text of
one user turn: each message's text, an embedded resource's text, other content described;
a message from the assistant role is marked as such, so nothing a server writes poses as
something the model said.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import mcp_types
from mcp import ClientSession
from mcp.shared.dispatcher import ProgressFnT

from kernel.mcp.client import McpConnection
from kernel.mcp.manager import McpManager
from kernel.mcp.tools import content_block


class PromptRefError(ValueError):
    """A `--mcp-prompt` or `--mcp-prompt-arg` that cannot be used."""


def parse_prompt_ref(text: str) -> tuple[str, str]:
    """`SERVER/NAME` → (server, name); the name may itself hold slashes."""
    server, sep, name = text.strip().partition("/")
    if not sep or not server.strip() or not name.strip():
        raise PromptRefError(f"--mcp-prompt wants SERVER/NAME (a configured server and one of "
                             f"its prompts), got {text!r}")
    return server.strip(), name.strip()


def parse_prompt_args(pairs: Sequence[str]) -> dict[str, str]:
    """`NAME=VALUE` pairs → arguments (a name given twice is refused)."""
    out: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise PromptRefError(f"--mcp-prompt-arg wants NAME=VALUE, got {pair!r}")
        if name.strip() in out:
            raise PromptRefError(f"--mcp-prompt-arg {name.strip()!r} is given twice")
        out[name.strip()] = value
    return out


def missing_arguments(prompt: mcp_types.Prompt, given: Mapping[str, str]) -> list[str]:
    """The prompt's required arguments that were not given."""
    return [a.name for a in prompt.arguments or () if a.required and a.name not in given]


def prompt_text(result: mcp_types.GetPromptResult) -> str:
    """The prompt's messages as one user turn."""
    parts = []
    for message in result.messages:
        block = content_block(message.content)
        text = block["text"] if block["type"] == "text" else f"[{block['type']} not shown]"
        parts.append(text if message.role == "user" else f"(the prompt's assistant part) {text}")
    return "\n\n".join(parts)


async def get_prompt(manager: McpManager, server: str, name: str,
                     arguments: Mapping[str, str]) -> str:
    """The text of prompt `name` of `server` with `arguments` (ToolError when the server
    is not there or refuses; PromptRefError for an unknown prompt or missing arguments)."""

    async def send(connection: McpConnection, timeout_s: float) -> str:
        async def ask(session: ClientSession, _progress: ProgressFnT) -> str:
            listed = await session.list_prompts()
            known = {p.name: p for p in listed.prompts}
            if name not in known:
                offered = ", ".join(sorted(known)) or "none"
                raise PromptRefError(f"the MCP server {server!r} has no prompt {name!r} "
                                     f"(its prompts: {offered})")
            missing = missing_arguments(known[name], arguments)
            if missing:
                raise PromptRefError(f"the prompt {server}/{name} needs "
                                     f"{', '.join(missing)}: give --mcp-prompt-arg "
                                     f"{missing[0]}=VALUE")
            result = await session.get_prompt(name, dict(arguments))
            return prompt_text(result)

        text: str = await connection.request(ask, timeout_s=timeout_s)
        return text

    text: str = await manager.request(server, f"the prompt {name!r}", send)
    return text
