"""What the demo model says: a pure function from a Messages API request to its reply.

The script reads where the conversation is from the request alone (it keeps no state, so a
restart, a retry or a second demo session goes on from what the request holds):
- a prompt about keys or real models: how to add a key;
- a thanks or goodbye: a short closing;
- any other prompt: the tour, which first looks at the workspace (`list_directory`, a read
  that ask mode allows without asking);
- that listing's result: it writes `notes.md` with the user's words (`write_file`, which
  asks for the user's approval);
- the write's result, done or denied: what happened, where to see it, how to add a key.
Every answer says plainly that it comes from a script, not an AI.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from kernel.fakemodel.script import Reply, ToolUse, reply

Topic = Literal["key", "bye", "tour"]
NOTES_FILE = "notes.md"
CHUNK_CHARS = 24
DELAY_S = 0.012
"""Streamed in small pieces with a short pause, so the answer is seen being written."""

HOW_TO_ADD_A_KEY = (
    "To work with a real model, open **Settings** (Ctrl+,) and paste an Anthropic API key "
    "(made at console.anthropic.com), or enter the address of an Anthropic-compatible server "
    "such as llama.cpp or Ollama as the base URL; **Test connection** there checks it. Then "
    "start a new session (Ctrl+N): it uses the real model.")
INTRO = ("I'm Reins' **demo model**: a short script, not an AI, so you can see what Reins "
         "does before you add an API key.")
AGAIN = "The **demo model** (a script, not an AI) again."
"""The intro once the conversation has one: said once, then only named."""

_KEY_WORDS = re.compile(r"\b(api|keys?|claude|anthropic|real model|settings|sign ?up|token)\b",
                        re.IGNORECASE)
_BYE_WORDS = re.compile(r"^\W*(thanks|thank you|thx|bye|goodbye|cheers|ok(ay)?|great|cool)\b",
                        re.IGNORECASE)


def topic(prompt: str) -> Topic:
    """What a typed prompt asks the demo for."""
    if _KEY_WORDS.search(prompt):
        return "key"
    if _BYE_WORDS.search(prompt) and len(prompt) < 40:
        return "bye"
    return "tour"


def demo_turn(body: Mapping[str, Any]) -> Reply:
    """The demo's reply to one request (the fake server's responder)."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, Mapping)]
    result = _last_tool_result(messages)
    if result is not None:
        name, failed = result
        if name == "list_directory":
            return _said(
                "That was a tool call: Reins checked it against your permissions, ran it and "
                "kept its result. Its line in the **timeline** shows what it returned.\n\n"
                f"Next I'll write a small file, `{NOTES_FILE}`. Writing changes your files, so "
                "Reins asks you first: the approval shows what would be written. Choose "
                "**Allow** or **Deny**.",
                ToolUse("write_file", {"path": NOTES_FILE,
                                       "content": notes(latest_prompt(messages))}))
        if name == "write_file" and not failed:
            return _said(
                f"Done: `{NOTES_FILE}` is in the workspace, written only because you allowed "
                "it. The timeline shows each step: the listing, your answer and the write; "
                "*Undo this call* there puts things back as they were.\n\n"
                f"That's the tour. {HOW_TO_ADD_A_KEY}\n\nType anything to see the tour again.")
        if name == "write_file":
            return _said(
                "Nothing was written: you chose **Deny**, and your answer is final. That is "
                "what Reins is for: a model asks before it changes anything, and every call, "
                "question and answer stays on the timeline.\n\n"
                f"{HOW_TO_ADD_A_KEY}\n\nType anything to see the tour again.")
        return _said("The demo only knows its tour. Type anything to see it again.")
    prompt = latest_prompt(messages)
    chosen = topic(prompt)
    intro = AGAIN if any(m.get("role") == "assistant" for m in messages) else INTRO
    if chosen == "key":
        return _said(f"{intro}\n\nI can't use a key myself. {HOW_TO_ADD_A_KEY}")
    if chosen == "bye":
        return _said(f"You're welcome! {HOW_TO_ADD_A_KEY}")
    return _said(
        f"{intro}\n\nYou wrote: “{_quoted(prompt)}”. A real model would work on that; I'll "
        "show you the steps instead. First I look at the workspace with a tool: reading is "
        "allowed without asking in *ask* mode, and the call appears in the timeline.",
        ToolUse("list_directory", {"path": "."}))


def notes(prompt: str) -> str:
    """The file the tour writes: the user's words and what happened."""
    return ("# Notes from the Reins demo\n\n"
            f"You wrote: “{_quoted(prompt)}”\n\n"
            "The demo model (a script, not an AI) wrote this file after you allowed it.\n"
            "Reins asked first because writing changes your files.\n")


def latest_prompt(messages: Sequence[Mapping[str, Any]]) -> str:
    """The newest text the user typed (a message of tool results holds none)."""
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        text = "\n".join(b for b in _texts(message.get("content")) if b.strip())
        if text:
            return text.strip()
    return ""


def _last_tool_result(messages: Sequence[Mapping[str, Any]]) -> tuple[str, bool] | None:
    """(tool name, failed) of the newest message's last tool result, if it holds one."""
    if len(messages) < 2 or messages[-1].get("role") != "user":
        return None
    content = messages[-1].get("content")
    results = [b for b in content if isinstance(b, Mapping) and b.get("type") == "tool_result"
               ] if isinstance(content, list) else []
    if not results:
        return None
    previous = messages[-2].get("content")
    names = {b.get("id"): str(b.get("name", "")) for b in previous
             if isinstance(b, Mapping) and b.get("type") == "tool_use"
             } if isinstance(previous, list) else {}
    last = results[-1]
    return names.get(last.get("tool_use_id"), ""), bool(last.get("is_error"))


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [str(b.get("text", "")) for b in content
                if isinstance(b, Mapping) and b.get("type") == "text"]
    return []


def _quoted(prompt: str, limit: int = 200) -> str:
    one_line = " ".join(prompt.split())
    return one_line if len(one_line) <= limit else one_line[: limit - 1] + "…"


def _said(text: str, *calls: ToolUse) -> Reply:
    return reply(text, *calls, chunk_chars=CHUNK_CHARS, delay_s=DELAY_S,
                 input_tokens=len(text) // 4, output_tokens=len(text) // 4)
