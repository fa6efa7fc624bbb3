"""The built-in file tools, run through a real dispatcher on a real folder."""

from __future__ import annotations

import io
import itertools
import random
from pathlib import Path
from typing import Any

import pytest

from kernel.tools.builtin import builtin_tools
from kernel.tools.builtin.files import (
    COUNT_CHUNK_CHARS,
    MAX_GLOB_RESULTS,
    glob_regex,
    read_lines,
)
from kernel.tools.registry import ToolRegistry
from kernel.tools.spec import ErrorCode, Risk


@pytest.fixture
def d(env: Any) -> Any:
    return env.dispatcher(builtin_tools())


def run(env: Any, d: Any, name: str, **args: Any) -> Any:
    run.counter = getattr(run, "counter", 0) + 1  # type: ignore[attr-defined]
    return env.call(d, name, args, f"c{run.counter}")  # type: ignore[attr-defined]


def test_builtin_specs_are_registered_with_the_right_flags() -> None:
    registry = ToolRegistry(builtin_tools())
    assert registry.names() == [
        "read_file",
        "write_file",
        "edit_file",
        "list_directory",
        "glob",
        "grep",
        "read_tool_output",
    ]
    for name in ("read_file", "list_directory", "glob", "grep", "read_tool_output"):
        spec = registry.get(name)
        assert spec is not None and spec.risk is Risk.READ and spec.concurrent_safe
    for name in ("write_file", "edit_file"):
        spec = registry.get(name)
        assert spec is not None and spec.risk is Risk.WRITE and not spec.concurrent_safe
    for name in ("read_file", "write_file", "edit_file", "list_directory", "glob", "grep"):
        spec = registry.get(name)
        assert spec is not None and spec.path_params == ("path",)
    for schema in registry.schemas():
        assert schema["input_schema"]["additionalProperties"] is False
        assert schema["description"].strip()


