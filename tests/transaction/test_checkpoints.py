"""Checkpoints on a real workspace and a real SQLite index: undo puts back bytes, modes,
links and absence; it is refused (nothing changed) when a later call or the user changed a
path since, and says which; rewind goes newest first and stops; the bound drops the oldest
steps' bytes; a new Checkpoints object on the same folder sees everything."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from pathlib import Path

import pytest

from kernel.transaction.changeset import Change, ChangeSet
from kernel.transaction.checkpoints import (
    OUTSIDE,
    SCHEMA_VERSION,
    SMALL_BYTES,
    CheckpointError,
    Checkpoints,
)
from tests.transaction.overlaykit import Link, build, manifest


def step(checkpoints: Checkpoints, ws: Path, call: str, writes: dict[str, str | None],
         session: str = "s1") -> None:
    """One recorded step, as a file tool makes one: keep, change, commit."""
    recorder = checkpoints.begin(session, call, ws)
    changes = []
    for rel, text in writes.items():
        recorder.keep(rel)
        path = ws / rel
        existed = path.exists()
        if text is None:
            path.unlink()
            changes.append(Change(rel, "deleted", "file"))
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            changes.append(Change(rel, "modified" if existed else "created", "file"))
    recorder.commit(ChangeSet(tuple(changes)))


def kept_blobs(root: Path) -> int:
    """How many distinct kept bytes the store holds (rows of the index, files beside it)."""
    db = sqlite3.connect(root / "index.sqlite3")
    try:
        in_index = db.execute("SELECT COUNT(DISTINCT digest) FROM kept").fetchone()[0]
    finally:
        db.close()
    return int(in_index) + sum(1 for p in (root / "blobs").rglob("*") if p.is_file())


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    build(tmp_path / "ws", {"a.txt": "a0\n", "b.txt": "b0\n", "c.txt": "c0\n"})
    return tmp_path / "ws"


@pytest.fixture
def checkpoints(tmp_path: Path) -> Checkpoints:
    return Checkpoints(tmp_path / "data" / "checkpoints")


def test_undo_puts_back_bytes_modes_links_and_absence(ws: Path, checkpoints: Checkpoints):
    build(ws, {"run.sh": "echo\n", "l": Link("a.txt"), "d/x": "x\n", "d/y": "y\n"})
    before = manifest(ws)
    paths = ["a.txt", "run.sh", "l", "new.txt", "d", "d/x", "d/y", "n", "n/m"]
    recorder = checkpoints.begin("s1", "c1", ws)
    for path in paths:
        recorder.keep(path)
    (ws / "a.txt").write_text("changed\n")
    (ws / "run.sh").chmod(0o700)
    (ws / "l").unlink()
    (ws / "l").symlink_to("b.txt")
    (ws / "new.txt").write_text("new\n")
    for name in ("x", "y"):
        (ws / "d" / name).unlink()
    (ws / "d").rmdir()
    (ws / "n").mkdir(mode=0o750)
    (ws / "n/m").write_text("m\n")
    made = recorder.commit(ChangeSet((Change("a.txt", "modified", "file"),)))
    assert made.undoable and not made.undone
    result = checkpoints.undo("s1", "c1")
    assert result.ok, result
    assert result.undone == ("c1",)
    assert set(result.restored) == set(paths)
    assert manifest(ws) == before
    steps = checkpoints.steps("s1")
    assert [(s.call_id, s.undone, s.undoes) for s in steps] == [("c1", True, ""),
                                                               ("c1", False, "c1")]
    assert checkpoints.latest_undoable("s1") is None


def test_undo_is_refused_when_a_later_call_changed_a_path(ws: Path, checkpoints: Checkpoints):
    step(checkpoints, ws, "c1", {"a.txt": "a1\n", "b.txt": "b1\n"})
    step(checkpoints, ws, "c2", {"a.txt": "a2\n"})
    before = manifest(ws)
    result = checkpoints.undo("s1", "c1")
    assert not result.ok
    assert [(b.path, b.reason, b.by_call) for b in result.blocked] == [
        ("a.txt", "changed by call c2", "c2")]
    assert result.stopped_at == "c1" and result.undone == ()
    assert manifest(ws) == before  # b.txt was not put back either
    assert checkpoints.undo("s1", "c2").ok
    assert checkpoints.undo("s1", "c1").ok
    assert (ws / "a.txt").read_text() == "a0\n" and (ws / "b.txt").read_text() == "b0\n"


def test_undo_is_refused_when_the_user_changed_a_path(ws: Path, checkpoints: Checkpoints):
    step(checkpoints, ws, "c1", {"a.txt": "a1\n", "made/new.txt": "n\n"})
    (ws / "b.txt").write_text("not a path of c1\n")
    (ws / "a.txt").write_text("mine\n")
    (ws / "made/mine.txt").write_text("mine too\n")
    before = manifest(ws)
    result = checkpoints.undo("s1", "c1")
    assert [(b.path, b.reason) for b in result.blocked] == [("a.txt", OUTSIDE),
                                                            ("made/mine.txt", OUTSIDE)]
    assert manifest(ws) == before
    (ws / "a.txt").write_text("a1\n")
    (ws / "made/mine.txt").unlink()
    assert checkpoints.undo("s1", "c1").ok
    assert not (ws / "made").exists()


def test_a_refused_undo_keeps_no_bytes_of_its_own(tmp_path: Path, ws: Path,
                                                 checkpoints: Checkpoints):
    """The undo reads what each path is now once, keeping it on the way; when it is refused,
    what it kept (a large file's bytes are a file of the store) is dropped again."""
    big = "x" * (200 << 10)
    step(checkpoints, ws, "c1", {"a.txt": big + "1", "b.txt": big + "2"})
    (ws / "a.txt").write_text(big + "mine")
    kept = kept_blobs(tmp_path / "data" / "checkpoints")
    before = manifest(ws)
    result = checkpoints.undo("s1", "c1")
    assert [(b.path, b.reason) for b in result.blocked] == [("a.txt", OUTSIDE)]
    assert manifest(ws) == before
    assert kept_blobs(tmp_path / "data" / "checkpoints") == kept
    (ws / "a.txt").write_text(big + "1")
    assert checkpoints.undo("s1", "c1").ok
    assert (ws / "a.txt").read_text() == "a0\n" and (ws / "b.txt").read_text() == "b0\n"


def test_an_undo_blocked_by_an_earlier_undo_says_so(ws: Path, checkpoints: Checkpoints):
    step(checkpoints, ws, "c1", {"a.txt": "a1\n"})
    step(checkpoints, ws, "c2", {"a.txt": "a2\n"})
    step(checkpoints, ws, "c3", {"a.txt": "a3\n"})
    assert checkpoints.undo("s1", "c3").ok
    result = checkpoints.undo("s1", "c1")
    assert [(b.path, b.reason) for b in result.blocked] == [("a.txt", "changed by call c2")]
    step(checkpoints, ws, "c4", {"a.txt": "a4\n"})
    (ws / "a.txt").write_text("a2\n")  # by hand, as the undo of c3 had left it
    result = checkpoints.undo("s1", "c4")
    assert [(b.path, b.reason) for b in result.blocked] == [("a.txt", OUTSIDE)]


def test_rewind_goes_newest_first_and_stops_at_a_blocked_step(ws: Path,
                                                               checkpoints: Checkpoints):
    step(checkpoints, ws, "c1", {"a.txt": "a1\n"})
    after_c1 = manifest(ws)
    step(checkpoints, ws, "c2", {"b.txt": "b2\n"})
    step(checkpoints, ws, "c3", {"c.txt": "c3\n", "new.txt": "n\n"})
    step(checkpoints, ws, "other", {"b.txt": "elsewhere\n"}, session="s2")
    result = checkpoints.rewind("s1", "c1")
    assert result.undone == ("c3",)
    assert result.stopped_at == "c2"
    assert [(b.path, b.reason, b.by_call) for b in result.blocked] == [
        ("b.txt", "changed by call other", "other")]
    assert checkpoints.undo("s2", "other").ok
    again = checkpoints.rewind("s1", "c1")
    assert again.ok and again.undone == ("c2",)
    assert manifest(ws) == after_c1


def test_latest_undoable_takes_the_step_before_after_each_undo(ws: Path,
                                                                checkpoints: Checkpoints):
    for n, name in enumerate(("a.txt", "b.txt", "c.txt"), start=1):
        step(checkpoints, ws, f"c{n}", {name: f"{n}\n"})
    taken = []
    while (latest := checkpoints.latest_undoable("s1")) is not None:
        taken.append(latest.call_id)
        assert checkpoints.undo("s1", latest.call_id).ok
    assert taken == ["c3", "c2", "c1"]
    assert checkpoints.undo("s1", "c2").refused == "call c2 is already undone"
    with pytest.raises(CheckpointError, match="no step of call 'nope'"):
        checkpoints.undo("s1", "nope")


def test_the_bound_drops_the_oldest_steps_bytes(ws: Path, tmp_path: Path):
    root = tmp_path / "data" / "checkpoints"
    checkpoints = Checkpoints(root, max_bytes=250)
    build(ws, {"f1": "1" * 100, "f2": "2" * 100, "f3": "3" * 100})
    step(checkpoints, ws, "c1", {"f1": "x\n"})
    step(checkpoints, ws, "c2", {"f2": "y\n"})
    assert [s.undoable for s in checkpoints.steps("s1")] == [True, True]
    step(checkpoints, ws, "c3", {"f3": "z\n"})  # 300 > 250: c1's bytes go
    assert [s.undoable for s in checkpoints.steps("s1")] == [False, True, True]
    assert kept_blobs(root) == 2
    result = checkpoints.undo("s1", "c1")
    assert "dropped to stay under checkpoints.max_bytes" in result.refused
    assert (ws / "f1").read_text() == "x\n"
    assert checkpoints.undo("s1", "c3").ok and checkpoints.undo("s1", "c2").ok
    assert (ws / "f2").read_text() == "2" * 100


def test_a_new_object_on_the_same_folder_sees_and_undoes_the_steps(ws: Path, tmp_path: Path):
    root = tmp_path / "data" / "checkpoints"
    with Checkpoints(root) as first:
        step(first, ws, "c1", {os.fsdecode(b"caf\xe9 \n.txt"): "odd\n"})
    with Checkpoints(root) as second:
        steps = second.steps("s1")
        assert [s.changes.changes[0].path for s in steps] == [os.fsdecode(b"caf\xe9 \n.txt")]
        assert second.latest_session() == "s1"
        assert second.undo("s1", "c1").ok
    assert sorted(p.name for p in ws.iterdir()) == ["a.txt", "b.txt", "c.txt"]


def test_an_index_from_a_newer_reins_is_refused(tmp_path: Path):
    root = tmp_path / "checkpoints"
    root.mkdir()
    db = sqlite3.connect(root / "index.sqlite3")
    db.execute("PRAGMA user_version = 99")
    db.close()
    with pytest.raises(CheckpointError, match="newer Reins"):
        Checkpoints(root)


def test_a_steps_diff_shows_before_and_after_from_the_kept_bytes(ws: Path,
                                                                  checkpoints: Checkpoints):
    step(checkpoints, ws, "c1", {"a.txt": "a1\n", "new.txt": "n\n", "b.txt": None})
    step(checkpoints, ws, "c2", {"a.txt": "a2\n"})
    first = checkpoints.diff("s1", "c1")
    assert "# a.txt: modified" in first and "-a0" in first
    assert "+a1" in first, "the bytes after c1 are c2's kept bytes before"
    assert "+n" in first and "-b0" in first and "/dev/null" in first
    later = checkpoints.diff("s1", "c2")
    assert "-a1" in later and "+a2" in later, "the bytes after the newest step: the file"
    (ws / "a.txt").write_text("edited by the user\n")
    assert "+a2" not in checkpoints.diff("s1", "c2"), "never another file's bytes as c2's"
    with pytest.raises(CheckpointError, match="no step of call"):
        checkpoints.diff("s1", "c9")


@pytest.mark.parametrize("secret", [".env", "deploy/.env.production", "home/.ssh/id_rsa",
                                    "x/.aws/credentials"])
def test_a_steps_diff_never_shows_a_secret_locations_content(ws: Path,
                                                             checkpoints: Checkpoints,
                                                             secret: str):
    build(ws, {secret: "TOKEN=before-value\n"})
    step(checkpoints, ws, "c1", {secret: "TOKEN=after-value\n", "plain.txt": "p\n"})
    recorder = checkpoints.begin("s1", "c2", ws)  # a rename out of the secret location
    recorder.keep_all([secret, "moved.txt"])
    (ws / secret).rename(ws / "moved.txt")
    recorder.commit(ChangeSet((Change("moved.txt", "renamed", "file", previous=secret),)))
    for call in ("c1", "c2"):
        text = checkpoints.diff("s1", call)
        assert "value" not in text and "secret location" in text
    assert "+p" in checkpoints.diff("s1", "c1")


def test_a_steps_diff_is_bounded(ws: Path, checkpoints: Checkpoints):
    step(checkpoints, ws, "c1", {"big.txt": "".join(f"line {i}\n" for i in range(5000))})
    text = checkpoints.diff("s1", "c1")
    assert len(text.splitlines()) <= 401 and "more lines not shown" in text


BIG = SMALL_BYTES + 1
"""Kept bytes this large are content-addressed files shared by the steps keeping them."""


def test_a_file_two_steps_keep_stays_until_neither_keeps_it(ws: Path, tmp_path: Path):
    """Pruning the oldest step frees what only it kept; a kept file a later step keeps too
    stays, and that step still undoes."""
    root = tmp_path / "data" / "checkpoints"
    checkpoints = Checkpoints(root, max_bytes=int(3.5 * BIG))
    build(ws, {"a": "A" * BIG, "u": "U" * BIG, "b": "A" * BIG, "c": "C" * BIG,
               "d": "D" * BIG})
    step(checkpoints, ws, "c1", {"a": "x\n", "u": "x\n"})
    step(checkpoints, ws, "c2", {"b": "y\n"})  # the same bytes as a: one file
    step(checkpoints, ws, "c3", {"c": "z\n"})
    assert kept_blobs(root) == 3
    step(checkpoints, ws, "c4", {"d": "w\n"})  # 4 > 3.5: c1's bytes go, a's stay
    assert [s.undoable for s in checkpoints.steps("s1")] == [False, True, True, True]
    assert kept_blobs(root) == 3
    assert checkpoints.undo("s1", "c2").ok
    assert (ws / "b").read_text() == "A" * BIG


def test_an_index_of_schema_1_is_migrated_and_its_steps_still_undo(ws: Path, tmp_path: Path):
    """Schema 1 (steps only written when done, every kept file a blob file, entries indexed
    by path): opened by this Reins, its steps are listed and undone from their blob files,
    and the index by path is gone (schema 3)."""
    from kernel.transaction.blobs import Blobs
    from kernel.transaction.checkpoints import _SCHEMA

    root = tmp_path / "old"
    root.mkdir()
    blobs = Blobs(root / "blobs")
    fd = os.open(ws / "a.txt", os.O_RDONLY)
    try:
        digest, size = blobs.put_fd(fd)
    finally:
        os.close(fd)
    db = sqlite3.connect(root / "index.sqlite3")
    db.executescript(_SCHEMA + "CREATE INDEX entries_path ON entries(path, step_id);"
                     "CREATE INDEX entries_blob ON entries(before_digest);")
    db.execute("PRAGMA user_version = 1")
    db.execute("INSERT INTO steps(id, session_id, call_id, at, workspace, changes) VALUES "
               "(1, 's1', 'c1', 0, ?, ?)", (os.fsencode(str(ws)), json.dumps(
                   ChangeSet((Change("a.txt", "modified", "file"),)).to_json())))
    (ws / "a.txt").write_text("a1\n")
    after_digest = hashlib.sha256(b"a1\n").hexdigest()
    db.execute("INSERT INTO entries VALUES (1, ?, 'file', 420, ?, 'file', 420, ?)",
               (b"a.txt", os.fsencode(digest), os.fsencode(after_digest)))
    db.execute("INSERT INTO blobs(digest, size) VALUES (?, ?)", (digest, size))
    db.commit()
    db.close()
    with Checkpoints(root) as migrated:
        assert [s.call_id for s in migrated.steps("s1")] == ["c1"]
        assert migrated.undo("s1", "c1").ok
    assert (ws / "a.txt").read_text() == "a0\n"
    db = sqlite3.connect(root / "index.sqlite3")
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 5
    assert db.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND name IN "
                      "('entries_path', 'entries_blob')").fetchall() == []
    # the blob file counts the one step keeping it; the undo keeps a1's bytes as its row
    assert db.execute("SELECT refs FROM blobs WHERE digest = ?", (digest,)).fetchone() == (1,)
    assert db.execute("SELECT data FROM kept").fetchall() == [(b"a1\n",)]
    assert _totals_agree(db)
    db.close()


