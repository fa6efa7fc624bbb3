"""The checks of a task on one outcome, and the cause of a failure. Pure functions.

`judge(expect, outcome, prompt)` runs every check and returns a `CheckVerdict`: whether the
task passed, each failed check in words, the one failure cause that explains the failure
best (`kernel.eval.scoring.CAUSES`, most fundamental first: a run stopped by an API error
fails every later check too; the model's own mistake before the harness' reaction to it),
and the two per-task facts the metrics use (tool selection right, arguments valid).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema

from kernel.agent.limits import LIMIT_REASONS, StopReason
from kernel.eval.outcome import PROVIDER_ERRORS, ExecCall, Outcome
from kernel.eval.scoring import CAUSES
from kernel.eval.task import ArgCheck, CallCount, Expect, FileCheck, ResultCheck

DENIALS = ("approval_denied", "approval_unavailable")


@dataclass(frozen=True)
class CheckFailure:
    cause: str
    message: str
    after_model: bool = False
    """This failure ranks after the model's own mistakes whatever its cause: a run that
    needed more rounds than the task allows, or that a model writing on past the output
    cap ended (twice in a row, Reins' own continuation between): consequences of what the
    model did, not what went wrong."""

    @property
    def rank(self) -> tuple[int, int]:
        """Its place in the precedence (kernel.eval.scoring.CAUSES): the lower, the more
        fundamental."""
        own = CAUSES.index(self.cause)
        return (max(own, _AFTER_MODEL) if self.after_model else own, own)


_AFTER_MODEL = CAUSES.index("approval_denied")
"""Where a failure ranked after the model's mistakes (`after_model`) stands."""


@dataclass(frozen=True)
class CheckVerdict:
    passed: bool
    failures: tuple[CheckFailure, ...] = ()
    selection_ok: bool | None = None
    """The tools chosen were right (None: the task says nothing about tools)."""
    args_ok: bool | None = None
    """No call was rejected for invalid arguments and every argument check held (None: no
    call was made: a run without a call says nothing about arguments)."""
    valid_calls: int = 0
    """How many calls had valid arguments (`call_valid`)."""

    @property
    def cause(self) -> str | None:
        if not self.failures:
            return None
        return min(self.failures, key=lambda f: f.rank).cause


def judge(expect: Expect, outcome: Outcome, prompt: str = "") -> CheckVerdict:
    """Every check of `expect` on `outcome`; `prompt` is the task's (an answer that only
    echoes it fails the answer checks)."""
    failures = [*_run_failures(expect, outcome), *_selection_failures(expect, outcome)]
    failures += [f for c in expect.calls if (f := count_failure(c, outcome.tool_names))]
    selection = [f for f in failures if f.cause in ("tool_when_none", "no_tool", "wrong_tool")]
    arg_failures = _arg_failures(expect.args, outcome.calls)
    failures += arg_failures
    failures += _result_failures(expect, outcome)
    failures += answer_failures(expect, outcome.answer, outcome.said, prompt)
    failures += [CheckFailure("wrong_result", m) for c in expect.results
                 if (m := result_problem(c, outcome.calls))]
    has_selection = bool(expect.tools or expect.forbidden or expect.no_tools or expect.offered
                         or expect.calls)
    invalid = any(c.error_code == "invalid_arguments" for c in outcome.calls)
    return CheckVerdict(
        passed=not failures, failures=tuple(failures),
        selection_ok=(not selection) if has_selection else None,
        args_ok=(not arg_failures and not invalid) if outcome.calls else None,
        valid_calls=sum(call_valid(c, expect.args) for c in outcome.calls),
    )


def call_valid(call: ExecCall, checks: Sequence[ArgCheck]) -> bool:
    """One call's arguments were valid: the harness accepted them (no `invalid_arguments`)
    and, where the task checks that tool's arguments, they meet one of its checks."""
    if call.error_code == "invalid_arguments":
        return False
    own = [c for c in checks if c.tool == call.name]
    return not own or any(args_match(c, call.input) for c in own)


def _run_failures(expect: Expect, outcome: Outcome) -> list[CheckFailure]:
    out: list[CheckFailure] = []
    if outcome.problem:
        out.append(CheckFailure("harness_error", outcome.problem))
    reason = outcome.stop_reason
    if reason is not None and reason != expect.stop_reason:
        out.append(CheckFailure(stop_cause(reason, outcome.errors),
                           f"the run stopped with {reason}"
                           + (f" ({', '.join(outcome.errors)})" if outcome.errors else "")
                           + f", expected {expect.stop_reason}",
                           after_model=reason == StopReason.MAX_TOKENS))
    if expect.max_rounds is not None and outcome.rounds > expect.max_rounds:
        out.append(CheckFailure("limit", f"{outcome.rounds} rounds, at most {expect.max_rounds} "
                                    f"allowed", after_model=True))
    denied = [c.name for c in outcome.calls if c.error_code in DENIALS]
    if denied and not set(DENIALS) & set(expect.errors):
        out.append(CheckFailure("approval_denied", f"denied: {', '.join(denied)}"))
    return out


def stop_cause(stop_reason: str, errors: Sequence[str]) -> str:
    """The failure cause a stop reason stands for."""
    if stop_reason == StopReason.LOOP_DETECTED:
        return "loop"
    if stop_reason in LIMIT_REASONS:
        return "limit"
    if stop_reason == StopReason.ERROR:
        return "api_error" if PROVIDER_ERRORS & set(errors) else "harness_error"
    return "wrong_result"


def _selection_failures(expect: Expect, outcome: Outcome) -> list[CheckFailure]:
    names = outcome.tool_names
    out: list[CheckFailure] = []
    if expect.no_tools and names:
        out.append(CheckFailure("tool_when_none", f"called {', '.join(names)}; no tool was needed"))
    missing = [t for t in expect.tools if t not in names]
    if missing:
        cause = "no_tool" if not names else "wrong_tool"
        out.append(CheckFailure(cause, f"not called: {', '.join(missing)}"
                                  + (f" (called: {', '.join(names)})" if names else "")))
    elif expect.ordered:
        firsts = [names.index(t) for t in expect.tools]
        if firsts != sorted(firsts):
            out.append(CheckFailure("wrong_tool", f"called in the order {', '.join(names)}, "
                                             f"expected {', '.join(expect.tools)}"))
    forbidden = sorted(set(expect.forbidden) & set(names))
    if forbidden:
        out.append(CheckFailure("wrong_tool", f"called a forbidden tool: {', '.join(forbidden)}"))
    if outcome.requests is not None:
        seen = frozenset().union(*outcome.requests.offered)
        hidden = [t for t in expect.offered if t not in seen]
        if hidden:
            out.append(CheckFailure("wrong_tool",
                                    f"never offered to the model: {', '.join(hidden)}"))
    return out


def args_match(check: ArgCheck, arguments: Any) -> bool:
    """Whether one call's arguments meet `check` (exact values and/or a JSON Schema)."""
    if not isinstance(arguments, Mapping):
        return False
    for key, value in check.equals.items():
        if key not in arguments or not _same(arguments[key], value):
            return False
    return check.schema is None or jsonschema.Draft202012Validator(check.schema).is_valid(
        arguments)


def _same(actual: Any, expected: Any) -> bool:
    """Equal as JSON values: 1 and 1.0 are the same number, True is not 1."""
    if isinstance(actual, bool) or isinstance(expected, bool):
        return type(actual) is type(expected) and actual == expected
    return bool(actual == expected)


def _arg_failures(checks: Sequence[ArgCheck], calls: Sequence[ExecCall]) -> list[CheckFailure]:
    out = []
    for check in checks:
        made = [c.input for c in calls if c.name == check.tool]
        if made and not any(args_match(check, a) for a in made):
            want = dict(check.equals) if check.equals else "its schema"
            out.append(CheckFailure("bad_arguments", f"no call to {check.tool} had the arguments "
                                                f"{want}; got {made}"))
    return out


def count_failure(check: CallCount, names: Sequence[str]) -> CheckFailure | None:
    """A failure when `check.tool` was not called as many times as the check allows."""
    made = names.count(check.tool)
    low = check.count if check.count is not None else check.at_least
    high = check.count if check.count is not None else check.at_most
    if (low is None or made >= low) and (high is None or made <= high):
        return None
    want = (f"exactly {check.count}" if check.count is not None else " and ".join(
        w for w in (f"at least {low}" if low is not None else "",
                    f"at most {high}" if high is not None else "") if w))
    cause = "no_tool" if not names else "wrong_tool"
    return CheckFailure(cause, f"called {check.tool} {made} times, expected {want}")


def has_word(text: str, word: str) -> bool:
    """`word` (a word or a phrase) is in `text` as whole words, whatever the case: not
    glued to a letter, digit or underscore on either side ("42" is not in "142")."""
    pattern = r"(?<!\w)" + re.escape(word) + r"(?!\w)"
    return re.search(pattern, text, re.IGNORECASE) is not None


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.casefold())


