"""A command sees only what it needs (issue 28 §A): the machine outside the workspace is an
allowlist built from nothing, not the root minus a denylist. Real bubblewrap, as the
current user (root in CI) and as nobody.

Break 1: with the network off, a command connected to Unix sockets of the host under /run,
/var/tmp and /srv. Break 2: it read the secrets of projects under /var/tmp, /srv and /opt,
and as root /etc/shadow. Both are fixed as a class: those folders are absent, and /etc shows
only what others may read."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.security.conftest import Confined

CANARY = "CANARY-28a-DO-NOT-LEAK"
TAG = uuid.uuid4().hex[:8]
SOCKET_DIRS = ["/run", "/var/run", "/var/tmp", "/srv", "/tmp", "/dev/shm"]
ABSTRACT = f"reins-view-{TAG}"
CONNECT = (
    "python3 -c \"import socket,sys\n"
    "for p in sys.argv[1:]:\n"
    "    s = socket.socket(socket.AF_UNIX)\n"
    "    try:\n"
    "        s.connect(p.replace('@', chr(0), 1)); print('CONNECTED', p)\n"
    "    except OSError as e: print('refused', p, e.errno)\" {paths}"
)
PERL_CONNECT = (
    "perl -MSocket -e 'for (@ARGV) { socket(my $s, PF_UNIX, SOCK_STREAM, 0); "
    "print((connect($s, pack_sockaddr_un($_)) ? \"CONNECTED \" : \"refused \"), \"$_\\n\") }' "
    "{paths}"
)


@pytest.fixture
def host_sockets() -> Iterator[list[str]]:
    """Unix socket servers listening on the host: one file per folder of SOCKET_DIRS (any
    user may connect) and one abstract socket. The paths ('@' for the abstract one)."""
    servers: list[socket.socket] = []
    paths: list[str] = []
    try:
        for folder in SOCKET_DIRS:
            if not os.path.isdir(folder):
                continue
            slug = folder.strip("/").replace("/", "-")
            path = os.path.join(folder, f"reins-view-{TAG}-{slug}.sock")
            server = socket.socket(socket.AF_UNIX)
            server.bind(path)
            os.chmod(path, 0o777)
            server.listen(8)
            servers.append(server)
            paths.append(path)
        server = socket.socket(socket.AF_UNIX)
        server.bind("\0" + ABSTRACT)
        server.listen(8)
        servers.append(server)
        paths.append("@" + ABSTRACT)
        yield paths
    finally:
        for server in servers:
            server.close()
        for path in paths:
            if not path.startswith("@"):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(path)


def test_break_1_no_host_socket_is_reachable(confined: Confined,
                                             host_sockets: list[str]) -> None:
    paths = " ".join(host_sockets)
    report = confined([CONNECT.replace("{paths}", paths),
                       PERL_CONNECT.replace("{paths}", paths)])
    for outcome in report["outcomes"]:
        assert "CONNECTED" not in outcome["output"], outcome["output"]
        assert outcome["output"].count("refused") == len(host_sockets), outcome["output"]


def test_no_host_socket_with_the_internet(confined: Confined,
                                          host_sockets: list[str]) -> None:
    """With the network allowed (pasta: a network namespace of the command's own), the
    abstract socket, which lives in the host's network namespace, is out of reach too."""
    report = confined([CONNECT.replace("{paths}", " ".join(host_sockets))], network=True)
    outcome = report["outcomes"][0]
    if "pasta" in (outcome.get("error") or ""):
        pytest.skip("pasta is not installed")
    assert "CONNECTED" not in outcome["output"], outcome["output"]


PROJECT_SECRETS = [".ssh/id_rsa", ".aws/credentials", ".env", ".git-credentials", ".netrc"]


@pytest.fixture
def outside_projects() -> Iterator[list[Path]]:
    """Projects with secrets under /var/tmp, /srv and /opt, readable by anyone."""
    roots = [Path(base) / f"reins-proj-{TAG}" for base in ("/var/tmp", "/srv", "/opt")]
    if os.geteuid() != 0 and not all(os.access(r.parent, os.W_OK) for r in roots):
        pytest.skip("making projects under /srv and /opt needs root")
    try:
        for root in roots:
            for rel in PROJECT_SECRETS:
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_text(f"token={CANARY}\n")
                (root / rel).chmod(0o644)
            for folder in (root, root / ".ssh", root / ".aws"):
                folder.chmod(0o755)
        yield roots
    finally:
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)


