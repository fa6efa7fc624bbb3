"""`reins exec`: one prompt run headless to its end (see kernel.cli.main for the options), its
events printed as they are committed (human text, or `--json` lines), approvals from
`--approve` or the terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from kernel.agent.limits import LIMIT_REASONS, LoopLimits, StopReason
from kernel.agent.loop import Agent, RunBusy
from kernel.agent.ports import GateFactory
from kernel.agent.runlock import SessionLocked
from kernel.agent.store import SessionStore, UnknownSession
from kernel.cli.errors import EXIT_ERROR, EXIT_LIMIT, EXIT_OK, UsageError
from kernel.demo.server import DEMO_KEY, DemoEndpoint
from kernel.events import (
    ApprovalDecision,
    ApprovalRequest,
    AssistantDelta,
    AssistantText,
    ContextCompacted,
    ErrorEvent,
    Event,
    McpElicitation,
    McpSampling,
    McpServerEvent,
    ModelRetry,
    ModelWaiting,
    Notice,
    RunFinished,
    SessionStarted,
    ToolCallStarted,
    ToolResultEvent,
    UserMessage,
    json_text,
)
from kernel.model.catalog import DEFAULT_MODEL
from kernel.model.provider import (
    AnthropicProvider,
    ConfigError,
    ProviderConfig,
    resolve_base_url,
)
from kernel.model.server_limits import probe_context
from kernel.paths import AppPaths
from kernel.policy.approvals import gate_factory
from kernel.policy.channels import ApprovalChannel, FixedChannel, TerminalChannel
from kernel.policy.settings import Settings
from kernel.runtime.assemble import Kernel, open_kernel
from kernel.runtime.collector import for_the_run
from kernel.sandbox.detect import SandboxStatus
from kernel.shared.attachments import MAX_ATTACHMENTS, Attachment, AttachmentError, load_attachment
from kernel.shared.demo import is_demo
from kernel.shared.workspace import broad_workspace_reason
from kernel.tools.spec import ToolError
from kernel.visible import one_line, visible

if TYPE_CHECKING:
    from kernel.mcp.manager import McpManager


def exit_code(finished: RunFinished | None) -> int:
    if finished is None or finished.stop_reason == StopReason.END_TURN:
        return EXIT_OK
    if finished.stop_reason in LIMIT_REASONS:
        return EXIT_LIMIT
    return EXIT_ERROR


def exec_command(args: argparse.Namespace, settings: Settings,
                 keyring_lookup: Callable[[], str | None],
                 sandbox_probe: Callable[[], SandboxStatus]) -> int:
    """Run `reins exec` with the loaded `settings`. `keyring_lookup` reads the key stored in
    the keyring and `sandbox_probe` probes the sandbox of `settings.exec.bwrap` (kernel.cli.main
    starts both in threads before this module and the SDK load, kernel.runtime.ahead); the probe is
    awaited first, so the kernel's executor finds its answer (detect_sandbox caches it)."""
    sandbox_probe()
    paths = AppPaths.from_env()
    if args.prompt is None and args.session is None and args.mcp_prompt is None:
        raise UsageError("give a PROMPT (or --mcp-prompt SERVER/NAME), or --session ID to "
                         "resume a session")
    if args.mcp_prompt is not None:
        from kernel.mcp.prompts import PromptRefError, parse_prompt_args, parse_prompt_ref

        try:
            parse_prompt_ref(args.mcp_prompt)
            parse_prompt_args(args.mcp_prompt_arg)
        except PromptRefError as exc:
            raise UsageError(str(exc)) from None
    if args.compact and args.session is None:
        raise UsageError("--compact works on a stored session: give --session ID")
    if args.prompt is not None and not args.prompt.strip():
        raise UsageError("the prompt is empty")
    attachments = _attachments(args)
    kernel = open_kernel(paths, settings.exec,
                         tool_search_threshold=settings.tool_search_threshold,
                         checkpoint_bytes=settings.checkpoint_bytes)
    try:
        problem = kernel.declare_tools(settings.tools)
        if problem:
            raise UsageError(f"settings.json: {problem}")
        session_id = _prepare_session(kernel.store, args, settings)
        printer = OncePerRequest(
            JsonPrinter(sys.stdout, kernel.store.event_text) if args.json
            else HumanPrinter(sys.stdout, sys.stderr))
        if args.session:
            for _, event in kernel.store.events(session_id):
                printer(event)
        for_the_run()  # the collector, paused by kernel.cli.main while start-up ran
        return asyncio.run(_exec(kernel, args, settings, session_id, printer, attachments,
                                 keyring_lookup))
    finally:
        kernel.close()


