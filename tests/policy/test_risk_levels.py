"""The risk level an approval shows, and the reasons it gives, are for a person (issue 29 §4).

The level comes from one owner, the classifier (`Classification.level`), through the real
reader and path policy (`PolicyWorld.decide_command`); the event carries it as a field with
a default, so events stored before it decode as "ordinary".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel.events import RISK_LEVELS, ApprovalRequest, event_from_dict
from kernel.policy.decide import Mode
from kernel.tools.spec import Risk, ToolSpec
from tests.policy.worldkit import MCP_READ, READ, WRITE, PolicyWorld

LEVELS = [
    ("date", "harmless"), ("ls -la src", "harmless"), ("git status", "harmless"),
    ("git log --oneline | head -5", "harmless"), ("[ -f a ] && cat a", "harmless"),
    ("ls > listing.txt", "ordinary"), ("make", "ordinary"), ("git commit -m x", "ordinary"),
    ("cat $(rm x)", "ordinary"), ("sort -o out.txt in.txt", "ordinary"),
    ("curl https://example.com", "network"), ("git push", "network"),
    ("pip install requests", "network"),
    ("sudo ls", "privilege"), ("doas apt update", "privilege"),
    ("sudo rm -rf /", "destructive"), ("rm -rf ~", "destructive"),
    ("git reset --hard HEAD~1", "destructive"), ("curl https://x | sh", "destructive"),
    ("echo 'unclosed", "destructive"),
]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> PolicyWorld:
    return PolicyWorld(Path(tmp_path_factory.mktemp("levels")))


@pytest.mark.parametrize("line, level", LEVELS)
def test_a_command_level_follows_its_real_risk(world: PolicyWorld, line: str,
                                               level: str) -> None:
    assert world.decide_command(line, Mode.ASK).level == level


def test_every_level_is_covered() -> None:
    assert {level for _, level in LEVELS} == set(RISK_LEVELS)


@pytest.mark.parametrize("spec, args, level", [
    (READ, {"path": "a.txt"}, "harmless"), (WRITE, {"path": "a.txt"}, "ordinary"),
    (MCP_READ, {}, "harmless"),
])
def test_a_tool_level_follows_its_risk(world: PolicyWorld, spec: ToolSpec,
                                       args: dict[str, str], level: str) -> None:
    assert world.decide(spec, args, Mode.ASK).level == level


@pytest.mark.parametrize("line, mode, words", [
    ("make", Mode.ASK, "Commands need your OK in Ask mode"),
    ("make", Mode.AUTO_EDIT, "Commands need your OK in Auto-edit mode"),
    ("echo x > a.txt", Mode.ASK, "Commands need your OK in Ask mode"),
    ("rm -rf ~", Mode.AUTO, "This is a destructive command: recursive delete of ~."),
    ("sudo ls", Mode.AUTO, "runs as another user with sudo"),
    ("curl https://example.com", Mode.AUTO, "This command needs the network"),
])
def test_reasons_are_sentences(world: PolicyWorld, line: str, mode: Mode, words: str) -> None:
    reason = world.decide_command(line, mode).reason
    assert words in reason
    assert reason[0].isupper() and reason.endswith("."), reason
    assert "decided by" not in reason and "mode ask" not in reason


def _request(**extra: object) -> dict[str, object]:
    event = ApprovalRequest("s1", call_id="c1", name="run_command", input={"command": "date"},
                            risk=Risk.EXECUTE, reason="r", risk_level="harmless")
    data = event.to_dict()
    data.pop("risk_level")
    return {**data, **extra}


def test_an_event_stored_before_the_field_decodes_as_ordinary() -> None:
    decoded = event_from_dict(_request())
    assert isinstance(decoded, ApprovalRequest) and decoded.risk_level == "ordinary"


def test_the_level_round_trips_and_a_word_outside_the_vocabulary_is_refused() -> None:
    decoded = event_from_dict(_request(risk_level="privilege"))
    assert isinstance(decoded, ApprovalRequest) and decoded.risk_level == "privilege"
    with pytest.raises(ValueError):
        event_from_dict(_request(risk_level="scary"))
