"""Policy decision time for one call against 1,000 rules (goal ≤ 50 µs median).

Figures, each against a bare Python function call measured in the same run:
- `decide()` for a compound command allowed part by part among 1,000 rules;
- `decide()` for a write whose path matches none of the 1,000 rules (falls to the mode);
- the gate's whole decision for the command: parse + classify + decide.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from bench.common import fmt_seconds, report, time_calls
from kernel.paths import AppPaths
from kernel.policy.decide import Mode, Session, decide
from kernel.policy.facts import call_facts, command_facts
from kernel.policy.rules import parse_rule
from kernel.policy.ruleset import RuleSet
from kernel.tools.builtin.files import write_file
from kernel.tools.pathpolicy import PathPolicy
from kernel.tools.spec import Risk, ToolSpec

N = 20_000
GOAL_S = 50e-6


def _noop(**_kw: object) -> str:
    return ""


RUN_COMMAND = ToolSpec(name="run_command", description="bench", input_schema={"type": "object"},
                       handler=_noop, risk=Risk.EXECUTE, path_params=("cwd",))


class _Sandbox:
    available = True

    def describe(self) -> str:
        return "bwrap"


def _rules() -> tuple[RuleSet, RuleSet, RuleSet]:
    allow = [f"run_command(tool{i} sub{i % 7} *)" for i in range(500)]
    allow += [f"write_file(project{i}/**)" for i in range(200)]
    allow += [f"read_file(~/notes{i}/**)" for i in range(100)]
    allow += [f"mcp__server{i}__*" for i in range(100)]
    allow += ["run_command(git status)", "run_command(npm test *)", "run_command(*-lint *)"]
    ask = [f"run_command(deploy{i} *)" for i in range(50)]
    deny = [f"run_command(rm{i} *)" for i in range(47)]
    total = len(allow) + len(ask) + len(deny)
    assert total == 1_000, total
    return tuple(RuleSet([parse_rule(t) for t in texts]) for texts in (allow, ask, deny))


def run() -> None:
    allow, ask, deny = _rules()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        workspace = root / "ws"
        workspace.mkdir()
        policy = PathPolicy(workspace, app_paths=AppPaths(data=root / "d", config=root / "c"))
        session = Session(Mode.ASK, policy.workspace, root)
        text = "git status && npm test -- --watch && eslint-lint --fix src"
        cmd_args = {"command": text}
        cmd_facts = call_facts(RUN_COMMAND, cmd_args, policy, _Sandbox())
        write_args = {"path": "src/main.py", "content": "x"}
        write_facts = call_facts(write_file, write_args, policy, _Sandbox())

        allowed = decide(RUN_COMMAND, cmd_args, cmd_facts, session, allow, ask, deny)
        assert allowed.verdict.value == "allow", allowed
        asked = decide(write_file, write_args, write_facts, session, allow, ask, deny)
        assert asked.decided_by == "mode ask", asked

        floor = time_calls(lambda: _noop(), N)
        command = time_calls(
            lambda: decide(RUN_COMMAND, cmd_args, cmd_facts, session, allow, ask, deny), N)
        miss = time_calls(
            lambda: decide(write_file, write_args, write_facts, session, allow, ask, deny), N)

        def whole() -> object:
            facts = call_facts(RUN_COMMAND, cmd_args, policy, _Sandbox())
            return decide(RUN_COMMAND, cmd_args, facts, session, allow, ask, deny)

        full = time_calls(whole, N // 4)
        parse_only = time_calls(lambda: command_facts(text), N // 4)

    report("bare function call (floor)", fmt_seconds(floor.median))
    for label, stats in (
        ("decide: 3-part command allowed among 1,000 rules", command),
        ("decide: write matching none of 1,000 rules", miss),
    ):
        report(label, fmt_seconds(stats.median), ratio=stats.median / floor.median,
               goal=f"≤ {fmt_seconds(GOAL_S)} median", ok=stats.median <= GOAL_S)
        report("  p99", fmt_seconds(stats.p99), ratio=stats.p99 / floor.median)
    report("gate decision incl. parse + classify", fmt_seconds(full.median),
           ratio=full.median / floor.median)
    report("  of which parse + classify", fmt_seconds(parse_only.median),
           ratio=parse_only.median / floor.median)