def _totals_agree(db: sqlite3.Connection) -> bool:
    """The running total of kept bytes is what the rows and blob files hold."""
    total = db.execute("SELECT value FROM totals").fetchone()[0]
    return bool(total == db.execute("SELECT COALESCE(SUM(size), 0) FROM blobs").fetchone()[0]
                + db.execute("SELECT COALESCE(SUM(length(data)), 0) FROM kept").fetchone()[0])


def test_an_index_of_schema_4_moves_small_kept_bytes_to_their_steps(ws: Path, tmp_path: Path):
    """Schema 4 kept small bytes as rows keyed by digest (shared by the steps keeping
    them): opened by this Reins, each step gets its own row of them and still undoes."""
    from kernel.transaction.checkpoints import _MIGRATIONS, _SCHEMA

    root = tmp_path / "old"
    root.mkdir()
    db = sqlite3.connect(root / "index.sqlite3", isolation_level=None)
    db.executescript(_SCHEMA)
    for version in (2, 3, 4):
        for statement in _MIGRATIONS[version]:
            db.execute(statement)
    db.execute("PRAGMA user_version = 4")
    a0 = hashlib.sha256(b"a0\n").hexdigest()
    for step_id, call, path in ((1, "c1", "a.txt"), (2, "c2", "b.txt")):
        (ws / path).write_text("x\n")
        db.execute("INSERT INTO steps(id, session_id, call_id, at, workspace, changes) VALUES "
                   "(?, 's1', ?, 0, ?, ?)", (step_id, call, os.fsencode(str(ws)), json.dumps(
                       ChangeSet((Change(path, "modified", "file"),)).to_json())))
        db.execute("INSERT INTO entries VALUES (?, ?, 'file', 420, ?, 'file', 420, ?)",
                   (step_id, path.encode(), a0.encode(),
                    hashlib.sha256(b"x\n").hexdigest().encode()))
    (ws / "b.txt").write_text("x\n")
    db.execute("INSERT INTO blobs(digest, size, data, refs) VALUES (?, 3, ?, 2)", (a0, b"a0\n"))
    db.close()
    with Checkpoints(root) as migrated:
        assert migrated.undo("s1", "c2").ok and migrated.undo("s1", "c1").ok
    assert (ws / "a.txt").read_text() == (ws / "b.txt").read_text() == "a0\n"
    db = sqlite3.connect(root / "index.sqlite3")
    assert db.execute("SELECT step_id FROM kept WHERE digest = ? ORDER BY step_id",
                      (a0,)).fetchall() == [(1,), (2,)]
    assert db.execute("SELECT COUNT(*) FROM blobs").fetchone() == (0,)
    assert _totals_agree(db)
    db.close()


