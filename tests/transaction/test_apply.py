"""apply over real overlay upper layers, as the current user and as nobody: conflicts leave
the workspace as the user left it, no link takes a write outside, a failure midway puts
everything back, a held part stays (tests/transaction/scenarios.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.transaction.conftest import USERS, run_as
from tests.transaction.overlaykit import run_as_current, run_as_nobody
from tests.transaction.scenarios import SCENARIOS

SCRIPT = Path(__file__).with_name("scenarios.py")
CONFLICTS = {
    "user_edited_a_target": [["a.txt", "it was changed after the command started"]],
    "user_deleted_a_target": [["a.txt", "it was removed after the command started"]],
    "user_made_what_the_command_makes": [["c.txt", "it was changed after the command "
                                                   "started"]],
    "user_chmodded_a_file_the_command_deletes": [["a.txt", "it was changed after the "
                                                           "command started"]],
    "user_added_a_file_to_a_folder_the_command_deletes": [
        ["d/mine", "it was changed after the command started"]],
    "user_made_a_folder_on_the_way_a_link": [["d", "it was changed after the command "
                                                   "started"]],
}


def _run(name: str, folder: Path) -> dict[str, object]:
    return SCENARIOS[name](folder)


IN_OWN_PROCESS = {"big_file_keeps_memory_flat"}
"""Measured from a fresh process's peak memory."""


@pytest.mark.parametrize("who", USERS)
@pytest.mark.parametrize("name", sorted(set(SCENARIOS) - IN_OWN_PROCESS))
def test_scenario(name: str, who: str, folder: Path) -> None:
    result = run_as(who, SCRIPT, _run, name, folder)
    if name in CONFLICTS:
        assert result["conflicts"] == CONFLICTS[name]


@pytest.mark.parametrize("who", USERS)
def test_a_big_file_keeps_memory_flat(who: str, folder: Path) -> None:
    run = run_as_nobody if who == "nobody" else run_as_current
    if who == "nobody" and os.geteuid() != 0:
        pytest.skip("already an unprivileged user: the 'current' run covers it")
    result = run(SCRIPT, folder, "big_file_keeps_memory_flat")
    assert result["grown_kib"] < 32 << 10
