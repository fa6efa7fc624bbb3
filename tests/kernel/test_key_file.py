"""The key file a user with no keyring may choose (kernel.shared.keyfile): written 0600 whatever the
umask, refused when others may read it or it is not the user's own regular file, read by the
kernel after the keyring and before the environment — and by a real kernel worker that was
given no key over its pipe."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernel import protocol as p
from kernel.fakemodel import FakeAnthropicServer, reply
from kernel.model.provider_config import resolve_api_key
from kernel.paths import AppPaths
from kernel.shared.keyfile import KeyFileError, read_key_file, write_key_file
from tests.security.test_workspace_broad import Worker


@pytest.fixture
def no_umask() -> Iterator[None]:
    old = os.umask(0)
    yield
    os.umask(old)


def test_the_file_is_0600_from_its_first_byte_whatever_the_umask(tmp_path: Path,
                                                                 no_umask: None) -> None:
    path = tmp_path / "config" / "api-key"
    write_key_file(path, "  sk-one \n")
    assert path.read_text() == "sk-one\n" and path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    path.chmod(0o644)
    write_key_file(path, "sk-two")
    assert path.stat().st_mode & 0o777 == 0o600 and read_key_file(path) == "sk-two"
    assert [p.name for p in path.parent.iterdir()] == ["api-key"], "no temporary file left"


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o660, 0o606, 0o620, 0o602])
def test_a_file_others_may_read_or_change_is_refused(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "api-key"
    path.write_text("sk-open")
    path.chmod(mode)
    with pytest.raises(KeyFileError, match=f"others may read or change it \\(mode {mode:04o}\\)"):
        read_key_file(path)


def test_a_link_or_a_folder_is_refused_and_no_file_is_no_key(tmp_path: Path) -> None:
    real = tmp_path / "real"
    write_key_file(real, "sk-real")
    (tmp_path / "link").symlink_to(real)
    with pytest.raises(KeyFileError, match="cannot be read"):
        read_key_file(tmp_path / "link")
    (tmp_path / "folder").mkdir(mode=0o700)
    with pytest.raises(KeyFileError, match="it is not a regular file"):
        read_key_file(tmp_path / "folder")
    assert read_key_file(tmp_path / "missing") is None
    write_key_file(tmp_path / "empty", "")
    assert read_key_file(tmp_path / "empty") is None


@pytest.mark.parametrize(("ring", "kept", "env", "expected"), [
    ("sk-ring", "sk-file", "sk-env", ("sk-ring", "keyring")),
    (None, "sk-file", "sk-env", ("sk-file", "file")),
    (None, None, "sk-env", ("sk-env", "environment")),
    (None, None, None, (None, "none")),
])
def test_the_file_comes_after_the_keyring_and_before_the_environment(
        ring: str | None, kept: str | None, env: str | None,
        expected: tuple[str | None, str]) -> None:
    environ = {"ANTHROPIC_API_KEY": env} if env else {}
    found = resolve_api_key(None, environ, lambda: ring, lambda: kept)
    assert (found.key, found.source) == expected


@pytest.mark.slow
def test_a_kernel_given_no_key_reads_the_file_and_sends_it(
        reins_home: AppPaths, quiet_home: Path, workspace: Path) -> None:
    write_key_file(reins_home.api_key_file, "sk-from-file")
    with FakeAnthropicServer([reply("Hello from the file's key.")], api_key="sk-from-file",
                             ) as server:
        reins_home.settings_file.write_text(json.dumps({"base_url": server.base_url}))
        worker = Worker()
        try:
            snapshot = worker.wait_for(p.SettingsSnapshot)
            assert snapshot.can_run, snapshot.cannot_run
            worker.send(p.NewSession(str(workspace), "ask"))
            session = worker.wait_for(p.SessionLoaded).info.session_id
            worker.send(p.StartRun(session, "hi"))
            assert worker.wait_for(p.RunStatus, 2).state == "idle"
        finally:
            worker.close()
    [request] = server.requests
    sent = request.headers.get("x-api-key") or request.headers["authorization"]
    assert sent.removeprefix("Bearer ") == "sk-from-file"


def test_doctor_names_the_key_file_it_found_the_key_in(reins_home: AppPaths) -> None:
    from kernel.cli.cmd_doctor import doctor_report

    write_key_file(reins_home.api_key_file, "sk-doctor")
    text, _ = doctor_report(reins_home, lambda: resolve_api_key(None, {}, lambda: None),
                            sandbox_text=lambda: "sandbox: (not asked)")
    assert f"API key: found in the key file {reins_home.api_key_file}" in text
