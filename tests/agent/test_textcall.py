"""Tool calls written as text, in the spellings real small models use (kernel.agent.textcall).

The loop's handling of such an answer (told once, then the run goes on) is tested end to
end in tests/agent/test_model_api.py; these tables are the detector's.
"""

from __future__ import annotations

import pytest

from kernel.agent.textcall import text_tool_call, text_tool_calls

TOOLS = ("read_file", "run_command", "grep", "list_directory", "mcp__git__status")
CALL = '{"name": "read_file", "arguments": {"path": "notes.txt"}}'

# (answer, the tools it calls in text)
SPELLINGS = [
    # Qwen / Hermes tags, as SmolLM2 and Qwen2.5 wrote them through llama-server
    (f"<tool_call>\n{CALL}\n</tool_call>", ("read_file",)),
    (f"I will read the file first.\n<tool_call>\n{CALL}\n</tool_call>", ("read_file",)),
    (f"<tool_call>\n{CALL}\n</tool_call>\nThis reads notes.txt for you.", ("read_file",)),
    (f"Let me look.\n<tool_call>{CALL}</tool_call> Then I will answer.", ("read_file",)),
    (f'<tool_call>\n{CALL}\n</tool_call>\n<tool_call>\n{{"name": "grep", "arguments": '
     f'{{"pattern": "x"}}}}\n</tool_call>', ("read_file", "grep")),
    # a tag the model never closed, and one closed by the next tag
    (f"Sure.\n<tool_call>\n{CALL}", ("read_file",)),
    (f"<tool_call>{CALL}<tool_call>{{\"name\": \"grep\", \"arguments\": {{}}}}",
     ("read_file", "grep")),
    # SmolLM2's own format: a list of calls in the tag
    (f'<tool_call>[{CALL}, {{"name": "grep", "arguments": {{"pattern": "a"}}}}]</tool_call>',
     ("read_file",)),
    (f"<TOOL_CALL>{CALL}</TOOL_CALL>", ("read_file",)),
    (f"<function_call>```json\n{CALL}\n```</function_call>", ("read_file",)),
    # Mistral
    (f"[TOOL_CALLS][{CALL}]", ("read_file",)),
    (f"I'll check. [TOOL_CALLS] [{CALL}]", ("read_file",)),
    ('[TOOL_CALLS]read_file[ARGS]{"path": "notes.txt"}', ("read_file",)),
    # Llama 3.x
    ('<|python_tag|>{"type": "function", "name": "run_command", "parameters": '
     '{"command": "ls"}}', ("run_command",)),
    # Phi
    (f"functools[{CALL}]", ("read_file",)),
    # fences in prose (Qwen2.5-Coder's habit)
    (f"To answer, I need the file:\n```json\n{CALL}\n```\nThen I can tell you.", ("read_file",)),
    (f"```json\n{CALL}\n```", ("read_file",)),
    ('```\n{"tool": "list_directory", "args": {"path": "."}}\n```\nDone?', ("list_directory",)),
    # function-call JSON in prose
    (f"I am going to call {CALL} and report back.", ("read_file",)),
    ('Calling {"function": {"name": "grep", "arguments": "{\\"pattern\\": \\"x\\"}"}} now.',
     ("grep",)),
    ('Step 1: {"tool_name": "mcp__git__status", "tool_input": {}}', ("mcp__git__status",)),
    # the whole answer as a call (no arguments needed: the answer is nothing else)
    ('{"name": "read_file"}', ("read_file",)),
    ('{"run_command": {"command": "ls"}}', ("run_command",)),
    # not calls
    ("I read notes.txt with read_file; it says hello.", ()),
    ('The file says {"name": "read_file"}.', ()),
    ('Here is the call:\n```json\n{"name": "read_file"}\n```', ()),
    ('The config is {"name": "Alice", "arguments": {"x": 1}}.', ()),
    ('{"name": "delete_everything", "arguments": {}}', ()),
    ("Use the `<tool_call>` tag to call a tool.", ()),
    ("<tool_call>not json</tool_call>", ()),
    ('<tool_call>{"name": "unknown_tool", "arguments": {}}</tool_call>', ()),
    ("[TOOL_CALLS]", ()),
    ('[TOOL_CALLS]nope[ARGS]{"x": 1}', ()),
    ('{"name": "read_file", ', ()),
    ("{{{{ not json } at all {", ()),
    ("", ()),
]


@pytest.mark.parametrize(("text", "calls"), SPELLINGS)
def test_tool_calls_written_as_text(text: str, calls: tuple[str, ...]) -> None:
    found = text_tool_calls(text, TOOLS)
    assert (found[:len(calls)] if calls else found) == calls
    assert text_tool_call(text, TOOLS) == (calls[0] if calls else None)


def test_every_tagged_call_is_found_in_order() -> None:
    text = (f"First <tool_call>{CALL}</tool_call>, then <tool_call>{{\"name\": \"grep\", "
            f"\"arguments\": {{}}}}</tool_call> and <tool_call>{{\"name\": \"run_command\", "
            f"\"arguments\": {{\"command\": \"ls\"}}}}</tool_call>.")
    assert text_tool_calls(text, TOOLS)[:3] == ("read_file", "grep", "run_command")


def test_a_huge_answer_is_not_searched() -> None:
    assert text_tool_call("x" * 300_000 + CALL, TOOLS) is None
    many = "{ " * 50_000 + CALL
    assert text_tool_call(many, TOOLS) is None  # bounded work: only the first objects tried
