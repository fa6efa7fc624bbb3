"""Escapes of the overlay itself and the transaction's lifetime (issue 28, B), through the
run_command tool with transactions on, as root and as nobody: the command cannot reach the
upper layer or the call's folder, cannot read the workspace's secrets through the overlay,
cannot unmount it; a FIFO, a socket or a device it leaves neither hangs nor breaks settling
and never reaches the workspace; background processes end with the call and the call's
folder is removed; a cancelled command's changes are not applied, a timed-out one's are
(as before transactions), said in its result and undoable."""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path

from tests.security.conftest import Confined
from tests.security.txnkit import ENV_CANARY, SSH_CANARY, Outcome, git_workspace, run_txn

LOOK = ("grep overlay /proc/self/mountinfo; ls -a /tmp; ls -a /tmp/.reins-transaction; "
        "cat .env sub/.ssh/id_rsa; find . -name '*.env' -exec cat {} +; "
        "cat /proc/1/cwd/.env /proc/self/root/$PWD/.env envlink; "
        "grep -r canary . /proc/1/cwd/ 2>/dev/null; tar cf - . 2>/dev/null | strings | "
        "grep canary; umount -l \"$PWD\"; echo umount=$?; python3 -c "
        "\"import ctypes,os; l=ctypes.CDLL(None,use_errno=True); "
        "print('umount2', l.umount2(os.getcwd().encode(), 2), ctypes.get_errno())\"; "
        "ls -a /proc/*/root/tmp 2>/dev/null | grep -c reins-transaction")


def _with_a_hard_link(folder: Path) -> None:
    git_workspace(folder)
    ws = folder / "workspace"
    (ws / "envlink").hardlink_to(ws / ".env")


def test_the_overlay_hides_its_layers_and_the_secrets(confined: Confined) -> None:
    outcomes, _ = run_txn(confined, [{"command": LOOK}], prepare=_with_a_hard_link)
    [looked] = outcomes
    out = looked.content
    assert "umount2 -1" in out and "umount=0" not in out, out
    assert ENV_CANARY not in out and SSH_CANARY not in out, out
    assert "upperdir=/tmp/.reins-transaction/upper" in out  # the name, not the folder:
    assert "No such file or directory" in out               # it is detached and removed
    assert not looked.applied and not looked.held


def test_special_files_and_odd_names_never_break_settling(confined: Confined) -> None:
    commands = [
        {"command": "echo x > kept.txt; mkfifo fifo; python3 -c \"import socket; "
                    "socket.socket(socket.AF_UNIX).bind('sock')\"; mknod dev c 1 3; "
                    "ls -la fifo sock"},
        {"command": "echo ok > \"$(printf 'a\\nb')\" && echo ok > '..x' && echo ok > '-n' "
                    "&& echo ok > ' x '"},
    ]

    def inspect(folder: Path, outcomes: list[Outcome]) -> None:
        ws = folder / "workspace"
        assert (ws / "kept.txt").read_text() == "x\n"  # only the special entries go
        for name in ("fifo", "sock", "dev"):
            assert not os.path.lexists(ws / name), name
        for name in ("a\nb", "..x", "-n", " x "):
            assert (ws / name).read_text() == "ok\n", name
        assert not (folder / "x").exists()

    outcomes, _ = run_txn(confined, commands, inspect=inspect)
    special, odd = outcomes
    assert "fifo" in special.content and "sock" in special.content
    assert "not applied, special files" in special.content
    assert "fifo (a FIFO)" in special.content and "sock (a socket)" in special.content
    assert ("created", "kept.txt") in special.applied and not special.held
    assert "Operation not permitted" in special.content  # no device node can be made
    assert ("created", "..x") in odd.applied and not odd.held, odd.content


def _live(marker: str) -> list[str]:
    done = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True, check=False)
    return done.stdout.split()


def test_background_processes_end_with_the_call_and_its_folder_goes(
        confined: Confined) -> None:
    mark = f"{secrets.randbelow(10**6):06d}"  # this run's sleeps, not another test's
    seconds = [f"{n}.{mark}" for n in (137, 138, 139, 140)]
    commands = [
        {"command": f"sleep {seconds[0]} & setsid sleep {seconds[1]} & "
                    f"(sleep {seconds[2]} &) & "
                    f"nohup sh -c 'sleep {seconds[3]}; echo late > late.txt' >/dev/null 2>&1 & "
                    "echo now > now.txt"},
        {"command": "echo x > partial.txt; sleep 30", "cancel_after_s": 1.5},
        {"command": "echo x > timed.txt; sleep 30", "timeout_s": 2, "undo": True},
    ]

    def inspect(folder: Path, outcomes: list[Outcome]) -> None:
        ws = folder / "workspace"
        assert (ws / "now.txt").read_text() == "now\n" and not (ws / "late.txt").exists()
        assert not (ws / "partial.txt").exists()
        assert not (ws / "timed.txt").exists()  # applied, then undone
        assert not list((folder / "data/transactions").iterdir())
        for each in seconds:
            assert not _live(f"sleep {each}"), each

    outcomes, _ = run_txn(confined, commands, inspect=inspect)
    background, cancelled, timed = outcomes
    assert ("created", "now.txt") in background.applied
    assert background.transactions_left == [] and cancelled.transactions_left == []
    assert cancelled.content == "cancelled" and cancelled.applied == []
    # a timed-out command's changes so far are applied (undoable), and the result says so
    assert "timed out" in timed.content and ("created", "timed.txt") in timed.applied
    assert "changes applied to the workspace" in timed.content
    assert ("the command timed out and was stopped; what it had changed by then IS applied "
            "to the workspace (it may be half done), as one step the user can undo"
            ) in timed.content
    assert timed.undone is True
