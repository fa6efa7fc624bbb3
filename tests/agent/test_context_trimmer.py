"""ContextTrimmer: the same requests as trimming the whole history from scratch each round.

The oracle below is the whole-history algorithm as it was before trimming became
incremental (every request measured and trimmed from the first message; it uses the
module's own `result_text`, which did not change). Many simulated runs (seeded, so
reproducible) grow a history round by round — results long and short, text and list
contents, images, non-ASCII text, merged user turns, messages replaced, histories cut back,
budgets and fixed sizes that change, outputs that cannot be stored — and every request
must equal the oracle's: the messages, the trimmed ids, the size.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from kernel.agent.context import (
    KEEP_RECENT_MESSAGES,
    TRIM_AT,
    ContextTrimmer,
    estimate_tokens,
    pointer_text,
    result_text,
    same_objects,
    trim_tool_results,
)


def oracle(messages: Sequence[Mapping[str, Any]], *, budget_tokens: int, fixed_tokens: int,
           store_full: Callable[[str, str], str | None]
           ) -> tuple[list[dict[str, Any]], list[str], int]:
    out = [dict(m) for m in messages]
    total = fixed_tokens + estimate_tokens(out)
    limit = int(budget_tokens * TRIM_AT)
    trimmed: list[str] = []
    if total <= limit:
        return out, trimmed, fixed_tokens + estimate_tokens(out)
    for index in range(max(0, len(out) - KEEP_RECENT_MESSAGES)):
        message = out[index]
        if message["role"] != "user" or isinstance(message["content"], str):
            continue
        blocks = copy.deepcopy(list(message["content"]))
        changed = False
        for block in blocks:
            if block.get("type") != "tool_result":
                continue
            text = result_text(block.get("content"))
            if len(text) < 400:
                continue
            path = store_full(str(block.get("tool_use_id")), text)
            if path is None:
                continue
            size = len(text.encode("utf-8", "surrogateescape"))
            before = estimate_tokens(block.get("content"))
            block["content"] = pointer_text(str(block["tool_use_id"]), path, size)
            total -= before - estimate_tokens(block["content"])
            trimmed.append(str(block["tool_use_id"]))
            changed = True
            if total <= limit:
                break
        if changed:
            out[index] = {**message, "content": blocks}
        if total <= limit:
            break
    return out, trimmed, fixed_tokens + estimate_tokens(out)


WORDS = ["alpha", "β-test", "ünïcode", "日本語", "emoji 🎉", "line\nbreak", 'quo"te', "tab\t"]


def _text(rng: random.Random, size: int) -> str:
    parts: list[str] = []
    while sum(len(p) + 1 for p in parts) < size:
        parts.append(rng.choice(WORDS))
    return " ".join(parts)


def _result(rng: random.Random, call_id: str) -> dict[str, Any]:
    size = rng.choice([50, 300, 399, 400, 401, 900, 2500])
    kind = rng.random()
    content: Any
    if kind < 0.5:
        content = _text(rng, size)
    elif kind < 0.8:
        content = [{"type": "text", "text": _text(rng, size // 2)},
                   {"type": "text", "text": _text(rng, size // 2)}]
    elif kind < 0.9:
        content = [{"type": "text", "text": _text(rng, size)},
                   {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                "data": "iVBORw0KGgo" * 10}}]
    else:
        content = []
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": content}
    if rng.random() < 0.2:
        block["is_error"] = True
    return block


class _Store:
    """store_full: a path per call id; some ids cannot be stored (None), at first or always."""

    def __init__(self, rng: random.Random) -> None:
        self.never = {f"c{i}" for i in range(400) if rng.random() < 0.1}
        self.not_yet = {f"c{i}" for i in range(400) if rng.random() < 0.1}
        self.calls: list[str] = []

    def __call__(self, call_id: str, text: str) -> str | None:
        self.calls.append(call_id)
        if call_id in self.never:
            return None
        if call_id in self.not_yet:
            self.not_yet.discard(call_id)
            return None
        return f"/data/outputs/{call_id}.txt"


def _grow(rng: random.Random, history: list[dict[str, Any]], count: int) -> int:
    """One round: an assistant turn with calls (or text), then their results (merged into
    the last user turn when it is one); returns the next call number."""
    calls = [f"c{count + i}" for i in range(rng.choice([1, 1, 1, 2, 3]))]
    content: list[dict[str, Any]] = [{"type": "text", "text": _text(rng, 40)}]
    content += [{"type": "tool_use", "id": c, "name": "read_file", "input": {"path": c}}
                for c in calls]
    history.append({"role": "assistant", "content": content})
    blocks = [_result(rng, c) for c in calls]
    if rng.random() < 0.1:
        blocks.append({"type": "text", "text": _text(rng, 500)})
    history.append({"role": "user", "content": blocks})
    if rng.random() < 0.1:
        last = history[-1]
        history[-1] = {"role": "user", "content": [*last["content"],
                                                    {"type": "text", "text": "go on"}]}
    return count + len(calls)


def _disturb(rng: random.Random, history: list[dict[str, Any]]) -> None:
    """What else happens to a history: a message replaced (a new object), or cut back."""
    roll = rng.random()
    if roll < 0.05 and len(history) > 3:
        index = rng.randrange(1, len(history))
        message = history[index]
        if message["role"] == "user" and isinstance(message["content"], list):
            history[index] = {"role": "user", "content": [
                {**b, "content": "replaced " * 60} if b.get("type") == "tool_result" else b
                for b in message["content"]]}
    elif roll < 0.08 and len(history) > 6:
        del history[rng.randrange(len(history) // 2, len(history)):]


@pytest.mark.parametrize("seed", range(24))
def test_each_request_equals_trimming_the_whole_history(seed: int) -> None:
    rng = random.Random(seed)
    store = _Store(rng)
    oracle_store = _Store(random.Random(seed))
    trimmer = ContextTrimmer(store)
    history: list[dict[str, Any]] = [{"role": "user", "content": "read the files " + str(seed)}]
    budget = rng.choice([3000, 8000, 20000])
    fixed = rng.choice([0, 200, 1500])
    count = 0
    for step in range(rng.choice([20, 40, 80])):
        count = _grow(rng, history, count)
        _disturb(rng, history)
        if rng.random() < 0.05:
            budget = max(500, int(budget * rng.choice([0.5, 0.8, 1.25])))
        if rng.random() < 0.05:
            fixed = rng.choice([0, 200, 1500])
        before = copy.deepcopy(history) if step % 10 == 9 else history
        got = trimmer.trim(history, budget_tokens=budget, fixed_tokens=fixed)
        want, want_ids, want_tokens = oracle(history, budget_tokens=budget,
                                             fixed_tokens=fixed, store_full=oracle_store)
        assert got.messages == want
        assert got.trimmed == want_ids
        assert got.tokens == want_tokens
        assert history == before, "the history itself is never changed"


def test_the_size_is_exactly_the_estimate_of_the_whole_list() -> None:
    rng = random.Random(7)
    history: list[dict[str, Any]] = []
    trimmer = ContextTrimmer(lambda call_id, text: None)
    for n in range(50):
        _grow(rng, history, n * 3)
        for fixed in (0, 123):
            got = trimmer.trim(history, budget_tokens=10**9, fixed_tokens=fixed)
            assert got.tokens == fixed + estimate_tokens(history)
    assert trimmer.trim([], budget_tokens=10, fixed_tokens=0).tokens == estimate_tokens([])


def test_each_output_is_stored_once_across_rounds() -> None:
    stored: list[str] = []

    def store_full(call_id: str, text: str) -> str:
        stored.append(call_id)
        return f"/data/{call_id}.txt"

    trimmer = ContextTrimmer(store_full)
    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i in range(60):
        history.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{i}", "name": "read_file", "input": {}}]})
        history.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{i}", "content": "y" * 2000}]})
        trimmer.trim(history, budget_tokens=20000, fixed_tokens=0)
    final = trimmer.trim(history, budget_tokens=20000, fixed_tokens=0)
    assert final.trimmed and len(stored) == len(set(stored)) == len(final.trimmed)
    again = trimmer.trim(history, budget_tokens=20000, fixed_tokens=0)
    assert all(a is b for a, b in zip(final.messages, again.messages, strict=True)), \
        "an unchanged request is made of the same objects (what is sent is not remade)"


def test_the_stateless_form_is_one_fresh_trimmer() -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for i in range(20):
        history += [{"role": "assistant", "content": [
                        {"type": "tool_use", "id": f"t{i}", "name": "x", "input": {}}]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": f"t{i}", "content": "z" * 900}]}]
    out, ids = trim_tool_results(history, budget_tokens=6000, fixed_tokens=100,
                                 store_full=lambda c, t: f"/o/{c}")
    want, want_ids, _ = oracle(history, budget_tokens=6000, fixed_tokens=100,
                               store_full=lambda c, t: f"/o/{c}")
    assert out == want and ids == want_ids and ids


@pytest.mark.parametrize(("old", "new", "same"), [
    ([], [], 0), ([1], [], 0), ([], [1], 0), ("ab", "ab", 2), ("abc", "abx", 2),
])
def test_same_objects_counts_the_identical_prefix(old: str, new: str, same: int) -> None:
    items = {c: object() for c in "abcx"}
    assert same_objects([items.get(c, c) for c in old],
                        [items.get(c, c) for c in new]) == same


def test_a_result_unlocated_after_its_request_is_located_again_or_kept() -> None:
    """`unlocated`: the output was not written after all; the next request points to it
    only if store_full now says where it is, else the result stays in full."""
    rng = random.Random(3)
    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    count = 0
    for _ in range(30):
        count = _grow(rng, history, count)
    answers: dict[str, str | None] = {}

    def store_full(call_id: str, text: str) -> str | None:
        return answers.get(call_id, f"/data/{call_id}.txt")

    trimmer = ContextTrimmer(store_full)
    first = trimmer.trim(history, budget_tokens=8000, fixed_tokens=0)
    victim = first.trimmed[0]
    for answer in (None, f"/elsewhere/{victim}.txt"):
        answers[victim] = answer
        trimmer.unlocated(victim)
        got = trimmer.trim(history, budget_tokens=8000, fixed_tokens=0)
        oracle_store: Callable[[str, str], str | None] = store_full
        want, want_ids, want_tokens = oracle(history, budget_tokens=8000, fixed_tokens=0,
                                             store_full=oracle_store)
        assert (got.messages, got.trimmed, got.tokens) == (want, want_ids, want_tokens)
        assert (victim in got.trimmed) is (answer is not None)
        assert (f"/elsewhere/{victim}.txt" in json.dumps(got.messages)) is (answer is not None)
