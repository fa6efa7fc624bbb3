"""What a person sees before approving a call: a diff for edits, the exact command for commands.

- `write_file` / `edit_file`: a unified diff of the current file against what the call
  would leave (a new file is a diff against /dev/null; an edit that cannot apply says so);
  for a secret location only what the call gives, never the current content.
- `run_command`: the exact command, the working directory, the sandbox state, whether the
  command gets the network, and which (the internet only, or this machine's too). What it
  changes is shown after it ran, when a change is held (kernel.transaction.settle).
- anything else: the arguments, as JSON.

Previews are bounded (`MAX_LINES`) with a marker saying how much was left out.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kernel.pathrules import describe_secret
from kernel.sandbox.network import describe, scope
from kernel.tools.pathpolicy import PathPolicy, PathVerdict
from kernel.tools.spec import ToolSpec

MAX_LINES = 400
MAX_FILE_BYTES = 2_000_000


def build_preview(spec: ToolSpec, args: Mapping[str, Any], *, policy: PathPolicy,
                  paths: Mapping[str, PathVerdict], sandbox: str, network: bool,
                  local_network: bool = False) -> str:
    """`paths` are the call's path verdicts (kernel.policy.facts)."""
    secret = paths.get("path")
    if spec.name in ("write_file", "edit_file") and secret is not None and secret.secret:
        return _secret_change(secret, args)
    if spec.name == "write_file" and "path" in paths:
        return _file_diff(policy, paths["path"], lambda _old: str(args.get("content", "")))
    if spec.name == "edit_file" and "path" in paths:
        return _file_diff(policy, paths["path"], lambda old: _apply_edit(old, args))
    if spec.name == "run_command":
        return command_preview(str(args.get("command", "")), cwd=_cwd(policy, paths),
                               sandbox=sandbox, network=network, local_network=local_network)
    return _bounded(json.dumps(dict(args), indent=2, ensure_ascii=False, default=str))


def _secret_change(verdict: PathVerdict, args: Mapping[str, Any]) -> str:
    """A change to a secret location: what the call brings, never the current content (a
    diff would put the secret's lines in the approval request, stored and shown)."""
    what = describe_secret(verdict.secret) if verdict.secret is not None else ""
    given = {k: v for k, v in args.items() if k != "path"}
    return _bounded(f"{verdict.resolved} is a secret location ({what}); its current content is "
                    f"not shown. The call gives:\n"
                    + json.dumps(given, indent=2, ensure_ascii=False, default=str))


_BLANK_RUN = re.compile(r"[ \t]{17,}")
"""A run of blanks long enough to push the rest of a line out of sight."""


def _blank_marker(run: re.Match[str]) -> str:
    kinds = set(run.group())
    what = "spaces" if kinds == {" "} else "tabs" if kinds == {"\t"} else "spaces and tabs"
    return f" [{len(run.group())} {what}] "


def command_preview(command: str, *, cwd: Path, sandbox: str, network: bool,
                    local_network: bool = False) -> str:
    """The command's first line after `$ `, each further line after `> ` (as a shell
    prompts for them), then the facts: so no line of a command can pass for a `cwd:` or
    `sandbox:` line. A run of more than 16 spaces or tabs is shown as a marker saying how
    many (`[300 spaces]`), so none can push the rest of a line out of sight. Other
    characters are left as they are; every place that shows a
    preview escapes them with `kernel.visible` (which shows only `\\n` as a line break)."""
    net = f"yes, {describe(scope(network, local_network))}" if network else "no"
    shown = "\n> ".join(_BLANK_RUN.sub(_blank_marker, command).split("\n"))
    return "\n".join([f"$ {shown}", f"cwd: {cwd}", f"sandbox: {sandbox}", f"network: {net}"])


def _cwd(policy: PathPolicy, paths: Mapping[str, PathVerdict]) -> Path:
    verdict = paths.get("cwd")
    return verdict.resolved if verdict is not None else policy.workspace


class _EditFails(Exception):
    pass


def _apply_edit(old: str | None, args: Mapping[str, Any]) -> str:
    if old is None:
        raise _EditFails("the file does not exist")
    before, after = str(args.get("old_string", "")), str(args.get("new_string", ""))
    count = old.count(before) if before else 0
    if count == 0:
        raise _EditFails("old_string is not in the file")
    if count > 1 and not args.get("replace_all"):
        raise _EditFails(f"old_string occurs {count} times and replace_all is not set")
    return old.replace(before, after) if args.get("replace_all") else old.replace(before, after, 1)


def _file_diff(policy: PathPolicy, verdict: PathVerdict, new_text: Any) -> str:
    path = verdict.resolved
    old: str | None
    try:
        data = policy.read_bytes(path, max_bytes=MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        old = None
    except OSError as exc:
        return f"{path}: the current file cannot be read ({exc.strerror or exc})"
    else:
        if len(data) > MAX_FILE_BYTES:
            return f"{path}: the current file is over {MAX_FILE_BYTES} bytes; no diff shown"
        if b"\x00" in data:
            return f"{path}: the current file is binary; it would be replaced"
        old = data.decode("utf-8", errors="replace")
    try:
        new = new_text(old)
    except _EditFails as exc:
        return f"{path}: this edit will fail: {exc}"
    label = str(path)
    diff = difflib.unified_diff(
        (old or "").splitlines(keepends=True), new.splitlines(keepends=True),
        fromfile="/dev/null" if old is None else f"a{label}", tofile=f"b{label}",
    )
    lines = [line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
             for line in diff]
    if not lines:
        return f"{path}: no change"
    return _bounded("".join(lines))


def _bounded(text: str) -> str:
    lines = text.splitlines()
    if len(lines) <= MAX_LINES:
        return text
    left = len(lines) - MAX_LINES
    return "\n".join(lines[:MAX_LINES]) + f"\n[… {left} more lines not shown …]"
