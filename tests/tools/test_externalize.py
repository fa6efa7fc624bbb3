"""The output store: previews cut on characters (Chinese text), paging, read_tool_output."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.paths import UnsafeIdentifier
from kernel.tools.builtin import builtin_tools
from kernel.tools.externalize import (
    HEAD_CHARS,
    TAIL_CHARS,
    OutputStore,
    clean_for_model,
    encode_text,
    looks_binary,
    split_budget,
)
from kernel.tools.schema import tool
from kernel.tools.spec import ErrorCode

MARKER = re.compile(r"\n\[… (\d+) bytes(?:, (\d+) lines)? omitted; full output at (.+?) — ")

CHINESE = "".join(f"第{i}行：天地玄黄，宇宙洪荒。😀\n" for i in range(5000))


def split_preview(text: str) -> tuple[str, int, str]:
    match = MARKER.search(text)
    assert match is not None, text[:200]
    end = text.index("…]\n", match.end()) + 3
    return text[: match.start()], int(match.group(1)), text[end:]


def test_short_text_stays_inline(tmp_path: Path) -> None:
    store = OutputStore(tmp_path / "out")
    preview = store.externalize("c1", "短文本", 100)
    assert preview.text == "短文本" and preview.path is None and preview.total_bytes == 9
    assert not (tmp_path / "out").exists()


def test_chinese_text_is_cut_on_characters_without_duplicates(tmp_path: Path) -> None:
    store = OutputStore(tmp_path / "out")
    preview = store.externalize("zh", CHINESE, 30_000)
    assert preview.path == tmp_path / "out" / "zh.txt"
    assert preview.path.read_text(encoding="utf-8") == CHINESE
    assert preview.total_bytes == len(CHINESE.encode())
    head, omitted, tail = split_preview(preview.text)
    assert head == CHINESE[:HEAD_CHARS] and tail == CHINESE[-TAIL_CHARS:]
    assert omitted == len(CHINESE.encode()) - len(head.encode()) - len(tail.encode())
    assert "\ufffd" not in preview.text
    assert str(preview.path) in preview.text and "read_tool_output" in preview.text


@settings(max_examples=60, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from("a中文😀é\n\r"), min_size=101, max_size=3000),
    limit=st.integers(min_value=100, max_value=2000),
)
def test_any_multibyte_text_splits_exactly(tmp_path_factory: Any, text: str, limit: int) -> None:
    store = OutputStore(tmp_path_factory.mktemp("out"))
    preview = store.externalize("h", text, limit)
    if len(text) <= limit:
        assert preview.text == text and preview.path is None
        return
    head_n, tail_n = split_budget(limit)
    head, omitted, tail = split_preview(preview.text)
    assert head + text[head_n : len(text) - tail_n] + tail == text
    assert omitted == len(text[head_n : len(text) - tail_n].encode())
    assert len(head) + len(tail) <= limit


def test_stray_surrogates_do_not_break_externalization(tmp_path: Path) -> None:
    text = "a\ud800b" * 100 + "\udcff"
    store = OutputStore(tmp_path)
    preview = store.externalize("s", text, 100)
    assert preview.path is not None and preview.path.stat().st_size == preview.total_bytes
    assert "\ud800" not in preview.text and "\ufffd" in preview.text
    assert encode_text("\udcff") == b"\xff"
    assert clean_for_model("x\x1b[31mred\x1b[0m\udcff") == "xred\ufffd"


def test_preview_file_with_chinese_cut_mid_character(tmp_path: Path) -> None:
    path = tmp_path / "spool.txt"
    data = ("x" + CHINESE).encode()  # shifts every character so byte cuts land inside them
    path.write_bytes(data)
    preview = OutputStore(tmp_path).preview_file(path, 1000)
    head, omitted, tail = split_preview(preview.text)
    text = data.decode()
    assert text.startswith(head) and text.endswith(tail) and "\ufffd" not in preview.text
    assert omitted == len(data) - len(head.encode()) - len(tail.encode())


def test_preview_file_small_and_binary(tmp_path: Path) -> None:
    store = OutputStore(tmp_path)
    small = tmp_path / "small.txt"
    small.write_bytes("小文件\n".encode())
    preview = store.preview_file(small, 1000)
    assert preview.text == "小文件\n" and preview.path is None and preview.total_bytes == 10
    binary = tmp_path / "bin.out"
    binary.write_bytes(b"\x00\x01\x02" * 1000)
    preview = store.preview_file(binary, 1000)
    assert preview.text.startswith("[binary output, 3000 bytes, not shown")
    assert preview.path == binary


def test_spool_writer_streams_and_reports_the_last_line(tmp_path: Path) -> None:
    store = OutputStore(tmp_path / "out")
    with store.spool("run-1") as spool:
        spool.write("第一行\n".encode())
        spool.write("第二行\x1b[31m红\x1b[0m\n".encode())
        assert spool.last_line == "第二行红"
    assert spool.bytes_written == store.path_for("run-1").stat().st_size
    assert store.read_page("run-1", 0, 100).text == "第一行\n第二行红\n"


def test_spool_file_holds_every_write_before_it_is_closed(tmp_path: Path) -> None:
    """The output viewer follows a running command's file: nothing may wait in a buffer."""
    store = OutputStore(tmp_path / "out")
    path = store.path_for("run-2")
    with store.spool("run-2") as spool:
        spool.write("第一行\n".encode())
        assert path.read_bytes() == "第一行\n".encode()
        spool.write(memoryview(b"ab" * 2500)[4000:])
        assert path.read_bytes() == "第一行\n".encode() + b"ab" * 500
        assert spool.last_line.endswith("abab") and spool.bytes_written == 1010