def test_read_file_numbers_lines_and_pages(env: Any, d: Any) -> None:
    (env.workspace / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    whole = run(env, d, "read_file", path="f.txt")
    assert whole.text.splitlines()[0] == "     1\tline 1"
    assert whole.text.splitlines()[-1] == "    10\tline 10"
    part = run(env, d, "read_file", path="f.txt", offset=3, limit=2)
    assert part.text == (
        "     3\tline 3\n     4\tline 4\n"
        "[lines 3–4 of 10 in f.txt; call read_file with offset=5 for more]"
    )
    tail = run(env, d, "read_file", path="f.txt", offset=9)
    assert tail.text.endswith("[lines 9–10 of 10 in f.txt]")
    past = run(env, d, "read_file", path="f.txt", offset=11)
    assert past.error_code is ErrorCode.INVALID_ARGUMENTS and "has 10 lines" in past.text
    bad = run(env, d, "read_file", path="f.txt", offset=0)
    assert bad.error_code is ErrorCode.INVALID_ARGUMENTS and "$.offset" in bad.text


BIG = COUNT_CHUNK_CHARS


@pytest.mark.parametrize(("content", "lines"), [
    ("a\nb\nc\n", 3), ("a\nb\nc", 3), ("a\r\nb\r\nc\r\n", 3), ("a\nb", 2),
    ("a\n\n\n", 3), ("a\n中文\n\u2028x\n", 3), ("a\n" + "x" * (BIG + 5), 2),
    ("a\n" + "y\n" * (BIG // 2), 1 + BIG // 2), ("a\n" + "y\n" * (BIG // 2) + "z", 2 + BIG // 2),
    ("a\n" + "x" * (BIG - 3) + "\n", 2), ("a\n" + "é\n" * (BIG // 2 + 7), 1 + BIG // 2 + 7),
])
def test_read_file_counts_every_line_after_those_it_shows(env: Any, d: Any, content: str,
                                                          lines: int) -> None:
    (env.workspace / "f.txt").write_bytes(content.encode())
    first = run(env, d, "read_file", path="f.txt", offset=1, limit=1)
    assert first.text.endswith(f"[lines 1–1 of {lines} in f.txt; call read_file with "
                               f"offset=2 for more]")


def _lines_oracle(text: str, first: int, limit: int,
                  count_all: bool) -> tuple[list[str], int, bool]:
    lines = list(io.StringIO(text, newline="\n"))
    shown = [line.removesuffix("\n") for line in lines[first - 1:first - 1 + limit]]
    if len(shown) < limit:
        return shown, len(lines), False
    if not count_all:
        return shown, first - 1 + limit, len(lines) > first - 1 + limit
    return shown, len(lines), False


def test_read_lines_equals_splitting_the_whole_text() -> None:
    rng = random.Random(5)
    texts = ["", "\n", "a", "a\n", "a\nb", "\n\n\n", "a\r\nb\r\n", "中文\né\n",
             "a\u2028b\x85c\n", *("".join(rng.choice(["a", "bb", "\n", "\n\n", "ccc\n", "é",
                                                  "\r\n"]) for _ in range(rng.randrange(60)))
                                for _ in range(60))]
    for text in texts:
        for first, limit, chunk, count_all in itertools.product(
                (1, 2, 3, 5, 9), (1, 2, 7, 100), (1, 3, 64), (True, False)):
            got = read_lines(io.StringIO(text, newline="\n"), first, limit,
                             count_all=count_all, check=lambda: None, chunk_chars=chunk)
            assert (got.shown, got.total, got.more_unknown) == _lines_oracle(
                text, first, limit, count_all), (text, first, limit, chunk, count_all)


def test_read_file_edge_cases(env: Any, d: Any) -> None:
    ws = env.workspace
    (ws / "empty.txt").write_text("")
    assert run(env, d, "read_file", path="empty.txt").text == "[empty.txt is empty]"
    (ws / "crlf.txt").write_bytes("a\r\n中文\r\nno newline".encode())
    assert run(env, d, "read_file", path="crlf.txt").text == (
        "     1\ta\n     2\t中文\n     3\tno newline"
    )
    (ws / "long.txt").write_text("x" * 5000)
    assert "[line cut at 2000 characters]" in run(env, d, "read_file", path="long.txt").text
    (ws / "bin.dat").write_bytes(b"\x00\x01\x02PNG" * 100)
    binary = run(env, d, "read_file", path="bin.dat")
    assert binary.is_error and "binary file (600 bytes)" in binary.text
    (ws / "dir").mkdir()
    folder = run(env, d, "read_file", path="dir")
    assert folder.is_error and "is a folder" in folder.text and "list_directory" in folder.text
    missing = run(env, d, "read_file", path="emty.txt")
    assert missing.is_error and "does not exist" in missing.text and "empty.txt" in missing.text
    (ws / "latin1.txt").write_bytes(b"caf\xe9\n")
    assert run(env, d, "read_file", path="latin1.txt").text == "     1\tcaf\ufffd"


def test_read_file_refuses_a_fifo_without_blocking(env: Any, d: Any) -> None:
    import os

    os.mkfifo(env.workspace / "pipe")
    result = run(env, d, "read_file", path="pipe")
    assert result.is_error and "not a regular file" in result.text


def test_write_file_creates_and_replaces(env: Any, d: Any) -> None:
    created = run(env, d, "write_file", path="new/dir/a.txt", content="one\ntwo\n")
    assert created.text == "Wrote 8 bytes (2 lines) to new/dir/a.txt (new file)."
    assert (env.workspace / "new/dir/a.txt").read_text() == "one\ntwo\n"
    replaced = run(env, d, "write_file", path="new/dir/a.txt", content="中")
    assert "3 bytes (1 lines)" in replaced.text and "replaced" in replaced.text
    assert (env.workspace / "new/dir/a.txt").read_text(encoding="utf-8") == "中"
    folder = run(env, d, "write_file", path="new", content="x")
    assert folder.is_error and "is a folder" in folder.text
    surrogate = run(env, d, "write_file", path="s.txt", content="a\ud800b")
    assert surrogate.error_code is ErrorCode.INVALID_ARGUMENTS and "surrogate" in surrogate.text
    assert not (env.workspace / "s.txt").exists()


def test_write_file_is_confined(env: Any, d: Any, tmp_path: Path) -> None:
    outside = run(env, d, "write_file", path=str(tmp_path / "escape.txt"), content="x")
    assert outside.error_code is ErrorCode.PERMISSION_DENIED
    assert not (tmp_path / "escape.txt").exists()
    hook = run(env, d, "write_file", path=".git/hooks/pre-commit", content="rm -rf ~")
    assert hook.error_code is ErrorCode.PERMISSION_DENIED and "protected" in hook.text


def test_edit_file(env: Any, d: Any) -> None:
    f = env.workspace / "code.py"
    f.write_text("a = 1\nb = 1\nc = 2\n")
    ok = run(env, d, "edit_file", path="code.py", old_string="c = 2", new_string="c = 3")
    assert ok.text == "Edited code.py: replaced 1 occurrence(s), the first at line 3."
    assert f.read_text() == "a = 1\nb = 1\nc = 3\n"
    many = run(env, d, "edit_file", path="code.py", old_string="= 1", new_string="= 9")
    assert many.is_error and "occurs 2 times" in many.text and "replace_all" in many.text
    none = run(env, d, "edit_file", path="code.py", old_string="zzz", new_string="y")
    assert none.is_error and "(0 matches)" in none.text
    assert f.read_text() == "a = 1\nb = 1\nc = 3\n"
    both = run(
        env, d, "edit_file", path="code.py", old_string="= 1", new_string="= 9", replace_all=True
    )
    assert "replaced 2 occurrence(s), the first at line 1" in both.text
    assert f.read_text() == "a = 9\nb = 9\nc = 3\n"
    same = run(env, d, "edit_file", path="code.py", old_string="a", new_string="a")
    assert same.error_code is ErrorCode.INVALID_ARGUMENTS
    empty = run(env, d, "edit_file", path="code.py", old_string="", new_string="a")
    assert empty.error_code is ErrorCode.INVALID_ARGUMENTS
    missing = run(env, d, "edit_file", path="nope.py", old_string="a", new_string="b")
    assert missing.is_error and "does not exist" in missing.text


def test_edit_file_crlf_and_encoding(env: Any, d: Any) -> None:
    f = env.workspace / "win.txt"
    f.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    result = run(env, d, "edit_file", path="win.txt", old_string="one\ntwo", new_string="1\n2")
    assert not result.is_error
    assert f.read_bytes() == b"1\r\n2\r\nthree\r\n"
    (env.workspace / "latin1.txt").write_bytes(b"caf\xe9")
    bad = run(env, d, "edit_file", path="latin1.txt", old_string="caf", new_string="x")
    assert bad.is_error and "not valid UTF-8" in bad.text


def test_list_directory(env: Any, d: Any, tmp_path: Path) -> None:
    ws = env.workspace
    (ws / "b.txt").write_text("12345")
    (ws / "a").mkdir()
    (ws / "link").symlink_to(tmp_path)
    result = run(env, d, "list_directory")
    assert result.text == f"./ (3 entries)\na/\nb.txt  (5 bytes)\nlink -> {tmp_path}"
    (ws / "a" / "x").write_text("")
    assert run(env, d, "list_directory", path="a").text == "a/ (1 entries)\nx  (0 bytes)"
    (ws / "empty").mkdir()
    assert run(env, d, "list_directory", path="empty").text == "[empty is empty]"
    assert "is a file" in run(env, d, "list_directory", path="b.txt").text
    assert run(env, d, "list_directory", path="..").error_code is ErrorCode.PERMISSION_DENIED


def test_list_directory_is_bounded(env: Any, d: Any) -> None:
    for i in range(1005):
        (env.workspace / f"f{i:04}").write_text("")
    result = run(env, d, "list_directory")
    assert result.text.startswith("./ (1005 entries)")
    assert result.text.endswith("[… 5 more entries not shown]")


@pytest.mark.parametrize(
    ("pattern", "yes", "no"),
    [
        ("*.py", ["a.py", ".hidden.py"], ["a.pyc", "d/a.py"]),
        ("**/*.py", ["a.py", "d/a.py", "d/e/f.py"], ["a.txt", "d/a.pyx"]),
        ("src/**", ["src/a", "src/b/c"], ["src", "other/a"]),
        ("d/?.txt", ["d/a.txt"], ["d/ab.txt", "d/e/a.txt"]),
        ("[ab].txt", ["a.txt", "b.txt"], ["c.txt"]),
        ("[!ab].txt", ["c.txt"], ["a.txt"]),
        ("a+b(1).txt", ["a+b(1).txt"], ["aab1.txt"]),
        ("**", ["a", "a/b/c"], []),
    ],
)
def test_glob_regex(pattern: str, yes: list[str], no: list[str]) -> None:
    regex = glob_regex(pattern)
    assert all(regex.match(p) for p in yes), pattern
    assert not any(regex.match(p) for p in no), pattern


def test_glob(env: Any, d: Any) -> None:
    ws = env.workspace
    for rel in ("a.py", "src/b.py", "src/deep/c.py", "src/d.txt", ".git/x.py"):
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text("")
    result = run(env, d, "glob", pattern="**/*.py")
    assert result.text == "3 match(es) for '**/*.py' in .:\na.py\nsrc/b.py\nsrc/deep/c.py"
    scoped = run(env, d, "glob", pattern="*", path="src")
    assert scoped.text == "3 match(es) for '*' in src:\nsrc/b.py\nsrc/d.txt\nsrc/deep/"
    assert "No paths match" in run(env, d, "glob", pattern="*.rs").text
    for bad in ("../*", "/etc/*", "a/../../b", "~/x"):
        result = run(env, d, "glob", pattern=bad)
        assert result.error_code is ErrorCode.INVALID_ARGUMENTS, bad
    assert run(env, d, "glob", pattern="[z-a]").error_code is ErrorCode.INVALID_ARGUMENTS
    assert run(env, d, "glob", pattern="*", path="..").error_code is ErrorCode.PERMISSION_DENIED


def test_glob_is_bounded_and_does_not_follow_links(env: Any, d: Any, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "secret.py").write_text("")
    (env.workspace / "link").symlink_to(outside)
    many = env.workspace / "many"
    many.mkdir()
    for i in range(MAX_GLOB_RESULTS + 3):
        (many / f"{i}.py").write_text("")
    result = run(env, d, "glob", pattern="**/*.py")
    assert "secret.py" not in result.text
    assert result.text.startswith(f"{MAX_GLOB_RESULTS + 3} match(es)")
    assert "[… 3 more matches not shown" in result.text


def test_grep(env: Any, d: Any) -> None:
    ws = env.workspace
    (ws / "a.py").write_text("def alpha():\n    return 1\n")
    (ws / "sub").mkdir()
    (ws / "sub" / "b.txt").write_text("Alpha beta\n中文 alpha\n")
    (ws / "bin.dat").write_bytes(b"\x00alpha")
    result = run(env, d, "grep", pattern="alpha")
    assert result.text == (
        "2 match(es) in 2 file(s) under .:\na.py:1: def alpha():\nsub/b.txt:2: 中文 alpha"
    )
    ci = run(env, d, "grep", pattern="^alpha", case_insensitive=True)
    assert ci.text.splitlines()[1:] == ["sub/b.txt:1: Alpha beta"]
    only_py = run(env, d, "grep", pattern="alpha", glob="*.py")
    assert only_py.text.splitlines()[1:] == ["a.py:1: def alpha():"]
    one_file = run(env, d, "grep", pattern="beta", path="sub/b.txt")
    assert one_file.text.splitlines()[1:] == ["sub/b.txt:1: Alpha beta"]
    none = run(env, d, "grep", pattern="gamma")
    assert none.text == "No matches for /gamma/ in . (2 text files searched)."
    bad = run(env, d, "grep", pattern="(unclosed")
    assert bad.error_code is ErrorCode.INVALID_ARGUMENTS and "not a valid regular" in bad.text
    outside = run(env, d, "grep", pattern="x", path="/etc")
    assert outside.error_code is ErrorCode.PERMISSION_DENIED


def test_grep_is_bounded_and_skips_links_out(env: Any, d: Any, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("needle in secret\n")
    (env.workspace / "leak.txt").symlink_to(tmp_path / "secret.txt")
    (env.workspace / "inner.txt").write_text("needle inside\n")
    (env.workspace / "alias.txt").symlink_to(env.workspace / "inner.txt")
    (env.workspace / "many.txt").write_text("needle\n" * 30)
    result = run(env, d, "grep", pattern="needle", max_matches=5)
    assert "secret" not in result.text
    assert result.text.startswith("32 match(es) in 3 file(s)")
    assert result.text.count("\n") == 6
    assert "[… 27 more matches not shown" in result.text


def test_write_below_a_file_says_the_parent_is_a_file(env: Any, d: Any) -> None:
    (env.workspace / "plain.txt").write_text("x")
    result = run(env, d, "write_file", path="plain.txt/child.txt", content="y")
    assert result.error_code is ErrorCode.EXECUTION_ERROR
    assert "'plain.txt' is a file, not a folder" in result.text


def test_read_file_does_not_scan_a_huge_file_to_the_end(
    env: Any, d: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("kernel.tools.builtin.files.COUNT_LINES_UP_TO_BYTES", 100)
    big = env.workspace / "big.log"
    big.write_text("".join(f"entry {i}\n" for i in range(1, 1001)))
    result = run(env, d, "read_file", path="big.log", offset=5, limit=2)
    assert result.text == (
        "     5\tentry 5\n     6\tentry 6\n"
        f"[lines 5–6 of big.log ({big.stat().st_size} bytes, more lines follow); call "
        "read_file with offset=7 for more]"
    )
    last = run(env, d, "read_file", path="big.log", offset=999)
    assert last.text.endswith("[lines 999–1000 of 1000 in big.log]")
