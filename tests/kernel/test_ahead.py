"""kernel.runtime.ahead.Ahead: the function runs in a thread of its own from when the object is
made; calling it waits and answers (or raises) the same every time.
kernel.runtime.ahead.in_child: the function runs in a new interpreter (isolated, with
this process's sys.path); what it prints
does not reach its answer; a failure or a refused answer is left to the fallback here."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import TypeGuard

import pytest

from kernel.model.provider_config import KeySource, resolve_api_key
from kernel.runtime.ahead import Ahead, in_child


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


def _is_int(answer: object) -> TypeGuard[int]:
    return isinstance(answer, int)


def _is_str(answer: object) -> TypeGuard[str]:
    return isinstance(answer, str)


def test_in_child_answers_from_another_interpreter() -> None:
    assert in_child("os:getpid", _is_int, os.getpid)() != os.getpid()


ASKED = '''
import sys

def answer():
    print("noise on stdout")
    return {"path": sys.path, "flags": [sys.flags.isolated, sys.flags.ignore_environment]}

def number():
    return 7
'''


def test_the_child_gets_this_sys_path_and_only_its_answer_reaches_the_pipe(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capfd: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "asked_here.py").write_text(ASKED)
    monkeypatch.syspath_prepend(str(tmp_path))  # not on PYTHONPATH: -I would ignore it
    found = in_child("asked_here:answer", lambda a: isinstance(a, dict),
                     lambda: pytest.fail("the child answered"))()
    assert found == {"path": sys.path, "flags": [1, 1]}
    assert "noise on stdout" in capfd.readouterr().err


@pytest.mark.parametrize("target", ["os:no_such_function", "no_such_module:answer",
                                    "asked_here:number"])
def test_a_child_that_fails_or_answers_what_is_refused_leaves_it_to_the_fallback(
        target: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "asked_here.py").write_text(ASKED)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert in_child(target, _is_str, lambda: "from here")() == "from here"


def test_a_module_in_the_current_folder_is_not_the_childs(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Isolated mode: a workspace's own `keyring.py` (or any module) is never what the child
    imports, unless this process's sys.path has the folder."""
    (tmp_path / "planted.py").write_text("def answer():\n    return 'planted'\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    if "" in sys.path:
        monkeypatch.setattr(sys, "path", [p for p in sys.path if p != ""])
    assert in_child("planted:answer", _is_str, lambda: "fallback")() == "fallback"


def test_a_path_the_child_cannot_be_given_leaves_it_to_the_fallback(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", [*sys.path, b"/a/bytes/entry"])  # JSON has no bytes
    assert in_child("os:getpid", _is_int, os.getpid)() == os.getpid()


def test_a_frozen_app_asks_its_fallback_in_the_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert in_child("os:getpid", _is_int, os.getpid)() == os.getpid()
