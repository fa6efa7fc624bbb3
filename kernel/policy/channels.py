"""Approval channels: the only ways a person answers an approval request.

- `FixedChannel`     `reins exec --approve allow|deny`: the same answer for every request,
                     given by the user on the command line before the run.
- `TerminalChannel`  an interactive prompt on a terminal.
- `QueueChannel`     requests out, answers in; the desktop worker forwards requests to the
                     UI's dialog and feeds the user's answers back with `answer()`.

A channel that cannot answer (closed, end of input, no terminal, broken) raises
`ChannelUnavailable`; the gate reports that as `approval_unavailable`, never as a denial.
Destructive calls need `Answer.confirmed` (a second explicit confirmation) to be allowed.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from dataclasses import dataclass
from typing import Protocol, TextIO

from kernel.events import HELD_RULE, ApprovalRequest, Choice
from kernel.visible import one_line, visible


@dataclass(frozen=True)
class Answer:
    choice: Choice
    message: str = ""
    """With a denial: passed to the model in the error result."""
    confirmed: bool = False
    """The second, explicit confirmation a destructive call needs."""


class ChannelUnavailable(Exception):
    """No one can answer on this channel; the message says why."""


class ApprovalChannel(Protocol):
    name: str
    """Who answers, for the record: `cli`, `terminal`, `ui`."""

    async def ask(self, request: ApprovalRequest, *, destructive: bool) -> Answer: ...


class FixedChannel:
    """`--approve allow|deny`: every request gets this answer.

    A flag given before the run is not a confirmation of one destructive call, nor a look
    at changes a command made to protected paths, so with `allow` destructive calls are
    denied and held changes discarded, with a message that says why."""

    name = "cli"

    def __init__(self, choice: Choice) -> None:
        if choice not in ("allow_once", "deny"):
            raise ValueError("--approve gives allow (once per call) or deny")
        self.choice = choice

    async def ask(self, request: ApprovalRequest, *, destructive: bool) -> Answer:
        if destructive and self.choice == "allow_once":
            return Answer("deny", message=(
                "destructive calls need a second explicit confirmation, which "
                "`--approve allow` cannot give; run without --approve on a terminal, or use "
                "the app"))
        if request.rule == HELD_RULE and self.choice == "allow_once":
            return Answer("deny", message=(
                "changes to protected paths are kept only by someone who has seen them, "
                "which `--approve allow` (given before the command ran) is not; run without "
                "--approve on a terminal, or use the app"))
        return Answer(self.choice)


_KEYS: dict[str, tuple[Choice, str]] = {
    "o": ("allow_once", "[o]nce"), "s": ("allow_session", "[s]ession"),
    "a": ("allow_always", "[a]lways"), "r": ("allow_review", "[r]un and review"),
    "d": ("deny", "[d]eny[: message]")}
_HELD_KEYS: dict[str, tuple[Choice, str]] = {"k": ("allow_once", "[k]eep"),
                                             "d": ("deny", "[d]iscard")}
"""A request about held changes (HELD_RULE) keeps or discards them."""


def terminal_keys(request: ApprovalRequest, *, destructive: bool
                  ) -> dict[str, tuple[Choice, str]]:
    """The keys the prompt offers for `request`: its offered answers (a destructive call
    only once, review or deny; always only with a rule to save)."""
    offered = set(request.offered())
    if destructive:
        offered -= {"allow_session", "allow_always"}
    if not request.always_text():
        offered.discard("allow_always")
    table = _HELD_KEYS if request.rule == HELD_RULE else _KEYS
    return {key: entry for key, entry in table.items() if entry[0] in offered}


class TerminalChannel:
    """Asks on a terminal: the request, its preview, then the answers it offers
    (`[o]nce [s]ession [a]lways [r]un and review [d]eny`; held changes `[k]eep [d]iscard`).

    What the request holds came from the model: it is written through `kernel.visible`, so
    no control sequence reaches the terminal (an ESC, CR or bidirectional override in a
    command is shown as `\\x1b`, `\\x0d`, `\\u202e`, never obeyed).

    A denial may carry a message: `d: use the test database instead`. Destructive calls
    offer only once/deny and then ask to type `yes`. End of input → ChannelUnavailable."""

    name = "terminal"

    def __init__(self, stdin: TextIO, stdout: TextIO) -> None:
        self.stdin = stdin
        self.stdout = stdout

    async def ask(self, request: ApprovalRequest, *, destructive: bool) -> Answer:
        """Prompt on a daemon thread: a cancelled run (Ctrl-C) does not wait for a line that
        may never come before the process can exit."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Answer] = loop.create_future()

        def settle(outcome: Answer | BaseException) -> None:
            if future.done():
                return
            if isinstance(outcome, BaseException):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)

        def prompt() -> None:
            outcome: Answer | BaseException
            try:
                outcome = self._ask(request, destructive)
            except Exception as exc:
                outcome = exc
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(settle, outcome)

        threading.Thread(target=prompt, name="reins-approval-prompt", daemon=True).start()
        return await future

    def _ask(self, request: ApprovalRequest, destructive: bool) -> Answer:
        out = self.stdout
        out.write("\n" + one_line(f"── approval needed: {request.name} ({request.risk}) — "
                                  f"{request.reason}") + "\n")
        if request.preview:
            out.write(visible(request.preview.rstrip("\n")) + "\n")
        keys = terminal_keys(request, destructive=destructive)
        if "a" in keys:
            out.write(one_line(f"[a]lways saves to settings: {request.always_text()}") + "\n")
        if "r" in keys:
            out.write("[r]un and review: it runs without the network; you are shown every "
                      "change it made, and none is applied until you keep them\n")
        if request.full_preview:
            out.write(one_line(f"the full diff: {request.full_preview}") + "\n")
        prompt = " ".join(label for _choice, label in keys.values()) + " > "
        while True:
            line = self._line(prompt).strip()
            key, _, message = line.partition(":")
            key = key.strip().lower()[:1]
            if key in keys:
                break
            out.write(f"please answer with one of: {', '.join(keys)}\n")
        choice = keys[key][0]
        if choice == "deny":
            return Answer(choice, message=message.strip())
        if destructive:
            confirm = self._line("this is destructive; type yes to run it > ").strip().lower()
            if confirm != "yes":
                return Answer("deny", message="not confirmed")
            return Answer(choice, confirmed=True)
        return Answer(choice)

    def _line(self, prompt: str) -> str:
        self.stdout.write(prompt)
        self.stdout.flush()
        try:
            line = self.stdin.readline()
        except (OSError, ValueError) as exc:
            raise ChannelUnavailable(f"the terminal cannot be read: {exc}") from exc
        if not line:
            raise ChannelUnavailable("the terminal closed (end of input) before an answer")
        return line


