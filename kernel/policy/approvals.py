"""The Gate: decides every call with `decide()`, asks a person when the answer is `ask`.

For each validated call (dispatch step 5) the gate gathers the facts (facts.py), runs the
pure policy, and:
- allow → the call runs; the decision is recorded (`approval_decision`, decided_by policy);
- deny  → `permission_denied` (or `invalid_arguments` for an unparsable command), recorded;
- ask   → `approval_request` (with a preview) is recorded and reported, the channel is asked,
          and the answer is recorded as `approval_decision` (who, which rule, scope). Allow
          once / for the session (a grant, revocable) / always (an allow rule saved to
          settings.json, revocable); deny with an optional message for the model. A channel
          that cannot answer gives `approval_unavailable`, never "denied by the user".

Requests are asked one at a time, in the order the calls arrive. A request already in the
session's history (the process stopped while it waited) is not recorded again: it is
reported again and asked again, so the run continues from exactly that call. A decision
already in the history (given after the call's latest request) is reused without asking —
except for a command (or another tool that executes) that was allowed and then interrupted
before its result (the kernel died while it ran): its effects may be partial, so it is
asked again (allow once or deny, whatever the mode), with the command shown. Reads and
file writes (a write puts the whole content or nothing) run again as decided.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kernel.events import (
    CHOICES,
    HELD_RULE,
    ApprovalDecision,
    ApprovalRequest,
    Choice,
    DecisionScope,
    Event,
    GrantRevoked,
    allows,
)
from kernel.mcp.grants import GrantFingerprints
from kernel.paths import AppPaths
from kernel.policy.channels import Answer, ApprovalChannel, ChannelUnavailable
from kernel.policy.choices import HELD_CHOICES, offered
from kernel.policy.composite import PlanDecision, StepVerdict, decide_plan, plan_preview
from kernel.policy.decide import (
    CallFacts,
    Decision,
    Grant,
    Mode,
    Session,
    Verdict,
    decide,
    risk_level,
)
from kernel.policy.facts import SandboxState, call_facts
from kernel.policy.gate_context import GateContext
from kernel.policy.grants import describe, encode_rules, grant_rules, session_grants
from kernel.policy.preview import build_preview
from kernel.policy.settings import (
    Settings,
    SettingsError,
    SettingsFile,
    add_rule,
    remove_rule,
)
from kernel.policy.write_rules import write_rule
from kernel.tools.dispatch import GateOutcome, PlannedStep
from kernel.tools.pathpolicy import PathPolicy
from kernel.tools.spec import (
    ErrorCode,
    Review,
    Risk,
    ToolCall,
    ToolError,
    ToolSpec,
    WriteRule,
)

Emit = Callable[[Event], None]


class PolicyGate:
    """One session's gate. `emit` commits an event to the session's store and then reports
    it; `report` only reports (used to show a request again after a restart)."""

    def __init__(
        self,
        *,
        session_id: str,
        mode: Mode,
        path_policy: PathPolicy,
        settings: Settings,
        sandbox: SandboxState,
        channel: ApprovalChannel | None,
        emit: Emit,
        report: Emit | None = None,
        app_paths: AppPaths | None = None,
        history: Iterable[Event] = (),
        home: Path | None = None,
        settings_file: SettingsFile | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.session_id = session_id
        self.clock = clock
        self.mode = mode
        self.path_policy = path_policy
        self.settings = settings
        self.sandbox = sandbox
        self.channel = channel
        self._emit = emit
        self._report = report or (lambda _e: None)
        self.app_paths = app_paths or AppPaths.from_env()
        self._file = settings_file or SettingsFile(self.app_paths, settings)
        self.fingerprints = GrantFingerprints.for_paths(self.app_paths)
        self.home = Path(home if home is not None else Path.home()).resolve()
        past = list(history)
        self._grants: dict[str, Grant] = {g.rule.text: g for g in session_grants(past)}
        asked = ask_history(past)
        self._requests = asked.requests
        self._decisions = asked.decisions
        self._interrupted = set(asked.allowed)
        self._covered: dict[str, Mapping[str, Any]] = {}
        """Steps of composite calls the user approved, by call id, with the arguments the
        approval showed: such a step that the rules ask about runs without a second ask."""
        self._asking = asyncio.Lock()

    # -- grants ----------------------------------------------------------------------------

    @property
    def grants(self) -> tuple[Grant, ...]:
        """The session grants in force, oldest first."""
        return tuple(self._grants.values())

    def revoke_session_grant(self, rule_text: str, *, by: str = "user") -> None:
        """Take back a session grant (KeyError when there is none with this text)."""
        grant = self._grants.pop(rule_text)
        self._emit(GrantRevoked(self.session_id, rule=grant.rule.text, scope="session",
                                revoked_by=by, revoked_at=self.clock()))

    def revoke_always_rule(self, rule_text: str, *, by: str = "user") -> None:
        """Remove an allow rule from settings.json (KeyError when it is not there)."""
        self._saved(remove_rule(self.app_paths, "allow", rule_text))
        self._emit(GrantRevoked(self.session_id, rule=rule_text, scope="always", revoked_by=by,
                                revoked_at=self.clock()))

    # -- the Gate protocol -----------------------------------------------------------------

    def session(self) -> Session:
        return Session(mode=self.mode, workspace=self.path_policy.workspace, home=self.home,
                       grants=self.grants)

    def decide(self, spec: ToolSpec, args: Mapping[str, Any]) -> tuple[Decision, CallFacts]:
        """The policy's decision for a call, without asking anyone or recording anything."""
        facts = call_facts(spec, args, self.path_policy, self.sandbox)
        perms = self._current_settings().permissions
        decision = decide(spec, args, facts, self.session(), perms.allow, perms.ask, perms.deny)
        return self._unless_changed(spec, decision), facts

    def _unless_changed(self, spec: ToolSpec, decision: Decision) -> Decision:
        """An MCP tool whose definition changed since its grant: the grant is suspended and
        the user is asked again (kernel.mcp.grants)."""
        if decision.verdict is not Verdict.ALLOW:
            return decision
        check = self.fingerprints.check(decision.rule, spec)
        if check.valid:
            return decision
        return replace(decision, verdict=Verdict.ASK,
                       decided_by=f"grant suspended {decision.rule}", reason=check.reason)

    async def authorize(self, spec: ToolSpec, call: ToolCall,
                        args: Mapping[str, Any]) -> GateOutcome:
        try:
            decision, facts = self.decide(spec, args)
        except (ToolError, SettingsError) as exc:
            return _undecided(spec, exc)
        decision = self._unless_interrupted(spec, call, decision)
        covered = self._covered.pop(call.call_id, None)
        if (decision.verdict is Verdict.ASK and covered is not None and covered == args
                and decision.decided_by != INTERRUPTED_RULE):
            self._emit(ApprovalDecision(
                self.session_id, call_id=call.call_id, decision="allow_once",
                decided_by=COMPOSITE_APPROVAL, scope="once", rule=decision.decided_by,
                message=f"approved with its composite call {call.parent_id}",
                network=decision.network, decided_at=self.clock()))
            return self._allowed(decision, facts, user_approved=True)
        if decision.verdict is Verdict.ALLOW:
            self._record_policy(call, decision)
            return self._allowed(decision, facts, user_approved=False)
        if decision.verdict is Verdict.DENY:
            self._record_policy(call, decision)
            code = decision.error_code or ErrorCode.PERMISSION_DENIED
            return GateOutcome(False, code, (
                f"The call to {spec.name!r} was not run: {decision.reason} "
                f"(decided by {decision.decided_by}). Do something else, or ask the user to "
                f"change the permissions."))
        async with self._asking:
            return await self._ask(spec, call, args, decision, facts)

    async def authorize_plan(self, spec: ToolSpec, call: ToolCall, args: Mapping[str, Any],
                             plan: Sequence[PlannedStep]) -> GateOutcome:
        """Decide a composite call as one (kernel.policy.composite): denied when a step is,
        allowed when every step decided now is, else one approval listing every step.
        Approved, the steps it asked about are covered with the arguments it showed (a
        step that is a composite itself is decided, and asked about, when it runs)."""
        try:
            steps = [self._step_verdict(step) for step in plan]
        except (ToolError, SettingsError) as exc:
            return _undecided(spec, exc)
        verdict = decide_plan(spec.name, steps)
        if verdict.verdict is not Verdict.ASK:
            self._emit(ApprovalDecision(
                self.session_id, call_id=call.call_id,
                decision="allow" if verdict.verdict is Verdict.ALLOW else "deny",
                decided_by="policy", scope="call", rule=verdict.decided_by,
                message=verdict.reason, decided_at=self.clock()))
            if verdict.verdict is Verdict.ALLOW:
                return GateOutcome(True)
            return GateOutcome(False, verdict.error_code or ErrorCode.PERMISSION_DENIED, (
                f"The call to {spec.name!r} was not run: {verdict.reason} (decided by "
                f"{verdict.decided_by}). None of its steps ran. Do something else, or ask "
                f"the user to change the permissions."))
        async with self._asking:
            allowed, denied = await self._ask_plan(spec, call, args, verdict, steps)
        if not allowed:
            return denied
        for step in plan:
            if step.known and step.index in verdict.asked:
                self._covered[step.call.call_id] = step.call.input
        return GateOutcome(True, user_approved=True)

    def _step_verdict(self, step: PlannedStep) -> StepVerdict:
        """One step of a composite as its approval shows it, decided now when its
        arguments are known and it is not a composite itself."""
        index, spec = step.index, step.spec
        if spec is None or not step.known or spec.origin == "composite":
            risk = spec.risk if spec is not None else Risk.READ
            level = risk_level(spec, None) if spec is not None else "ordinary"
            return StepVerdict(index, step.call.name, risk, level, None,
                               dict(step.call.input) if step.known else None, dict(step.shown))
        decision, facts = self.decide(spec, step.call.input)
        preview = build_preview(spec, step.call.input, policy=self.path_policy,
                                paths=facts.paths, sandbox=self.sandbox.describe(),
                                network=decision.network,
                                local_network=self.settings.exec.local_network
                                ) if decision.verdict is Verdict.ASK else ""
        return StepVerdict(index, spec.name, decision.risk, decision.level, decision,
                           dict(step.call.input), dict(step.shown), preview)

    async def _ask_plan(self, spec: ToolSpec, call: ToolCall, args: Mapping[str, Any],
                        verdict: PlanDecision, steps: Sequence[StepVerdict]
                        ) -> tuple[bool, GateOutcome]:
        """Ask once about a composite call (a request already answered in this session's
        history is not asked again): allowed once, or denied. Its rules cannot be saved
        as grants (a rule names one tool)."""
        destructive = verdict.risk is Risk.DESTRUCTIVE
        earlier = self._decisions.get(call.call_id)
        if earlier is None:
            request = self._requests.get(call.call_id)
            if request is None:
                request = ApprovalRequest(
                    self.session_id, call_id=call.call_id, name=spec.name, input=dict(args),
                    risk=verdict.risk, reason=verdict.reason, preview=plan_preview(steps),
                    rule=verdict.decided_by, can_always=False, risk_level=verdict.level,
                    steps=[s.to_json() for s in steps], choices=["allow_once", "deny"])
                self._emit(request)
                self._requests[call.call_id] = request
            else:
                self._report(request)
            if self.channel is None:
                return False, self._unavailable(spec, call, "no approval channel is connected "
                                                "(not a terminal, and no --approve given)")
            try:
                answer = await self.channel.ask(request, destructive=destructive)
            except ChannelUnavailable as exc:
                return False, self._unavailable(spec, call, str(exc))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                return False, self._unavailable(spec, call, f"the channel failed: "
                                                f"{type(exc).__name__}: {exc}")
            keep = allows(answer.choice) and (answer.confirmed or not destructive)
            message = answer.message
            if allows(answer.choice) and not keep:
                message = "a destructive call needs a second confirmation"
            elif keep and answer.choice != "allow_once":
                message = "allowed once: a composite call cannot be granted beyond this call"
            earlier = ApprovalDecision(
                self.session_id, call_id=call.call_id,
                decision="allow_once" if keep else "deny",
                decided_by=self.channel.name, scope="once" if keep else "call",
                message=message, decided_at=self.clock())
            self._emit(earlier)
            self._decisions[call.call_id] = earlier
        if allows(earlier.decision):
            return True, GateOutcome(True, user_approved=True)
        said = f" The user said: {earlier.message}" if earlier.message else ""
        return False, GateOutcome(False, ErrorCode.APPROVAL_DENIED, (
            f"The user denied the call to {spec.name!r} ({verdict.reason}); none of its "
            f"steps ran.{said} Do not retry the same call; adapt, or ask the user."))

    def write_rule(self, path: Path) -> WriteRule | None:
        """The user's deny rule, else ask rule, for writing or editing `path` (absolute),
        as the settings are now (kernel.policy.write_rules)."""
        return write_rule(self.settings.permissions, os.path.normpath(path),
                          str(self.path_policy.workspace), str(self.home))

    async def review(self, spec: ToolSpec, call: ToolCall, args: Mapping[str, Any],
                     held: Review) -> bool:
        """Ask the user whether to keep the changes `call` made that are held for them
        (kernel.transaction.judge), in every mode: True when they kept them. Asked like an
        approval of that call (its request's rule is HELD_RULE); no channel, a failed one or
        any answer but an allow keeps nothing."""
        request = ApprovalRequest(
            self.session_id, call_id=call.call_id, name=spec.name, input=dict(args),
            risk=spec.shown_risk, reason=held.reason, preview=held.preview, rule=HELD_RULE,
            can_always=False, choices=list(HELD_CHOICES), full_preview=held.full_preview)
        async with self._asking:
            self._emit(request)
            if self.channel is None:
                self._unavailable(spec, call, "no approval channel is connected")
                return False
            try:
                answer = await self.channel.ask(request, destructive=False)
            except ChannelUnavailable as exc:
                self._unavailable(spec, call, str(exc))
                return False
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._unavailable(spec, call, f"the channel failed: {type(exc).__name__}: "
                                  f"{exc}")
                return False
            keep = allows(answer.choice)
            self._emit(ApprovalDecision(
                self.session_id, call_id=call.call_id,
                decision="allow_once" if keep else "deny",
                decided_by=self.channel.name, scope="once" if keep else "call", rule=HELD_RULE,
                message=answer.message, decided_at=self.clock()))
            return keep

    # -- internals -------------------------------------------------------------------------

    def _unless_interrupted(self, spec: ToolSpec, call: ToolCall, decision: Decision
                            ) -> Decision:
        """A command allowed before and interrupted while it ran is asked again (a new
        request); one whose such request is still unanswered keeps being asked."""
        interrupted = call.call_id in self._interrupted
        self._interrupted.discard(call.call_id)
        if spec.risk not in RERUN_ASKS or decision.verdict is Verdict.DENY:
            return decision
        if interrupted:
            self._requests.pop(call.call_id, None)
            self._decisions.pop(call.call_id, None)
        else:
            pending = self._requests.get(call.call_id)
            if (pending is None or pending.rule != INTERRUPTED_RULE
                    or call.call_id in self._decisions):
                return decision
        return replace(decision, verdict=Verdict.ASK, decided_by=INTERRUPTED_RULE,
                       reason=INTERRUPTED_REASON, can_session=False, can_always=False)

    def _current_settings(self) -> Settings:
        """The settings, re-read when settings.json changed on disk (a rule added or revoked
        by another session, or by hand). A file that no longer loads raises SettingsError."""
        self.settings = self._file.current()
        return self.settings

    def _saved(self, settings: Settings) -> None:
        self.settings = settings
        self._file.saved(settings)

    def _allowed(self, decision: Decision, facts: CallFacts, *, user_approved: bool,
                 network: bool | None = None, review_all: bool = False) -> GateOutcome:
        extra = tuple(v.resolved for v in facts.paths.values() if not v.allowed)
        net = decision.network if network is None else network
        return GateOutcome(True, network=net, user_approved=user_approved, extra_paths=extra,
                           review_all=review_all)

    def _record_policy(self, call: ToolCall, decision: Decision) -> None:
        self._emit(ApprovalDecision(
            self.session_id, call_id=call.call_id,
            decision="allow" if decision.verdict is Verdict.ALLOW else "deny",
            decided_by="policy", scope="call", rule=decision.decided_by,
            message=decision.reason, network=decision.network, decided_at=self.clock()))

    async def _ask(self, spec: ToolSpec, call: ToolCall, args: Mapping[str, Any],
                   decision: Decision, facts: CallFacts) -> GateOutcome:
        destructive = decision.risk is Risk.DESTRUCTIVE
        earlier = self._decisions.get(call.call_id)
        if earlier is not None:
            return self._outcome(spec, decision, facts, earlier)
        request = self._requests.get(call.call_id)
        if request is None:
            preview = build_preview(spec, args, policy=self.path_policy, paths=facts.paths,
                                    sandbox=self.sandbox.describe(), network=decision.network,
                                    local_network=self.settings.exec.local_network)
            rules = grant_rules(spec, facts, self.session())
            always = [{"rule": r.text, "words": describe(r)} for r in rules
                      ] if decision.can_always else []
            request = ApprovalRequest(
                self.session_id, call_id=call.call_id, name=spec.name, input=dict(args),
                risk=_shown(spec, decision), reason=decision.reason, preview=preview,
                rule=decision.decided_by, can_always=decision.can_always,
                risk_level=decision.level, always_rules=always,
                choices=list(offered(decision, facts, always=bool(always))))
            self._emit(request)
            self._requests[call.call_id] = request
        else:
            self._report(request)
        if self.channel is None:
            return self._unavailable(spec, call, "no approval channel is connected (not a "
                                     "terminal, and no --approve given)")
        try:
            answer = await self.channel.ask(request, destructive=destructive)
        except ChannelUnavailable as exc:
            return self._unavailable(spec, call, str(exc))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            return self._unavailable(spec, call, f"the channel failed: {type(exc).__name__}: "
                                     f"{exc}")
        recorded = self._record_answer(spec, call, decision, facts, answer, destructive,
                                       request.offered())
        return self._outcome(spec, decision, facts, recorded)

    def _record_answer(self, spec: ToolSpec, call: ToolCall, decision: Decision,
                       facts: CallFacts, answer: Answer, destructive: bool,
                       choices: tuple[Choice, ...]) -> ApprovalDecision:
        by = self.channel.name if self.channel is not None else "user"
        choice: Choice = answer.choice
        message, rule = answer.message, ""
        scope: DecisionScope = "once"
        if allows(choice) and destructive and not answer.confirmed:
            choice, message = "deny", "a destructive call needs a second confirmation"
        if choice == "allow_review" and choice not in choices:
            choice, message = "deny", REVIEW_UNOFFERED
        if choice == "allow_session" and not decision.can_session:
            choice, message = "allow_once", "allowed once: this call cannot be granted "\
                "for the session"
        if choice == "allow_always" and not decision.can_always:
            choice, message = "allow_once", "allowed once: this call cannot be always "\
                "allowed"
        if choice in ("allow_session", "allow_always"):
            texts = [r.text for r in grant_rules(spec, facts, self.session())]
            rule = encode_rules(texts)
            self.fingerprints.record(texts, spec)
            scope = "session" if choice == "allow_session" else "always"
            if choice == "allow_session":
                for r in grant_rules(spec, facts, self.session()):
                    self._grants[r.text] = Grant(r, network=decision.network)
            else:
                message = self._save_always(texts)
        elif choice == "deny":
            scope = "call"
        event = ApprovalDecision(
            self.session_id, call_id=call.call_id, decision=choice, decided_by=by,
            scope=scope, rule=rule, message=message,
            network=decision.network and allows(choice), decided_at=self.clock())
        self._emit(event)
        self._decisions[call.call_id] = event
        return event

    def _save_always(self, texts: list[str]) -> str:
        try:
            for text in texts:
                self._saved(add_rule(self.app_paths, "allow", text))
        except (SettingsError, OSError) as exc:
            return f"allowed once: the rule could not be saved to settings.json ({exc})"
        return ""

    def _outcome(self, spec: ToolSpec, decision: Decision, facts: CallFacts,
                 recorded: ApprovalDecision) -> GateOutcome:
        if recorded.decision == "deny":
            said = f" The user said: {recorded.message}" if recorded.message else ""
            return GateOutcome(False, ErrorCode.APPROVAL_DENIED, (
                f"The user denied the call to {spec.name!r} ({decision.reason}); nothing was "
                f"run.{said} Do not retry the same call; adapt, or ask the user."))
        review = recorded.decision == "allow_review"
        return self._allowed(decision, facts, user_approved=True,
                             network=recorded.network and not review, review_all=review)

    def _unavailable(self, spec: ToolSpec, call: ToolCall, why: str) -> GateOutcome:
        by = self.channel.name if self.channel is not None else "none"
        event = ApprovalDecision(self.session_id, call_id=call.call_id, decision="unavailable",
                                 decided_by=by, scope="call", message=why,
                                 decided_at=self.clock())
        self._emit(event)
        return GateOutcome(False, ErrorCode.APPROVAL_UNAVAILABLE, (
            f"The call to {spec.name!r} needs the user's approval, but no answer could be "
            f"obtained: {why}. It was not run. This is not a denial by the user; tell the user "
            f"what you wanted to do."))


