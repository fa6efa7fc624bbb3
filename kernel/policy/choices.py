"""Which answers an approval request offers (pure): the one place that says when each is
true, so every asker (the app's dialog and card, the terminal) shows exactly these.

*Run and review* (`allow_review`) is offered for a command only when its only effects are
its change set: it runs as a transaction (a sandbox with an overlay: `CallFacts.sandboxed`)
and without the network (a command with the network has effects no change set holds).
"""

from __future__ import annotations

from kernel.events import Choice
from kernel.policy.decide import CallFacts, Decision

HELD_CHOICES: tuple[Choice, ...] = ("allow_once", "deny")
"""A request about held changes: keep them, or discard them."""


def offered(decision: Decision, facts: CallFacts, *, always: bool) -> tuple[Choice, ...]:
    """The answers to a request the policy asks about (`decision`), in the order shown.
    `always`: there is a rule "always allow" would save."""
    shown: dict[Choice, bool] = {
        "allow_once": True,
        "allow_session": decision.can_session,
        "allow_always": decision.can_always and always,
        "allow_review": reviewable(decision, facts),
        "deny": True,
    }
    return tuple(choice for choice, offer in shown.items() if offer)


def reviewable(decision: Decision, facts: CallFacts) -> bool:
    """Whether the call can run and have its change set reviewed before anything of it is
    applied: a command, run as a transaction, without the network."""
    return facts.command is not None and facts.sandboxed and not decision.network
