"""Reins' cache folder (a built llama-server, a downloaded model): where it is, and that the
file tools may not write it (Reins runs programs from it)."""

from __future__ import annotations

from pathlib import Path

import platformdirs

from kernel.paths import AppPaths
from kernel.tools.pathpolicy import PathPolicy


def test_the_cache_is_under_reins_home_else_the_users_cache(tmp_path: Path) -> None:
    home = AppPaths.from_env({"REINS_HOME": str(tmp_path)})
    assert home.cache == tmp_path.resolve() / "cache"
    user = AppPaths.from_env({})
    assert user.cache == Path(platformdirs.user_cache_dir("reins"))
    assert AppPaths(tmp_path / "d", tmp_path / "c").cache == tmp_path / "cache"


def test_no_file_tool_may_write_the_cache(tmp_path: Path) -> None:
    paths = AppPaths.from_env({"REINS_HOME": str(tmp_path / "home")})
    assert paths.cache in paths.protected()
    binary = paths.cache / "llama-server" / "x" / "llama-server"
    binary.parent.mkdir(parents=True)
    policy = PathPolicy(tmp_path, app_paths=paths)  # the cache inside the workspace
    verdict = policy.classify(str(binary), write=True)
    assert not verdict.allowed and verdict.own_data
    assert policy.classify(str(tmp_path / "notes.txt"), write=True).allowed
