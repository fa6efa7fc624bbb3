"""mcp__<server>__<tool> names: safe characters, at most 64, collisions named."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernel.mcp.naming import (
    NameCollision,
    check_collision,
    describe_origin,
    server_prefix,
    tool_name,
)
from kernel.tools.registry import NAME_PATTERN


def test_plain_names() -> None:
    assert tool_name("git", "git_status") == "mcp__git__git_status"
    assert server_prefix("git") == "mcp__git__"


def test_unsafe_characters_become_underscores() -> None:
    assert tool_name("my server.v2", "read/file:now") == "mcp__my_server_v2__read_file_now"
    assert tool_name("日本", "ツール") == "mcp__" + "__" + "__" + "___"


def test_long_names_are_cut_to_64_and_stay_distinct() -> None:
    a = tool_name("server", "x" * 100 + "a")
    b = tool_name("server", "x" * 100 + "b")
    assert len(a) == len(b) == 64
    assert a != b
    assert a.startswith("mcp__server__xxxx")


@given(st.text(min_size=1, max_size=80), st.text(min_size=1, max_size=200))
def test_every_name_is_one_the_registry_accepts(server: str, tool: str) -> None:
    name = tool_name(server, tool)
    assert NAME_PATTERN.match(name)
    assert name.startswith(server_prefix(server)[:50])


def test_collision_names_both_origins() -> None:
    check_collision("mcp__a_b__x", "mcp:a.b tool 'x'", None)
    check_collision("mcp__a_b__x", "mcp:a.b tool 'x'", "mcp:a.b tool 'x'")
    with pytest.raises(NameCollision) as err:
        check_collision("mcp__a_b__x", describe_origin("mcp:a.b", "x"),
                        describe_origin("mcp:a_b", "x"))
    assert "mcp:a.b tool 'x'" in str(err.value)
    assert "mcp:a_b tool 'x'" in str(err.value)
