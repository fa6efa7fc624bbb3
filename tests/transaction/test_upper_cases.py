"""read_upper on real overlay upper layers, then apply and undo of what it found, as the
current user (root in CI) and as nobody: each case of tests/transaction/cases.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.transaction.cases import CASES, run_case
from tests.transaction.conftest import USERS, run_as

CASES_SCRIPT = Path(__file__).with_name("cases.py")


def outcome(who: str, name: str, folder: Path) -> dict[str, Any]:
    return run_as(who, CASES_SCRIPT, run_case, name, folder)


@pytest.mark.parametrize("who", USERS)
@pytest.mark.parametrize("name", list(CASES))
def test_change_set_apply_and_undo(name: str, who: str, folder: Path) -> None:
    case = CASES[name]
    result = outcome(who, name, folder)
    found = {tuple(item) for item in result["found"]}
    assert found == case.expected
    assert result["conflicts"] == []
    by_path = {c["path"]: c for c in result["changes"]}
    for path, fields in case.details.items():
        for key, value in fields.items():
            default = {"added": 0, "removed": 0, "binary": False, "executable": False}[key]
            assert by_path[path].get(key, default) == value, (path, key)
    assert result["conflicts"] == []
    assert result["applied_as_plain"], result["apply_diff"]
    assert result["undo"]["ok"], result["undo"]
    assert result["undone_as_before"]


def test_a_recreated_folder_is_opaque_in_the_upper(folder: Path) -> None:
    """The opaque case really exercises the opaque mark (else it proves nothing)."""
    result = run_case("rm -rf then recreate (opaque)", folder)
    assert result["opaque"] == ["d"]
