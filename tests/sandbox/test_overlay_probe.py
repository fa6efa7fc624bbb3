"""Whether commands run as transactions: the probe mounts a real overlay once, and without
one the policy sees commands as unconfined (every command asks)."""

from __future__ import annotations

import shutil

import pytest

from kernel.runtime.assemble import SandboxFacts
from kernel.sandbox.detect import SandboxStatus
from kernel.sandbox.overlay_probe import overlay_status

BWRAP = SandboxStatus("bwrap", True, "works")
NONE = SandboxStatus("none", False, "bwrap is missing", fix="install it")


def test_the_probe_mounts_a_real_overlay_here() -> None:
    status = overlay_status()
    if not status.available and shutil.which("unshare") is None:
        pytest.skip(status.reason)
    assert status.available, status.reason


def test_without_unshare_there_are_no_transactions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    status = overlay_status.__wrapped__()
    assert not status.available and "unshare" in status.reason


@pytest.mark.parametrize(("status", "transactions", "available", "words"), [
    (BWRAP, True, True, "each command a transaction"),
    (BWRAP, False, False, "every command asks"),
    (NONE, True, False, "none (bwrap is missing; install it)"),
    (NONE, False, False, "none (bwrap is missing; install it)"),
])
def test_the_policy_sees_a_sandbox_only_with_transactions(
        status: SandboxStatus, transactions: bool, available: bool, words: str) -> None:
    facts = SandboxFacts(status, transactions)
    assert facts.available is available
    assert words in facts.describe()
