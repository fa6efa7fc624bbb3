"""The status bar's fitting as tables: which forms the parts get for a width (choose_forms),
and the forms of its texts, whole first (the window at 900 and 1600 px wide is tested in
test_window_layout.py)."""

from __future__ import annotations

import itertools

import pytest
from pytestqt.qtbot import QtBot

from desktop.status_bar import LADDER, FitButton, FitLabel, choose_forms
from desktop.words import approvals_forms, sandbox_forms, usage_forms

WIDTHS = {"approvals": (200, 100), "sandbox": (90, 40, 0), "compact": (80, 0),
          "usage": (380, 280, 140, 50)}
"""Forms as wide as the window's, roughly; with 6 px between two shown parts (the model
picker is the composer's now)."""
WHOLE = 200 + 90 + 80 + 380 + 3 * 6


def forms(approvals: int = 0, sandbox: int = 0, compact: int = 0,
          usage: int = 0) -> dict[str, int]:
    return {"approvals": approvals, "sandbox": sandbox, "compact": compact, "usage": usage}


@pytest.mark.parametrize(("available", "chosen"), [
    (WHOLE, forms()),
    (10_000, forms()),
    (WHOLE - 1, forms(compact=1)),  # 682 px once the button goes
    (682, forms(compact=1)),
    (681, forms(compact=1, sandbox=1)),  # 632
    (632, forms(compact=1, sandbox=1)),
    (631, forms(compact=1, sandbox=1, usage=1)),  # 532
    (532, forms(compact=1, sandbox=1, usage=1)),
    (531, forms(compact=1, sandbox=1, usage=2)),  # 392
    (392, forms(compact=1, sandbox=1, usage=2)),
    (391, forms(compact=1, sandbox=2, usage=2)),  # 346
    (346, forms(compact=1, sandbox=2, usage=2)),
    (345, forms(compact=1, sandbox=2, usage=2, approvals=1)),  # 246
    (246, forms(compact=1, sandbox=2, usage=2, approvals=1)),
    (245, forms(compact=1, sandbox=2, usage=3, approvals=1)),  # 156
    (0, forms(compact=1, sandbox=2, usage=3, approvals=1)),
    (-50, forms(compact=1, sandbox=2, usage=3, approvals=1)),
])
def test_forms_are_given_up_in_the_ladders_order_until_the_parts_fit(
        available: int, chosen: dict[str, int]) -> None:
    assert choose_forms(available, WIDTHS, LADDER, 6) == chosen


@pytest.mark.parametrize(("widths", "available", "chosen"), [
    ({}, 100, {}),
    ({"usage": (300, 200, 100)}, 150, {"usage": 2}),  # a step beyond its forms is skipped
    ({"usage": (300, 200)}, 150, {"usage": 1}),
    ({"kernel": (500,), "usage": (300, 100)}, 300, {"kernel": 0, "usage": 1}),  # not in it
    ({"other": (90,), "compact": (80, 0)}, 90, {"other": 0, "compact": 1}),  # gone: no gap
    ({"other": (90,), "compact": (80, 0)}, 176, {"other": 0, "compact": 0}),
    ({"other": (90,), "compact": (80, 0)}, 175, {"other": 0, "compact": 1}),
])
def test_choose_forms_edges(widths: dict[str, tuple[int, ...]], available: int,
                            chosen: dict[str, int]) -> None:
    assert choose_forms(available, widths, LADDER, 6) == chosen


def test_a_later_step_never_brings_a_longer_form_back() -> None:
    ladder = (("usage", 2), ("usage", 1))
    assert choose_forms(100, {"usage": (300, 200, 150, 90)}, ladder, 6) == {"usage": 2}


