"""kernel.ahead.Ahead: the function runs in a thread of its own from when the object is made;
calling it waits and answers (or raises) the same every time."""

from __future__ import annotations

import threading

import pytest

from kernel.agent.provider_config import KeySource, resolve_api_key
from kernel.ahead import Ahead


def test_it_runs_from_when_it_is_made_in_its_own_thread_once() -> None:
    started, release = threading.Event(), threading.Event()
    runners: list[threading.Thread] = []

    def read() -> str:
        runners.append(threading.current_thread())
        started.set()
        release.wait(10)
        return "from-ring"

    lookup = Ahead(read, "keyring-lookup")
    assert started.wait(10)  # running before anyone asks
    assert runners[0] is not threading.current_thread()
    assert runners[0].name == "keyring-lookup" and runners[0].daemon
    release.set()
    assert lookup() == "from-ring" and lookup() == "from-ring"
    assert len(runners) == 1


@pytest.mark.parametrize("answer", [None, "", 0, False])
def test_a_falsy_answer_is_an_answer(answer: object) -> None:
    assert Ahead(lambda: answer)() is answer


def test_its_error_is_raised_where_the_answer_is_asked_for_every_time() -> None:
    def read() -> str:
        raise ValueError("broken backend")

    lookup = Ahead(read)
    for _ in range(2):
        with pytest.raises(ValueError, match="broken backend"):
            lookup()


def test_a_keyring_read_ahead_keeps_the_keys_precedence() -> None:
    env = {"ANTHROPIC_API_KEY": "from-env"}
    assert resolve_api_key(None, env, Ahead(lambda: "from-ring")) == KeySource("from-ring",
                                                                              "keyring")
    assert resolve_api_key(None, env, Ahead(lambda: None)).source == "environment"
    assert resolve_api_key("arg", env, Ahead(lambda: "from-ring")).source == "argument"
