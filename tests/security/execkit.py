"""Running the real `reins exec` console script against the fake Messages API server."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import termios
import time
from pathlib import Path
from typing import Any

from kernel.fakemodel import FakeAnthropicServer, ToolUse, reply
from tests.cli.conftest import Cli, events

REINS = str(Path(sys.executable).with_name("reins"))


def exec_env(server: FakeAnthropicServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(ANTHROPIC_BASE_URL=server.base_url, ANTHROPIC_API_KEY="test-key",
               PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring")
    return env


def run_json(server: FakeAnthropicServer, workspace: Path, *args: str,
             prompt: str | None = "go") -> subprocess.CompletedProcess[str]:
    """`reins exec --json …` to its end (stdin is not a terminal)."""
    argv = [REINS, "exec", "--json", "--workspace", str(workspace), *args]
    if prompt is not None:
        argv.append(prompt)
    return subprocess.run(argv, env=exec_env(server), capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL, check=False)


def json_lines(stdout: str) -> list[dict[str, Any]]:
    """Every line of a --json run, split the strictest way (`str.splitlines`)."""
    return [json.loads(line) for line in stdout.splitlines()]


class Terminal:
    """A pseudo-terminal whose output is exactly the bytes the program wrote: no CR added
    to newlines (OPOST off) and no echo of what is typed."""

    def __init__(self) -> None:
        self.controller, self.terminal = pty.openpty()
        attrs = termios.tcgetattr(self.terminal)
        attrs[1] &= ~termios.OPOST
        attrs[3] &= ~(termios.ECHO | termios.ECHONL)
        termios.tcsetattr(self.terminal, termios.TCSANOW, attrs)
        self.data = b""

    def start(self, argv: list[str], env: dict[str, str]) -> subprocess.Popen[bytes]:
        """Run `argv` with the terminal as its stdin, stdout and stderr."""
        child = subprocess.Popen(argv, env=env, stdin=self.terminal, stdout=self.terminal,
                                 stderr=self.terminal, start_new_session=True)
        os.close(self.terminal)
        self.terminal = -1
        return child

    def read_until(self, marker: bytes, timeout: float = 60) -> bytes:
        deadline = time.monotonic() + timeout
        while marker not in self.data:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{marker!r} not seen; got {self.data!r}")
            if not self._read(left):
                raise EOFError(f"{marker!r} not seen before the end; got {self.data!r}")
        return self.data

    def read_to_end(self, timeout: float = 60) -> bytes:
        deadline = time.monotonic() + timeout
        while self._read(max(0.0, deadline - time.monotonic())):
            pass
        return self.data

    def _read(self, timeout: float) -> bool:
        ready, _, _ = select.select([self.controller], [], [], timeout)
        if not ready:
            return False
        try:
            chunk = os.read(self.controller, 65536)
        except OSError:  # EIO: every writer closed the terminal
            return False
        self.data += chunk
        return bool(chunk)

    def type(self, text: str) -> None:
        os.write(self.controller, text.encode())

    def close(self) -> None:
        for fd in (self.controller, self.terminal):
            if fd >= 0:
                os.close(fd)


def write_is_asked_and_denied(cli: Cli, path: str, prompt: str) -> None:
    """The model writes `path` with write_file in `auto` mode under `--approve deny`: the call
    is asked about, denied, and nothing is written."""
    cli.server.add(reply(ToolUse("write_file", {"path": path, "content": "PWNED"}, id="w1")),
                   reply("It was denied."))
    code, text, err = cli.call("exec", "--json", "--mode", "auto", "--approve", "deny", prompt)
    assert code == 0, err
    out = events(text)
    assert any(e["type"] == "approval_request" and e["call_id"] == "w1" for e in out), out
    result = next(e for e in out if e["type"] == "tool_result")
    assert result["is_error"] and result["error_code"] == "approval_denied"
    target = cli.workspace / path
    assert not target.exists() or "PWNED" not in target.read_text()
