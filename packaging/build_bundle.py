"""Build the Reins bundle with PyInstaller: `python packaging/build_bundle.py [--cached]`.

Without options it builds into dist/ (what `make package` does). With `--cached` it builds
into a cache folder keyed by a hash of everything that goes into the bundle (sources,
resources, the spec, pyproject, the Python version and the versions of every installed
distribution) and reuses an earlier build with the same key, so the packaging test and the
bench build once between changes.
Either way the last line of stdout is the path of the bundle folder.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "packaging" / "reins.spec"
HASHED = ("kernel", "desktop", "resources", "packaging", "pyproject.toml")
CACHE_ENV = "REINS_BUNDLE_CACHE"
KEEP_BUILDS = 2
DONE = "build-complete"


def source_key(root: Path = ROOT) -> str:
    """A hash of every file that shapes the bundle, and of the toolchain that builds it."""
    digest = hashlib.sha256()
    digest.update(sys.version.encode())
    installed = sorted(f"{d.metadata['Name']}=={d.version}"
                       for d in importlib.metadata.distributions())
    digest.update("\n".join(installed).encode())
    for top in HASHED:
        base = root / top
        files = [base] if base.is_file() else sorted(base.rglob("*"))
        for path in files:
            if not path.is_file() or "__pycache__" in path.parts:
                continue
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def bundle_folder(dist: Path) -> Path:
    if sys.platform == "darwin":
        return dist / "Reins.app"
    return dist / "reins"


def run_pyinstaller(dist: Path, work: Path) -> Path:
    """Run the spec; raise CalledProcessError (its output already shown) on failure."""
    subprocess.run(
        [sys.executable, "-m", "PyInstaller", "--noconfirm", "--clean", "--log-level=WARN",
         "--distpath", str(dist), "--workpath", str(work), str(SPEC)],
        cwd=ROOT, check=True, stdout=sys.stderr,
    )
    return bundle_folder(dist)


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path(tempfile.gettempdir()) / "reins-bundle-cache")


def prune(cache: Path, keep: str) -> None:
    """Remove all but the newest KEEP_BUILDS builds (a build is ~150 MB)."""
    builds = sorted(
        (p for p in cache.iterdir() if p.is_dir() and p.name != keep),
        key=lambda p: p.stat().st_mtime, reverse=True,
    )
    for old in builds[KEEP_BUILDS - 1:]:
        shutil.rmtree(old, ignore_errors=True)


def cached_build() -> Path:
    """The bundle for the current sources, built now unless an identical build exists."""
    import fcntl  # POSIX only; plain builds (no --cached) also run on Windows

    key = source_key()
    cache = cache_root()
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # a concurrent build of the same tree waits
        target = cache / key
        if (target / DONE).is_file():
            os.utime(target)
            return bundle_folder(target / "dist")
        shutil.rmtree(target, ignore_errors=True)
        prune(cache, keep=key)
        started = time.monotonic()
        folder = run_pyinstaller(target / "dist", target / "work")
        shutil.rmtree(target / "work", ignore_errors=True)
        (target / DONE).write_text(f"built in {time.monotonic() - started:.0f} s\n")
        return folder


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("--cached", action="store_true",
                        help=f"build into (or reuse) ${CACHE_ENV} or the temp folder")
    args = parser.parse_args(argv)
    try:
        import PyInstaller  # noqa: F401
    except ImportError:
        sys.stderr.write("PyInstaller is not installed: pip install pyinstaller\n")
        return 2
    if sys.platform.startswith("linux") and shutil.which("objdump") is None:
        sys.stderr.write("PyInstaller (and reins.spec) need objdump on Linux: install binutils "
                         "(apt-get install binutils)\n")
        return 2
    try:
        if args.cached:
            folder = cached_build()
        else:
            folder = run_pyinstaller(ROOT / "dist", ROOT / "build" / "pyinstaller")
    except subprocess.CalledProcessError as exc:
        sys.stderr.write(f"PyInstaller failed (exit {exc.returncode}); see its output above\n")
        return 1
    sys.stdout.write(f"{folder}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