def _attachments(args: argparse.Namespace) -> list[Attachment]:
    """The --attach files, each checked (kernel.shared.attachments): a bad one stops the command
    before anything runs or is stored."""
    if not args.attach:
        return []
    if args.prompt is None:
        raise UsageError("--attach goes with a PROMPT: say what to do with the files")
    if len(args.attach) > MAX_ATTACHMENTS:
        raise UsageError(f"at most {MAX_ATTACHMENTS} files can be attached to one prompt")
    try:
        return [load_attachment(path.expanduser()) for path in args.attach]
    except AttachmentError as exc:
        raise UsageError(f"--attach: {exc}") from None


def _prepare_session(store: SessionStore, args: argparse.Namespace, settings: Settings) -> str:
    if args.session:
        try:
            info = store.get_session(args.session)
        except UnknownSession as exc:
            raise UsageError(str(exc)) from None
        if args.workspace is not None and args.workspace.resolve() != Path(info.workspace):
            raise UsageError(f"session {info.session_id} works in {info.workspace}; "
                             f"--workspace cannot move it")
        if args.mode and args.mode != info.mode:
            store.set_session_mode(info.session_id, args.mode)
        if args.model and args.model != info.model:
            store.set_session_model(info.session_id, args.model)
        return info.session_id
    workspace = (args.workspace or Path.cwd()).expanduser().resolve()
    if not workspace.is_dir():
        raise UsageError(f"the workspace {workspace} is not a folder")
    broad = broad_workspace_reason(workspace)
    if broad is not None and not args.allow_broad_workspace:
        raise UsageError(f"refusing the workspace: {broad}. Run in a project folder (or give "
                         f"--workspace DIR), or pass --allow-broad-workspace to confirm it")
    model = args.model or settings.model or DEFAULT_MODEL
    mode = args.mode or settings.default_mode.value
    return store.create_session(workspace, model, mode)


async def _exec(kernel: Kernel, args: argparse.Namespace, settings: Settings, session_id: str,
                printer: Callable[[Event], None], attachments: list[Attachment],
                keyring_lookup: Callable[[], str | None]) -> int:
    """Run the prompt against the session's model: the configured endpoint, or for the demo
    model (`--model reins-demo`) its loopback server, started for the run (no key needed)."""
    if not is_demo(kernel.store.get_session(session_id).model):
        return await _exec_at(kernel, args, settings, session_id, printer, attachments,
                              keyring_lookup, settings.base_url)
    demo = DemoEndpoint()
    try:
        return await _exec_at(kernel, args, settings, session_id, printer, attachments,
                              keyring_lookup, demo.base_url, DEMO_KEY)
    finally:
        demo.stop()


async def _exec_at(kernel: Kernel, args: argparse.Namespace, settings: Settings,
                   session_id: str, printer: Callable[[Event], None],
                   attachments: list[Attachment], keyring_lookup: Callable[[], str | None],
                   base_url: str | None, api_key: str | None = None) -> int:
    info = kernel.store.get_session(session_id)
    served = None if api_key else await asyncio.to_thread(
        probe_context, resolve_base_url(ProviderConfig(base_url=base_url)))
    config = ProviderConfig.for_model(info.model, settings.models, max_tokens=args.max_tokens,
                                      tool_choice=args.tool_choice, base_url=base_url,
                                      thinking_budget=args.thinking_budget,
                                      served_context=served)
    limits = LoopLimits(max_rounds=args.max_rounds, max_tokens=args.max_tokens_budget,
                        max_cost_usd=args.cost_budget, max_seconds=args.time_budget,
                        rate_limits=dict(args.rate_limit))
    try:
        provider = AnthropicProvider(config, api_key=api_key, keyring_lookup=keyring_lookup)
    except ConfigError as exc:
        error = ErrorEvent(session_id, "config_error", str(exc))
        kernel.store.append_event(error)
        printer(error)
        return EXIT_ERROR
    try:
        agent = kernel.agent(provider, limits=limits,
                             gate_factory=cli_gate_factory(kernel, args.approve))
        try:
            agent.check_can_run()
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        if args.compact:
            try:
                await agent.compact(session_id, printer)
            except (RunBusy, SessionLocked) as exc:
                busy = ErrorEvent(session_id, "session_busy", str(exc))
                kernel.store.append_event(busy)
                printer(busy)
                return EXIT_ERROR
        manager = await _start_mcp(kernel, settings, session_id, Path(info.workspace),
                                   args.approve, printer, agent)
        for key, problem in kernel.registry.problems().items():
            unused = ErrorEvent(session_id, "tools_declaration", (
                f"settings.json tools/{key} is not in force in this run: {problem}"))
            kernel.store.append_event(unused)
            printer(unused)
        prompt = args.prompt
        if args.mcp_prompt is not None:
            from kernel.mcp.headless import server_prompt
            from kernel.mcp.prompts import PromptRefError

            try:
                prompt = await server_prompt(manager, args.mcp_prompt, args.mcp_prompt_arg,
                                             args.prompt)
            except (PromptRefError, ToolError) as exc:
                error = ErrorEvent(session_id, "mcp_prompt", str(exc))
                kernel.store.append_event(error)
                printer(error)
                return EXIT_ERROR
        try:
            finished = await _run_with_signals(agent, session_id, prompt, printer,
                                               attachments)
        except (RunBusy, SessionLocked) as exc:
            busy = ErrorEvent(session_id, "session_busy", str(exc))
            kernel.store.append_event(busy)
            printer(busy)
            return EXIT_ERROR
    finally:
        await kernel.stop_mcp()
        await provider.close()
    return exit_code(finished)


