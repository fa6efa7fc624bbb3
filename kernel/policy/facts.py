"""The facts the policy needs about one call, gathered at the edge (paths are resolved here).

Paths go through THE path policy (`PathPolicy.classify`), commands through kernel.shell: one
reading (`read`) gives the parts the rules match, what each word is and, through `classify`,
the command's risk label (destructive, opaque, network, privilege). What a command writes is
not guessed here: it is judged after it ran (kernel.transaction). Nothing here decides
anything; `decide()` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from kernel.policy.decide import CallFacts, CommandFacts
from kernel.policy.rules import COMMAND_TOOLS
from kernel.shell.classify import classify
from kernel.shell.parse import ShellParseError, read
from kernel.shell.words import LITERAL
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
    """A command read once (kernel.shell.parse.read) and classified from that reading."""
    try:
        line = read(text)
    except ShellParseError as exc:
        return CommandFacts(text=text, parse_error=str(exc))
    found = classify(line)
    return CommandFacts(
        text=text,
        parts=line.parts,
        kinds=line.kinds,
        literal=all(set(k) <= {LITERAL} for k in line.kinds),
        destructive=found.destructive,
        destructive_reason="; ".join(found.reasons),
        network=found.network,
        level=found.level,
    )


def call_facts(spec: ToolSpec, args: Mapping[str, Any], policy: PathPolicy,
               sandbox: SandboxState) -> CallFacts:
    """Path verdicts for the path arguments present, the command facts for command tools.
    Raises ToolError for a path the path policy cannot even resolve (empty, NUL)."""
    write = spec.risk in (Risk.WRITE, Risk.DESTRUCTIVE)
    paths = {name: policy.classify(args[name], write=write)
             for name in spec.path_params if isinstance(args.get(name), str)}
    arg = COMMAND_TOOLS.get(spec.name)
    command = command_facts(args[arg]) if arg is not None and isinstance(args.get(arg), str) \
        else None
    return CallFacts(paths=paths, command=command, sandboxed=sandbox.available)
