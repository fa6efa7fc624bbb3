"""Protected links pinned inside the sandbox while its command runs.

A marked link (`.vscode -> cfg`, `.git/hooks -> ../hooks`, `.envrc -> sub/envrc`, a link on the
way to where one leads) lies in a folder the command may write, and bubblewrap cannot bind a
link (it follows it): without more, a command could remove it and make it again leading
elsewhere, and an editor, direnv or git reading it outside while the command runs would take
what the command put there (kernel.sandbox.revert undoes it only after the command). So
every such link is bound onto itself inside the sandbox's mount namespace: a mount point
cannot be removed, renamed or replaced (EBUSY), and nothing outside changes.

The binding needs the sandbox made (bubblewrap's mounts done) and its command not yet
started; bubblewrap says neither, so its program is then a shell stage (`staged_shell`) that
says it is ready on one pipe and waits on another before it becomes the command's shell.
As soon as bubblewrap reports the sandbox, the kernel hands the zygote
(kernel.sandbox.zygote) the sandbox's mount namespace, the stage's ready pipe, a report pipe
and the pins; the zygote forks a binder (kernel.sandbox.binder), which waits for the stage,
binds every link and reports. The kernel forks nothing and waits for the report on its event
loop. Fail closed: when the stage does not say it is ready, a link cannot be bound, the
zygote has ended or the report does not come in PIN_TIMEOUT_S, the sandbox is stopped before
its command starts.
"""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from kernel.sandbox import zygote
from kernel.sandbox.binder import FAILED, MAX_MESSAGE, OK, Overlay, Request, encode_pins
from kernel.sandbox.marks import Mark
from kernel.sandbox.readall import read_all

PIN_TIMEOUT_S = 10.0
"""How long the stage may take to be ready and the links to be bound (milliseconds, usually)."""


class PinError(Exception):
    """A link could not be pinned; the command must not start."""


@dataclass(frozen=True)
class Pin:
    path: str
    """Absolute, as the sandbox sees it (the workspace is bound at its own path)."""
    text: str
    """What the link holds (Mark.led): a link changed since the workspace was indexed is not
    pinned but refused, and the next index sees it. Empty for a folder."""
    folder: bool = False
    """A folder of the workspace above a marked link: bound onto itself with what is mounted
    below it, so it cannot be renamed away with the link and a new link made in its place
    (`mv deep deep2 && mkdir -p deep/sub && ln -s evil deep/sub/.idea`)."""


def links_to_pin(workspace: str, marks: Iterable[Mark]) -> tuple[Pin, ...]:
    """Every marked link of the workspace, in path order, then every folder above one
    inside the workspace, the outermost first. A link inside a hidden secret folder is not
    there in the sandbox (kernel.sandbox.bwrap.mark_mounts), so it is not pinned."""
    marks = list(marks)
    hidden = [m.path + "/" for m in marks if m.kind == "secret" and m.entry == "dir"]
    shown = [m for m in marks if m.entry == "link"
             and not any(m.path.startswith(folder) for folder in hidden)]
    links = sorted(m.path for m in shown)
    texts = {m.path: m.led for m in shown}
    folders = sorted({"/".join(parts[:depth]) for parts in (p.split("/") for p in links)
                      for depth in range(1, len(parts))}, key=lambda f: (f.count("/"), f))
    return (*(Pin(os.path.join(workspace, p), texts[p]) for p in links),
            *(Pin(os.path.join(workspace, f), "", folder=True) for f in folders))


def staged_shell(ready_fd: int, go_fd: int, shell: Sequence[str], cwd: str = ""
                 ) -> tuple[str, ...]:
    """`shell`, run once the stage has written one byte to `ready_fd` and read a line from
    `go_fd` (through /proc/self/fd: the shell may not take a descriptor above 9). With
    `cwd`, the stage enters it again first: what was mounted there meanwhile (the
    transaction's overlay) is then the shell's folder, not what lies under it."""
    enter = f"cd -- {shlex.quote(cwd)} && " if cwd else ""
    stage = (f"printf r >/proc/self/fd/{ready_fd} && read -r _ </proc/self/fd/{go_fd} "
             f"&& {enter}exec {shlex.join(shell)}")
    return ("/bin/sh", "-c", stage)


