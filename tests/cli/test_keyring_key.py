"""`reins exec` and `reins doctor` read the key from the keyring first (in a thread started
before the rest loads, kernel.runtime.ahead): a real keyring backend, named by
PYTHON_KEYRING_BACKEND, in real processes."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from kernel.cli.main import KEYRING_READ
from kernel.fakemodel import reply
from kernel.model.provider_config import keyring_key
from tests.cli.conftest import Cli, events

BACKEND = '''
import keyring.backend


class Keyring(keyring.backend.KeyringBackend):
    priority = 1

    def get_password(self, service, username):
        if (service, username) == ("reins", "anthropic_api_key"):
            return "test-key"
        return None

    def set_password(self, service, username, password):
        raise NotImplementedError

    def delete_password(self, service, username):
        raise NotImplementedError
'''


@pytest.fixture
def ring(cli: Cli, tmp_path: Path) -> Cli:
    """The fake server's key in the keyring; a wrong one in ANTHROPIC_API_KEY."""
    (tmp_path / "ringmod").mkdir()
    (tmp_path / "ringmod" / "reins_test_ring.py").write_text(BACKEND)
    cli.env.update(PYTHON_KEYRING_BACKEND="reins_test_ring.Keyring",
                   PYTHONPATH=str(tmp_path / "ringmod"), ANTHROPIC_API_KEY="wrong-key")
    return cli


def test_exec_sends_the_keyring_key_before_the_environment_one(ring: Cli) -> None:
    ring.server.add(reply("Hello."))
    done = ring.run("exec", "--json", "say hello")
    assert done.returncode == 0, done.stderr
    assert [e["type"] for e in events(done.stdout)][-1] == "run_finished"
    assert len(ring.server.requests) == 1  # the server answers only its key ("test-key")


def test_doctor_finds_the_key_in_the_keyring(ring: Cli) -> None:
    done = ring.run("doctor")
    assert "API key: found in the keyring" in done.stdout



def test_the_child_is_asked_for_the_function_the_kernel_reads_with() -> None:
    module, _, name = KEYRING_READ.partition(":")
    assert getattr(importlib.import_module(module), name) is keyring_key