REVIEW_UNOFFERED = ("Run and review was not offered for this call (it uses the network, or "
                    "commands do not run as transactions here): not run")

COMPOSITE_APPROVAL = "composite"
"""Who decided a step of a composite call that the user approved with that call."""
INTERRUPTED_RULE = "interrupted call"
INTERRUPTED_REASON = (
    "it was allowed and started before Reins stopped (the kernel ended while it ran), so it "
    "may have done part of its work (as a transaction, none of it in the workspace: what it "
    "wrote there was never applied); check, then allow it to run again from the start, or "
    "deny it")

RERUN_ASKS = frozenset({Risk.EXECUTE, Risk.DESTRUCTIVE})
"""Tools whose interrupted run may have left partial effects: asked again before rerunning."""



@dataclass(frozen=True)
class AskHistory:
    """What a session's history says about its approvals, call by call."""

    requests: dict[str, ApprovalRequest]
    """Each call's latest request."""
    decisions: dict[str, ApprovalDecision]
    """A person's answer to a call's latest request."""
    allowed: frozenset[str]
    """Calls allowed (by the policy or a person) since their latest request: reaching the
    gate again, such a call was interrupted before its result was stored."""


def ask_history(events: Iterable[Event]) -> AskHistory:
    """Read the approvals of a history in order (pure). A request asked again after an
    interruption starts over: earlier answers do not count for it."""
    requests: dict[str, ApprovalRequest] = {}
    decisions: dict[str, ApprovalDecision] = {}
    allowed: set[str] = set()
    for event in events:
        if isinstance(event, ApprovalRequest):
            requests[event.call_id] = event
            decisions.pop(event.call_id, None)
            allowed.discard(event.call_id)
        elif isinstance(event, ApprovalDecision):
            if event.decided_by != "policy" and event.decision in CHOICES:
                decisions[event.call_id] = event
            if allows(event.decision):
                allowed.add(event.call_id)
            else:
                allowed.discard(event.call_id)
    return AskHistory(requests, decisions, frozenset(allowed))


