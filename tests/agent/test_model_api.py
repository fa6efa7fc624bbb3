"""Issue 18, the model API: limits per model, tool_choice on the first round only, retries of
error events mid-stream, a silent server, tool calls written as text, empty answers, and
text that cannot be encoded — all against the fake server with the real anthropic client."""

from __future__ import annotations

import asyncio
import time

import pytest

from kernel.agent.textcall import text_tool_call
from kernel.fakemodel import Failure, Reply, Silence, Text, ToolUse, reply
from kernel.model.catalog import (
    BUILT_IN,
    ModelLimits,
    config_problem,
    max_tokens_advice,
    model_limits,
)
from kernel.model.provider import (
    AnthropicProvider,
    ConfigError,
    ProviderConfig,
    is_context_overflow,
    rejected_block,
    retry_delay,
)
from kernel.model.request_body import scrub_text
from tests.agent.conftest import Harness

TOOLS = ("read_file", "run_command", "write_file", "mcp__git__status")


# ---- limits per model -----------------------------------------------------------------------

@pytest.mark.parametrize(("name", "configured", "window", "max_tokens", "source"), [
    ("claude-sonnet-4-6", {}, 200_000, 32_000, "built-in"),
    ("claude-sonnet-4-5-20250929", {}, 200_000, 32_000, "built-in"),
    ("claude-opus-4-1-20250805", {}, 200_000, 32_000, "built-in"),
    ("claude-3-5-haiku-latest", {}, 200_000, 8192, "built-in"),
    ("claude-3-haiku-20240307", {}, 200_000, 4096, "built-in"),
    ("qwen2.5-coder", {}, 200_000, 8192, "default"),
    ("qwen2.5-coder", {"qwen2.5-coder": {"context_window": 16384}}, 16384, 4096, "settings"),
    ("qwen2.5-coder", {"qwen*": {"context_window": 16384, "max_tokens": 2048}}, 16384, 2048,
     "settings"),
    ("qwen2.5-coder", {"qwen*": {"max_tokens": 1000},
                       "qwen2.5-coder": {"max_tokens": 3000}}, 200_000, 3000, "settings"),
    ("claude-sonnet-4-6", {"claude-sonnet-4-6": {"max_tokens": 64_000}}, 200_000, 64_000,
     "settings"),
    ("claude-sonnet-4-6", {"claude-opus*": {"max_tokens": 5}}, 200_000, 32_000, "built-in"),
    ("llama", {"llama": "not an object"}, 200_000, 8192, "default"),
])
def test_model_limits_come_from_settings_then_built_in_then_defaults(
        name, configured, window, max_tokens, source):
    limits = model_limits(name, configured)
    assert (limits.context_window, limits.max_tokens, limits.source) == (
        window, max_tokens, source)


def test_every_built_in_model_has_room_and_a_valid_default():
    for pattern, limits in BUILT_IN:
        assert limits.max_output is not None and limits.max_tokens <= limits.max_output, pattern
        assert config_problem(model=pattern, limits=limits, tool_choice="auto",
                              thinking_budget=None) is None


LIMITS = ModelLimits(200_000, 8192, 64_000)


@pytest.mark.parametrize(("limits", "choice", "budget", "says"), [
    (LIMITS, "auto", None, None),
    (LIMITS, "any", None, None),
    (LIMITS, "read_file", None, None),
    (LIMITS, "auto", 4096, None),
    (LIMITS, "none", 4096, None),
    (LIMITS, "auto", 8192, "must be below max_tokens"),
    (LIMITS, "auto", 9000, "--thinking-budget"),
    (LIMITS, "auto", 512, "minimum of 1024"),
    (LIMITS, "any", 2048, "forced tool choice"),
    (LIMITS, "read_file", 2048, "Drop --thinking-budget or --tool-choice"),
    (ModelLimits(200_000, 70_000, 64_000), "auto", None, "more than"),
    (ModelLimits(16384, 16384, None), "auto", None, "no room"),
    (ModelLimits(16384, 20000, None), "auto", None, "context_window"),
])
def test_settings_the_api_would_refuse_are_refused_saying_what_to_change(
        limits, choice, budget, says):
    problem = config_problem(model="m", limits=limits, tool_choice=choice,
                             thinking_budget=budget)
    if says is None:
        assert problem is None
    else:
        assert problem is not None and says in problem


def test_the_provider_refuses_such_settings_before_any_request(harness: Harness):
    with pytest.raises(ConfigError, match="must be below max_tokens"):
        harness.agent(thinking_budget=8192, max_tokens=8192)
    with pytest.raises(ConfigError, match="forced tool choice"):
        harness.agent(thinking_budget=2048, tool_choice="any")
    assert harness.server.requests == []


