"""The facts the policy needs about one call, gathered at the edge (paths are resolved here).

Paths go through THE path policy (`PathPolicy.classify`), commands through kernel.shell
(`split_commands` for the rule matching, `classify` for destructive / network). Nothing here
decides anything; `decide()` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from kernel.policy.decide import CallFacts, CommandFacts
from kernel.policy.rules import COMMAND_TOOLS
from kernel.shell.classify import classify
from kernel.shell.parse import ShellParseError, split_commands
from kernel.tools.pathpolicy import PathPolicy
from kernel.tools.spec import Risk, ToolSpec


class SandboxState(Protocol):
    """Whether commands can run sandboxed (kernel.sandbox.detect provides it)."""

    @property
    def available(self) -> bool: ...

    def describe(self) -> str:
        """One line for people: `bubblewrap`, or `none (reason; fix)`."""
        ...


def command_facts(text: str) -> CommandFacts:
    """A command parsed into its simple commands and classified."""
    try:
        parts = split_commands(text)
    except ShellParseError as exc:
        return CommandFacts(text=text, parse_error=str(exc))
    found = classify(text)
    return CommandFacts(
        text=text,
        parts=tuple(tuple(p) for p in parts),
        destructive=found.destructive,
        destructive_reason="; ".join(found.reasons),
        network=found.network,
    )


def call_facts(spec: ToolSpec, args: Mapping[str, Any], policy: PathPolicy,
               sandbox: SandboxState) -> CallFacts:
    """Path verdicts for the path arguments present, the command facts for command tools.
    Raises ToolError for a path the path policy cannot even resolve (empty, NUL)."""
    write = spec.risk in (Risk.WRITE, Risk.DESTRUCTIVE)
    paths = {name: policy.classify(args[name], write=write)
             for name in spec.path_params if isinstance(args.get(name), str)}
    command = None
    arg = COMMAND_TOOLS.get(spec.name)
    if arg is not None and isinstance(args.get(arg), str):
        command = command_facts(args[arg])
    return CallFacts(paths=paths, command=command, sandboxed=sandbox.available)
