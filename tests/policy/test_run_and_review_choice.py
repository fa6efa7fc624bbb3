"""Which answers an approval offers (kernel.policy.choices, a table), Run and review offered
only when it is true (a command, run as a transaction, without the network), the terminal's
prompt offering exactly the request's answers, and an answer the request did not offer
refused (the call does not run)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from kernel.events import HELD_RULE, ApprovalRequest, Choice
from kernel.paths import AppPaths
from kernel.policy.channels import TerminalChannel, terminal_keys
from kernel.policy.choices import HELD_CHOICES, offered
from kernel.policy.decide import CallFacts, CommandFacts, Decision, Verdict
from kernel.tools.spec import ErrorCode, Risk
from tests.policy.gatekit import CONTEXTS, Kit
from tests.policy.test_gate import _cmd, _run

COMMAND = CommandFacts(text="make")


def _decision(*, network: bool = False, session: bool = True, always: bool = True
              ) -> Decision:
    return Decision(Verdict.ASK, "mode ask", "asks", Risk.EXECUTE, network=network,
                    can_session=session, can_always=always)


@pytest.mark.parametrize(("decision", "facts", "always", "choices"), [
    (_decision(), CallFacts(command=COMMAND), True,
     ("allow_once", "allow_session", "allow_always", "allow_review", "deny")),
    # the network: effects no change set holds
    (_decision(network=True), CallFacts(command=COMMAND), True,
     ("allow_once", "allow_session", "allow_always", "deny")),
    # no transactions (no sandbox, or no overlay: SandboxFacts.available is False)
    (_decision(), CallFacts(command=COMMAND, sandboxed=False), True,
     ("allow_once", "allow_session", "allow_always", "deny")),
    # not a command: a file tool's change is its diff already
    (_decision(), CallFacts(), True, ("allow_once", "allow_session", "allow_always", "deny")),
    # no grant possible (a destructive or interrupted call), no rule to save
    (_decision(session=False, always=False), CallFacts(command=COMMAND), True,
     ("allow_once", "allow_review", "deny")),
    (_decision(), CallFacts(command=COMMAND), False,
     ("allow_once", "allow_session", "allow_review", "deny")),
])
def test_offered_answers(decision: Decision, facts: CallFacts, always: bool,
                         choices: tuple[Choice, ...]) -> None:
    assert offered(decision, facts, always=always) == choices


def test_a_request_stored_before_choices_were_carried_offers_what_it_did() -> None:
    old = ApprovalRequest("s", "c", "run_command", {}, Risk.EXECUTE, "asks", can_always=False)
    assert old.offered() == ("allow_once", "allow_session", "deny")
    held = ApprovalRequest("s", "c", "run_command", {}, Risk.EXECUTE, "held", rule=HELD_RULE)
    assert held.offered() == HELD_CHOICES
    assert [held.choice_words(c) for c in held.offered()] == ["Keep these changes",
                                                             "Discard them"]
    odd = ApprovalRequest("s", "c", "run_command", {}, Risk.EXECUTE, "asks",
                          choices=["allow_review", "launch", "deny"])
    assert odd.offered() == ("allow_review", "deny")  # a word outside the vocabulary: gone


def _request(choices: list[str], rule: str = "mode ask") -> ApprovalRequest:
    return ApprovalRequest("s", "c", "run_command", {"command": "make"}, Risk.EXECUTE,
                           "asks", rule=rule, choices=choices)


def test_the_terminal_offers_the_requests_answers() -> None:
    request = _request(["allow_once", "allow_review", "deny"])
    assert terminal_keys(request, destructive=False) == {
        "o": ("allow_once", "[o]nce"), "r": ("allow_review", "[r]un and review"),
        "d": ("deny", "[d]eny[: message]")}
    held = _request(["allow_once", "deny"], rule=HELD_RULE)
    assert [label for _c, label in terminal_keys(held, destructive=False).values()] == [
        "[k]eep", "[d]iscard"]


def test_the_terminal_answers_run_and_review_only_where_offered(
        workspace: Path, reins_home: AppPaths) -> None:
    out = io.StringIO()
    kit = Kit(workspace, reins_home, channel=TerminalChannel(io.StringIO("r\n"), out))
    [result] = _run(kit, [_cmd("t1", "echo hi > f.txt")])
    assert not result.is_error and CONTEXTS[-1].review_all
    assert "[o]nce [s]ession [a]lways [r]un and review [d]eny[: message] > " in out.getvalue()
    assert "[r]un and review: it runs without the network" in out.getvalue()
    [decision] = kit.of_type("approval_decision")
    assert (decision.decision, decision.scope) == ("allow_review", "once")

    # not sandboxed as a transaction: not offered, and `r` is not an answer
    out = io.StringIO()
    kit = Kit(workspace, reins_home, sandboxed=False,
              channel=TerminalChannel(io.StringIO("r\nd\n"), out))
    [result] = _run(kit, [_cmd("t2", "echo hi > g.txt")])
    assert result.error_code is ErrorCode.APPROVAL_DENIED
    assert "please answer with one of: o, s, a, d" in out.getvalue()
    assert not (workspace / "g.txt").exists()


def test_an_answer_not_offered_is_refused(workspace: Path, reins_home: AppPaths) -> None:
    class Insists:
        name = "ui"

        async def ask(self, request: ApprovalRequest, *, destructive: bool) -> object:
            from kernel.policy.channels import Answer
            return Answer("allow_review")

    kit = Kit(workspace, reins_home, sandboxed=False, channel=Insists())  # type: ignore[arg-type]
    before = len(CONTEXTS)
    [result] = _run(kit, [_cmd("t3", "echo hi > h.txt")])
    assert result.error_code is ErrorCode.APPROVAL_DENIED
    assert "Run and review was not offered" in result.text
    assert len(CONTEXTS) == before and not (workspace / "h.txt").exists()
