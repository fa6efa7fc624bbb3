"""What an awk program writes (kernel.shell.awkscript): the files its output redirections
name, and whether it may write others or run commands; checked against a table and, for
programs that act in BEGIN, against the awk installed here."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kernel.shell.awkscript import read_program

# (program, files its redirections name, may write others or run commands)
PROGRAMS: list[tuple[str, list[str], bool]] = [
    ('BEGIN{print > "o1"}', ["o1"], False),
    ('BEGIN{print "x" >> "o1"}', ["o1"], False),
    ('BEGIN{printf "%s", "x" > "o1"}', ["o1"], False),
    ('BEGIN{printf("%s", "x") > "o1"}', ["o1"], False),
    ('BEGIN{print("x") > "o1"}', ["o1"], False),
    ('BEGIN{print "x" > "o" "1"}', ["o1"], False),
    ('BEGIN{print "x" > "o\\"1"}', ['o"1'], False),
    ('BEGIN{if (1) print > "o1"; if (1) print > "o2"}', ["o1", "o2"], False),
    ('BEGIN{print > "o1"; print > "o2"}', ["o1", "o2"], False),
    ('BEGIN{print 1/2 > "o1"}', ["o1"], False),
    ('BEGIN{n = 4 / 2; print > "o1"; m = n / 2}', ["o1"], False),
    ('BEGIN{x = "a>b"; print x > "o1"}', ["o1"], False),
    ('BEGIN{print (1 > 2)}', [], False),
    ('BEGIN{print (1 > 2) > "o1"}', ["o1"], False),
    ('BEGIN{if (2 > 1) print "y"}', [], False),
    ('BEGIN{print 1 ? "a" : "b"}', [], False),
    ("BEGIN{print \"x\" # > \"o1\"\n}", [], False),
    ('/a>b/ {print}', [], False),
    ('/x\\/y/ {print > "o1"}', ["o1"], False),
    ('$1 > 5 {print}', [], False),
    ('BEGIN{f = "o1"; print > f}', [], True),
    ('BEGIN{print > ("o" 1)}', [], True),
    ('BEGIN{print > "o" 1}', [], True),
    ('BEGIN{print | "cat"}', [], True),
    ('BEGIN{print |& "cat"}', [], True),
    ('BEGIN{"echo x" | getline y}', [], True),
    ('BEGIN{system("true")}', [], True),
    ('@load "rwarray"', [], True),
    ('@include "lib.awk"', [], True),
    ('BEGIN{getline x < "in"}', [], False),
    ('{print $1}', [], False),
]


@pytest.mark.parametrize(("program", "files", "unknown"), PROGRAMS)
def test_what_a_program_writes(program: str, files: list[str], unknown: bool) -> None:
    read = read_program(program)
    assert (list(read.files), read.unknown) == (files, unknown)


AWK = shutil.which("awk")


@pytest.mark.skipif(AWK is None, reason="no awk installed")
@pytest.mark.parametrize(("program", "files", "unknown"),
                         [p for p in PROGRAMS if p[0].startswith("BEGIN") and not p[2]])
def test_awk_writes_what_the_reader_reads(tmp_path: Path, program: str, files: list[str],
                                          unknown: bool) -> None:
    assert AWK is not None
    subprocess.run([AWK, program], cwd=tmp_path, capture_output=True, timeout=10,
                   check=False, stdin=subprocess.DEVNULL)
    assert set(os.listdir(tmp_path)) == set(files)