def gate_factory(*, app_paths: AppPaths, sandbox: SandboxState,
                 channel: ApprovalChannel | None, settings_file: SettingsFile | None = None,
                 ) -> Callable[[GateContext], PolicyGate]:
    """What the loop's `Agent(gate_factory=...)` takes: a PolicyGate per run of a session,
    in the session's stored mode, with the settings as they are on disk at that moment
    (an "always" rule saved in one session applies to the next). A settings file that
    cannot be loaded raises SettingsError: the run does not start. `settings_file`: the
    reading of the file to share (the app's kernel passes its own); by default each gate
    reads it afresh."""

    def build(ctx: GateContext) -> PolicyGate:
        source = settings_file or SettingsFile(app_paths)
        return PolicyGate(
            session_id=ctx.session_id, mode=Mode(ctx.mode),
            path_policy=ctx.path_policy, settings=source.current(), settings_file=source,
            sandbox=sandbox, channel=channel, emit=ctx.emit, report=ctx.report, app_paths=app_paths,
            history=ctx.history)

    return build


def _undecided(spec: ToolSpec, exc: ToolError | SettingsError) -> GateOutcome:
    """A call the policy could not decide: a ToolError's own refusal (a command that cannot
    be read), or settings that no longer load."""
    if isinstance(exc, ToolError):
        return GateOutcome(False, exc.code, f"{exc.message}\n{exc.hint}".strip())
    return GateOutcome(False, ErrorCode.PERMISSION_DENIED, (
        f"The call to {spec.name!r} was not run: the permission settings changed and cannot "
        f"be loaded ({exc}). Tell the user to fix settings.json."))


def _shown(spec: ToolSpec, decision: Decision) -> Risk:
    """The risk a person sees: the policy's escalated risk when it escalated the call,
    otherwise the tool's displayed risk (an MCP server's hint may change that)."""
    return decision.risk if decision.risk is not spec.risk else spec.shown_risk
