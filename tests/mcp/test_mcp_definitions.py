"""The live definitions of one server (kernel.mcp.definitions) and the grant check on them."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from kernel.mcp.definitions import ANNOTATION_KEY, ToolDefinitions
from kernel.mcp.fingerprint import ANNOTATION_KEY as FINGERPRINT
from kernel.mcp.grants import GrantFingerprints
from kernel.tools.spec import ToolSpec

# Each row: the steps, then whether the definitions are suspended and what `t` is now.
# Steps: "n" a notification; "s" a listing starts (its token is pushed); "l:<fp>" the
# oldest started listing comes in with t=<fp>; "f" a re-listing failed; "l-:<fp>" a listing
# without t comes in.
ROWS = [
    ([], False, None),
    (["s", "l:a"], False, "a"),
    (["s", "l:a", "n"], True, None),
    (["s", "l:a", "n", "s", "l:b"], False, "b"),
    (["s", "l:a", "s", "n", "l:b"], True, None),  # listing started before the change
    (["s", "l:a", "s", "n", "l:b", "s", "l:c"], False, "c"),
    (["s", "l:a", "n", "n", "s", "l:b"], False, "b"),
    (["s", "l:a", "n", "s", "n", "l:b"], True, None),
    (["s", "l:a", "n", "s", "f"], True, None),
    (["s", "l:a", "n", "s", "f", "n", "s", "l:b"], False, "b"),
    (["s", "l:a", "n", "s", "l-:x"], False, None),  # removed
    (["s", "l-:x", "n", "s", "l:a"], False, "a"),  # added back
]


@pytest.mark.parametrize(("steps", "suspended", "current"), ROWS)
def test_suspension_ends_only_with_a_listing_started_after_the_last_notification(
        steps: list[str], suspended: bool, current: str | None) -> None:
    live = ToolDefinitions("srv")
    tokens: list[int] = []
    for step in steps:
        if step == "n":
            live.announce_change()
        elif step == "s":
            tokens.append(live.listing_started())
        elif step == "f":
            tokens.pop(0)
            live.listing_failed()
        else:
            kind, fingerprint = step.split(":")
            live.listed(tokens.pop(0), {"t": fingerprint} if kind == "l" else {"u": "u"})
    assert live.suspended is suspended
    now = live.current("t")
    assert now.fingerprint == current
    if current is None:
        assert "srv" in now.why_unknown
        assert ("announced that its tools changed" in now.why_unknown) is suspended


def test_a_call_waits_for_the_new_list_but_not_forever() -> None:
    async def main() -> tuple[float, float, str | None]:
        live = ToolDefinitions("srv")
        live.listed(live.listing_started(), {"t": "a"})
        live.announce_change()
        token = live.listing_started()
        asyncio.get_running_loop().call_later(0.2, live.listed, token, {"t": "b"})
        started = time.monotonic()
        await live.settled(10.0)
        waited = time.monotonic() - started
        live.announce_change()
        started = time.monotonic()
        await live.settled(0.2)  # nobody lists again: the wait ends, still suspended
        bounded = time.monotonic() - started
        assert live.suspended
        live.listed(live.listing_started(), {"t": "c"})
        return waited, bounded, live.current("t").fingerprint

    waited, bounded, now = asyncio.run(main())
    assert 0.15 < waited < 5.0 and 0.15 < bounded < 5.0 and now == "c"


def _spec(live: ToolDefinitions, fingerprint: str) -> ToolSpec:
    return ToolSpec(name="mcp__srv__t", description="d", input_schema={"type": "object"},
                    handler=lambda: None, origin="mcp:srv",
                    annotations={FINGERPRINT: fingerprint, ANNOTATION_KEY: live,
                                 "mcp_tool": "t"})


def test_the_grant_is_checked_against_what_the_server_lists_now(tmp_path: Path) -> None:
    live = ToolDefinitions("srv")
    live.listed(live.listing_started(), {"t": "sha256:a"})
    store = GrantFingerprints(tmp_path / "fp.json")
    dispatched = _spec(live, "sha256:a")  # the spec the registry held when the call came
    store.record(["mcp__srv__t"], dispatched)
    assert store.check("mcp__srv__t", dispatched).valid

    live.announce_change()
    suspended = store.check("mcp__srv__t", dispatched)
    assert not suspended.valid and "announced that its tools changed" in suspended.reason
    assert "mcp__srv__t" in suspended.reason

    live.listed(live.listing_started(), {"t": "sha256:b"})
    changed = store.check("mcp__srv__t", dispatched)  # same old spec, new definition
    assert not changed.valid and "changed since it was granted" in changed.reason

    live.announce_change()
    live.listed(live.listing_started(), {})
    gone = store.check("mcp__srv__t", dispatched)
    assert not gone.valid and "no longer offers 't'" in gone.reason


def test_a_hand_written_rule_does_not_trust_a_tool_first_seen_while_suspended(
        tmp_path: Path) -> None:
    live = ToolDefinitions("srv")
    live.listed(live.listing_started(), {"t": "sha256:a"})
    live.announce_change()
    store = GrantFingerprints(tmp_path / "fp.json")
    assert not store.check("mcp__srv__*", _spec(live, "sha256:a")).valid
    assert store.recorded("mcp__srv__*") == {}
    live.listed(live.listing_started(), {"t": "sha256:b"})
    assert store.check("mcp__srv__*", _spec(live, "sha256:b")).valid
    assert store.recorded("mcp__srv__*") == {"mcp__srv__t": "sha256:b"}
