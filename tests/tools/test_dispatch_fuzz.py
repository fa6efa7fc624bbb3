"""Arbitrary JSON thrown at dispatch for every built-in tool: always a ToolResult, never a raise."""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kernel.paths import AppPaths
from kernel.tools.builtin import builtin_tools
from kernel.tools.dispatch import Dispatcher
from kernel.tools.externalize import OutputStore
from kernel.tools.pathpolicy import PathPolicy
from kernel.tools.registry import ToolRegistry
from kernel.tools.spec import ErrorCode, ToolCall, ToolResult

TOOLS = ToolRegistry(builtin_tools())
_ids = itertools.count()

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
path_like = st.sampled_from(
    [
        "",
        ".",
        "..",
        "a.txt",
        "sub",
        "sub/b.txt",
        "../x",
        "~",
        "/etc/passwd",
        "a\x00b",
        "x" * 300,
        ".git/config",
        "sub/../a.txt",
        "link-out/x",
        "nope/deep/file",
    ]
) | st.text(max_size=40)


def typed_value(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values of the property's own type (bounds ignored on purpose, to hit the edges)."""
    kinds = schema.get("type", [])
    kinds = [kinds] if isinstance(kinds, str) else kinds
    options: list[st.SearchStrategy[Any]] = []
    if "string" in kinds:
        options.append(path_like | st.sampled_from(["中文", "(", "a.*", "**/*.txt", "stored"]))
    if "integer" in kinds:
        options.append(st.integers(min_value=-3, max_value=3000))
    if "boolean" in kinds:
        options.append(st.booleans())
    if "null" in kinds:
        options.append(st.none())
    return st.one_of(options) if options else json_values


def arguments(name: str) -> st.SearchStrategy[Any]:
    """Mostly well-typed objects (so calls reach the tool), sometimes anything at all."""
    schema = TOOLS.get(name).input_schema  # type: ignore[union-attr]
    props = schema["properties"]
    required = set(schema.get("required", []))
    values = {p: typed_value(props[p]) for p in props}
    if "call_id" in values:
        values["call_id"] = st.sampled_from(["stored", "stored", "never-ran", "../x"])
    typed = st.fixed_dictionaries(
        {p: v for p, v in values.items() if p in required},
        optional={p: v for p, v in values.items() if p not in required},
    )
    loose = st.dictionaries(st.sampled_from([*props, "extra"]), json_values | path_like)
    return st.one_of(typed, typed, typed, loose, json_values)


@pytest.fixture
def dispatcher(reins_home: AppPaths, workspace: Path, tmp_path: Path) -> Dispatcher:
    (workspace / "a.txt").write_text("alpha\n中文\n")
    (workspace / "sub").mkdir()
    (workspace / "sub" / "b.txt").write_text("beta\n")
    (workspace / "bin").write_bytes(b"\x00\x01")
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "link-out").symlink_to(outside)
    outputs = OutputStore.for_session(reins_home, "fuzz")
    outputs.root.mkdir(parents=True)
    outputs.path_for("stored").write_text("stored 输出 " * 50)
    return Dispatcher(
        ToolRegistry(builtin_tools()),
        session_id="fuzz",
        workspace=workspace,
        outputs=outputs,
        path_policy=PathPolicy(workspace, app_paths=reins_home),
    )


@pytest.mark.parametrize("name", TOOLS.names())
def test_arbitrary_json_always_ends_as_a_result(
    dispatcher: Dispatcher, tmp_path: Path, name: str
) -> None:
    outside = tmp_path / "outside"

    @settings(
        max_examples=80,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(args=arguments(name))
    def check(args: Any) -> None:
        call_id = f"f{next(_ids)}"
        result = asyncio.run(dispatcher.dispatch(ToolCall(call_id, name, args)))
        assert isinstance(result, ToolResult) and result.call_id == call_id
        assert result.is_error == (result.error_code is not None)
        assert isinstance(result.content, str) and result.content
        if not isinstance(args, dict) or not TOOLS.validator(name).is_valid(args):
            assert result.error_code is ErrorCode.INVALID_ARGUMENTS
        assert "Reins failed internally" not in result.text
        assert list(outside.iterdir()) == []  # nothing ever escaped the workspace

    check()
