"""llama-server on loopback for the length of a `with` block: a free port, its own process
group, ready when `/health` says so, and always stopped afterwards (an exception, Ctrl+C,
a server that dies while loading), its whole process group with it.

The model is served with a Qwen2.5-style chat template that shows it the tools
(`TOOLS_TEMPLATE`; SmolLM2's own template drops them) and makes llama-server parse its
`<tool_call>` text into tool_use blocks (`--jinja`). `--no-repack` keeps llama.cpp out of
the AMX matrix code that crashed on this kind of CPU.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

STARTUP_TIMEOUT_S = 180.0
STOP_GRACE_S = 5.0
POLL_S = 0.1

TOOLS_TEMPLATE = """\
{%- if tools %}
{{- '<|im_start|>system\\n' }}
{%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] }}\
{%- else %}{{- 'You are a helpful assistant.' }}{%- endif %}
{{- "\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\
\\n\\nYou are provided with function signatures within <tools></tools> XML tags:\\n<tools>" }}
{%- for tool in tools %}{{- "\\n" }}{{- tool | tojson }}{%- endfor %}
{{- "\\n</tools>\\n\\nFor each function call, return a json object with function name and \
arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n{\\"name\\": \
<function-name>, \\"arguments\\": <args-json-object>}\\n</tool_call><|im_end|>\\n" }}
{%- else %}
{%- if messages[0]['role'] == 'system' %}\
{{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
{%- else %}{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}{%- endif %}
{%- endif %}
{%- for message in messages %}
{%- if (message.role == "user") or (message.role == "system" and not loop.first) or \
(message.role == "assistant" and not message.tool_calls) %}
{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
{%- elif message.role == "assistant" %}
{{- '<|im_start|>' + message.role }}
{%- if message.content %}{{- '\\n' + message.content }}{%- endif %}
{%- for tool_call in message.tool_calls %}
{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}
{{- '\\n<tool_call>\\n{"name": "' }}{{- tool_call.name }}{{- '", "arguments": ' }}
{%- if tool_call.arguments is string %}{{- tool_call.arguments }}\
{%- else %}{{- tool_call.arguments | tojson }}{%- endif %}
{{- '}\\n</tool_call>' }}
{%- endfor %}
{{- '<|im_end|>\\n' }}
{%- elif message.role == "tool" %}
{%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}\
{{- '<|im_start|>user' }}{%- endif %}
{{- '\\n<tool_response>\\n' }}{{- message.content }}{{- '\\n</tool_response>' }}
{%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}{{- '<|im_end|>\\n' }}\
{%- endif %}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}
"""
"""Qwen2.5-Instruct's chat template (tools in the system turn, calls and results in
`<tool_call>` / `<tool_response>` tags), for ChatML models whose own template has no tools."""


class ServerError(RuntimeError):
    """The server could not be started or did not become ready."""


@dataclass(frozen=True)
class Served:
    base_url: str
    """The Messages API root (ANTHROPIC_BASE_URL / settings' base_url)."""
    model: str
    pid: int


def server_argv(binary: Path, model: Path, *, port: int, alias: str, template: Path,
                context: int, threads: int) -> list[str]:
    """llama-server's command line: loopback only, one slot with the whole window, the
    tool template, no web UI."""
    return [str(binary), "--model", str(model), "--host", "127.0.0.1", "--port", str(port),
            "--alias", alias, "--ctx-size", str(context), "--parallel", "1",
            "--threads", str(threads), "--jinja", "--chat-template-file", str(template),
            "--no-repack", "--no-webui"]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def health(base_url: str) -> int | None:
    """The HTTP status of `GET /health` (200 ready, 503 loading), None when nothing answers."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(f"{base_url}/health", timeout=2.0) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (OSError, ValueError):
        return None


def _tail(log: Path, lines: int = 15) -> str:
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


def stop(process: subprocess.Popen[bytes], grace_s: float = STOP_GRACE_S) -> None:
    """End the server and everything in its process group: SIGTERM, then SIGKILL after
    `grace_s`; reaped before this returns."""
    for sig, wait in ((signal.SIGTERM, grace_s), (signal.SIGKILL, grace_s)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        try:
            process.wait(wait)
        except subprocess.TimeoutExpired:
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # what it started and left behind
        return


def _wait_ready(process: subprocess.Popen[bytes], base_url: str, log: Path,
                timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServerError(f"llama-server exited with {process.returncode} while starting:"
                              f"\n{_tail(log)}")
        if health(base_url) == 200:
            return
        time.sleep(POLL_S)
    raise ServerError(f"llama-server was not ready within {timeout_s:g} s:\n{_tail(log)}")


@contextlib.contextmanager
def serving(*, binary: Path, model: Path,
            alias: str, template: Path, context: int, log: Path,
            threads: int | None = None,
            startup_timeout_s: float = STARTUP_TIMEOUT_S) -> Iterator[Served]:
    """llama-server serving `model` on a free loopback port until the block ends (however
    it ends); its output goes to `log`."""
    template.parent.mkdir(parents=True, exist_ok=True)
    template.write_text(TOOLS_TEMPLATE, encoding="utf-8")
    port = free_port()
    argv = server_argv(binary, model, port=port, alias=alias, template=template,
                       context=context, threads=threads or os.cpu_count() or 1)
    log.parent.mkdir(parents=True, exist_ok=True)
    base_url = f"http://127.0.0.1:{port}"
    with log.open("ab") as out:
        out.write(f"\n$ {json.dumps(argv)}\n".encode())
        out.flush()
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_ready(process, base_url, log, startup_timeout_s)
        yield Served(base_url, alias, process.pid)
    finally:
        stop(process)
