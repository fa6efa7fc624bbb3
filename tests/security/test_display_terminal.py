"""The terminal approval prompt and `reins exec`'s human output show the model's text
escaped: a real `reins exec` on a pseudo-terminal, the bytes it writes read back raw."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel.fakemodel import FakeAnthropicServer
from kernel.fakemodel.script import ToolUse, reply
from kernel.paths import AppPaths
from kernel.visible import visible
from tests.security.execkit import REINS, Terminal, exec_env

ATTACKS = {
    "erase line and carriage return": (
        "rm -f precious.txt important.db '…' #\x1b[2K\r$ ls -la"),
    "backspaces": "rm -f precious.txt important.db #" + "\b" * 40 + "ls -la",
    "right-to-left override": "rm -f precious.txt important.db #\u202e al- sl",
    "C1 CSI and line separator": "rm -f precious.txt important.db #\x9b2K\u2028ls -la",
    "OSC title and bell": "rm -f precious.txt important.db #\x1b]0;ls\x07\x1b[1A\x1b[2K",
    "zero-width and newline": "rm -f precious.txt\u200b important.db\ncwd: /tmp/safe",
}


def _printable(text: str) -> bool:
    return all(ch.isprintable() or ch in "\n\t" for ch in text)


@pytest.mark.parametrize("command", ATTACKS.values(), ids=ATTACKS.keys())
def test_the_terminal_prompt_shows_the_whole_command_escaped(
        command: str, workspace: Path, reins_home: AppPaths) -> None:
    for name in ("precious.txt", "important.db"):
        (workspace / name).write_text("keep me\n")
    text = "I will tidy up.\x1b[2J\rNothing to see\u202e here"
    script = [reply(text, ToolUse("run_command", {"command": command}, id="call_rm")),
              reply("ok, I left them.\x1b]0;pwned\x07")]
    with FakeAnthropicServer(script, api_key="test-key") as server:
        terminal = Terminal()
        try:
            child = terminal.start([REINS, "exec", "--mode", "ask", "--workspace",
                                    str(workspace), "tidy up"], exec_env(server))
            before = terminal.read_until(b"[d]eny").decode()
            terminal.type("d: no\n")
            written = terminal.read_to_end().decode()
            assert child.wait(timeout=60) == 0
        finally:
            terminal.close()
    assert "\x1b" not in written and "\r" not in written
    assert _printable(written), [ch for ch in written if not _printable(ch)]
    first, *more = command.split("\n")
    preview = "$ " + visible(first) + "".join("\n> " + visible(line) for line in more)
    assert preview + "\ncwd: " in before
    tool_line = written.split("→ run_command ", 1)[1].split("\n", 1)[0]
    assert tool_line.startswith("rm -f precious.txt")
    assert visible(text) in before
    assert "ok, I left them.\\x1b]0;pwned\\x07" in written
    assert (workspace / "precious.txt").exists() and (workspace / "important.db").exists()