def test_max_tokens_advice_never_asks_for_what_cannot_be_done():
    at_most = max_tokens_advice("claude-3-haiku", ModelLimits(200_000, 4096, 4096))
    assert "raise" not in at_most and "the most claude-3-haiku can write" in at_most
    room = max_tokens_advice("claude-sonnet-4-6", ModelLimits(200_000, 8192, 64_000))
    assert "--max-tokens N" in room and "64000" in room
    local = max_tokens_advice("qwen", ModelLimits(16384, 2048, None))
    assert "\"qwen\"" in local


def test_the_max_tokens_stop_says_what_the_user_can_do(harness: Harness):
    harness.server.add(reply("a", stop_reason="max_tokens"), reply("b", stop_reason="max_tokens"))
    _, finished = harness.run("long", max_tokens=4096, max_output=4096)
    assert finished.stop_reason == "max_tokens"
    (error,) = harness.of_type("error")
    assert "Raise max_tokens" not in error.message and "smaller steps" in error.message
    assert harness.server.requests[0].body["max_tokens"] == 4096


# ---- tool_choice: the first round only --------------------------------------------------------

@pytest.mark.parametrize(("choice", "first", "later"), [
    ("any", {"type": "any"}, {"type": "auto"}),
    ("read_file", {"type": "tool", "name": "read_file"}, {"type": "auto"}),
    ("auto", {"type": "auto"}, {"type": "auto"}),
    ("none", {"type": "none"}, {"type": "none"}),
])
def test_a_forced_tool_choice_applies_to_the_first_round_only(harness: Harness, choice, first,
                                                               later):
    harness.server.add(reply(ToolUse("read_file", {"path": "a.txt"})),
                       reply(ToolUse("read_file", {"path": "b.txt"})), reply("done"))
    _, finished = harness.run("read", tool_choice=choice)
    assert finished.stop_reason == "end_turn" and finished.rounds == 3
    sent = [r.body["tool_choice"] for r in harness.server.requests]
    assert sent == [first, later, later]


# ---- retries ------------------------------------------------------------------------------------

@pytest.mark.parametrize(("retry", "headers", "jitter", "delay"), [
    (0, {}, 0.0, 0.5), (1, {}, 0.0, 1.0), (2, {}, 0.0, 2.0), (5, {}, 0.0, 8.0),
    (9, {}, 0.0, 8.0), (0, {}, 1.0, 0.375), (3, {}, 0.5, 3.5),
    (0, {"retry-after-ms": "20"}, 0.0, 0.02), (0, {"Retry-After-Ms": "1500"}, 1.0, 1.5),
    (0, {"retry-after": "3"}, 0.0, 3.0), (2, {"retry-after": "120"}, 0.0, 2.0),
    (0, {"retry-after": "soon"}, 0.0, 0.5), (0, {"retry-after-ms": "-5"}, 0.0, 0.5),
    (1, {"retry-after-ms": "x", "retry-after": "2"}, 0.0, 2.0),
])
def test_retry_delay(retry, headers, jitter, delay):
    assert retry_delay(retry, headers, jitter) == pytest.approx(delay)


def test_an_error_event_mid_stream_is_retried_like_a_529(harness: Harness):
    harness.server.add(Reply((Text("Half an answer that will be void"),), error_after=4,
                             chunk_chars=5),
                       reply("The whole answer."))
    sid, finished = harness.run("q")
    assert finished.stop_reason == "end_turn" and len(harness.server.requests) == 2
    (retry,) = harness.of_type("model_retry")
    assert retry.attempt == 1 and retry.of == 3 and retry.discarded
    assert "overloaded_error" in retry.reason
    assert harness.store.messages(sid)[-1]["content"] == [
        {"type": "text", "text": "The whole answer."}]
    assert [e.type for e in harness.stored(sid)].count("model_retry") == 1


def test_error_events_that_persist_say_what_happened(harness: Harness):
    harness.server.add(*[Reply((Text("x"),), error_after=1)] * 3)
    _, finished = harness.run("q")
    assert finished.stop_reason == "error" and len(harness.server.requests) == 3
    (error,) = harness.of_type("error")
    assert error.code == "overloaded"
    assert "in the middle of it" in error.message and "3 attempts" in error.message
    assert "HTTP 200" in error.message and "after retries" not in error.message


def test_statuses_are_retried_and_the_count_is_told(harness: Harness):
    harness.server.add(Failure(529), Failure(500, "api_error", "boom"), Failure(529))
    _, finished = harness.run("q")
    assert finished.stop_reason == "error" and len(harness.server.requests) == 3
    assert [e.attempt for e in harness.of_type("model_retry")] == [1, 2]
    assert "3 attempts" in harness.of_type("error")[0].message
    harness.seen.clear()
    harness.server.add(Failure(400, "invalid_request_error", "bad"))
    harness.run("again")
    assert harness.of_type("model_retry") == [] and len(harness.server.requests) == 4


