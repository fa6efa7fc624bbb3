"""Composite and fallback tools: what they are, how they are declared and checked (pure).

A *composite* is one tool for the model that runs an ordered pipeline of registered tools.
Each step names a tool and where each of its arguments comes from: a JSON pointer into the
composite call's input (`/input/path`) or into an earlier step's result (`/steps/0/text`,
its text; `/steps/0/json/items/0`, its text read as JSON), or a constant. A *fallback*
names a primary tool and the tool a call of it falls back to, with the same arguments, when
the primary fails with one of the declared error codes.

Both are declared by name over registered tools, built-in and MCP alike (settings.json's
`tools` section, `TOOLS_SCHEMA`, read by kernel.policy.settings; or by code), and held by
the one registry (kernel.tools.registry), which checks them against the tools it has and
offers a composite once every step is registered. The dispatcher runs them
(kernel.tools.dispatch): every step and every fallback is a call of its own, through the
same pipeline (validation, the gate, execution, externalization).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kernel.tools.errors import ErrorCode

NAME = r"^[a-zA-Z0-9_-]{1,64}$"
FALLBACK_CODES: tuple[ErrorCode, ...] = (
    ErrorCode.TIMEOUT, ErrorCode.EXECUTION_ERROR, ErrorCode.RATE_LIMITED)
"""The error codes a fallback may be declared on: failures of the tool itself. A refusal
(denied, invalid arguments, unknown tool, cancelled) never falls back to another tool."""
MCP_NAME = re.compile(r"mcp__[A-Za-z0-9_-]+?__[A-Za-z0-9_-]+\Z")

_POINTER = {"type": "string", "pattern": "^/(input|steps/[0-9]+/(text|json))(/.*)?$"}
TOOLS_SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "composites": {
            "type": "object",
            "propertyNames": {"pattern": NAME},
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "required": ["description", "steps"],
                "properties": {
                    "description": {"type": "string", "minLength": 1},
                    "input_schema": {"type": "object"},
                    "steps": {
                        "type": "array", "minItems": 1,
                        "items": {
                            "type": "object",
                            "additionalProperties": False,
                            "required": ["tool"],
                            "properties": {
                                "tool": {"type": "string", "pattern": NAME},
                                "args": {"type": "object", "additionalProperties": _POINTER},
                                "const": {"type": "object"},
                            },
                        },
                    },
                },
            },
        },
        "fallbacks": {
            "type": "object",
            "propertyNames": {"pattern": NAME},
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "required": ["to", "on"],
                "properties": {
                    "to": {"type": "string", "pattern": NAME},
                    "on": {"type": "array", "minItems": 1, "uniqueItems": True,
                           "items": {"enum": [c.value for c in FALLBACK_CODES]}},
                },
            },
        },
    },
}
"""settings.json's `tools` section:

```json
"tools": {
  "composites": {"write_and_run": {
      "description": "Write a script, then run a command.",
      "input_schema": {"type": "object", "required": ["path", "content", "command"],
                       "properties": {"path": {"type": "string"}, ...}},
      "steps": [{"tool": "write_file", "args": {"path": "/input/path",
                                                "content": "/input/content"}},
                {"tool": "run_command", "args": {"command": "/input/command"}}]}},
  "fallbacks": {"mcp__primary__lookup": {"to": "mcp__mirror__lookup", "on": ["timeout"]}}
}
```"""


class DeclarationError(ValueError):
    """A declaration that cannot be used: where it is (a key path in the `tools` section)
    and what is wrong."""

    def __init__(self, path: Sequence[str | int], problem: str) -> None:
        super().__init__(f"{'/'.join(str(p) for p in path)}: {problem}")
        self.path = tuple(path)
        self.problem = problem


@dataclass(frozen=True)
class Source:
    """Where one step argument comes from: the call's input (`step` None) or an earlier
    step's result, its text or (`json`) its text read as JSON; then a path into it."""

    step: int | None
    json: bool
    path: tuple[str, ...]
    text: str
    """The pointer as written."""

    def value(self, args: Mapping[str, Any], texts: Sequence[str]) -> Any:
        """The value it points at (StepArgsError when there is none)."""
        if self.step is None:
            return _walk(args, self.path, self.text)
        if self.step >= len(texts):
            raise StepArgsError(f"{self.text}: step {self.step} has no result")
        if not self.json:
            return texts[self.step]
        try:
            document = json.loads(texts[self.step])
        except ValueError as exc:
            raise StepArgsError(f"{self.text}: the result of step {self.step} is not JSON "
                                f"({exc})") from exc
        return _walk(document, self.path, self.text)


