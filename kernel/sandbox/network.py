"""The network a command gets when it is allowed one: the internet, not this machine.

Sharing the host's network namespace would also hand the command every loopback service of
the machine and every abstract Unix socket (an X11 display at `@/tmp/.X11-unix/X0`, D-Bus
session buses: keystroke injection and desktop control). So a command with the network keeps
a network namespace of its own, and pasta (from `passt`, a user-mode network stack) is
attached to it during the start handshake, before the command starts: pasta opens, on the
host side, the connections the command makes, so outside hosts are reached while the host's
loopback is not (no gateway mapping, no port forwarding in either direction) and abstract
sockets stay behind the namespace. DNS goes to `DNS_ADDRESS` inside, which pasta forwards to
the host's resolver (which may itself be on the host's loopback, as systemd-resolved is).

Only the user's own setting `exec.local_network` shares the host's network namespace
instead (scope "host"). Without pasta a command that is allowed the network is refused
(fail closed) with the fix.

Every pasta ends with its call: it writes its pid to a private file and is ended (SIGTERM,
then SIGKILL) when the command's sandbox is released.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Literal

from kernel.sandbox.pids import kernel_uid

NetworkScope = Literal["none", "internet", "host"]
DNS_ADDRESS = "169.254.1.53"
"""Where commands send DNS queries; pasta forwards them to the host's resolver."""
RESOLV_CONF = f"nameserver {DNS_ADDRESS}\n"
START_TIMEOUT_S = 10.0
STOP_WAIT_S = 1.0
NS_GET_USERNS = 0xB701
"""ioctl(2) on a namespace fd: an fd of the user namespace that owns it (linux/nsfs.h)."""
FIX_PASTA = "apt-get install passt  (Fedora: dnf install passt; Arch: pacman -S passt)"


class NetworkUnavailable(Exception):
    """The command's network could not be set up (the command must not start)."""


def find_pasta(name: str = "pasta") -> str | None:
    return shutil.which(name)


def scope(network: bool, local_network: bool) -> NetworkScope:
    """What a command gets: nothing, the internet through pasta, or the host's network."""
    if not network:
        return "none"
    return "host" if local_network else "internet"


def describe(network_scope: NetworkScope) -> str:
    """The scope in words, for the approval and the model."""
    return {
        "none": "no network",
        "internet": "the internet only (a network namespace of its own through pasta: not "
                    "this machine's local services or sockets)",
        "host": "this machine's network, local services, X11 and D-Bus sockets included "
                "(exec.local_network is on)",
    }[network_scope]


def resolv_conf(folder: Path) -> Path:
    """The resolv.conf a command with the internet sees (written once into `folder`)."""
    path = folder / "resolv.conf"
    if not path.is_file() or path.read_text() != RESOLV_CONF:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".resolv.conf.{os.getpid()}"
        tmp.write_text(RESOLV_CONF)
        tmp.replace(path)
    return path


def pasta_argv(pasta: str, pid: int, pid_file: Path, *, euid: int, userns_fd: int | None
               ) -> list[str]:
    """pasta joined to the network namespace of `pid`, configured, with no way back to the
    host's loopback or ports.

    Root of the initial user namespace joins the network namespace alone (it holds every
    capability over it); anyone else first joins the user namespace that owns it (an open
    `userns_fd`, passed to pasta: the sandbox's own user namespace is a child of that one
    where bubblewrap forbids nested ones). pasta drops to nobody when started as uid 0
    unless told to stay (`--runas 0:0`)."""
    netns = f"/proc/{pid}/ns/net"
    target = (("--netns-only", "--netns", netns) if userns_fd is None
              else ("--userns", f"/proc/self/fd/{userns_fd}", "--netns", netns))
    return [
        pasta, "--config-net", "--quiet", "--no-map-gw",
        "--tcp-ports", "none", "--udp-ports", "none", "--tcp-ns", "none", "--udp-ns", "none",
        "--dns-forward", DNS_ADDRESS, "--pid", str(pid_file),
        *(("--runas", "0:0") if euid == 0 else ()), *target,
    ]  # fmt: skip


def _owner_of_netns(pid: int) -> int:
    """An fd of the user namespace that owns the network namespace of `pid` (NS_GET_USERNS)."""
    try:
        netns = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        raise NetworkUnavailable(f"the sandbox's network namespace is gone ({exc})") from exc
    try:
        return int(fcntl.ioctl(netns, NS_GET_USERNS))
    except OSError as exc:
        raise NetworkUnavailable(f"the owner of the sandbox's network namespace could not be "
                                 f"found ({exc})") from exc
    finally:
        os.close(netns)


class Pasta:
    """The pasta of one command."""

    def __init__(self, pasta: str) -> None:
        self.pasta = pasta
        self.pid: int | None = None
        self._folder: str | None = None

    async def attach(self, pid: int) -> None:
        """Give the namespace of `pid` its network; returns once it is configured."""
        import asyncio  # here, not at import: `reins doctor` reads this module without a loop

        self._folder = tempfile.mkdtemp(prefix="reins-pasta-")
        pid_file = Path(self._folder) / "pid"
        userns_fd = None if kernel_uid() == 0 else _owner_of_netns(pid)
        argv = pasta_argv(self.pasta, pid, pid_file, euid=os.geteuid(), userns_fd=userns_fd)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE, start_new_session=True,
                pass_fds=() if userns_fd is None else (userns_fd,))
        except OSError as exc:
            raise NetworkUnavailable(f"pasta could not be started ({exc})") from exc
        finally:
            if userns_fd is not None:
                os.close(userns_fd)
        try:
            _, err = await asyncio.wait_for(proc.communicate(), START_TIMEOUT_S)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
            raise NetworkUnavailable(
                f"pasta did not set up the network in {START_TIMEOUT_S:g} s") from None
        with contextlib.suppress(OSError, ValueError):
            self.pid = int(pid_file.read_text().strip())
        if proc.returncode != 0:
            message = " ".join(err.decode("utf-8", "replace").split())
            raise NetworkUnavailable(f"pasta failed ({message or f'exit {proc.returncode}'})")

    def _take(self) -> int | None:
        """pasta's pidfd, SIGTERM sent (None when it is gone); forgets pasta."""
        pid, self.pid = self.pid, None
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None
        if pid is None:
            return None
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            return None  # gone already
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(pidfd, signal.SIGTERM)
        return pidfd

    async def aclose(self) -> None:
        """End pasta (SIGTERM, a short wait, SIGKILL) without blocking the loop."""
        import asyncio

        pidfd = self._take()
        if pidfd is None:
            return
        loop = asyncio.get_running_loop()
        gone: asyncio.Future[None] = loop.create_future()

        def ended() -> None:
            if not gone.done():
                gone.set_result(None)

        loop.add_reader(pidfd, ended)
        try:
            for sig in (None, signal.SIGKILL):
                if sig is not None:
                    with contextlib.suppress(OSError):
                        signal.pidfd_send_signal(pidfd, sig)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(asyncio.shield(gone), STOP_WAIT_S)
                    return
        finally:
            loop.remove_reader(pidfd)
            os.close(pidfd)

    def stop(self) -> None:
        """End pasta (SIGTERM, a short wait, SIGKILL); blocking, bounded (for shutdown)."""
        pidfd = self._take()
        if pidfd is None:
            return
        try:
            if not select.select([pidfd], [], [], STOP_WAIT_S)[0]:
                with contextlib.suppress(OSError):
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                select.select([pidfd], [], [], STOP_WAIT_S)
        finally:
            os.close(pidfd)
