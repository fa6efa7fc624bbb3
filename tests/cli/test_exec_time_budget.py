"""`reins exec` has a wall-clock limit unless told otherwise (`--time-budget`)."""

from __future__ import annotations

import pytest

from kernel.cli.main import DEFAULT_TIME_BUDGET_S, build_parser

# (the option's words, the limit in seconds: None = none)
BUDGETS = [
    ([], DEFAULT_TIME_BUDGET_S),
    (["--time-budget", "90"], 90.0),
    (["--time-budget", "0.5"], 0.5),
    (["--time-budget", "0"], None),
    (["--time-budget", "none"], None),
    (["--time-budget", "None"], None),
]


@pytest.mark.parametrize(("words", "seconds"), BUDGETS)
def test_the_time_budget(words: list[str], seconds: float | None) -> None:
    args = build_parser().parse_args(["exec", *words, "hi"])
    assert args.time_budget == seconds


@pytest.mark.parametrize("bad", ["-5", "soon", "nan", "inf", ""])
def test_a_bad_time_budget_is_bad_usage(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["exec", "--time-budget", bad, "hi"])
    assert exit_.value.code == 2 and "--time-budget" in capsys.readouterr().err