class StepArgsError(ValueError):
    """A step's arguments could not be made (a pointer leads nowhere)."""


def _walk(document: Any, path: Sequence[str], pointer: str) -> Any:
    node = document
    for part in path:
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise StepArgsError(f"{pointer}: there is no {part!r} there")
    return node


def parse_pointer(text: str) -> Source:
    """A pointer (`/input/a/0`, `/steps/1/text`, `/steps/1/json/a`) as a Source (JSON
    Pointer escapes `~0` and `~1` in its parts); ValueError when it is none of these."""
    parts = [p.replace("~1", "/").replace("~0", "~") for p in text.split("/")[1:]]
    if text.startswith("/") and parts and parts[0] == "input":
        return Source(None, False, tuple(parts[1:]), text)
    if (text.startswith("/") and len(parts) >= 3 and parts[0] == "steps"
            and parts[1].isdigit() and parts[2] in ("text", "json")):
        if parts[2] == "text" and len(parts) > 3:
            raise ValueError(f"{text!r}: a step's text has no parts (use /steps/N/json/...)")
        return Source(int(parts[1]), parts[2] == "json", tuple(parts[3:]), text)
    raise ValueError(f"{text!r} is not /input/..., /steps/N/text or /steps/N/json/...")


@dataclass(frozen=True)
class CompositeStep:
    tool: str
    args: Mapping[str, Source] = field(default_factory=dict)
    const: Mapping[str, Any] = field(default_factory=dict)

    @property
    def needs_results(self) -> bool:
        """Its arguments come (in part) from earlier steps' results: they are known only
        when those steps have run."""
        return any(s.step is not None for s in self.args.values())

    def arguments(self, args: Mapping[str, Any], texts: Sequence[str]) -> dict[str, Any]:
        """The step's arguments for a call with `args`, after steps that gave `texts`."""
        made = dict(self.const)
        made.update({name: source.value(args, texts) for name, source in self.args.items()})
        return made

    def shown(self) -> dict[str, str]:
        """Where each argument comes from, for a person (`path ← /input/path`)."""
        out = {name: s.text for name, s in self.args.items()}
        out.update({name: json.dumps(v, ensure_ascii=False) for name, v in self.const.items()})
        return out


@dataclass(frozen=True)
class Composite:
    name: str
    description: str
    input_schema: Mapping[str, Any]
    steps: tuple[CompositeStep, ...]


@dataclass(frozen=True)
class Fallback:
    tool: str
    to: str
    on: frozenset[ErrorCode]


@dataclass(frozen=True)
class Declarations:
    composites: tuple[Composite, ...] = ()
    fallbacks: tuple[Fallback, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.composites or self.fallbacks)


_OPEN_SCHEMA: Mapping[str, Any] = {"type": "object"}


def parse_declarations(raw: Mapping[str, Any]) -> Declarations:
    """The `tools` section (already valid against TOOLS_SCHEMA) as Declarations;
    DeclarationError for a pointer that cannot be read, a step reading its own or a later
    step's result, or an argument given both as a pointer and a constant."""
    composites = []
    for name, entry in raw.get("composites", {}).items():
        steps = []
        for i, step in enumerate(entry["steps"]):
            sources: dict[str, Source] = {}
            for arg, text in step.get("args", {}).items():
                where = ("composites", name, "steps", i, "args", arg)
                try:
                    source = parse_pointer(text)
                except ValueError as exc:
                    raise DeclarationError(where, str(exc)) from exc
                if source.step is not None and source.step >= i:
                    raise DeclarationError(where, f"{text} reads step {source.step}'s result, "
                                                  f"but step {i} runs before it has one")
                sources[arg] = source
            const = dict(step.get("const", {}))
            both = sorted(set(sources) & set(const))
            if both:
                raise DeclarationError(("composites", name, "steps", i, "const"),
                                       f"{both} given both in args and in const")
            steps.append(CompositeStep(step["tool"], sources, const))
        composites.append(Composite(name, entry["description"],
                                    entry.get("input_schema", _OPEN_SCHEMA), tuple(steps)))
    fallbacks = [Fallback(tool, entry["to"], frozenset(ErrorCode(c) for c in entry["on"]))
                 for tool, entry in raw.get("fallbacks", {}).items()]
    return Declarations(tuple(composites), tuple(fallbacks))


