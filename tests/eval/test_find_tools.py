"""find_tools: the BM25 ranking, and what is offered above and below the threshold (tables).
The many-tools eval set runs it for real (tests/eval/test_eval_suite.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kernel.policy.settings import SettingsError, parse_settings
from kernel.tools.find_tools import (
    FIND_TOOLS,
    bm25_rank,
    find_tools_result,
    make_find_tools,
    tools_on_offer,
    words,
)
from kernel.tools.spec import Risk, ToolSpec


def spec(name: str, description: str = "", origin: str = "mcp:s",
         risk: Risk = Risk.READ) -> ToolSpec:
    return ToolSpec(name, description or name, {"type": "object"}, lambda: "", risk=risk,
                    origin=origin)


@pytest.mark.parametrize(("text", "expected"), [
    ("read_file", ["read", "file"]),
    ("mcp__catalog__weather_forecast", ["mcp", "catalog", "weather", "forecast"]),
    ("getWeatherForecast", ["get", "weather", "forecast"]),
    ("HTTPServer v2", ["http", "server", "v", "2"]),
    ("dns-resolve.now", ["dns", "resolve", "now"]),
    ("Ünïcode wörds", ["ünïcode", "wörds"]),
    ("Wetter_vorhersage für Städte", ["wetter", "vorhersage", "für", "städte"]),
    ("天气预报 forecast", ["天气预报", "forecast"]),
    ("id42name", ["id", "42", "name"]),
    ("", []),
    ("   ", []),
])
def test_words(text: str, expected: list[str]) -> None:
    assert words(text) == expected


DOCS = {
    "weather_forecast": "weather_forecast Forecast the weather of a city for the next days",
    "weather_list": "weather_list List the weather observations",
    "finance_convert": "finance_convert Convert an amount of money between currencies",
    "dns_resolve": "dns_resolve Resolve a host name to its IP addresses",
    "crm_list": "crm_list List the customer records",
}


@pytest.mark.parametrize(("query", "best"), [
    ("weather forecast", "weather_forecast"),
    ("Forecast", "weather_forecast"),
    ("FORECAST for Paris", "weather_forecast"),
    ("convert euros to dollars money", "finance_convert"),
    ("currencies", "finance_convert"),
    ("ip address of a host", "dns_resolve"),
    ("resolve_host", "dns_resolve"),
    ("customer", "crm_list"),
])
def test_bm25_ranks_the_matching_tool_first(query: str, best: str) -> None:
    ranked = bm25_rank(query, DOCS)
    assert ranked[0][0] == best
    assert [s for _, s in ranked] == sorted((s for _, s in ranked), reverse=True)


@pytest.mark.parametrize("query", ["", "zebra", "!!!", "  "])
def test_bm25_lists_nothing_without_a_shared_word(query: str) -> None:
    assert bm25_rank(query, DOCS) == []


def test_bm25_rare_words_weigh_more_and_ties_go_by_name() -> None:
    docs = {"b": "list weather", "a": "list weather", "c": "list crm"}
    assert [n for n, _ in bm25_rank("weather", docs)] == ["a", "b"]
    ranked = dict(bm25_rank("list weather", docs))
    assert ranked["a"] > ranked["c"] > 0
    assert bm25_rank("x", {}) == []


BUILTINS = [spec(n, origin="builtin") for n in ("read_file", "write_file", "run_command")]
FIND = spec(FIND_TOOLS, origin="builtin")
MANY = [spec(f"mcp__s__t{i}") for i in range(50)]
FEW = MANY[:5]


def used(*names: str) -> list[dict[str, Any]]:
    return [{"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"u{i}", "name": n,
                                               "input": {}} for i, n in enumerate(names)]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"u{i}",
                                          "content": "ok"} for i in range(len(names))]}]


def searched(found: list[str], *, is_error: bool = False, as_blocks: bool = False,
             text: str | None = None) -> list[dict[str, Any]]:
    body = text if text is not None else json.dumps({"tools": [{"name": n} for n in found]})
    content: Any = [{"type": "text", "text": body}] if as_blocks else body
    return [{"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "f1",
                                               "name": FIND_TOOLS, "input": {"query": "x"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "f1",
                                          "content": content, "is_error": is_error}]}]


BASE = {"read_file", "write_file", "run_command", FIND_TOOLS}

# (specs, allowed, history, threshold, expected set offered)
OFFER_TABLE: list[tuple[list[ToolSpec], list[str] | None, list[dict[str, Any]], int,
                        set[str]]] = [
    # below (or at) the threshold: everything but find_tools
    ([*BUILTINS, FIND, *FEW], None, [], 40, {s.name for s in [*BUILTINS, *FEW]}),
    ([*BUILTINS, FIND, *MANY[:37]], None, [], 40, {s.name for s in [*BUILTINS, *MANY[:37]]}),
    # above: built-ins and find_tools only
    ([*BUILTINS, FIND, *MANY[:38]], None, [], 40, BASE),
    ([*BUILTINS, FIND, *MANY], None, [], 40, BASE),
    ([*BUILTINS, FIND, *MANY], None, [], 10, BASE),
    # tools already used, and tools found, join
    ([*BUILTINS, FIND, *MANY], None, used("mcp__s__t7"), 40, BASE | {"mcp__s__t7"}),
    ([*BUILTINS, FIND, *MANY], None, searched(["mcp__s__t1", "mcp__s__t2"]), 40,
     BASE | {"mcp__s__t1", "mcp__s__t2"}),
    ([*BUILTINS, FIND, *MANY], None, searched(["mcp__s__t3"], as_blocks=True), 40,
     BASE | {"mcp__s__t3"}),
    # a failed search, an unreadable result, or a name not registered adds nothing
    ([*BUILTINS, FIND, *MANY], None, searched(["mcp__s__t1"], is_error=True), 40, BASE),
    ([*BUILTINS, FIND, *MANY], None, searched([], text="not json"), 40, BASE),
    ([*BUILTINS, FIND, *MANY], None, searched([], text='{"tools": "x"}'), 40, BASE),
    ([*BUILTINS, FIND, *MANY], None, searched([], text="[1, 2]"), 40, BASE),
    ([*BUILTINS, FIND, *MANY], None, searched(["mcp__gone__x"]), 40, BASE),
    # a result of another tool that looks like a search result is not one
    ([*BUILTINS, FIND, *MANY], None,
     [{"role": "user", "content": "hi"},
      {"role": "assistant", "content": [{"type": "tool_use", "id": "m1", "name": "mcp__s__t0",
                                         "input": {}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "m1",
                                    "content": json.dumps({"tools": [{"name": "mcp__s__t9"}]})}]}],
     40, BASE | {"mcp__s__t0"}),
    # the mode's narrowing is never widened: not offered even when used or found
    ([*BUILTINS, FIND, *MANY], ["read_file", FIND_TOOLS, *(s.name for s in MANY[:45])],
     searched(["write_file", "mcp__s__t49", "mcp__s__t1"]), 40,
     {"read_file", FIND_TOOLS, "mcp__s__t1"}),
    ([*BUILTINS, FIND, *MANY], ["read_file", *(s.name for s in MANY[:3])], [], 2,
     {"read_file", "mcp__s__t0", "mcp__s__t1", "mcp__s__t2"}),
    # without find_tools registered nothing is hidden
    ([*BUILTINS, *MANY], None, [], 10, {s.name for s in [*BUILTINS, *MANY]}),
]
FORCED_TABLE: list[tuple[str | None, set[str]]] = [
    (None, BASE),
    ("mcp__s__t42", BASE | {"mcp__s__t42"}),  # --tool-choice names a hidden tool
    ("read_file", BASE),
    ("mcp__gone__x", BASE),
]


@pytest.mark.parametrize(("forced", "expected"), FORCED_TABLE)
def test_a_forced_tool_is_always_offered(forced: str | None, expected: set[str]) -> None:
    assert set(tools_on_offer([*BUILTINS, FIND, *MANY], None, [], 40, forced=forced)) == expected


@pytest.mark.parametrize(("specs", "allowed", "history", "threshold", "expected"), OFFER_TABLE)
def test_tools_on_offer(specs: list[ToolSpec], allowed: list[str] | None,
                        history: list[dict[str, Any]], threshold: int,
                        expected: set[str]) -> None:
    offered = tools_on_offer(specs, allowed, history, threshold)
    assert set(offered) == expected
    assert offered == [s.name for s in specs if s.name in expected]  # registration order


def test_find_tools_lists_the_best_matches_as_json_and_skips_builtins() -> None:
    specs = [*BUILTINS, FIND, spec("mcp__w__weather_forecast", "Forecast the weather\nmore"),
             spec("mcp__w__weather_list", "List weather observations"),
             spec("mcp__d__dns_resolve", "Resolve a host name")]
    data = json.loads(find_tools_result("weather forecast read file", specs, 5))
    assert [t["name"] for t in data["tools"]] == ["mcp__w__weather_forecast",
                                                  "mcp__w__weather_list"]
    assert data["tools"][0]["description"] == "Forecast the weather"
    assert "next turn" in data["note"]
    assert len(json.loads(find_tools_result("weather", specs, 1))["tools"]) == 1
    assert json.loads(find_tools_result("zebra", specs, 5))["tools"] == []
    made = make_find_tools(lambda: specs)
    assert made.name == FIND_TOOLS and made.risk is Risk.READ
    assert made.input_schema["required"] == ["query"]
    assert made.input_schema["properties"]["limit"]["maximum"] == 10


@pytest.mark.parametrize(("text", "threshold"), [
    ("{}", 40), ('{"tool_search_threshold": 1}', 1), ('{"tool_search_threshold": 500}', 500),
])
def test_the_threshold_setting(text: str, threshold: int) -> None:
    assert parse_settings(text).tool_search_threshold == threshold


@pytest.mark.parametrize("value", ["0", "-3", "2.5", '"40"', "true", "null", "[40]"])
def test_a_bad_threshold_setting_is_refused(value: str) -> None:
    with pytest.raises(SettingsError, match="tool_search_threshold"):
        parse_settings(f'{{"tool_search_threshold": {value}}}')
