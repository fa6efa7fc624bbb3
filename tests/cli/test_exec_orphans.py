"""A kernel killed (kill -9) while a command ran leaves that command's transaction folder.
The next kernel start finds it. Nothing of it is applied: its changes are kept under
`<data>/recovered/` and the session gets a notice. A folder a living kernel holds is left
alone. An orphan without changes is removed. A recovered folder goes after its days.
Real `reins exec`, real bubblewrap and overlay, a real SIGKILL."""

from __future__ import annotations

import json
import os
import signal
import tempfile
import time
from pathlib import Path

import pytest

from kernel.agent.store import SessionStore
from kernel.events import Notice
from kernel.fakemodel import ToolUse, reply
from kernel.runtime.assemble import open_kernel
from kernel.sandbox.call_folders import TICKET, new_transaction, remove_transaction
from kernel.sandbox.detect import detect_sandbox
from kernel.sandbox.overlay_probe import overlay_status
from kernel.transaction.orphans import NOTICE_CODE, RECOVERED_DAYS, recover_orphans
from tests.cli.conftest import Cli

pytestmark = pytest.mark.skipif(
    not (detect_sandbox().available and overlay_status().available),
    reason="commands do not run as transactions here")


def _wait_for(find: object, timeout: float = 30) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = find()  # type: ignore[operator]
        if found is not None:
            return found  # type: ignore[no-any-return]
        time.sleep(0.05)
    raise AssertionError("not seen in time")


def test_a_killed_kernels_command_is_kept_aside_and_told_never_applied(cli: Cli) -> None:
    cli.server.add(reply(ToolUse("run_command", {"command": "echo partial > p.txt && "
                                                            "sleep 60"}, id="k1")))
    proc = cli.start("exec", "--json", "--mode", "auto", "--approve", "allow", "work")
    assert proc.stdout is not None
    started = json.loads(proc.stdout.readline())
    assert started["type"] == "session_started"
    session = started["session_id"]
    root = cli.paths.data / "transactions"

    def running() -> Path | None:
        for folder in root.glob("*") if root.is_dir() else ():
            if (folder / "upper/p.txt").exists() and (folder / TICKET).exists():
                return folder
        return None

    orphan = _wait_for(running)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    proc.stdout.close()
    if proc.stderr is not None:
        proc.stderr.close()
    assert orphan.is_dir() and not (cli.workspace / "p.txt").exists()
    if os.geteuid() == 0:  # the mark of a volatile overlay (mode 0): only root sees it here
        marked = (orphan / "work/work/incompat/volatile").is_dir()
        assert marked == overlay_status().volatile

    living = new_transaction(cli.paths, cli.workspace)  # another kernel's, in use
    (living / "upper/mine.txt").write_text("in use\n")
    empty = Path(tempfile.mkdtemp(dir=root))  # made ahead, never used, its kernel gone
    (empty / "upper").mkdir()
    try:
        kernel = open_kernel(cli.paths)  # the next kernel start
        kernel.close()
        assert sorted(root.iterdir()) == [living]
        assert (living / "upper/mine.txt").read_text() == "in use\n"
        assert not (cli.workspace / "p.txt").exists()  # never applied
        [kept] = list((cli.paths.data / "recovered" / session).iterdir())
        assert kept.name.startswith("k1-")
        assert (kept / "upper/p.txt").read_text() == "partial\n"
        assert (kept / "changes.txt").read_text() == "created p.txt\n"
        assert json.loads((kept / TICKET).read_text())["call_id"] == "k1"
        with SessionStore(cli.paths.database) as store:
            notices = [e for _seq, e in store.events(session) if isinstance(e, Notice)]
            [notice] = notices
            assert (notice.code, notice.call_id, notice.path) == (NOTICE_CODE, "k1", str(kept))
            assert "None of its 1 changes was applied" in notice.message
            assert str(kept) in notice.message
            # a second start finds nothing more; after RECOVERED_DAYS the kept folder goes
            assert recover_orphans(cli.paths, store.append_event) == []
            later = time.time() + RECOVERED_DAYS * 86_400 + 60
            recover_orphans(cli.paths, store.append_event, now=later)
            assert not (cli.paths.data / "recovered" / session).exists()
            assert len([e for _s, e in store.events(session) if isinstance(e, Notice)]) == 1
    finally:
        remove_transaction(living)
    assert not os.path.exists(living)
