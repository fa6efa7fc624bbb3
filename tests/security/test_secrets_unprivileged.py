"""The secret rules hold for an ordinary user too: the same file tools and gate, run by a
forked child that became `nobody` (uid 65534, through a user namespace as in
tests/sandbox/unprivileged_run.py), on a workspace that user owns."""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from kernel.paths import AppPaths
from kernel.policy.channels import FixedChannel
from kernel.policy.decide import Mode
from kernel.tools.spec import ToolCall
from tests.policy.gatekit import Kit
from tests.sandbox.unprivileged_run import NOBODY, become_nobody

CANARY = "CANARY-nobody-9e107d9d"


def _checks(folder: Path) -> dict[str, object]:
    """Run as nobody: read_file of secrets asks (and is denied), grep skips them."""
    workspace = folder / "workspace"
    paths = AppPaths(data=folder / "data", config=folder / "config")
    kit = Kit(workspace, paths, mode=Mode.READ_ONLY, channel=FixedChannel("deny"))
    calls = [ToolCall("r1", "read_file", {"path": ".ssh/id_rsa"}),
             ToolCall("r2", "read_file", {"path": ".env"}),
             ToolCall("g1", "grep", {"pattern": "CANARY-nobody"})]
    results = asyncio.run(kit.dispatcher.dispatch_many(calls))
    return {"uid": os.getuid(), "owner": os.stat(workspace).st_uid,
            "asked": [e.call_id for e in kit.of_type("approval_request")],
            "codes": [str(r.error_code) for r in results],
            "texts": [r.text for r in results]}


def _as_nobody(folder: Path) -> dict[str, object]:
    # nobody cannot read the interpreter's folders: load what the tools import lazily first
    importlib.import_module("concurrent.futures.thread")
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.close(read_end)
            become_nobody()
            with os.fdopen(write_end, "w") as out:
                out.write(json.dumps(_checks(folder)))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        finally:
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end) as source:
        text = source.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and text, text
    result: dict[str, object] = json.loads(text)
    return result


@pytest.mark.skipif(os.geteuid() != 0, reason="already an ordinary user: the other tests are it")
def test_secrets_ask_and_grep_skips_them_as_nobody() -> None:
    folder = Path(tempfile.mkdtemp(prefix="reins-secrets-"))
    try:
        folder.chmod(0o777)
        workspace = folder / "workspace"
        (workspace / ".ssh").mkdir(parents=True)
        (workspace / ".ssh" / "id_rsa").write_text(f"{CANARY}\n")
        (workspace / ".env").write_text(f"T={CANARY}\n")
        (workspace / "notes.txt").write_text("CANARY-nobody is mentioned here\n")
        subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(folder)], check=True)
        report = _as_nobody(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    assert report["uid"] == 0 and report["owner"] == 0, "uid 0 of the namespace is nobody"
    assert report["asked"] == ["r1", "r2"]
    assert report["codes"][:2] == ["approval_denied"] * 2
    texts = report["texts"]
    assert isinstance(texts, list)
    assert CANARY not in json.dumps(texts)
    assert "notes.txt" in texts[2] and "2 secret location(s) not searched" in texts[2]
