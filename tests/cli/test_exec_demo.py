"""`reins exec --model reins-demo`: the built-in demo model runs headless without a key, on
its own loopback server (never the configured endpoint), through the same loop, tools and
approvals as a real model."""

from __future__ import annotations

import pytest

from kernel.shared.demo import DEMO_MODEL
from tests.cli.conftest import Cli, events


def test_the_demo_model_runs_headless_without_a_key(cli: Cli,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    code, out, err = cli.call("exec", "--model", DEMO_MODEL, "--approve", "allow", "--json",
                              "hello")
    assert code == 0, err
    seen = events(out)
    assert seen[0]["type"] == "session_started" and seen[0]["model"] == DEMO_MODEL
    calls = [e["name"] for e in seen if e["type"] == "tool_call"]
    assert calls == ["list_directory", "write_file"]
    assert [e["error_code"] for e in seen if e["type"] == "tool_result"] == [None, None]
    assert "demo model" in " ".join(e["text"] for e in seen if e["type"] == "assistant_text")
    assert (cli.workspace / "notes.md").is_file()
    assert cli.server.requests == [], "the configured endpoint was never asked"
