"""A composite call's verdict from its steps' (pure): what one approval of it says.

Each step is decided by `decide()` as a call of its own when its arguments are known before
the composite runs (they come from the call's input and constants); a step whose arguments
wait for an earlier step's result, or that is a composite itself, is decided when it runs.
The composite is denied when any step is; allowed without asking when every step decided
now is allowed; otherwise asked about once, with every step listed, and its risk is the
highest of its steps'. The approval covers the steps it asked about with exactly the
arguments it showed (kernel.policy.approvals); every step still goes through the gate
when it runs, so a step decided only then is asked about on its own if its rules ask.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kernel.events import RISK_LEVELS, RiskLevel
from kernel.policy.decide import Decision, Verdict
from kernel.tools.registry import RISK_ORDER
from kernel.tools.spec import ErrorCode, Risk

LATER = "when it runs"
"""A step's verdict shown when it is decided only when it runs."""


@dataclass(frozen=True)
class StepVerdict:
    index: int
    tool: str
    risk: Risk
    level: RiskLevel
    decision: Decision | None
    """None: decided when it runs."""
    args: dict[str, Any] | None
    """Its arguments when known before the composite runs."""
    shown: dict[str, str]
    """Where each argument comes from."""
    preview: str = ""
    """What the step would do (a diff, a command), for a step asked about."""

    @property
    def verdict(self) -> str:
        return self.decision.verdict.value if self.decision is not None else LATER

    def to_json(self) -> dict[str, Any]:
        """The step as an approval request carries it (ApprovalRequest.steps)."""
        return {"step": self.index + 1, "tool": self.tool, "input": self.args,
                "args": self.shown, "risk": self.risk.value, "risk_level": self.level,
                "verdict": self.verdict}


@dataclass(frozen=True)
class PlanDecision:
    verdict: Verdict
    decided_by: str
    reason: str
    risk: Risk
    level: RiskLevel
    asked: tuple[int, ...] = ()
    """The steps the approval covers (decided `ask` with known arguments)."""
    error_code: ErrorCode | None = None


def decide_plan(name: str, steps: Sequence[StepVerdict]) -> PlanDecision:
    """The composite's verdict (see the module docstring)."""
    risk = max((s.risk for s in steps), key=RISK_ORDER.index)
    level = max((s.level for s in steps), key=RISK_LEVELS.index)
    for step in steps:
        decision = step.decision
        if decision is not None and decision.verdict is Verdict.DENY:
            return PlanDecision(
                Verdict.DENY, decision.decided_by,
                f"its step {step.index + 1} ({step.tool}) is denied: {decision.reason}",
                risk, level, error_code=decision.error_code)
    asked = tuple(s.index for s in steps
                  if s.decision is not None and s.decision.verdict is Verdict.ASK)
    later = [s for s in steps if s.decision is None]
    then = (f"; {_numbers(later)} {'is' if len(later) == 1 else 'are'} decided when "
            f"{'it runs' if len(later) == 1 else 'they run'}") if later else ""
    if not asked:
        return PlanDecision(Verdict.ALLOW, "composite: every step allowed",
                            f"every step of {name} is allowed{then}", risk, level)
    reasons = " ".join(_sentence(f"Step {s.index + 1} ({s.tool}): {s.decision.reason}")
                       for s in steps if s.index in asked and s.decision is not None)
    return PlanDecision(Verdict.ASK, "composite", (
        f"{name} runs {len(steps)} steps in one call, and {_numbers(asked)} "
        f"{'needs' if len(asked) == 1 else 'need'} your OK{then}. {reasons}"),
        risk, level, asked)


def _sentence(text: str) -> str:
    """`text` ending as a sentence does (a step's reason may or may not end with a stop)."""
    text = text.rstrip()
    return text if text.endswith((".", "!", "?")) else text + "."


def _numbers(steps: Sequence[StepVerdict] | Sequence[int]) -> str:
    numbers = [str((s if isinstance(s, int) else s.index) + 1) for s in steps]
    return ("step " if len(numbers) == 1 else "steps ") + ", ".join(numbers)


def plan_preview(steps: Sequence[StepVerdict]) -> str:
    """Every step an approval of a composite lists, with its risk, its verdict and where
    its arguments come from, and what each step asked about would do."""
    lines = []
    for step in steps:
        lines.append(f"{step.index + 1}. {step.tool} — risk {step.level} ({step.risk.value}), "
                     f"{step.verdict}")
        lines.extend(f"     {arg} ← {source}" for arg, source in step.shown.items())
        if step.preview:
            lines.extend(f"     {line}" for line in step.preview.splitlines())
    return "\n".join(lines)