@pytest.mark.parametrize(("usage", "forms"), [
    ((0, 0, 0.0, (0, 0)), ()),
    ((0, 0, 1.0, (10, 100)), ()),
    ((10, 1, 0.0, (0, 0)), ("Tokens: 10 in / 1 out · $0.0000", "10 in / 1 out · $0.0000",
                            "$0.0000")),
    ((1_200, 30, 0.0123, (42_000, 200_000)), (
        "Tokens: 1,200 in / 30 out · $0.0123 · context 21% of 200k",
        "1,200 in / 30 out · $0.0123 · context 21%", "$0.0123 · context 21%", "$0.0123")),
    ((0, 5, 12.5, (150, 200_000)), (
        "Tokens: 0 in / 5 out · $12.5000 · context <1% of 200k",
        "0 in / 5 out · $12.5000 · context <1%", "$12.5000 · context <1%", "$12.5000")),
    ((1_234_567, 0, 0.00001, (9_000, 4_096)), (
        "Tokens: 1,234,567 in / 0 out · $0.0000 · context 220% of 4k",
        "1,234,567 in / 0 out · $0.0000 · context 220%", "$0.0000 · context 220%",
        "$0.0000")),
])
def test_usage_forms_whole_first_then_shorter(usage: tuple[int, int, float, tuple[int, int]],
                                              forms: tuple[str, ...]) -> None:
    assert usage_forms(*usage) == forms
    assert all(len(a) > len(b) for a, b in itertools.pairwise(forms))


@pytest.mark.parametrize(("kind", "reason", "forms"), [
    ("bwrap", "", ("Sandbox: bwrap", "bwrap", "")),
    ("bwrap", "ignored", ("Sandbox: bwrap", "bwrap", "")),
    ("none", "bubblewrap is not installed", (
        "Sandbox: none — bubblewrap is not installed", "Sandbox: none", "No sandbox")),
    ("none", "", ("Sandbox: none", "Sandbox: none", "No sandbox")),
    ("disabled", "REINS_SANDBOX=off", (
        "Sandbox: none — REINS_SANDBOX=off", "Sandbox: none", "No sandbox")),
])
def test_sandbox_forms_never_drop_a_missing_sandbox(kind: str, reason: str,
                                                    forms: tuple[str, ...]) -> None:
    assert sandbox_forms(kind, reason) == forms
    if kind != "bwrap":
        assert all(forms), "a missing sandbox is always said"


@pytest.mark.parametrize(("pending", "forms"), [
    (1, ("⚠ 1 approval pending — show", "⚠ 1 pending")),
    (2, ("⚠ 2 approvals pending — show", "⚠ 2 pending")),
    (1500, ("⚠ 1,500 approvals pending — show", "⚠ 1,500 pending")),
])
def test_approvals_forms(pending: int, forms: tuple[str, str]) -> None:
    assert approvals_forms(pending) == forms


def test_a_label_draws_its_form_elided_and_keeps_its_whole_text(qtbot: QtBot) -> None:
    label = FitLabel("Usage")
    qtbot.addWidget(label)
    label.set_forms(usage_forms(1_200, 30, 0.0123, (42_000, 200_000)), "Explained.")
    whole = "Tokens: 1,200 in / 30 out · $0.0123 · context 21% of 200k"
    assert label.text() == whole and label.toolTip() == f"{whole}\nExplained."
    label.resize(label.sizeHint())
    assert label.shown_text() == whole
    label.show_form(2)
    label.resize(label.sizeHint())
    assert label.shown_text() == "$0.0123 · context 21%" and label.text() == whole
    label.resize(label.minimumSizeHint())
    assert label.shown_text().endswith("…") and label.minimumSizeHint().width() < 60
    label.set_forms([])
    assert label.text() == label.shown_text() == label.toolTip() == ""
    assert label.form_widths() == ()


def test_a_buttons_short_form_has_its_whole_text_in_the_tooltip(qtbot: QtBot) -> None:
    button = FitButton("Show pending approvals")
    qtbot.addWidget(button)
    button.set_forms(approvals_forms(3), "Calls wait for your answer")
    assert button.text() == "⚠ 3 approvals pending — show"
    assert button.toolTip() == "Calls wait for your answer"
    wide, narrow = button.form_widths()
    assert wide > narrow > 0 and button.text() == "⚠ 3 approvals pending — show"
    button.show_form(1)
    assert button.text() == "⚠ 3 pending"
    assert button.toolTip() == "⚠ 3 approvals pending — show\nCalls wait for your answer"
