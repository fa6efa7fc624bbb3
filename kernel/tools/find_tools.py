"""Many tools: above a threshold the model sees a few, and `find_tools` searches the rest.

With a few MCP servers a model is easily offered 60–150 tools: every request carries every
schema, and choosing gets worse as the list grows. When more tools are on offer than the
threshold (setting `tool_search_threshold`, default 40), `tools_on_offer` shows the model:
the built-in tools, the tools already called in this session, the tools earlier
`find_tools` calls found, and `find_tools` itself. `find_tools(query)` ranks the other
tools by name and description with BM25 and lists the best; they are on offer from the
next round. Below the threshold every tool is offered and `find_tools` is not.

What is offered is only what the model sees: the mode's own narrowing (read-only offers
only read tools) applies first and is never widened, and every call still goes through
validation, the rules and the mode (kernel.tools.dispatch) whether it was offered or not.

The ranking is Okapi BM25 (k1 = 1.5, b = 0.75, idf = ln(1 + (N - n + 0.5) / (n + 0.5)))
over the words of each tool's name (split at `_`, `-`, `.` and case changes) and
description. It is a dozen lines here rather than a dependency: the maintained package
for it (`rank-bm25`) has had no release since 2022 and pulls in numpy, which the packaged
app does not otherwise need, and `bm25s` adds scipy; a hundred short documents need
neither.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Annotated, Any

from kernel.setting_records import DEFAULT_TOOL_SEARCH_THRESHOLD
from kernel.tools.schema import tool
from kernel.tools.spec import Risk, ToolSpec

FIND_TOOLS = "find_tools"
DEFAULT_THRESHOLD = DEFAULT_TOOL_SEARCH_THRESHOLD
MAX_RESULTS = 10
K1, B = 1.5, 0.75

_RUN = re.compile(r"[^\W\d_]+|\d+")
_CASE_CHANGE = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def words(text: str) -> list[str]:
    """Lower-case words (letters of any script, digits apart, camelCase split):
    `get_WeatherForecast-v2` → get, weather, forecast, v, 2."""
    return [w.lower() for run in _RUN.findall(text) for w in _CASE_CHANGE.split(run)]


def bm25_rank(query: str, documents: Mapping[str, str]) -> list[tuple[str, float]]:
    """The documents that share a word with `query`, best first (ties by name)."""
    docs = {name: words(text) for name, text in documents.items()}
    if not docs:
        return []
    average = sum(len(d) for d in docs.values()) / len(docs) or 1.0
    frequency = Counter(w for d in docs.values() for w in set(d))
    terms = set(words(query))
    scores: list[tuple[str, float]] = []
    for name, doc in docs.items():
        counts = Counter(doc)
        score = 0.0
        for term in terms & counts.keys():
            idf = math.log(1 + (len(docs) - frequency[term] + 0.5) / (frequency[term] + 0.5))
            tf = counts[term]
            score += idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * len(doc) / average))
        if score > 0:
            scores.append((name, score))
    return sorted(scores, key=lambda s: (-s[1], s[0]))


def searchable(specs: Iterable[ToolSpec]) -> dict[str, str]:
    """The tools `find_tools` searches (all but the built-in ones), as name → text."""
    return {s.name: f"{s.name} {s.description}" for s in specs if s.origin != "builtin"}


def find_tools_result(query: str, specs: Sequence[ToolSpec], limit: int) -> str:
    """What `find_tools` answers: JSON with the best tools (name, score, description)."""
    by_name = {s.name: s for s in specs}
    ranked = bm25_rank(query, searchable(specs))[:limit]
    found = [{"name": n, "score": round(score, 3),
              "description": by_name[n].description.strip().split("\n")[0][:300]}
             for n, score in ranked]
    note = ("These tools can be called from your next turn." if found else
            "No tool matches; try other words (names, verbs, the service's name).")
    return json.dumps({"tools": found, "note": note}, ensure_ascii=False)


def make_find_tools(specs: Callable[[], Sequence[ToolSpec]]) -> ToolSpec:
    """The find_tools ToolSpec over the tools `specs()` lists at call time (the registry)."""

    @tool(name=FIND_TOOLS, risk=Risk.READ, concurrent_safe=True, timeout_s=10,
          summarize=lambda a: str(a.get("query", "")))
    def find_tools(
        query: Annotated[str, "What the tool should do, in a few words (e.g. 'weather "
                              "forecast for a city').", {"minLength": 1}],
        limit: Annotated[int, "How many tools to list at most.",
                         {"minimum": 1, "maximum": MAX_RESULTS}] = 5,
    ) -> str:
        """Search the tools that are not shown yet, by name and description. Many tools are
        installed and only some are shown; call this when none of the shown tools fits. The
        tools it lists can be called from your next turn."""
        return find_tools_result(query, specs(), limit)

    return find_tools


def _found(history: Sequence[Mapping[str, Any]]) -> tuple[set[str], set[str]]:
    """The tools called in `history`, and the tools its successful find_tools calls listed."""
    used: set[str] = set()
    searches: set[str] = set()
    for message in history:
        content = message.get("content")
        if isinstance(content, str):
            continue
        for block in content or ():
            if block.get("type") == "tool_use":
                used.add(str(block.get("name")))
                if block.get("name") == FIND_TOOLS:
                    searches.add(str(block.get("id")))
    found: set[str] = set()
    for message in history:
        content = message.get("content")
        if message.get("role") != "user" or isinstance(content, str):
            continue
        for block in content or ():
            if block.get("type") == "tool_result" and block.get("tool_use_id") in searches \
                    and not block.get("is_error"):
                found |= _listed(block.get("content"))
    return used, found


def _listed(content: Any) -> set[str]:
    text = content if isinstance(content, str) else "".join(
        str(b.get("text", "")) for b in content or () if isinstance(b, Mapping))
    try:
        tools = json.loads(text).get("tools", [])
        return {str(t["name"]) for t in tools if isinstance(t, Mapping) and "name" in t}
    except (ValueError, AttributeError, TypeError):
        return set()


def tools_on_offer(specs: Sequence[ToolSpec], allowed: Collection[str] | None,
                  history: Sequence[Mapping[str, Any]], threshold: int,
                  forced: str | None = None) -> list[str]:
    """The names to offer this round. `allowed` is the mode's narrowing (None: every tool);
    `history` the session's messages; `forced` the tool the request's tool_choice names (it
    is always offered: the API refuses a tool_choice naming a tool not in the request). Pure."""
    names = [s.name for s in specs if allowed is None or s.name in allowed]
    others = [n for n in names if n != FIND_TOOLS]
    if len(others) <= threshold or FIND_TOOLS not in names:
        return others
    used, found = _found(history)
    builtin = {s.name for s in specs if s.origin == "builtin"}
    return [n for n in names if n in builtin or n in used or n in found or n == forced]
