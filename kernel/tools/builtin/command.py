"""The run_command tool: one shell command in the sandbox (see kernel.sandbox.executor).

Built by `make_run_command(executor)` because it needs the session's executor. The output
goes to the call's spool file as it arrives; the model gets the same head/tail preview and
pointer as every other large result, and small outputs inline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kernel.sandbox.call_folders import remove_transaction
from kernel.sandbox.executor import CommandExecutor, CommandOutcome
from kernel.sandbox.refusal import CommandRefused, RefusalKind
from kernel.sandbox.revert import describe
from kernel.sandbox.settings import DEFAULT_GRACE_S
from kernel.shell.parse import ShellParseError, read
from kernel.tools.spec import (
    ErrorCode,
    Progress,
    Review,
    Risk,
    ToolContext,
    ToolError,
    ToolResult,
    ToolSpec,
)
from kernel.transaction.apply import start_stamp
from kernel.transaction.diff import Shown
from kernel.transaction.settle import Settled, settle

DEFAULT_TIMEOUT_S = 120
MAX_TIMEOUT_S = 600
HEADER_BUDGET = 2_000
"""Characters of the output limit kept for the result's header lines."""

DESCRIPTION = """\
Run one shell command (`/bin/sh -c`) in the workspace, inside a sandbox. The workspace is \
read-write; the rest of the filesystem is read-only, the user's home is hidden (HOME is an \
empty sandbox home), /tmp is private, and there is no network unless the user allowed it \
(a command that needs the network fails to resolve or connect). The environment holds only \
a few standard variables: secrets such as API keys are not passed, and the result names \
any that were withheld. Nothing keeps running after the call: background processes end \
with it. Stdout and stderr are returned together in the order they were written; a long \
output is shown as its beginning and end with the path of the full output, which \
read_tool_output can page through. The result starts with the exit code and the duration; \
a non-zero exit code is an error. Prefer the file tools for reading and editing files."""

SCHEMA: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "command": {
            "type": "string",
            "minLength": 1,
            "description": "The shell command line, e.g. `pytest -q tests/test_x.py`.",
        },
        "timeout_s": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_TIMEOUT_S,
            "default": DEFAULT_TIMEOUT_S,
            "description": "Seconds before the command is stopped (its output so far is kept).",
        },
        "cwd": {
            "type": "string",
            "description": "Working directory, relative to the workspace (default: the workspace).",
        },
    },
    "required": ["command"],
    "additionalProperties": False,
}


def _summary(args: Mapping[str, Any]) -> str:
    command = " ".join(str(args.get("command", "")).split())
    return command if len(command) <= 80 else command[:79] + "…"


def check_command(command: str) -> None:
    """Refuse what cannot be run: what kernel.shell cannot read (an unterminated quote, a NUL
    byte, a lone surrogate from JSON, an empty command). The reading is the one the policy
    used (kernel.shell.parse.read is cached), so what was approved is what is checked."""
    try:
        read(command)
    except ShellParseError as exc:
        raise ToolError(
            f"The command was not run: it cannot be parsed ({exc}).",
            hint="Check that every quote, substitution and parenthesis is closed.",
            code=ErrorCode.INVALID_ARGUMENTS,
        ) from exc


SHOWN_PINNED = 10


def _header(outcome: CommandOutcome) -> list[str]:
    exit_text = "none (never ended)" if outcome.exit_code is None else str(outcome.exit_code)
    lines = [
        f"exit code {exit_text} · {outcome.duration_s:.2f} s · sandbox: {outcome.sandbox} · "
        f"network: {'off' if outcome.network_scope == 'none' else outcome.network_scope}"
    ]
    if outcome.stopped:
        lines.append(outcome.stopped)
    if outcome.withheld_env:
        lines.append(
            "withheld environment variables (secrets, not passed to the command): "
            + ", ".join(outcome.withheld_env)
        )
    if outcome.write_error:
        lines.append(f"output incomplete: {outcome.write_error}")
    if outcome.output_cut is not None:
        lines.append(f"{outcome.output_cut.words} (the output ends with the last of them)")
    lines += describe(outcome.reverted, "the command")
    if outcome.pinned and not outcome.ok:
        lines.append("fixed in place by Reins while the command ran (links git or an editor "
                     "follows; removing, renaming or replacing them fails with 'Device or "
                     "resource busy'): " + ", ".join(outcome.pinned[:SHOWN_PINNED])
                     + (f" … and {len(outcome.pinned) - SHOWN_PINNED} more"
                        if len(outcome.pinned) > SHOWN_PINNED else ""))
    return lines


def _timed_out(outcome: CommandOutcome, settled: Settled | None) -> list[str]:
    """What became of a timed-out command's changes, said plainly: what it had changed by
    then is applied (decided: the work done so far is kept), as one step the user can undo."""
    if not outcome.timed_out or settled is None:
        return []
    if settled.applied.changes:
        return ["the command timed out and was stopped; what it had changed by then IS "
                "applied to the workspace (it may be half done), as one step the user can "
                "undo (Undo this call, or `reins undo`)"]
    return ["the command timed out and was stopped; nothing it changed was applied"]


def _error_code(outcome: CommandOutcome) -> ErrorCode | None:
    if outcome.timed_out:
        return ErrorCode.TIMEOUT
    if outcome.cancelled:
        return ErrorCode.CANCELLED
    if outcome.exit_code != 0:
        return ErrorCode.EXECUTION_ERROR
    return None


