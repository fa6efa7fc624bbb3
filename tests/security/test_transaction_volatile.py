"""The transaction's overlay is mounted `volatile` where the probe found the kernel takes it
(kernel.sandbox.binder.overlay_options), and a command's change is still applied, its call
folder removed: the real run_command tool, real bubblewrap, the real overlay and settle
(tests/security/txn_confined.py), as root and as nobody."""

from __future__ import annotations

import re
from pathlib import Path

from kernel.sandbox.overlay_probe import overlay_status
from tests.security.conftest import Confined
from tests.security.txnkit import Outcome, run_txn

LOOK = ("grep ' - overlay ' /proc/self/mountinfo | sed 's/.* - overlay [^ ]* /OPTIONS=/'; "
        "echo appended >> a.txt")


def test_the_workspace_overlay_is_volatile_where_the_kernel_takes_it(
        confined: Confined) -> None:
    seen: list[str] = []

    def inspect(folder: Path, _outcomes: list[Outcome]) -> None:
        seen.append((folder / "workspace/a.txt").read_text())

    [outcome], _ = run_txn(confined, [{"command": LOOK}], inspect=inspect)
    [options] = re.findall(r"OPTIONS=(\S+)", outcome.content)  # the one overlay: the workspace
    said = set(options.split(","))
    assert "userxattr" in said, options
    # `volatile` is shown as such, or as fsync=volatile (Linux 6.6 and later)
    assert bool(said & {"volatile", "fsync=volatile"}) == overlay_status().volatile, options
    assert outcome.applied == [("modified", "a.txt")] and not outcome.held, outcome
    assert outcome.transactions_left == []
    assert seen == ["hello\nappended\n"]
