"""`reins --self-test` from the source checkout (the bundle runs it too, in
test_package_bundle.py), and the checks that make it fail when the round trip is wrong."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from desktop import selftest
from desktop.selftest import ANSWER, SelfTestFailed, check_reply
from kernel.events import AssistantDelta, AssistantText, ErrorEvent, RunFinished

ROOT = Path(__file__).resolve().parents[2]
SID = "s1"


def clean_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QT_", "ANTHROPIC_"))}
    env["REINS_HOME"] = str(tmp_path / "untouched")
    return env


@pytest.mark.timeout(300)
def test_self_test_passes_from_the_source_checkout(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "desktop.entry", "--self-test"],
                          env=clean_env(tmp_path), cwd=ROOT, capture_output=True, text=True,
                          timeout=280)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("reins self-test: ok — offscreen UI, kernel process ")
    assert done.stderr == ""
    assert not (tmp_path / "untouched").exists(), "the self-test wrote into REINS_HOME"


def test_self_test_takes_no_arguments(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "desktop.entry", "--self-test", "extra"],
                          env=clean_env(tmp_path), cwd=ROOT, capture_output=True, text=True,
                          timeout=100)
    assert done.returncode == 2
    assert "usage: reins --self-test" in done.stderr


def good_events() -> list:
    return [AssistantDelta(SID, ANSWER[:10]), AssistantDelta(SID, ANSWER[10:]),
            AssistantText(SID, ANSWER), RunFinished(SID, "end_turn", rounds=1)]


def test_a_correct_round_trip_passes_the_checks() -> None:
    check_reply(good_events())


@pytest.mark.parametrize(("events", "reason"), [
    ([e for e in good_events() if not isinstance(e, AssistantDelta)], "no streamed text"),
    ([*good_events()[:2], AssistantText(SID, "something else"), good_events()[3]],
     "the answer that arrived was"),
    ([*good_events()[:3], RunFinished(SID, "max_tokens")], "the run ended with"),
    ([*good_events(), ErrorEvent(SID, "api_error", "overloaded")],
     "the kernel reported an error: api_error: overloaded"),
])
def test_a_wrong_round_trip_fails_with_the_reason(events: list, reason: str) -> None:
    with pytest.raises(SelfTestFailed, match=reason):
        check_reply(events)


def test_only_the_named_qt_noise_is_kept_off_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    from PySide6.QtCore import QMessageLogContext, QtMsgType

    context = QMessageLogContext()
    selftest.qt_message(QtMsgType.QtWarningMsg, context,
                        "This plugin does not support propagateSizeHints()")
    selftest.qt_message(QtMsgType.QtWarningMsg, context, "qt.qpa.xcb: could not connect")
    assert capsys.readouterr().err == "qt.qpa.xcb: could not connect\n"


def test_a_crash_inside_the_self_test_is_reported_as_a_failure(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    def explode(home: Path, started: float) -> selftest.Outcome:
        raise RuntimeError("the kernel could not be spawned")

    monkeypatch.setattr(selftest, "run_self_test", explode)
    monkeypatch.setenv("REINS_HOME", str(tmp_path / "home"))  # main() changes these three
    monkeypatch.setenv("QT_QPA_PLATFORM", "offscreen")
    for name in selftest.CLEARED_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert selftest.main([]) == 1
    err = capsys.readouterr().err
    assert "Traceback" in err
    assert err.endswith("reins self-test: FAILED — RuntimeError: the kernel could not be "
                        "spawned\n")