@pytest.mark.parametrize("call_id", ["../x", "a/b", "", "x" * 129])
def test_call_ids_are_checked_before_becoming_paths(tmp_path: Path, call_id: str) -> None:
    store = OutputStore(tmp_path)
    with pytest.raises(UnsafeIdentifier):
        store.externalize(call_id, "x" * 500, 100)
    with pytest.raises(UnsafeIdentifier):
        store.read_page(call_id, 0, 10)


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(alphabet=st.sampled_from("ab中文😀é\n"), min_size=1, max_size=400),
    junk=st.binary(max_size=8)
    | st.sampled_from([b"\xe0\x80", b"\xf0\x9f", b"\x80\x80\x80\x80", b"\xc3"]),
    limit=st.integers(min_value=1, max_value=50),
)
def test_pages_chain_over_every_byte_once(
    tmp_path_factory: Any, text: str, junk: bytes, limit: int
) -> None:
    store = OutputStore(tmp_path_factory.mktemp("out"))
    store.root.mkdir(parents=True, exist_ok=True)
    data = text.encode() + junk + text.encode()
    store.path_for("p").write_bytes(data)
    offset, pieces, texts = 0, [], []
    while offset < len(data):
        page = store.read_page("p", offset, limit)
        assert page.start == offset and page.end > offset and page.total == len(data)
        pieces.append(data[page.start : page.end])
        texts.append(page.text)
        offset = page.end
    assert b"".join(pieces) == data
    assert texts[0].startswith(text[:1])
    if not junk:
        assert "".join(texts) == text + text  # no character split or repeated


def test_arbitrary_offsets_move_back_to_a_character_start(tmp_path: Path) -> None:
    store = OutputStore(tmp_path)
    store.path_for("p").write_bytes("中文".encode())
    for offset in (0, 1, 2):
        page = store.read_page("p", offset, 100)
        assert page.start == 0 and page.text == "中文"
    page = store.read_page("p", 4, 1)  # a limit smaller than a character still moves forward
    assert (page.start, page.end, page.text) == (3, 6, "文")
    assert store.read_page("p", 99, 10).start == 6
    with pytest.raises(ValueError):
        store.read_page("p", -1, 10)
    with pytest.raises(FileNotFoundError):
        store.read_page("other", 0, 10)