def check_declarations(decls: Declarations, known: Callable[[str], bool]
                       ) -> list[DeclarationError]:
    """Every problem of `decls` that the tools' names show (pure): a composite named like a
    tool, a step or fallback naming no tool (`known`, an MCP tool's `mcp__server__tool`
    name, or a declared composite), a composite containing itself (directly or through
    others), a fallback to itself or a ring of fallbacks, a fallback declared on a code
    that is not a tool failure."""
    problems: list[DeclarationError] = []
    names = {c.name for c in decls.composites}

    def exists(tool: str) -> bool:
        return known(tool) or tool in names or MCP_NAME.match(tool) is not None

    for composite in decls.composites:
        if known(composite.name) or MCP_NAME.match(composite.name):
            problems.append(DeclarationError(("composites", composite.name), (
                f"{composite.name!r} is the name of a tool; give the composite a name of its "
                f"own")))
        for i, step in enumerate(composite.steps):
            if not exists(step.tool):
                problems.append(DeclarationError(
                    ("composites", composite.name, "steps", i, "tool"),
                    f"unknown step: there is no tool {step.tool!r} (a built-in tool, "
                    f"mcp__<server>__<tool>, or a declared composite)"))
    problems.extend(_cycles({c.name: [s.tool for s in c.steps] for c in decls.composites},
                            "composites", "contains itself"))
    for fallback in decls.fallbacks:
        for key, tool in (("", fallback.tool), ("to", fallback.to)):
            if not exists(tool):
                problems.append(DeclarationError(
                    ("fallbacks", fallback.tool, *((key,) if key else ())),
                    f"unknown tool {tool!r} (a built-in tool, mcp__<server>__<tool>, or a "
                    f"declared composite)"))
        bad = sorted(c.value for c in fallback.on if c not in FALLBACK_CODES)
        if bad:
            problems.append(DeclarationError(("fallbacks", fallback.tool, "on"), (
                f"{bad} are not failures of a tool; a fallback is taken only on "
                f"{[c.value for c in FALLBACK_CODES]}")))
    problems.extend(_cycles({f.tool: [f.to] for f in decls.fallbacks}, "fallbacks",
                            "falls back to itself"))
    return problems


def _cycles(edges: Mapping[str, Sequence[str]], section: str, what: str
            ) -> list[DeclarationError]:
    """One problem per name that reaches itself through `edges`, with the ring named."""
    problems = []
    for start in edges:
        ring = _ring(start, edges)
        if ring:
            problems.append(DeclarationError((section, start), (
                f"{start!r} {what}: {' → '.join(ring)}")))
    return problems


