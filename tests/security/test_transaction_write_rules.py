"""The user's write rules judge what a command changed, whatever program wrote it, as root
and as nobody (real bubblewrap, a real overlay, the real settle): a change a
`write_file`/`edit_file` deny rule names is never applied, whether the command created,
changed, extracted, linked, installed or moved a file into or out of that path (a rename
refused whole: its source stays); one an ask rule names
is held and shown; the rest is applied."""

from __future__ import annotations

from pathlib import Path

from tests.security.conftest import Confined
from tests.security.txnkit import Outcome, git_workspace, run_txn

SETTINGS = {"permissions": {"deny": ["write_file(locked/**)"], "ask": ["edit_file(docs/**)"]}}
DENIED = {
    "cp": "mkdir -p locked && cp a.txt locked/a",
    "python": "python3 -c \"import os; os.makedirs('locked', exist_ok=True); "
              "open('locked/p', 'w').write('x')\"",
    "tar": "mkdir -p t && echo hi > t/f && tar -cf x.tar -C t f && tar -xf x.tar -C locked "
           "&& rm -rf t x.tar",
    "sed -i": "sed -i s/old/new/ locked/old.txt",
    "mv out": "mv locked/old.txt moved.txt",
    "ln": "ln -s ../a.txt locked/link",
    "mkdir": "mkdir -p locked/deep/er",
    "install": "install -D a.txt locked/sub/i",
    "dd": "dd if=a.txt of=locked/d status=none",
    "perl rename in": "perl -e 'rename(\"a.txt\", \"locked/r\") or die'",
}
HELD = "mkdir -p docs && python3 -c \"open('docs/b', 'w').write('x')\""
PLAIN = "echo plain > c.txt"


def _prepare(folder: Path) -> None:
    git_workspace(folder)
    (folder / "workspace" / "locked").mkdir()
    (folder / "workspace" / "locked" / "old.txt").write_text("old\n")


def test_a_deny_rule_refuses_every_programs_write_and_an_ask_rule_holds(
        confined: Confined) -> None:
    def inspect(folder: Path, _outcomes: list[Outcome]) -> None:
        ws = folder / "workspace"
        assert sorted(p.name for p in (ws / "locked").iterdir()) == ["old.txt"]
        assert (ws / "locked" / "old.txt").read_text() == "old\n"
        assert not (ws / "moved.txt").exists()
        assert (ws / "a.txt").read_text() == "hello\n", "a rename into it is refused whole"
        assert not (ws / "docs").exists()
        assert (ws / "c.txt").read_text() == "plain\n"

    table = [*DENIED.values(), HELD, PLAIN]
    outcomes, _ = run_txn(confined, [{"command": f"{c} && echo DID"} for c in table],
                          prepare=_prepare, inspect=inspect, settings=SETTINGS)
    for name, outcome in zip([*DENIED, "held", "plain"], outcomes, strict=True):
        assert "DID" in outcome.content, (name, outcome.content)
    for name, outcome in zip(DENIED, outcomes[:len(DENIED)], strict=True):
        where = "moved.txt" if name == "mv out" else "locked/"
        refused = f"refused by the user's deny rules: {where}"
        assert refused in outcome.content and "(write_file(locked/**))" in outcome.content, (
            name, outcome.content)  # (a rename is named by where it went)
        assert not any(path.startswith("locked") for _kind, path in outcome.applied), name
    held, plain = outcomes[-2:]
    assert held.held and "docs/b" in held.shown() and not held.applied
    assert not plain.held and plain.applied == [("created", "c.txt")]