async def _start_mcp(kernel: Kernel, settings: Settings, session_id: str, workspace: Path,
                     approve: str | None, printer: Callable[[Event], None], agent: Agent
                     ) -> McpManager | None:
    """Start the configured MCP servers and, headless, wait until each is ready or failed
    (each has its own start-up timeout), so the first request already offers their tools;
    each outcome is an `mcp_server` event. The servers' roots are the workspace; their
    forms and sampling requests are answered by `--approve` (kernel.mcp.headless)."""
    if not settings.mcp_servers:
        return None
    from kernel.agent.run_budget import RunBudget
    from kernel.mcp.config import McpConfigError
    from kernel.mcp.headless import exec_asks, report_settled
    from kernel.mcp.sampling import SamplingTarget

    def record(event: Event) -> None:
        kernel.store.append_event(event)
        printer(event)

    try:
        manager = await kernel.start_mcp(
            settings.mcp_servers,
            asks=exec_asks(workspace, approve, record, SamplingTarget(
                session_id, agent.provider, RunBudget(agent, session_id))))
    except McpConfigError as exc:
        raise UsageError(str(exc)) from None
    await report_settled(manager, session_id, record)
    return manager


async def _run_with_signals(agent: Agent, session_id: str, prompt: str | None,
                            printer: Callable[[Event], None],
                            attachments: list[Attachment]) -> RunFinished | None:
    """Run (or resume); SIGINT/SIGTERM cancel the run (a second SIGINT interrupts)."""
    loop = asyncio.get_running_loop()

    def cancel(sig: signal.Signals) -> None:
        agent.cancel(session_id)
        loop.remove_signal_handler(sig)

    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, cancel, sig)
    try:
        if prompt is None:
            return await agent.resume(session_id, printer)
        return await agent.run(session_id, prompt, printer, attachments)
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)


def cli_gate_factory(kernel: Kernel, approve: str | None) -> GateFactory:
    """The permission gate of a `reins exec` run, asking on the CLI's channel.

    `--approve allow|deny` answers every request; without it a terminal is asked
    interactively (on stderr, so `--json` stdout stays clean); with neither, requests
    cannot be answered and such calls end as `approval_unavailable` (never run)."""
    channel: ApprovalChannel | None
    if approve is not None:
        channel = FixedChannel("allow_once" if approve == "allow" else "deny")
    elif sys.stdin.isatty():
        channel = TerminalChannel(sys.stdin, sys.stderr)
    else:
        channel = None
    return gate_factory(app_paths=kernel.paths, sandbox=kernel.sandbox_facts, channel=channel)


class OncePerRequest:
    """Prints each approval request once: on resume the stored history is printed first, and
    the gate then reports the same pending request again when it asks for it."""

    def __init__(self, printer: Callable[[Event], None]) -> None:
        self._printer = printer
        self._requests: set[str] = set()

    def __call__(self, event: Event) -> None:
        if isinstance(event, ApprovalRequest):
            if event.call_id in self._requests:
                return
            self._requests.add(event.call_id)
        self._printer(event)


class JsonPrinter:
    """`--json`: one event per line, exactly `event.to_dict()`; deltas are not printed.

    Each line is `kernel.events.json_text`: no character in it splits a line for any
    reader (U+2028, U+2029, U+0085 are escaped), and lone surrogates are escaped too.
    `text(event)` makes it: the store's `event_text`, the very text it stored."""

    def __init__(self, out: TextIO, text: Callable[[Event], str] | None = None) -> None:
        self.out = out
        self._text = text or (lambda event: json_text(event.to_dict()))

    def __call__(self, event: Event) -> None:
        if isinstance(event, AssistantDelta):
            return
        self.out.write(self._text(event) + "\n")
        self.out.flush()