def _ring(start: str, edges: Mapping[str, Sequence[str]]) -> list[str]:
    """A path from `start` back to itself ([] when there is none), depth first."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        node, path = stack.pop()
        for nxt in edges.get(node, ()):
            if nxt == start:
                return [*path, start]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, [*path, nxt]))
    return []


def step_problems(composite: Composite, schemas: Mapping[str, Mapping[str, Any]]
                  ) -> list[DeclarationError]:
    """What the steps' schemas say is wrong with a composite whose steps are all
    registered (pure; `schemas`: each step tool's input schema): an argument the step's
    tool has no parameter for, a required parameter no argument gives, an `/input/...`
    pointer to a property the composite's input schema does not have."""
    problems = []
    inputs = composite.input_schema.get("properties")
    for i, step in enumerate(composite.steps):
        schema = schemas[step.tool]
        props = schema.get("properties", {})
        given = set(step.args) | set(step.const)
        where = ("composites", composite.name, "steps", i)
        if schema.get("additionalProperties") is False:
            extra = sorted(given - set(props))
            if extra:
                problems.append(DeclarationError((*where, "args"), (
                    f"{step.tool} has no parameter {extra}")))
        missing = sorted(set(schema.get("required", ())) - given)
        if missing:
            problems.append(DeclarationError((*where, "args"), (
                f"{step.tool} requires {missing}, which no argument gives")))
        for arg, source in step.args.items():
            if (source.step is None and source.path and isinstance(inputs, Mapping)
                    and source.path[0] not in inputs):
                problems.append(DeclarationError((*where, "args", arg), (
                    f"{source.text}: the composite's input_schema has no property "
                    f"{source.path[0]!r}")))
    return problems


def schema_mismatch(primary: Mapping[str, Any], fallback: Mapping[str, Any]) -> str:
    """Why a call valid for `primary` may be refused by `fallback` ('' when it may not): a
    parameter the fallback requires that the primary does not, a parameter of the primary
    the fallback does not take (when it takes no others), or a parameter whose declared
    type differs (pure; the fallback receives the primary's arguments unchanged)."""
    p_props = primary.get("properties", {})
    f_props = fallback.get("properties", {})
    problems = []
    extra = sorted(set(fallback.get("required", ())) - set(primary.get("required", ())))
    if extra:
        problems.append(f"it requires {extra}, which calls of the primary may lack")
    if fallback.get("additionalProperties") is False:
        unknown = sorted(set(p_props) - set(f_props))
        if unknown:
            problems.append(f"it has no parameter {unknown}")
    for name in sorted(set(p_props) & set(f_props)):
        p_type, f_type = p_props[name].get("type"), f_props[name].get("type")
        if p_type is not None and f_type is not None and p_type != f_type:
            problems.append(f"{name!r} is {f_type!r} there but {p_type!r} in the primary")
    return "; ".join(problems)


def child_id(parent: str, part: str) -> str:
    """The call id of a step or fallback of call `parent` (`<parent>-<part>`; a valid call
    id: a parent id too long for the suffix is shortened and made unique with a hash)."""
    suffix = f"-{part}"
    if len(parent) + len(suffix) <= 128:
        return parent + suffix
    digest = hashlib.sha256(parent.encode()).hexdigest()[:16]
    return f"{parent[:128 - len(suffix) - 17]}_{digest}{suffix}"


@dataclass(frozen=True)
class StepRun:
    """How one step of a composite call went, for its summary."""

    index: int
    tool: str
    call_id: str
    text: str
    error_code: str | None = None
    ran: bool = True


def composite_summary(name: str, steps: Sequence[StepRun], total: int) -> str:
    """The one tool_result the model gets for a composite call: each step's outcome and
    text, and the steps that did not run after a failure (pure)."""
    lines = [f"{name}: {len(steps)} of {total} steps"
             + (" ran" if all(s.ran for s in steps) else " reached")]
    for run in steps:
        state = "ok" if run.error_code is None else f"error: {run.error_code}"
        if not run.ran:
            state = "not run"
        lines.append(f"--- step {run.index + 1} {run.tool} ({state})")
        lines.append(run.text)
    if len(steps) < total:
        lines.append(f"--- steps {len(steps) + 1}-{total} not run: step {len(steps)} failed"
                     if len(steps) + 1 < total else
                     f"--- step {total} not run: step {len(steps)} failed")
    return "\n".join(lines)


def fallback_summary(primary: str, code: str, primary_text: str, to: str,
                     fallback_text: str) -> str:
    """The tool_result of a call that fell back (pure): the primary's failure, then the
    fallback's result, each said as such."""
    return (f"{primary} failed ({code}), so Reins fell back to {to}.\n"
            f"--- {primary} ({code})\n{primary_text}\n"
            f"--- {to}\n{fallback_text}")
