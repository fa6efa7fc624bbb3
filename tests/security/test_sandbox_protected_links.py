"""A protected name that is a link (`.vscode -> shared`, `.envrc -> envrc-real`,
`.git/hooks -> ../../myhooks`) stays the link it was, whatever a command does to it, also
while the command runs.

bubblewrap cannot bind a link read-only (it follows it), so a command could remove it,
rename it, or make it again leading elsewhere, and an editor, direnv or git reading it
outside saw the command's link until Reins made the old one again after the command. Now
each marked link is bound onto itself inside the sandbox before the command starts
(kernel.sandbox.pin): removing, renaming or replacing it fails there (EBUSY) and nothing
changes outside, at any moment. What a link leading nowhere leads to, made by a command, is
still moved to the quarantine after it.

Real bubblewrap, the real executor, as the user running the tests (root in CI) and as nobody;
afterwards git runs outside the sandbox in the repository, with a canary a planted hook would
touch.
"""

from __future__ import annotations

from tests.security.conftest import Confined
from tests.security.linkkit import ATTACKS, DANGLING, LINKS, SAME, check, prepare

BUSY = "Device or resource busy"


def test_a_protected_link_cannot_be_changed_by_a_command(confined: Confined) -> None:
    report = confined([*ATTACKS.values(), *DANGLING.values(), SAME], prepare=prepare,
                      inspect=check)
    outcomes = dict(zip([*ATTACKS, *DANGLING, "same"], report["outcomes"], strict=True))
    for name in [*ATTACKS, "same"]:
        outcome = outcomes[name]
        assert outcome["exit_code"] != 0 and BUSY in outcome["output"], (name, outcome)
        assert not [r for r in outcome["reverted"] if r["relinked"]], (name, outcome)
    for name in DANGLING:
        moved = [r for r in outcomes[name]["reverted"] if r["moved_to"]]
        assert moved and all(r["rule"].startswith("where ") for r in moved), outcomes[name]


def test_while_the_command_runs_every_link_is_the_same_outside(confined: Confined) -> None:
    """Each attack tried in one command, which then reads every link as the sandbox sees it
    (the same files the user's editor reads outside): none changed at any point."""
    every = " ; ".join(f"( {c} ) 2>/dev/null" for c in ATTACKS.values())
    show = " ; ".join(f"printf '%s=%s\\n' {link} \"$(readlink {link})\"" for link in LINKS)
    report = confined([f"{every} ; {show}"], prepare=prepare, inspect=check)
    [outcome] = report["outcomes"]
    seen = dict(line.split("=", 1) for line in outcome["output"].splitlines() if "=" in line)
    assert seen == LINKS, outcome
    assert not [r for r in outcome["reverted"] if r["relinked"]], outcome
