"""Resource limits are applied in the child and a stop is reported in words."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import psutil
import pytest

from kernel.paths import AppPaths
from kernel.sandbox.executor import CommandExecutor
from kernel.sandbox.limits import GiB, MiB, ResourceLimits, describe_stop, size_words
from kernel.sandbox.settings import ExecSettings
from kernel.tools.externalize import OutputStore
from tests.sandbox.sandbox_helpers import leftovers, make_runner


def limits_of(text: str) -> dict[str, str]:
    rows = {}
    for line in text.splitlines()[1:]:
        name = line[:26].strip()
        rows[name] = line[26:].split()[0]
    return rows


@pytest.mark.parametrize("sandboxed", [True, False], ids=["bwrap", "unsandboxed"])
def test_default_limits_are_in_place(sandboxed: bool, run_cmd, run_bare) -> None:
    run = run_cmd if sandboxed else run_bare
    extra = {} if sandboxed else {"allow_unsandboxed": True}
    outcome, text = run("cat /proc/self/limits", timeout_s=45, **extra)
    rows = limits_of(text)
    assert rows["Max address space"] == str(4 * GiB)
    assert rows["Max file size"] == str(1 * GiB)
    assert rows["Max processes"] == "512"
    assert rows["Max cpu time"] == "45"
    assert outcome.exit_code == 0


@pytest.fixture
def limited(reins_home: AppPaths, sandbox_status, workspace: Path, outputs: OutputStore):
    executor = CommandExecutor(
        reins_home,
        ExecSettings(limits=ResourceLimits(file_size=1 * MiB, cpu_s=1), grace_s=0.5),
    )
    yield make_runner(executor, workspace, outputs)
    executor.shutdown()


def test_file_size_limit_is_reported_in_words(limited, workspace: Path) -> None:
    outcome, _text = limited("head -c 3M /dev/zero > big.bin")
    assert outcome.exit_code == 128 + signal.SIGXFSZ
    assert outcome.stopped == "stopped: file size limit 1 MiB reached"
    assert (workspace / "big.bin").stat().st_size == 1 * MiB


def test_cpu_limit_is_reported_in_words(limited) -> None:
    outcome, _text = limited("while :; do :; done", timeout_s=120)
    assert not outcome.timed_out
    assert outcome.stopped == "stopped: CPU time limit 1 s reached"


def test_memory_limit_is_reported_in_words(run_cmd) -> None:
    outcome, text = run_cmd("python3 -c 'bytearray(5 * 1024**3)'")
    assert "MemoryError" in text
    assert outcome.stopped == "stopped: memory limit 4 GiB reached"


@pytest.mark.parametrize(
    ("code", "tail", "words"),
    [
        (0, "", ""),
        (1, "error: no such file", ""),
        (152, "", "stopped: CPU time limit 7 s reached"),
        (153, "", "stopped: file size limit 1 GiB reached"),
        (1, "MemoryError", "stopped: memory limit 4 GiB reached"),
        (134, "terminate called after throwing an instance of 'std::bad_alloc'",
         "stopped: memory limit 4 GiB reached"),
        (2, "sh: 1: Cannot fork", "stopped: process limit 512 reached"),
        (139, "", "killed by signal SIGSEGV (segmentation fault)"),
        (143, "", "killed by signal SIGTERM (terminated)"),
    ],
)
def test_describe_stop(code: int, tail: str, words: str) -> None:
    assert describe_stop(code, ResourceLimits(cpu_s=7), tail) == words


def test_size_words_and_limit_words() -> None:
    assert size_words(4 * GiB) == "4 GiB" and size_words(1536 * MiB) == "1.5 GiB"
    assert size_words(512) == "512 bytes"
    assert "CPU time the timeout" in ResourceLimits().words()
    assert ResourceLimits().for_timeout(2.5).cpu_s == 3


def _lying_bwrap(folder: Path, marker: Path, real_bwrap: str) -> Path:
    """A bwrap that passes Reins' probe (it runs the real one for the probe and --version),
    but for a command reports an impossible sandbox process and then, like bwrap, starts the
    command as soon as its block fd gives a byte *or* an end of file."""
    fake = folder / "lying-bwrap"
    fake.write_text(f"""#!/bin/bash
for last in "$@"; do :; done
case "$1 $last" in --version*|*/bin/true) exec {real_bwrap} "$@" ;; esac
while [ $# -gt 0 ]; do
  case "$1" in --info-fd) info=$2; shift ;; --block-fd) block=$2; shift ;; esac
  shift
done
eval "printf '{{\\"child-pid\\": 1}}' >&$info"
eval "exec $info>&-"
eval "head -c 1 <&$block" >/dev/null
touch {marker}
""")
    fake.chmod(0o755)
    return fake


def test_a_sandbox_that_cannot_be_limited_never_starts_its_command(
    reins_home: AppPaths, sandbox_status, workspace: Path, outputs: OutputStore, tmp_path: Path
) -> None:
    marker = tmp_path / "command-ran"
    executor = CommandExecutor(
        reins_home, ExecSettings(grace_s=0.5, bwrap=str(
            _lying_bwrap(tmp_path, marker, sandbox_status.bwrap_path))))
    assert executor.status().available  # the probe ran the real bwrap
    try:
        outcome, _text = make_runner(executor, workspace, outputs)("true")
    finally:
        executor.shutdown()
    assert not outcome.ok
    assert outcome.stopped.startswith("not run: bubblewrap reported an impossible process id")
    assert not marker.exists()


def test_the_process_limit_stops_a_fork_storm_of_an_ordinary_user(sandbox_status) -> None:
    """Root is exempt from RLIMIT_NPROC, so the command runs as an ordinary user (as root,
    the helper switches to nobody in a user namespace first)."""
    own = sum(1 for p in psutil.process_iter(["uids"]) if p.info["uids"]
              and p.info["uids"].real == os.getuid()) if os.geteuid() != 0 else 0
    limit = own + 20
    folder = Path(tempfile.mkdtemp(prefix="reins-nproc-"))
    folder.chmod(0o777)  # reachable by nobody
    try:
        done = subprocess.run(
            [sys.executable, str(Path(__file__).with_name("unprivileged_run.py")), str(folder),
             str(limit), "for i in $(seq 80); do sleep 5 & done; wait; echo all-started"],
            capture_output=True, text=True, timeout=120, check=False,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    if "unavailable" in outcome:
        pytest.skip(f"an ordinary user cannot create the sandbox here: {outcome['unavailable']}")
    if os.geteuid() == 0:
        assert outcome["uid_map"] == ["0", "65534", "1"]  # it ran as nobody
    assert outcome["sandbox"] == "bwrap"
    assert outcome["stopped"] == f"stopped: process limit {limit} reached", outcome
    assert "all-started" not in outcome["output"]
    assert leftovers("sleep 5") == []
