"""Cold start of the packaged (frozen) app to a shown window vs. the same from the source
checkout, both measured in this run under one Xvfb.

Each launch is a new process with a fresh REINS_HOME; the time runs from exec until the
window called "Reins…" is mapped on the X server (polled with xdotool). The disk cache is
warm (dropping it needs root and would slow everyone else's work), so "cold" means a
process that has nothing loaded yet, not a disk that has nothing cached.
"""

from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from bench.common import fmt_seconds, report

ROOT = Path(__file__).resolve().parent.parent
RUNS = 5
SHOW_TIMEOUT_S = 60.0

SIZE_GOAL_MB = 155
"""As the bundle test's SIZE_GOAL_BYTES (tests/packaging/test_package_bundle.py): 150 MB
before Pillow, which issue 18 added (6 MB: images are downscaled, not lost)."""


def bundle_or_reason() -> tuple[Path | None, str]:
    """The frozen app (built now, or reused from the build cache), or why there is none."""
    try:
        import PyInstaller  # noqa: F401
    except ImportError:
        return None, "PyInstaller is not installed (pip install pyinstaller, or `make package`)"
    print("   building the bundle (or reusing the cached build)…", flush=True)
    done = subprocess.run([sys.executable, str(ROOT / "packaging" / "build_bundle.py"),
                           "--cached"], capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        tail = " | ".join(done.stderr.strip().splitlines()[-3:])
        return None, f"the bundle build failed (exit {done.returncode}): {tail}"
    return Path(done.stdout.strip().splitlines()[-1]), ""


@contextmanager
def xvfb() -> Iterator[str]:
    """A private X server; yields its DISPLAY."""
    read, write = os.pipe()
    server = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x800x24", "-nolisten", "tcp",
         "-noreset"],  # no server reset when the last client leaves (a launch may race it)
        pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    os.close(write)
    try:
        with os.fdopen(read) as pipe:
            number = pipe.readline().strip()
        if not number:
            raise RuntimeError("Xvfb did not start")
        yield f":{number}"
    finally:
        server.terminate()
        server.wait(timeout=10)


def window_shown(display: str) -> bool:
    found = subprocess.run(["xdotool", "search", "--onlyvisible", "--name", "^Reins"],
                           env={**os.environ, "DISPLAY": display},
                           capture_output=True, text=True)
    return found.returncode == 0 and bool(found.stdout.strip())


def time_to_window(command: Sequence[str], display: str) -> float:
    """Seconds from launch until the main window is mapped; the app is then stopped."""
    with tempfile.TemporaryDirectory(prefix="reins-bench-home-") as home, \
            tempfile.TemporaryFile() as errors:
        env = {**os.environ, "DISPLAY": display, "QT_QPA_PLATFORM": "xcb", "REINS_HOME": home}
        env.pop("ANTHROPIC_API_KEY", None)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # cached bytecode, like the bundle's
        started = time.perf_counter()
        app = subprocess.Popen(command, env=env, cwd=home, start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=errors)
        try:
            while not window_shown(display):
                if app.poll() is not None:
                    errors.seek(0)
                    tail = errors.read().decode(errors="replace").strip()[-1500:]
                    raise RuntimeError(f"{command[0]} exited ({app.returncode}) before a "
                                       f"window; its stderr: {tail or '(empty)'}")
                if time.perf_counter() - started > SHOW_TIMEOUT_S:
                    raise RuntimeError(f"{command[0]} showed no window in {SHOW_TIMEOUT_S:.0f} s")
                time.sleep(0.005)
            return time.perf_counter() - started
        finally:
            stop_group(app)


def stop_group(app: subprocess.Popen[bytes]) -> None:
    """End the app and everything it started (its kernel worker) — its own process group."""
    try:
        os.killpg(app.pid, signal.SIGTERM)
        app.wait(timeout=5)
    except subprocess.TimeoutExpired:
        os.killpg(app.pid, signal.SIGKILL)
        app.wait()
    except ProcessLookupError:
        app.wait()
    with suppress(ProcessLookupError):
        os.killpg(app.pid, signal.SIGKILL)


def run() -> None:
    missing = [tool for tool in ("Xvfb", "xdotool") if shutil.which(tool) is None]
    if missing:
        print(f"   skipped: {' and '.join(missing)} not installed (make system-deps)")
        return
    bundle, reason = bundle_or_reason()
    if bundle is None:
        print(f"   skipped: {reason}")
        return
    frozen = [str(bundle / "reins")]
    source = [str(Path(sys.executable).parent / "reins")]
    samples: dict[str, list[float]] = {"source": [], "frozen": []}
    with xvfb() as display:
        time_to_window(source, display)  # first launches fill the disk cache for both
        time_to_window(frozen, display)
        for _ in range(RUNS):  # interleaved, so drift hits both alike
            samples["source"].append(time_to_window(source, display))
            samples["frozen"].append(time_to_window(frozen, display))
    floor = statistics.median(samples["source"])
    frozen_median = statistics.median(samples["frozen"])
    size = sum(p.stat().st_size for p in bundle.rglob("*") if p.is_file() and not p.is_symlink())
    report(f"source checkout to shown window (floor, median of {RUNS})", fmt_seconds(floor))
    report(f"frozen bundle to shown window (median of {RUNS})", fmt_seconds(frozen_median),
           ratio=frozen_median / floor)
    report("frozen bundle, slowest launch", fmt_seconds(max(samples["frozen"])),
           ratio=max(samples["frozen"]) / floor)
    report("bundle size unpacked", f"{size / 1e6:.0f} MB", goal=f"≤ {SIZE_GOAL_MB} MB",
           ok=size <= SIZE_GOAL_MB * 1e6)
    for archive in sorted(bundle.parent.glob("reins-*.tar.gz")):
        report(f"archive {archive.name}", f"{archive.stat().st_size / 1e6:.0f} MB")