def test_read_tool_output_pages_through_an_externalized_result(env: Any) -> None:
    @tool(output_limit=2000)
    def poem() -> str:
        """A long Chinese output."""
        return CHINESE

    d = env.dispatcher([*builtin_tools(), poem])
    first = env.call(d, "poem", {}, "poem-1")
    assert first.externalized_path is not None
    pieces: list[str] = []
    offset = 0
    for i in range(1000):
        page = env.call(d, "read_tool_output", {"call_id": "poem-1", "offset": offset}, f"r{i}")
        assert not page.is_error and page.externalized_path is None
        header, _, rest = page.text.partition("\n")
        match = re.fullmatch(r"\[bytes (\d+)–(\d+) of (\d+) of the output of poem-1\]", header)
        assert match is not None and int(match.group(1)) == offset
        if rest.endswith("\n[end of output]"):
            pieces.append(rest.removesuffix("\n[end of output]"))
            break
        body, _, footer = rest.rpartition("\n")
        assert footer == f"[… continue with offset={match.group(2)} …]"
        pieces.append(body)
        offset = int(match.group(2))
    assert "".join(pieces) == CHINESE


def test_read_tool_output_errors(env: Any) -> None:
    d = env.dispatcher(builtin_tools())
    missing = env.call(d, "read_tool_output", {"call_id": "never-ran"})
    assert missing.is_error and "No stored output for call 'never-ran'" in missing.text
    unsafe = env.call(d, "read_tool_output", {"call_id": "../../etc/passwd"}, "c2")
    assert unsafe.error_code is ErrorCode.INVALID_ARGUMENTS
    too_big = env.call(d, "read_tool_output", {"call_id": "x", "limit": 10**9}, "c3")
    assert too_big.error_code is ErrorCode.INVALID_ARGUMENTS and "$.limit" in too_big.text
    env.outputs.root.mkdir(parents=True, exist_ok=True)
    env.outputs.path_for("small").write_text("abc")
    past = env.call(d, "read_tool_output", {"call_id": "small", "offset": 3}, "c4")
    assert past.error_code is ErrorCode.INVALID_ARGUMENTS and "past the end" in past.text


def _controls_share(sample: bytes) -> float:
    """The definition: the share of ASCII bytes in the first 4 KiB that are neither
    printable nor common whitespace (a byte >= 128 may be part of a character)."""
    text = set(range(32, 127)) | set(b"\n\r\t\f\b\x1b")
    head = sample[:4096]
    return sum(1 for b in head if b < 128 and b not in text) / len(head)


@pytest.mark.parametrize("sample", [
    b"", b"plain text\n", b"\x00", b"text with a NUL \x00 inside", "ünïcödé ✓\n".encode(),
    b"\x01\x02\x03 abc", b"\x01\x02\x03abcdefg", b"\x7f" * 10, b"\x1b[31mred\x1b[0m\n",
    bytes(range(1, 32)) * 3, bytes(range(128, 256)) * 20, b"a" * 4096 + b"\x01" * 5000,
    b"\x01" * 4096 + b"a" * 5000, b"\x01" * 3 + b"a" * 7, b"\x01" * 3 + b"a" * 6,
    b"\x0b\x0c\x0e text", b"\r\n\t\f\b" * 100,
])
def test_looks_binary_is_a_nul_or_more_than_three_tenths_control_bytes(sample: bytes) -> None:
    expected = bool(sample) and (b"\x00" in sample or _controls_share(sample) > 0.3)
    assert looks_binary(sample) is expected


@given(st.binary(max_size=5000))
@settings(max_examples=200, deadline=None)
def test_looks_binary_matches_its_definition_on_any_bytes(sample: bytes) -> None:
    expected = bool(sample) and (b"\x00" in sample or _controls_share(sample) > 0.3)
    assert looks_binary(sample) is expected