class PinStage:
    """The two pipes of the stage and the binding of `pins` between them."""

    def __init__(self, pins: tuple[Pin, ...], overlay: Overlay | None = None) -> None:
        self.pins = pins
        self.overlay = overlay
        """The transaction's overlay the binder mounts first (kernel.sandbox.binder)."""
        self._ready_read, self._ready_write = os.pipe()
        self._go_read, self._go_write = os.pipe()
        self._binder: tuple[zygote.Zygote, int] | None = None
        """(the zygote asked, the read end of the binder's report), once `prepare` asked."""
        self._reading = False
        """`pin` is waiting for the report on the loop (its reader is registered)."""
        self._close_after_read = -1
        """The report's end, closed once `pin` stops reading it (closed while the loop
        still watched it, its number could be reused by a descriptor the loop then never
        wakes for)."""

    @property
    def child_fds(self) -> tuple[int, int]:
        """(ready fd, go fd) as the stage sees them (pass them with `pass_fds`)."""
        return self._ready_write, self._go_read

    def started(self) -> None:
        """Close the child's ends here once bubblewrap has them."""
        for name in ("_ready_write", "_go_read"):
            self._close(name)

    def prepare(self, pid: int) -> None:
        """Have the zygote fork the binder of the sandbox whose init is `pid`; it waits
        until the stage is ready. As soon as bubblewrap reports the sandbox (for one made
        ahead, long before its command comes). Raises OSError (zygote.ZygoteError when the
        zygote has ended)."""
        if self._binder is None:
            self._binder = _ask(pid, self.pins, self.overlay, self._ready_read)

    async def run(self, pid: int) -> None:
        """Pin every link in the sandbox whose init is `pid` once the stage is ready (the
        go-ahead has been given to bubblewrap), then let the stage go. Raises PinError (the
        caller stops the sandbox, then calls `close`)."""
        await self.pin(pid)
        self.go()

    async def pin(self, pid: int) -> None:
        """`run` without letting the stage go: the sandbox is made, its links pinned, and
        nothing of its command has run yet."""
        self.prepare(pid)
        assert self._binder is not None
        asked, report = self._binder
        self._reading = True
        try:
            text = await read_report(report)
        finally:
            self._reading = False
            if self._close_after_read >= 0:
                os.close(self._close_after_read)
                self._close_after_read = -1
        if text != OK:
            raise PinError(f"a protected link could not be pinned in the sandbox: "
                           f"{failure(text, asked)}")

    def go(self) -> None:
        """Let the stage go (it becomes the command), once `pin` succeeded. Raises PinError."""
        try:
            os.write(self._go_write, b"\n")
        except OSError as exc:
            raise PinError(f"the sandbox ended before its command started ({exc})") from exc
        self.close()

    def close(self, watched: bool = True) -> None:
        """Close every end. A binder still waiting ends with the sandbox (its stage's end of
        the ready pipe closes), or with the zygote. `watched`: the loop `pin` waits on may
        still watch the report (false once that loop is closed)."""
        binder, self._binder = self._binder, None
        if binder is not None and self._reading and watched:
            self._close_after_read = binder[1]
        elif binder is not None:
            os.close(binder[1])
        for name in ("_ready_read", "_ready_write", "_go_read", "_go_write"):
            self._close(name)

    def _close(self, name: str) -> None:
        fd = getattr(self, name)
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
            setattr(self, name, -1)


def failure(text: bytes, asked: zygote.Zygote) -> str:
    """What a binder's report other than OK says went wrong."""
    if text.startswith(FAILED):
        return text[len(FAILED):].decode("utf-8", "replace")
    if text:
        return f"the binder's report is not one: {text[:100]!r}"
    return asked.ended() or "the binder ended without a report"


def _ask(pid: int, pins: tuple[Pin, ...], overlay: Overlay | None, ready: int
         ) -> tuple[zygote.Zygote, int]:
    """Ask the zygote for the binder of `pins` in the sandbox of `pid`, which waits on
    `ready`: (the zygote, the read end of the binder's report)."""
    report_read, report_write = os.pipe()
    held = [report_write]
    try:
        namespace = os.open(f"/proc/{pid}/ns/mnt", os.O_RDONLY | os.O_CLOEXEC)
        held.append(namespace)
        pins_file = os.memfd_create("reins-pins", os.MFD_CLOEXEC)
        held.append(pins_file)
        os.write(pins_file, encode_pins([(pin.path, pin.text, pin.folder) for pin in pins],
                                        overlay))
        asked = zygote.start()
        asked.send(Request(namespace, ready, report_write, pins_file))
    except BaseException:
        os.close(report_read)
        raise
    finally:
        for fd in held:  # the binder has its own: its report's end of file is its end
            os.close(fd)
    return asked, report_read


async def read_report(fd: int) -> bytes:
    """Everything a binder reports, up to its end of file (PinError after PIN_TIMEOUT_S;
    the caller then stops the sandbox, and the binder ends with it)."""
    import asyncio  # the loop's caller has it loaded; `reins doctor` needs none

    try:
        return await asyncio.wait_for(read_all(fd, MAX_MESSAGE + len(FAILED)), PIN_TIMEOUT_S)
    except TimeoutError:
        raise PinError(f"the sandbox did not start, or its protected links could not be "
                       f"pinned, in {PIN_TIMEOUT_S:g} s") from None
