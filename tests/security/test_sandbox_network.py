"""Issue 14 §5: "network: yes" is the internet, not the user's desktop.

A command allowed the network used to share the host's network namespace: it reached every
loopback service and every abstract Unix socket of the machine (an X11 display: keystroke
injection; D-Bus). Now it has a namespace of its own with pasta in front: the host's
loopback (every spelling of it), the gateway and abstract sockets stay out of reach, while a
host that is not this machine's loopback is reached. Only `exec.local_network` (the user's
own setting) shares the host's network, and without pasta the command is refused.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from kernel.sandbox.network import find_pasta
from tests.sandbox.sandbox_helpers import accepted
from tests.security.conftest import ROOT, Confined

SERVER_CONFINED = Path(__file__).with_name("server_confined.py")

OUTSIDE = "198.51.100.7"
"""A documentation address on a dummy interface: stands in for a host on the internet."""
CONNECT = ("python3 -c 'import socket,sys; socket.create_connection((\"{host}\", {port}), "
           "timeout=5); print(\"REACHED\")'; echo exit=$?")
ABSTRACT = ("python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); "
            "s.connect(\"\\0{name}\"); print(\"REACHED\")'; echo exit=$?")
GATEWAY = ("python3 -c 'import socket,struct; "
           "gw=[l.split()[2] for l in open(\"/proc/net/route\") if l.split()[1]==\"00000000\"]; "
           "ip=socket.inet_ntoa(struct.pack(\"<L\", int(gw[0], 16))); "
           "socket.create_connection((ip, {port}), timeout=5); print(\"REACHED\")'; echo exit=$?")


def _reached(outcome: dict[str, object]) -> bool:
    return "REACHED" in str(outcome["output"]).splitlines()


def _tcp(host: str, family: socket.AddressFamily = socket.AF_INET) -> socket.socket:
    server = socket.socket(family, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((host, 0))
    server.listen(16)
    server.setblocking(False)
    return server


@pytest.fixture
def host_services() -> Iterator[dict[str, socket.socket]]:
    """A loopback HTTP-like server (also on ::1 and 0.0.0.0 where possible) and abstract
    sockets named like an X11 display and a D-Bus bus, all on the host side."""
    services = {"loopback": _tcp("127.0.0.1"), "any": _tcp("0.0.0.0")}
    with contextlib.suppress(OSError):
        services["loopback6"] = _tcp("::1", socket.AF_INET6)
    for name in ("/tmp/.X11-unix/X93", f"/tmp/dbus-reins-{os.getpid()}"):
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        unix.bind("\0" + name)
        unix.listen(4)
        unix.setblocking(False)
        services[name] = unix
    try:
        yield services
    finally:
        for server in services.values():
            server.close()


@pytest.fixture
def outside_host() -> Iterator[socket.socket | None]:
    """A server on an address that is not loopback (root only: a dummy interface)."""
    if os.geteuid() != 0:
        yield None
        return
    link = f"reins-sec{os.getpid() % 10000}"
    made = subprocess.run(["ip", "link", "add", link, "type", "dummy"], capture_output=True,
                          check=False)
    if made.returncode != 0:
        yield None
        return
    try:
        subprocess.run(["ip", "addr", "add", f"{OUTSIDE}/32", "dev", link], check=True)
        subprocess.run(["ip", "link", "set", link, "up"], check=True)
        server = _tcp(OUTSIDE)
        try:
            yield server
        finally:
            server.close()
    finally:
        subprocess.run(["ip", "link", "del", link], check=False)


@pytest.fixture(autouse=True)
def tun_for_everyone() -> Iterator[None]:
    """pasta opens /dev/net/tun, which desktops leave open to every user (0666) and this
    kind of VM keeps for root (0600): as root, open it to everyone for the test, as on a
    desktop, so the unprivileged run is the real one; the mode is put back after."""
    tun = "/dev/net/tun"
    try:
        mode = os.stat(tun).st_mode & 0o777
    except OSError:
        yield
        return
    if os.geteuid() != 0 or mode & 0o006 == 0o006:
        yield
        return
    os.chmod(tun, 0o666)
    try:
        yield
    finally:
        os.chmod(tun, mode)


def _needs_pasta() -> None:
    if find_pasta() is None:
        if os.environ.get("CI"):
            pytest.fail("pasta is not installed in CI (make test installs passt)")
        pytest.skip("pasta is not installed: apt-get install passt")


def _spellings(services: dict[str, socket.socket]) -> list[str]:
    port = services["loopback"].getsockname()[1]
    any_port = services["any"].getsockname()[1]
    commands = [CONNECT.format(host=host, port=port)
                for host in ("127.0.0.1", "localhost", "127.1", "127.0.0.2", "0.0.0.0",
                             "::ffff:127.0.0.1")]
    commands += [CONNECT.format(host="127.0.0.1", port=any_port), GATEWAY.format(port=port),
                 GATEWAY.format(port=any_port)]
    if "loopback6" in services:
        commands.append(CONNECT.format(host="::1", port=services["loopback6"].getsockname()[1]))
    commands += [ABSTRACT.format(name=name) for name in services if name.startswith("/")]
    return commands


def test_the_network_reaches_outside_but_not_this_machine(
    confined: Confined, host_services: dict[str, socket.socket],
    outside_host: socket.socket | None,
) -> None:
    _needs_pasta()
    commands = _spellings(host_services)
    if outside_host is not None:
        commands.append(CONNECT.format(host=OUTSIDE, port=outside_host.getsockname()[1]))
    report = confined(commands, network=True)
    outcomes = report["outcomes"]
    local = outcomes[:-1] if outside_host is not None else outcomes
    for outcome in local:
        assert outcome["network_scope"] == "internet", outcome
        assert outcome["stopped"] == "" and "exit=" in outcome["output"], outcome  # it ran
        assert not _reached(outcome), (confined.who, outcome)
    for name, server in host_services.items():
        if server.type == socket.SOCK_STREAM and server.family != socket.AF_UNIX:
            assert accepted(server) == 0, name
    if outside_host is not None:
        assert _reached(outcomes[-1]), outcomes[-1]
        assert accepted(outside_host) == 1


def test_local_network_is_only_the_users_own_setting(
    confined: Confined, host_services: dict[str, socket.socket]
) -> None:
    """With exec.local_network the same command reaches the loopback server (so the test
    above can fail), and the outcome says which network it had."""
    port = host_services["loopback"].getsockname()[1]
    report = confined([CONNECT.format(host="127.0.0.1", port=port)], network=True,
                      settings={"local_network": True})
    (outcome,) = report["outcomes"]
    assert outcome["network_scope"] == "host" and _reached(outcome), outcome


def test_without_pasta_a_command_with_the_network_is_refused(confined: Confined) -> None:
    report = confined(["echo RAN"], network=True, settings={"pasta": "/nonexistent/pasta"})
    (outcome,) = report["outcomes"]
    assert outcome["exit_code"] is None and "RAN" not in outcome["output"], outcome
    assert "apt-get install passt" in outcome["error"], outcome


def test_no_pasta_outlives_its_command(confined: Confined) -> None:
    _needs_pasta()
    report = confined(["sleep 0.2", "true"], network=True)
    assert all(o["exit_code"] == 0 for o in report["outcomes"]), report
    assert report["pastas_left"] == [], report


def test_a_sandboxed_mcp_server_gets_the_internet_not_this_machine(
    confined: Confined, host_services: dict[str, socket.socket],
    outside_host: socket.socket | None,
) -> None:
    """A `"sandbox": true` server's bubblewrap with its network through pasta
    (kernel.sandbox.server_start): the same spellings as for a command."""
    _needs_pasta()
    commands = _spellings(host_services)
    if outside_host is not None:
        commands.append(CONNECT.format(host=OUTSIDE, port=outside_host.getsockname()[1]))
    folder = Path(tempfile.mkdtemp(prefix="reins-srvnet-", dir="/var/tmp"))
    folder.chmod(0o777)
    try:
        (folder / "home").mkdir()
        if confined.who == "nobody":
            subprocess.run(["chown", "-R", "65534:65534", str(folder)], check=True)
        done = subprocess.run(
            [sys.executable, str(SERVER_CONFINED), confined.who, str(folder),
             json.dumps(commands)],
            capture_output=True, text=True, timeout=300, check=False,
            env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    outputs = report["outputs"]
    local = outputs[:-1] if outside_host is not None else outputs
    for command, output in zip(commands, local, strict=False):
        assert "exit=" in output and "REACHED" not in output.splitlines(), (command, output)
    if outside_host is not None:
        assert "REACHED" in outputs[-1].splitlines(), outputs[-1]
    assert report["pastas_left"] == [], report