def test_a_server_that_never_answers_fails_once_after_the_timeout(harness: Harness):
    harness.server.add(Silence())
    started = time.monotonic()
    _, finished = harness.run("q", read_timeout_s=1.2, progress_every_s=0.3)
    took = time.monotonic() - started
    harness.server.release()
    assert finished.stop_reason == "error"
    assert len(harness.server.requests) == 1 and 1.0 < took < 4.0
    (error,) = harness.of_type("error")
    assert error.code == "timeout" and "1.2 s" in error.message
    assert "not repeated" in error.message
    waits = harness.of_type("model_waiting")
    assert len(waits) >= 2 and waits[0].timeout_s == 1.2
    assert all(w.type != "model_waiting" for w in harness.stored(finished.session_id))


@pytest.mark.parametrize(("status", "detail", "overflow"), [
    (400, "prompt is too long: 215000 tokens > 200000 maximum", True),
    (400, "the request exceeds the available context size, try increasing it", True),
    (400, "This model's maximum context length is 16384 tokens", True),
    (400, "input length and `max_tokens` exceed context limit: 190000 + 20000 > 200000", True),
    (413, "Prompt is too long", True),
    (400, "messages.0.content: Field required", False),
    (500, "prompt is too long", False),
    (400, "image exceeds 5 MB maximum", False),
])
def test_context_overflow_is_recognized(status, detail, overflow):
    assert is_context_overflow(status, detail) is overflow


@pytest.mark.parametrize(("status", "detail", "block"), [
    (400, "messages.3.content.0.image.source.base64: image exceeds 5 MB maximum: 6 > 5", (3, 0)),
    (400, "messages.2.content.1.content.0.image.source.base64.data: At least one of the image "
          "dimensions exceed max allowed size: 8000 pixels", (2, 1, 0)),
    (400, "messages.4.content.0.tool_result.content.2.image: Could not process image",
     (4, 0, 2)),
    (400, "Could not process image", ()),
    (413, "PDF too large", ()),
    (400, "messages.1.content.0.text: empty", None),
    (429, "image exceeds", None),
])
def test_a_rejected_block_is_located(status, detail, block):
    assert rejected_block(status, detail) == block


# ---- tool calls written as text, empty answers ---------------------------------------------------

@pytest.mark.parametrize(("text", "name"), [
    ('{"name": "run_command", "arguments": {"command": "ls"}}', "run_command"),
    ('```json\n{"name": "read_file", "input": {"path": "a.txt"}}\n```', "read_file"),
    ('```\n{"tool": "write_file", "args": {}}\n```', "write_file"),
    ('  {"type": "tool_use", "name": "run_command", "input": {"command": "ls"}}\n', "run_command"),
    ('{"function": {"name": "run_command", "arguments": "{\\"command\\": \\"ls\\"}"}}',
     "run_command"),
    ('{"tool_calls": [{"function": {"name": "read_file", "arguments": "{}"}}]}', "read_file"),
    ('<tool_call>\n{"name": "read_file", "arguments": {"path": "x"}}\n</tool_call>', "read_file"),
    ('<tool_call>```json\n{"name": "read_file"}\n```</tool_call>', "read_file"),
    ('{"run_command": {"command": "ls"}}', "run_command"),
    ('[{"name": "read_file", "arguments": {}}, {"name": "run_command", "arguments": {}}]',
     "read_file"),
    ('{"tool_name": "mcp__git__status", "tool_input": {}}', "mcp__git__status"),
    ('{"name": "delete_everything", "arguments": {}}', None),
    ('{"name": "Alice", "age": 3}', None),
    ('The file says {"name": "read_file"}.', None),
    ('Here is the call:\n```json\n{"name": "read_file"}\n```', None),
    ('{"name": "read_file", ', None),
    ('[{"name": "read_file"}, {"name": "nope"}]', None),
    ('[]', None),
    ('', None),
    ('"read_file"', None),
    ('{"config": {"name": "value"}}', None),
])
def test_text_tool_call(text, name):
    assert text_tool_call(text, TOOLS) == name


def test_a_tool_call_written_as_text_is_answered_once_then_the_run_goes_on(harness: Harness):
    written = '```json\n{"name": "read_file", "arguments": {"path": "a.txt"}}\n```'
    harness.server.add(reply(written), reply(ToolUse("read_file", {"path": "a.txt"})),
                       reply("It says alpha."))
    sid, finished = harness.run("what is in a.txt?")
    assert finished.stop_reason == "end_turn" and finished.rounds == 3
    told = harness.server.requests[1].body["messages"][-1]["content"][-1]["text"]
    assert "tool interface" in told and "'read_file'" in told
    assert not finished.empty_answer and not harness.server.problems
    harness.seen.clear()
    harness.server.add(reply(written), reply(written))
    _, again = harness.run("and again?", session_id=sid)
    assert again.stop_reason == "end_turn" and again.rounds == 2