REFUSAL_CODES: dict[RefusalKind, ErrorCode] = {
    "sandbox_unavailable": ErrorCode.SANDBOX_UNAVAILABLE,
    "not_started": ErrorCode.EXECUTION_ERROR,
    "permission_denied": ErrorCode.PERMISSION_DENIED,
}


def refused(exc: CommandRefused) -> ToolError:
    """The tool error for a command the sandbox did not run."""
    return ToolError(exc.message, hint=exc.hint, code=REFUSAL_CODES[exc.kind])


async def _settle(ctx: ToolContext, folder: Path, since_ns: int) -> Settled:
    """Judge and apply what the command changed (kernel.transaction.settle); what the user
    reviews is every changed path and the diff, the whole diff kept beside the call's output
    when the shown one is cut."""
    if ctx.checkpoints is None:
        raise ToolError("The command ran, but what it changed was not applied: Reins has no "
                        "checkpoint store to keep it undoable.",
                        hint="Tell the user; this is a fault of Reins.",
                        code=ErrorCode.EXECUTION_ERROR)
    policy = ctx.path_policy

    async def ask(reason: str, shown: Shown) -> bool:
        full = await asyncio.to_thread(ctx.outputs.keep_beside, ctx.call_id, "diff",
                                       shown.full()) if shown.cut else None
        at = str(full) if full is not None else ""
        return await ctx.review(Review(reason, shown.preview(at), full_preview=at))

    return await settle(folder, policy.workspace, since_ns=since_ns,
                        classify=lambda path: policy.classify(path, write=True), ask=ask,
                        checkpoints=ctx.checkpoints, session_id=ctx.session_id,
                        call_id=ctx.call_id, review_all=ctx.review_all,
                        rules=lambda path: ctx.write_rule(policy.workspace / path))


def check_reviewable(executor: CommandExecutor, ctx: ToolContext) -> None:
    """Refuse a call the user chose Run and review for that could have effects beyond its
    change set (fail closed: the gate offers it only when it holds)."""
    if ctx.review_all and (ctx.network or not executor.transactions):
        raise ToolError("The command was not run: Run and review needs it to run as a "
                        "transaction without the network, which it cannot here.",
                        hint="Tell the user; they can allow it once instead.",
                        code=ErrorCode.PERMISSION_DENIED)


def make_run_command(executor: CommandExecutor) -> ToolSpec:
    """The run_command ToolSpec bound to `executor`."""

    async def run_command(
        command: str, ctx: ToolContext, timeout_s: int = DEFAULT_TIMEOUT_S, cwd: str | None = None
    ) -> ToolResult:
        check_command(command)
        check_reviewable(executor, ctx)
        unconfined_ok = ctx.user_approved and not ctx.review_all
        try:
            executor.check_runnable(allow_unsandboxed=unconfined_ok)
        except CommandRefused as exc:
            raise refused(exc) from exc
        workdir: Path | None = ctx.path_policy.resolve_read(cwd) if cwd else None
        if workdir is not None and not workdir.is_dir():
            raise ToolError(f"The working directory {cwd!r} is not a folder.",
                            hint="Pass a folder relative to the workspace.",
                            code=ErrorCode.INVALID_ARGUMENTS)

        def progress(size: int, last_line: str, elapsed: float) -> None:
            ctx.progress(Progress(ctx.call_id, size, last_line, elapsed,
                                  output_path=str(spool.path)))

        since = start_stamp()
        with ctx.outputs.spool(ctx.call_id) as spool:
            try:
                outcome = await executor.run(
                    command,
                    workspace=ctx.workspace,
                    spool=spool,
                    timeout_s=timeout_s,
                    cwd=workdir,
                    network=ctx.network,
                    allow_unsandboxed=unconfined_ok,
                    on_progress=progress,
                    owner=(ctx.session_id, ctx.call_id),
                )
            except CommandRefused as exc:
                raise refused(exc) from exc
        settled = None
        if outcome.transaction is not None:
            try:
                settled = await _settle(ctx, outcome.transaction, since)
            finally:
                if ctx.checkpoints is not None:  # freed in a thread, off the call's path
                    ctx.checkpoints.trash.discard(outcome.transaction)
                else:
                    remove_transaction(outcome.transaction)
        limit = max(1_000, spec.output_limit - HEADER_BUDGET)
        preview = ctx.outputs.preview_file(outcome.spool_path, limit)
        lines = _header(outcome) + (settled.lines() if settled is not None else []) + \
            _timed_out(outcome, settled)
        if outcome.output_bytes:
            lines.append(f"--- output ({outcome.output_bytes} bytes, stdout and stderr) ---")
            lines.append(preview.text)
        else:
            lines.append("(no output)")
        code = _error_code(outcome)
        return ToolResult(
            call_id=ctx.call_id,
            content="\n".join(lines),
            is_error=code is not None,
            error_code=code,
            output_bytes=outcome.output_bytes,
            externalized_path=str(preview.path) if preview.path is not None else None,
            changes=settled.applied if settled is not None and settled.applied.changes
            else None,
        )

    spec = ToolSpec(
        name="run_command",
        description=DESCRIPTION,
        input_schema=SCHEMA,
        handler=run_command,
        risk=Risk.EXECUTE,
        concurrent_safe=False,
        timeout_s=MAX_TIMEOUT_S + DEFAULT_GRACE_S + 15,
        summarize=_summary,
        path_params=("cwd",),
    )
    return spec