@pytest.mark.parametrize("lost", ["the large file's blob", "nothing"])
def test_an_undo_whose_kept_bytes_are_gone_is_refused_and_changes_nothing(
        checkpoints: Checkpoints, ws: Path, lost: str) -> None:
    """Small kept bytes are rows of the index, large ones files beside it: a step whose
    file is gone (a disk cleaned by hand) is refused, naming the path, before any change."""
    big = "x" * (SMALL_BYTES + 1) + "\n"
    (ws / "big.txt").write_text(big)
    step(checkpoints, ws, "c1", {"a.txt": "a1\n", "big.txt": "y\n"})
    if lost != "nothing":
        [blob] = [p for p in (checkpoints.root / "blobs").rglob("*") if p.is_file()]
        blob.unlink()
    before = manifest(ws)
    result = checkpoints.undo("s1", "c1")
    if lost == "nothing":
        assert result.ok and (ws / "big.txt").read_text() == big
        assert (ws / "a.txt").read_text() == "a0\n"
        return
    assert not result.ok and manifest(ws) == before
    assert result.refused == ("call c1 can no longer be undone: the kept bytes of big.txt "
                              "are gone")


def test_a_step_pruned_while_it_applies_and_then_rolled_back_frees_its_bytes_once(
        ws: Path, tmp_path: Path):
    """A step written before it applies can be pruned by another step's commit; rolled back
    after, it must not count its files off again: what the other step keeps stays."""
    checkpoints = Checkpoints(tmp_path / "data" / "checkpoints", max_bytes=2 * BIG)
    build(ws, {"x": "X" * BIG, "w": "W" * BIG, "y": "X" * BIG, "z": "Z" * 10})
    applying = checkpoints.begin("s1", "a", ws)
    applying.keep("x")
    applying.keep("w")
    applying.pending({})
    step(checkpoints, ws, "b", {"y": "y\n", "z": "z\n"})  # past the bound: a is pruned
    applying.rollback()
    assert checkpoints.undo("s1", "b").ok
    assert (ws / "y").read_text() == "X" * BIG