def test_a_second_text_call_in_the_same_run_ends_it(harness: Harness):
    written = '{"name": "read_file", "arguments": {"path": "a.txt"}}'
    harness.server.add(reply(written), reply(written))
    _, finished = harness.run("list")
    assert finished.stop_reason == "end_turn" and finished.rounds == 2
    harness.server.add(reply('{"name": "run_command", "arguments": {"command": "ls"}}'))
    _, unknown = harness.run("not registered here")
    assert unknown.rounds == 1


@pytest.mark.parametrize(("answer", "empty"), [
    (reply(), True), (reply("   \n"), True), (reply("Done."), False)])
def test_an_empty_final_answer_is_flagged(harness: Harness, answer, empty):
    harness.server.add(answer)
    _, finished = harness.run("go")
    assert finished.stop_reason == "end_turn" and finished.empty_answer is empty
    assert finished.to_dict()["empty_answer"] is empty


# ---- text that cannot be encoded --------------------------------------------------------------

@pytest.mark.parametrize(("value", "scrubbed"), [
    ("plain", "plain"), ("a\ud800b", "a\ufffdb"), ("\udfff", "\ufffd"), ("😀", "😀"),
    ({"k\udc80": ["x", "\ud83d"]}, {"k\ufffd": ["x", "\ufffd"]}),
    ([1, None, True], [1, None, True]),
    (("\ud800",), ["\ufffd"]),
])
def test_scrub_text(value, scrubbed):
    assert scrub_text(value) == scrubbed


def test_a_clean_request_is_not_copied():
    params = {"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
    assert scrub_text(params) is params


def test_a_lone_surrogate_in_a_tool_result_never_poisons_the_session(harness: Harness):
    from kernel.tools.schema import tool

    @tool(concurrent_safe=True)
    def odd() -> str:
        """Returns text with a lone surrogate."""
        return "half of a pair: \ud83d and on"

    harness.registry.register(odd)
    harness.server.add(reply(ToolUse("odd", {})), reply("got it"))
    sid, finished = harness.run("go")
    assert finished.stop_reason == "end_turn" and not harness.server.problems
    sent = harness.server.requests[1].body["messages"][-1]["content"][0]["content"]
    assert "\ufffd and on" in str(sent)
    harness.server.add(reply("still fine"))
    _, again = harness.run("next", session_id=sid)
    assert again.stop_reason == "end_turn" and not harness.server.problems


def test_a_nan_in_a_model_tool_input_never_poisons_the_session(harness: Harness):
    """A server that streams `NaN` in a tool input: the SDK reads it as a float, and the
    block goes into the history in pydantic's JSON form (kernel.model.provider.block_param),
    where it is null, so every later request is valid JSON and the run ends well."""
    from kernel.tools.schema import tool

    seen: list[object] = []

    @tool(concurrent_safe=True)
    def measure(v: float) -> str:
        """Takes a number."""
        seen.append(v)
        return "measured"

    harness.registry.register(measure)
    harness.server.add(reply(ToolUse("measure", {"v": float("nan")})), reply("done"))
    sid, finished = harness.run("go")
    assert finished.stop_reason == "end_turn" and not harness.server.problems
    sent = harness.server.requests[1].body["messages"]
    assert [b["input"] for b in sent[-2]["content"] if b["type"] == "tool_use"] == [{"v": None}]
    harness.server.add(reply("still fine"))
    _, again = harness.run("next", session_id=sid)
    assert again.stop_reason == "end_turn" and not harness.server.problems


def test_the_fake_server_refuses_a_lone_surrogate_like_the_api():
    from kernel.fakemodel.validate import request_problem

    body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "a\ud800"}]}
    assert "surrogate" in (request_problem(body) or "")


def test_provider_config_for_model_uses_the_limits():
    config = ProviderConfig.for_model("qwen", {"qwen": {"context_window": 16384,
                                                        "max_tokens": 2048}})
    assert (config.context_window, config.max_tokens) == (16384, 2048)
    assert ProviderConfig.for_model("claude-sonnet-4-6", max_tokens=1234).max_tokens == 1234
    with pytest.raises(ConfigError, match="more than"):
        AnthropicProvider(ProviderConfig.for_model("claude-3-haiku-x", max_tokens=9000),
                          api_key="k")
    asyncio.run(AnthropicProvider(config, api_key="k").close())