def echoes(answer: str, prompt: str) -> bool:
    """The answer's words are only a run of the prompt's (it repeats the prompt, or part of
    it, and says nothing of its own)."""
    said, asked = _words(answer), _words(prompt)
    if not said:
        return False
    return any(asked[i:i + len(said)] == said for i in range(len(asked) - len(said) + 1))


def answer_failures(expect: Expect, answer: str, said: str, prompt: str
                    ) -> list[CheckFailure]:
    """The answer checks: `answer` is the final answer (after the last tool call), `said`
    every text of the run (what no text may contain is looked for there too)."""
    out = []
    folded = answer.casefold()
    lacking = [s for s in expect.answer_contains if s.casefold() not in folded]
    lacking += [w for w in expect.answer_words if not has_word(answer, w)]
    lacking += [r for r in expect.answer_regex if re.search(r, answer) is None]
    if lacking:
        out.append(CheckFailure("wrong_result", f"the answer lacks {lacking}: {answer!r}"))
    if expect.answer_equals is not None and answer.strip() != expect.answer_equals:
        out.append(CheckFailure("wrong_result", f"the answer is {answer.strip()!r}, expected "
                                                f"exactly {expect.answer_equals!r}"))
    positive = (expect.answer_contains or expect.answer_words or expect.answer_regex
                or expect.answer_equals is not None)
    if positive and echoes(answer, prompt):
        out.append(CheckFailure("wrong_result", f"the answer only echoes the prompt: "
                                                f"{answer!r}"))
    present = [s for s in expect.answer_excludes if s.casefold() in said.casefold()]
    if present:
        out.append(CheckFailure("wrong_result", f"the model wrote {present}"))
    return out