def _reads(root: Path) -> list[str]:
    return [
        *(f"cat {root / rel}" for rel in PROJECT_SECRETS),
        f"grep -r CANARY {root} 2>&1",
        f"tar cf - {root} 2>/dev/null | strings | grep CANARY",
        f"cd {root.parent} && tar cf - {root.name} 2>/dev/null | strings | grep CANARY",
        "python3 -c \"import os,sys\nfor d, _, fs in os.walk(sys.argv[1]):\n"
        "    for f in fs:\n        print(open(os.path.join(d, f), errors='replace').read())\" "
        f"{root.parent}",
        f"find {root.parent} -name '*' -type f -exec cat {{}} + 2>/dev/null",
    ]


def test_break_2_secrets_outside_the_home_and_workspace(confined: Confined,
                                                        outside_projects: list[Path]) -> None:
    commands = [cmd for root in outside_projects for cmd in _reads(root)]
    report = confined(commands)
    leaked = [o["command"] for o in report["outcomes"] if CANARY in o["output"]]
    assert not leaked, f"secrets outside the workspace reached a command: {leaked}"


@pytest.fixture
def shown_projects() -> Iterator[Path]:
    """A folder of projects (/var/tmp/…/team/app) with secrets in a project, readable by
    anyone, to be shown by `exec.read_only_paths`."""
    shown = Path("/var/tmp") / f"reins-shown-{TAG}"
    app = shown / "team" / "app"
    try:
        for rel in PROJECT_SECRETS:
            (app / rel).parent.mkdir(parents=True, exist_ok=True)
            (app / rel).write_text(f"token={CANARY}\n")
            (app / rel).chmod(0o644)
        (app / "README").write_text("readme-visible\n")
        (app / "README").chmod(0o644)
        os.link(app / ".env", app / "docs.txt")  # the .env under another name
        for folder in (shown, shown / "team", app, app / ".ssh", app / ".aws"):
            folder.chmod(0o755)
        yield shown
    finally:
        shutil.rmtree(shown, ignore_errors=True)


def test_break_2_secrets_deep_in_a_folder_the_settings_show(confined: Confined,
                                                            shown_projects: Path) -> None:
    """`exec.read_only_paths` showing a folder of projects: the one list of secret
    locations holds inside it at any depth, and for another name (a hard link) of a
    secret, as inside a workspace."""
    app = shown_projects / "team" / "app"
    report = confined([f"cat {app / 'README'}", f"cat {app / 'docs.txt'}", *_reads(app)],
                      settings={"read_only_paths": [str(shown_projects)]})
    outputs = [o["output"] for o in report["outcomes"]]
    assert "readme-visible" in outputs[0], outputs[0]
    leaked = [o["command"] for o in report["outcomes"] if CANARY in o["output"]]
    assert not leaked, f"secrets deep in a shown folder reached a command: {leaked}"


def test_break_2_etc_credentials_as_root(confined: Confined) -> None:
    """/etc/shadow and /etc/gshadow (and every /etc entry others may not read) cannot be
    read, by name, by a recursive grep or an archive of /etc."""
    if os.geteuid() != 0:
        pytest.skip("the test reads /etc/shadow to know what must not leak")
    lines = [line for name in ("/etc/shadow", "/etc/gshadow") if os.path.exists(name)
             for line in Path(name).read_text().splitlines() if line.strip()]
    assert lines
    report = confined(["cat /etc/shadow /etc/gshadow /etc/shadow- /etc/gshadow- 2>&1",
                       "grep -r : /etc 2>/dev/null | grep -v '^/etc/passwd' | grep -v "
                       "'^/etc/group'",
                       "tar cf - /etc 2>/dev/null | strings",
                       "ls /etc/ssl/private /etc/sudoers.d 2>&1; cat /etc/sudoers 2>&1"])
    for outcome in report["outcomes"]:
        shown = [line for line in lines if line in outcome["output"]]
        assert not shown, (outcome["command"], shown[:2])


