"""What a sed script writes (kernel.shell.sedscript): the files its `w`, `W` and `s///w`
open, read as GNU sed reads the script, checked against a table and against GNU sed itself,
which opens (creates) those files while it reads the script, before any input."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.shell.sedscript import read_script

# (pieces: each -e in order, files it opens, runs commands, not all read)
SCRIPTS: list[tuple[list[str], list[str], bool, bool]] = [
    (["w out"], ["out"], False, False),
    (["W out"], ["out"], False, False),
    (["wout"], ["out"], False, False),
    (["w out "], ["out "], False, False),
    (["w out;p"], ["out;p"], False, False),
    (["p;w a\nw b"], ["a", "b"], False, False),
    (["w a", "w b"], ["a", "b"], False, False),
    (["s/x/y/w out"], ["out"], False, False),
    (["s/x/y/gpw out"], ["out"], False, False),
    (["s/x/y/3w out"], ["out"], False, False),
    (["s/x/y/mMiIgw out"], ["out"], False, False),
    (["s/x/y/ w out"], ["out"], False, False),
    (["s/x/y/wout"], ["out"], False, False),
    (["s|x|y|w out"], ["out"], False, False),
    (["sxaxbxw out"], ["out"], False, False),
    (["s a b w out"], ["out"], False, False),
    (["s/a\\/b/c/w out"], ["out"], False, False),
    (["s/a/b\\\nc/w out"], ["out"], False, False),
    (["s/[/]w no/x/"], [], False, False),
    (["s/[[:alpha:]/]w no/x/"], [], False, False),
    (["s/[]/]w no/x/"], [], False, False),
    (["s/x/y/;w out"], ["out"], False, False),
    (["y/a\\/b/xyz/;w out"], ["out"], False, False),
    (["/x/w out"], ["out"], False, False),
    (["\\%x%w out"], ["out"], False, False),
    (["1,+2w out"], ["out"], False, False),
    (["0~2w out"], ["out"], False, False),
    (["1,~4w out"], ["out"], False, False),
    (["/x/I,/y/Mw out"], ["out"], False, False),
    (["1 ! w out"], ["out"], False, False),
    (["$!{p;w out\n}"], ["out"], False, False),
    (["{;};w out"], ["out"], False, False),
    ([";;w out"], ["out"], False, False),
    (["n;N;D;P;h;H;g;G;x;=;z;F;w out"], ["out"], False, False),
    (["l 5;q5;w out"], ["out"], False, False),
    (["v 4.2;w out"], ["out"], False, False),
    ([":a;w out"], ["out"], False, False),
    ([":a w out"], ["out"], False, False),
    (["b x;w out;:x"], ["out;:x"], False, False),
    (["t x ; :x w out"], ["out"], False, False),
    (["#n;w no\nw out"], ["out"], False, False),
    (["r in;w no"], [], False, False),
    (["R in;w no"], [], False, False),
    (["$!a foo;w no"], [], False, False),
    (["a\\\nfoo;w no"], [], False, False),
    (["c\\\ntext;w no"], [], False, False),
    (["a foo\\\nw no"], [], False, False),
    (["a\\", "w no"], [], False, False),
    (["a foo\\", "w no"], [], False, False),
    (["a\\", "text", "w out"], ["out"], False, False),
    (["{w out", "}"], ["out"], False, False),
    (["/x/{w out}"], ["out}"], False, False),
    (["w out", "{"], ["out"], False, False),
    (["w out", "}"], ["out"], False, True),
    (["s/x/y/w"], [], False, True),
    (["s/x/y/w", "out"], [], False, True),
    (["s/a/[/]w no"], [], False, True),
    (["}w no"], [], False, True),
    (["w"], [], False, True),
    (["e"], [], True, False),
    (["e echo hi"], [], True, False),
    (["1e touch x;w no"], [], True, False),
    (["s/x/y/e"], [], True, False),
    (["s/x/y/ew out"], ["out"], True, False),
    (["w /dev/stdout"], ["/dev/stdout"], False, False),
    (["p"], [], False, False),
    ([], [], False, False),
]


@pytest.mark.parametrize(("pieces", "files", "runs", "unread"), SCRIPTS)
def test_what_a_script_writes(pieces: list[str], files: list[str], runs: bool,
                              unread: bool) -> None:
    script = read_script(pieces)
    assert (list(script.files), script.runs, script.unread) == (files, runs, unread)


def _gnu_sed() -> str | None:
    found = shutil.which("sed")
    if found is None:
        return None
    version = subprocess.run([found, "--version"], capture_output=True, text=True,
                             check=False)
    return found if "GNU sed" in version.stdout else None


GNU_SED = _gnu_sed()
needs_gnu_sed = pytest.mark.skipif(GNU_SED is None, reason="GNU sed is not installed")


def _opened_by_sed(pieces: Sequence[str], folder: Path) -> set[str]:
    """The files GNU sed creates in an empty folder while it reads `pieces` (no input:
    no command runs)."""
    assert GNU_SED is not None
    folder.mkdir()
    args = [GNU_SED, "-n", *(a for piece in pieces for a in ("-e", piece)), os.devnull]
    subprocess.run(args, cwd=folder, capture_output=True, timeout=10, check=False)
    return set(os.listdir(folder))


@needs_gnu_sed
@pytest.mark.parametrize(("pieces", "files", "runs", "unread"),
                         [s for s in SCRIPTS if s[0] and "/dev/stdout" not in s[1]])
def test_gnu_sed_opens_what_the_reader_reads(tmp_path: Path, pieces: list[str],
                                             files: list[str], runs: bool,
                                             unread: bool) -> None:
    opened = _opened_by_sed(pieces, tmp_path / "ws")
    if unread:
        assert opened <= set(files), opened
    else:
        assert opened == set(files), opened


_FRAGMENTS = ["w o1", "w o2\n", "W o3", "s/a/b/w o4", "s/a/b/gw o5\n", "s|a|b|w o6",
              "s/[/]w o7/x/", "s/a/[/]w o8", ";", "\n", " ", "{", "}", "a\\", "a foo",
              "i\\\n", "c bar\\", "e", "s/a/b/e", "#", "#c\n", "p", "1", "$", "/x/", "\\%x%",
              ",", "!", "~2", "+3", "0", "I", ":l", "b l", "t", "y/ab/cd/", "r f", "q5",
              "l 3", "v", "=", "}w o9", "s/a/b/", "\\", "/", "[", "]", "[:", ":]", "w", "s",
              "\r\n", "x"]


@needs_gnu_sed
@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_FRAGMENTS), min_size=1, max_size=6).map("".join),
                min_size=1, max_size=3))
def test_no_script_opens_a_file_the_reader_misses(pieces: list[str]) -> None:
    """Random scripts: every file GNU sed opens is one the reader names, or the reader says
    the script runs commands or could not be read (either asks)."""
    with tempfile.TemporaryDirectory() as folder:
        opened = _opened_by_sed(pieces, Path(folder) / "ws")
    script = read_script(pieces)
    assert opened <= set(script.files) or script.runs or script.unread, (pieces, opened)
