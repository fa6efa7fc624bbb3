"""The change set's data: JSON both ways (malformed input refused, saying why), the summary,
and which changes a held one holds with it (split_held)."""

from __future__ import annotations

import collections
import json
import os
from typing import Any

import hypothesis
import pytest
from hypothesis import strategies as st

from kernel.events import json_text
from kernel.transaction.changeset import Change, ChangeSet, ChangeSetError, split_held
from kernel.transaction.upper import line_counts

SAMPLE = ChangeSet((
    Change("src/app.py", "modified", "file", added=10, removed=2),
    Change("b.txt", "renamed", "file", previous="a.txt"),
    Change("old", "deleted", "dir"),
    Change("old/x.bin", "deleted", "file", binary=True),
    Change("run.sh", "mode", "file", executable=True),
    Change(os.fsdecode(b"caf\xe9\nname"), "created", "file", added=1),
    Change("l", "link", "link"),
))


def test_json_round_trip_through_event_text() -> None:
    text = json_text(SAMPLE.to_json())
    assert ChangeSet.from_json(json.loads(text)) == SAMPLE
    assert [c.path for c in SAMPLE] == sorted(c.path for c in SAMPLE)


@pytest.mark.parametrize(("data", "says"), [
    ([], "an object with only 'changes'"),
    ({"changes": {}}, "must be a list"),
    ({"changes": [], "more": 1}, "an object with only 'changes'"),
    ({"changes": ["a"]}, "must be an object"),
    ({"changes": [{"path": "a", "kind": "eaten", "entry": "file"}]}, "change kind 'eaten'"),
    ({"changes": [{"path": "a", "kind": "created", "entry": "fifo"}]}, "entry 'fifo'"),
    ({"changes": [{"path": "../a", "kind": "created", "entry": "file"}]}, "not a plain"),
    ({"changes": [{"path": "/etc/a", "kind": "created", "entry": "file"}]}, "not a plain"),
    ({"changes": [{"path": "a//b", "kind": "created", "entry": "file"}]}, "not a plain"),
    ({"changes": [{"path": "", "kind": "created", "entry": "file"}]}, "non-empty string"),
    ({"changes": [{"path": 3, "kind": "created", "entry": "file"}]}, "non-empty string"),
    ({"changes": [{"path": "a", "kind": "created", "entry": "file", "added": -1}]},
     "non-negative int"),
    ({"changes": [{"path": "a", "kind": "created", "entry": "file", "added": True}]},
     "non-negative int"),
    ({"changes": [{"path": "a", "kind": "created", "entry": "file", "binary": 1}]}, "a bool"),
    ({"changes": [{"path": "a", "kind": "created", "entry": "file", "previous": "b"}]},
     "only a renamed change"),
    ({"changes": [{"path": "a", "kind": "renamed", "entry": "file"}]}, "non-empty string"),
    ({"changes": [{"path": "a", "kind": "created", "entry": "file", "colour": "red"}]},
     "unknown fields"),
    ({"changes": [{"path": "a", "kind": "created", "entry": "file"},
                  {"path": "a", "kind": "deleted", "entry": "file"}]}, "twice"),
])
def test_malformed_input_is_refused_saying_why(data: Any, says: str) -> None:
    with pytest.raises(ChangeSetError, match=says):
        ChangeSet.from_json(data)


def test_summary() -> None:
    assert SAMPLE.summary() == "5 files changed, +11 \u22122, 1 deleted, 1 folder"
    assert ChangeSet().summary() == "no changes"
    assert ChangeSet((Change("a", "created", "file", added=1),)).summary() == (
        "1 file changed, +1 \u22120")


def test_a_held_change_holds_what_needs_it() -> None:
    tree = ChangeSet((
        Change("gone", "deleted", "dir"), Change("gone/.git", "deleted", "dir"),
        Change("gone/.git/config", "deleted", "file"), Change("gone/x", "deleted", "file"),
        Change("new", "created", "dir"), Change("new/.envrc", "created", "file"),
        Change("new/sub", "created", "dir"), Change("new/sub/y", "created", "file"),
        Change("kept/z", "modified", "file"),
    ))
    applying, held = split_held(tree, ["gone/.git/config", "new"])
    assert [c.path for c in held] == ["gone", "gone/.git", "gone/.git/config", "new",
                                      "new/.envrc", "new/sub", "new/sub/y"]
    assert [c.path for c in applying] == ["gone/x", "kept/z"]
    assert split_held(tree, []) == (tree, ChangeSet())
    assert split_held(tree, ["not/listed"])[1] == ChangeSet()


@hypothesis.given(st.lists(st.sampled_from([b"a", b"b", b"", b"c c"]), max_size=8),
                  st.lists(st.sampled_from([b"a", b"b", b"", b"c c"]), max_size=8),
                  st.booleans())
def test_line_counts_are_the_multiset_difference_on_every_side(
        new: list[bytes], old: list[bytes], append: bool) -> None:
    """The shortcut for an append or a truncation counts what the multisets count."""
    if append:
        new = old + new
    expected = (sum((collections.Counter(new) - collections.Counter(old)).values()),
                sum((collections.Counter(old) - collections.Counter(new)).values()))
    assert line_counts(new, old) == expected
    assert line_counts(old, new) == expected[::-1]