class HumanPrinter:
    """The same run, readable: streamed text as it comes, tools one line each.

    Everything that came from the model or a tool goes through `kernel.visible`: a control
    character or a bidirectional override is printed as a visible escape, never sent to the
    terminal (one-line fields such as a tool's summary also escape newlines)."""

    def __init__(self, out: TextIO, err: TextIO) -> None:
        self.out, self.err = out, err
        self._streamed = False
        self._names: dict[str, str] = {}

    def __call__(self, event: Event) -> None:
        line = self._line(event)
        if line is not None:
            stream = self.err if isinstance(event, _TO_STDERR) else self.out
            stream.write(line + "\n")
        (self.err if isinstance(event, _TO_STDERR) else self.out).flush()
        if isinstance(event, RunFinished) and event.empty_answer:
            self.err.write("warning: the model ended the run with an empty answer\n")
            self.err.flush()

    def _line(self, event: Event) -> str | None:
        if isinstance(event, AssistantDelta):
            self.out.write(visible(event.text))
            self._streamed = True
            return None
        if isinstance(event, AssistantText):
            streamed, self._streamed = self._streamed, False
            return "" if streamed else visible(event.text)
        if isinstance(event, SessionStarted):
            return one_line(f"── session {event.session_id} · {event.workspace} · "
                            f"{event.model} · mode {event.mode} · sandbox {event.sandbox}")
        if isinstance(event, UserMessage):
            attached = "".join("\n  + " + one_line(f"{a.get('name')} ({a.get('kind')}, "
                                                    f"{a.get('bytes')} B)")
                               for a in event.attachments)
            return f"\n> {visible(event.text)}{attached}\n"
        if isinstance(event, ToolCallStarted):
            self._names[event.call_id] = event.name
            step = "  ↳ " if event.parent_call_id else ""
            return (f"{step}→ {one_line(event.name)} "
                    f"{one_line(event.summary or _short(event.input))}")
        if isinstance(event, ToolResultEvent):
            code = event.error_code if event.error_code not in (None, event.status) else ""
            status = f"{event.status} {code}".strip()
            where = f" · full output: {event.externalized_path}" if event.externalized_path else ""
            step = "  ↳ " if event.parent_call_id else ""
            text = step + one_line(f"← {event.name} {status} ({event.duration_ms:.0f} ms, "
                                   f"{event.output_bytes} B){where}")
            if event.is_error:
                text += "\n  " + visible(event.preview[:400]).replace("\n", "\n  ")
            return text
        if isinstance(event, ApprovalRequest):
            head = one_line(f"? {event.name} needs approval ({event.risk}): {event.reason}")
            steps = event.preview.splitlines() if event.steps else []
            return "\n".join([head, *(f"  {one_line(line)}" for line in steps)])
        if isinstance(event, ApprovalDecision):
            if event.decided_by == "policy" and event.decision != "deny":
                return None
            name = self._names.get(event.call_id, event.call_id)
            return one_line(f"  {name}: {event.decision} (by {event.decided_by})")
        if isinstance(event, RunFinished):
            usage = event.usage
            tokens = sum(int(v) for v in usage.values())
            return (f"── {event.stop_reason} · {event.rounds} rounds · {tokens} tokens "
                    f"(cache read {usage.get('cache_read_input_tokens', 0)}) · "
                    f"${event.cost_usd:.4f}")
        if isinstance(event, ErrorEvent):
            return f"error [{one_line(event.code)}]: {visible(event.message)}"
        if isinstance(event, Notice):
            return f"note [{one_line(event.code)}]: {visible(event.message)}"
        if isinstance(event, McpServerEvent):
            from kernel.mcp.report import server_line

            if event.state == "ready":
                return server_line(event)
            self.err.write(server_line(event) + "\n")
            self.err.flush()
            return None
        if isinstance(event, McpSampling):
            return one_line(f"? MCP server {event.server!r} asks the model: {event.prompt} → "
                            f"{event.action} (by {event.decided_by}: {event.reason})")
        if isinstance(event, McpElicitation):
            return one_line(f"? MCP server {event.server!r} asks: {event.message} → "
                            f"{event.action} (by {event.decided_by}: {event.reason})")
        if isinstance(event, ModelRetry):
            void = "; the text shown so far is void" if event.discarded else ""
            return one_line(f"… the model request failed ({event.reason}), attempt "
                            f"{event.attempt} of {event.of}; retrying in {event.delay_s:.1f} s"
                            f"{void}")
        if isinstance(event, ContextCompacted):
            return one_line(f"── earlier turns summarized for the next requests ("
                            f"{event.reason}, about {event.tokens_before} → "
                            f"{event.tokens_after} tokens; the full history is kept)")
        if isinstance(event, ModelWaiting):
            return (f"… waiting for the model: no answer yet after {event.waited_s:.0f} s "
                    f"(gives up at {event.timeout_s:.0f} s)")
        return None


_TO_STDERR = (ErrorEvent, ModelRetry, ModelWaiting)


def _short(value: Any, limit: int = 80) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"
