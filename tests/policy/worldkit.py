"""Helpers for the policy tests: real specs, a real PathPolicy, rule sets."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from kernel.paths import AppPaths
from kernel.policy.decide import (
    CallFacts,
    CommandFacts,
    Decision,
    Grant,
    Mode,
    Session,
    decide,
)
from kernel.policy.facts import call_facts, command_facts
from kernel.policy.rules import parse_rule
from kernel.policy.ruleset import RuleSet
from kernel.tools.pathpolicy import PathPolicy
from kernel.tools.spec import Risk, ToolSpec


def _noop(**_kwargs: Any) -> str:
    return "ok"


def make_spec(name: str, risk: Risk, *, path_params: Sequence[str] = (),
              origin: str = "builtin") -> ToolSpec:
    return ToolSpec(name=name, description=f"{name} for tests",
                    input_schema={"type": "object"}, handler=_noop, risk=risk,
                    path_params=tuple(path_params), origin=origin)


READ = make_spec("read_file", Risk.READ, path_params=("path",))
WRITE = make_spec("write_file", Risk.WRITE, path_params=("path",))
COMMAND = make_spec("run_command", Risk.EXECUTE, path_params=("cwd",))
MCP_READ = make_spec("mcp__git__status", Risk.READ, origin="mcp:git")


class SandboxState:
    """What the policy reads of the sandbox (kernel.sandbox.detect's): bubblewrap, or none."""

    def __init__(self, available: bool = True) -> None:
        self.available = available

    def describe(self) -> str:
        return "bubblewrap" if self.available else "none"


class PolicyWorld:
    """A workspace, a home folder and a real PathPolicy, to build call facts."""

    def __init__(self, root: Path) -> None:
        self.workspace = (root / "ws").resolve()
        self.home = (root / "home").resolve()
        self.workspace.mkdir()
        (self.home / "notes").mkdir(parents=True)
        self.paths = AppPaths(data=root / "reins" / "data", config=root / "reins" / "config")
        self.policy = PathPolicy(self.workspace, app_paths=self.paths)

    def facts(self, spec: ToolSpec, args: Mapping[str, Any], *, command: CommandFacts | None
              = None, sandboxed: bool = True) -> CallFacts:
        write = spec.risk in (Risk.WRITE, Risk.DESTRUCTIVE)
        paths = {n: self.policy.classify(str(args[n]), write=write)
                 for n in spec.path_params if n in args}
        return CallFacts(paths=paths, command=command, sandboxed=sandboxed)

    def session(self, mode: Mode, grants: Sequence[Grant] = ()) -> Session:
        return Session(mode=mode, workspace=self.workspace, home=self.home, grants=tuple(grants))

    def run_facts(self, command: str, *, sandboxed: bool = True,
                  cwd: str | None = None) -> CallFacts:
        """The facts of a run_command call as the gate finds them: the real shell reader,
        classifier and path policy."""
        args = {"command": command, **({"cwd": cwd} if cwd else {})}
        return call_facts(COMMAND, args, self.policy, SandboxState(sandboxed))

    def decide_command(self, command: str, mode: Mode, *, allow: Sequence[str] = (),
                       ask: Sequence[str] = (), deny: Sequence[str] = (),
                       grants: Sequence[Grant] = (), sandboxed: bool = True,
                       cwd: str | None = None) -> Decision:
        """`decide()` on a run_command call, from `run_facts`."""
        args = {"command": command, **({"cwd": cwd} if cwd else {})}
        facts = self.run_facts(command, sandboxed=sandboxed, cwd=cwd)
        sets = [RuleSet([parse_rule(t) for t in texts]) for texts in (allow, ask, deny)]
        return decide(COMMAND, args, facts, self.session(mode, grants), *sets)

    def decide(self, spec: ToolSpec, args: Mapping[str, Any], mode: Mode, *,
               allow: Sequence[str] = (), ask: Sequence[str] = (), deny: Sequence[str] = (),
               command: CommandFacts | None = None, sandboxed: bool = True,
               grants: Sequence[Grant] = ()) -> Decision:
        facts = self.facts(spec, args, command=command, sandboxed=sandboxed)
        sets = [RuleSet([parse_rule(t) for t in texts]) for texts in (allow, ask, deny)]
        return decide(spec, args, facts, self.session(mode, grants), *sets)


def command(text: str, *, destructive: bool = False, network: bool = False) -> CommandFacts:
    return replace(command_facts(text), destructive=destructive,
                   destructive_reason="test" * destructive, network=network)