OUTSIDE = "/run /var /srv /opt /mnt /media /home /boot /work /sys/class /sys/firmware"


def test_the_folders_outside_are_absent_and_the_root_is_read_only(confined: Confined) -> None:
    """Nothing of the folders outside the system's is shown but the files links in /etc
    name (a resolver's `resolv.conf` in /run), and the root cannot be written."""
    report = confined([
        f"for d in {OUTSIDE}; do test -e $d && find $d ! -type d; done; echo checked",
        "find /etc -type l -exec readlink -f {} + 2>/dev/null | grep -v -e ^/usr/ -e ^/etc/",
        "for d in /root/.ssh /root/.gitconfig /root/.bashrc /root/.config; "
        "do test -e $d && echo PRESENT $d; done; echo checked",
        "touch /x /usr/x /etc/x 2>&1; mkdir /run 2>&1; echo done",
    ])
    absent, named, home, writes = report["outcomes"]
    assert absent["output"].endswith("checked\n"), absent
    shown = set(absent["output"].splitlines()[:-1])
    assert shown <= set(named["output"].splitlines()), shown
    assert "PRESENT" not in home["output"] and "checked" in home["output"], home
    assert writes["output"].count("Read-only file system") == 4, writes["output"]


def test_proc_is_the_sandboxes_own(confined: Confined, monkeypatch: pytest.MonkeyPatch) -> None:
    """/proc shows only the sandbox's processes: /proc/1 is bubblewrap's init, whose root is
    the sandbox's; the kernel's environment (a canary in it) is nowhere."""
    monkeypatch.setenv("REINS_VIEW_PROBE", CANARY)
    test_pid = os.getpid()
    report = confined([
        "ls /proc/1/root/ 2>&1; cat /proc/1/root/etc/shadow 2>&1; echo listed",
        f"cat /proc/{test_pid}/environ 2>&1; cat /proc/[0-9]*/environ 2>/dev/null | "
        "tr '\\0' '\\n'; echo read",
        "ls /proc | grep -c '^[0-9]'",
    ])
    root, environ, count = report["outcomes"]
    assert "listed" in root["output"] and "run\n" not in root["output"], root["output"]
    assert CANARY not in environ["output"] and "read" in environ["output"]
    assert int(count["output"].split()[-1]) < 10, count["output"]


def test_what_programs_need_still_works(confined: Confined) -> None:
    """Names of users, time zones, locales, CA certificates, the processor count, git and
    the Python in PATH."""
    report = confined([
        "id -un; getent passwd root | cut -d: -f1; ls /etc/ssl/certs | grep -c .",
        "TZ=UTC date +%Z; test -e /etc/localtime && echo localtime-ok; "
        "locale -a >/dev/null && echo locale-ok",
        "nproc; python3 -c 'import os, ssl; print(\"cpus\", os.cpu_count()); "
        "ssl.create_default_context(); print(\"ssl-ok\")'",
        "git init -q repo && cd repo && echo x > f && git add f && "
        "git -c user.name=a -c user.email=a@b commit -qm m && git log --oneline | wc -l",
    ])
    users, zone, cpus, git = (o["output"] for o in report["outcomes"])
    assert users.split()[1] == "root" and int(users.split()[-1]) > 10, users
    assert "UTC" in zone and "localtime-ok" in zone and "locale-ok" in zone, zone
    assert "ssl-ok" in cpus and int(cpus.split()[0]) >= 1, cpus
    assert git.strip().endswith("1"), git