def result_problem(check: ResultCheck, calls: Sequence[ExecCall]) -> str:
    """What is wrong with the results the model was sent for the calls `check` is about
    ('' when every one is as expected)."""
    made = [c for c in calls if c.name == check.tool and isinstance(c.input, Mapping)
            and all(k in c.input and _same(c.input[k], v) for k, v in check.args.items())]
    what = check.tool + (f" with {dict(check.args)}" if check.args else "")
    if not made:
        return f"no call to {what} whose result could be checked"
    for call in made:
        text = call.result
        if text is None:
            return f"the result of {what} never reached the model"
        lacking = [s for s in check.contains if s not in text]
        lacking += [r for r in check.regex if re.search(r, text) is None]
        present = [s for s in check.excludes if s in text]
        if lacking:
            return f"the model was sent a result of {what} that lacks {lacking}: {text[:200]!r}"
        if present:
            return f"the model was sent a result of {what} that contains {present}"
        if check.is_error is not None and call.is_error != check.is_error:
            return f"the result of {what} {'was not' if check.is_error else 'was'} an error"
    return ""


def _result_failures(expect: Expect, outcome: Outcome) -> list[CheckFailure]:
    out = []
    codes = {c.error_code for c in outcome.calls}
    absent = [e for e in expect.errors if e not in codes]
    if absent:
        out.append(CheckFailure("wrong_result", f"no call ended with {', '.join(absent)}"))
    out += [CheckFailure("wrong_result", m) for f in expect.files
            if (m := file_problem(f, outcome.files.get(f.path)))]
    return out


def file_problem(check: FileCheck, text: str | None) -> str:
    """What is wrong with a workspace file after the run ('' when it is as expected)."""
    if text is None:
        return f"{check.path} does not exist" if check.exists else ""
    if not check.exists:
        return f"{check.path} exists"
    lacking = [s for s in check.contains if s not in text]
    present = [s for s in check.excludes if s in text]
    if lacking:
        return f"{check.path} lacks {lacking}"
    if present:
        return f"{check.path} contains {present}"
    return ""