class QueueChannel:
    """Requests go to `requests` (an asyncio queue); `answer(call_id, Answer)` resolves them.

    `close(reason)` makes every waiting and every later request fail as unavailable.
    Call `answer`/`close` on the event loop's thread (use loop.call_soon_threadsafe)."""

    name = "ui"

    def __init__(self) -> None:
        self.requests: asyncio.Queue[ApprovalRequest] = asyncio.Queue()
        self._waiting: dict[str, asyncio.Future[Answer]] = {}
        self._closed: str | None = None

    @property
    def pending(self) -> list[str]:
        return list(self._waiting)

    async def ask(self, request: ApprovalRequest, *, destructive: bool) -> Answer:
        if self._closed is not None:
            raise ChannelUnavailable(self._closed)
        future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._waiting[request.call_id] = future
        try:
            self.requests.put_nowait(request)
            return await future
        finally:
            self._waiting.pop(request.call_id, None)

    def answer(self, call_id: str, answer: Answer) -> bool:
        """Resolve the request of `call_id`; False when no such request is waiting."""
        future = self._waiting.get(call_id)
        if future is None or future.done():
            return False
        future.set_result(answer)
        return True

    def close(self, reason: str = "the approval window was closed") -> None:
        self._closed = reason
        for future in self._waiting.values():
            if not future.done():
                future.set_exception(ChannelUnavailable(reason))
