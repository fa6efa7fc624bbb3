"""`kernel.visible`: the one function that makes untrusted text safe to show (a table)."""

from __future__ import annotations

import functools
import re
import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.visible import escape_char, one_line, visible

_DECODE = re.compile(r"\\(x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8})")


def decode(shown: str) -> str:
    """Read back a shown text that had no backslash of its own."""
    return _DECODE.sub(lambda m: chr(int(m.group(1)[1:], 16)), shown)


ATTACK = "rm -f precious.txt important.db '…' #\x1b[2K\r$ ls -la"

ROWS = [
    # (text, keep, shown)
    ("hello world", "\n\t", "hello world"),
    ("", "\n\t", ""),
    (ATTACK, "\n\t", "rm -f precious.txt important.db '…' #\\x1b[2K\\x0d$ ls -la"),
    ("a\x1bb", "", "a\\x1bb"),
    ("a\rb", "\n\t", "a\\x0db"),
    ("a\bb", "\n\t", "a\\x08b"),
    ("a\x7fb", "\n\t", "a\\x7fb"),
    ("\x00", "\n\t", "\\x00"),
    ("\x07bell", "\n\t", "\\x07bell"),
    ("a\x0bb\x0cc", "\n\t", "a\\x0bb\\x0cc"),
    ("\x1c\x1d\x1e\x1f", "\n\t", "\\x1c\\x1d\\x1e\\x1f"),
    ("line1\nline2", "\n\t", "line1\nline2"),
    ("line1\nline2", "", "line1\\x0aline2"),
    ("a\tb", "\n\t", "a\tb"),
    ("a\tb", "", "a\\x09b"),
    ("a\r\nb", "\n\t", "a\\x0d\nb"),
    ("\x85next line", "\n\t", "\\x85next line"),
    ("\x9b2K", "\n\t", "\\x9b2K"),
    ("\x80\x9f", "\n\t", "\\x80\\x9f"),
    ("\u2028\u2029", "\n\t", "\\u2028\\u2029"),
    ("abc\u202edef", "\n\t", "abc\\u202edef"),
    ("\u202a\u202b\u202c\u202d", "\n\t", "\\u202a\\u202b\\u202c\\u202d"),
    ("\u2066\u2067\u2068\u2069", "\n\t", "\\u2066\\u2067\\u2068\\u2069"),
    ("\u200e\u200f\u061c", "\n\t", "\\u200e\\u200f\\u061c"),
    ("a\u200bb\u200cc\u200dd", "\n\t", "a\\u200bb\\u200cc\\u200dd"),
    ("\u2060\ufeff", "\n\t", "\\u2060\\ufeff"),
    ("soft\u00adhyphen", "\n\t", "soft\\xadhyphen"),
    ("rm -rf a\u00a0b", "\n\t", "rm -rf a\\xa0b"),
    ("\u2002\u2003\u2009\u200a\u202f\u205f\u3000\u1680", "\n\t",
     "\\u2002\\u2003\\u2009\\u200a\\u202f\\u205f\\u3000\\u1680"),
    ("\ud800", "\n\t", "\\ud800"),
    ("x\udfffy", "\n\t", "x\\udfffy"),
    ("\U000e0041\U000e007f", "\n\t", "\\U000e0041\\U000e007f"),
    ("\u2061\u2062\u2063\u2064", "\n\t", "\\u2061\\u2062\\u2063\\u2064"),
    ("\u115f\u1160\u3164\uffa0\u2800", "\n\t", "\\u115f\\u1160\\u3164\\uffa0\\u2800"),
    ("a\u034fb", "\n\t", "a\\u034fb"),
    ("a\ufe00b\U000e0100", "\n\t", "a\\ufe00b\\U000e0100"),
    ("\u2764\ufe0f", "\n\t", "\u2764\ufe0f"),
    ("a\ufe0f", "\n\t", "a\\ufe0f"),
    ("\u2764\ufe0f\ufe0f", "\n\t", "\u2764\ufe0f\\ufe0f"),
    ("\ufe0f", "\n\t", "\\ufe0f"),
    ("\ufffe\uffff", "\n\t", "\\ufffe\\uffff"),
    ("\U0010ffff", "\n\t", "\\U0010ffff"),
    ("\u0378", "\n\t", "\\u0378"),
    ("中文 ünïcödé é emoji 😀 ∑ λ", "\n\t", "中文 ünïcödé é emoji 😀 ∑ λ"),
    ("שלום עולם", "\n\t", "שלום עולם"),
    ("مرحبا", "\n\t", "مرحبا"),
    ("e\u0301", "\n\t", "e\u0301"),
    ("\ue000 private use", "\n\t", "\\ue000 private use"),
    # backslashes are shown as typed: escapes a text holds (JSON's, printf's) stay as they are
    ("printf 'a\\nb\\r'", "\n\t", "printf 'a\\nb\\r'"),
    ("sed 's/\\r$//'", "\n\t", "sed 's/\\r$//'"),
    ("echo \\\\", "\n\t", "echo \\\\"),
    ("C:\\Users\\me", "\n\t", "C:\\Users\\me"),
    ('{"command": "a\\u001b\\\\"}', "", '{"command": "a\\u001b\\\\"}'),
    ("\\\x1b", "\n\t", "\\\\x1b"),
    ("a\\", "\n\t", "a\\"),
]


@pytest.mark.parametrize(("text", "keep", "shown"), ROWS)
def test_visible_table(text: str, keep: str, shown: str) -> None:
    assert visible(text, keep=keep) == shown
    if "\\" not in text:
        assert decode(shown) == text


@pytest.mark.parametrize("code", [*range(0x20), 0x7F, *range(0x80, 0xA0)])
def test_every_c0_and_c1_control_is_escaped_where_lines_are_not_kept(code: int) -> None:
    assert one_line(chr(code)) == f"\\x{code:02x}"
    if chr(code) not in "\n\t":
        assert visible(chr(code)) == f"\\x{code:02x}"


@functools.cache
def _by_category() -> dict[str, list[str]]:
    table: dict[str, list[str]] = {}
    for code in range(sys.maxunicode + 1):
        table.setdefault(unicodedata.category(chr(code)), []).append(chr(code))
    return table


def _all_of(category: str) -> list[str]:
    return _by_category()[category]


@pytest.mark.parametrize("category", ["Cc", "Cf", "Zl", "Zp", "Zs", "Cs", "Co", "Cn"])
def test_every_character_of_a_hiding_category_is_escaped(category: str) -> None:
    for ch in _all_of(category):
        if ch != " ":
            assert one_line(ch) == escape_char(ch), (category, hex(ord(ch)))


def test_no_separator_that_str_splitlines_splits_on_survives_one_line() -> None:
    separators = [chr(c) for c in range(sys.maxunicode + 1)
                  if len(f"a{chr(c)}b".splitlines()) > 1]
    assert len(separators) >= 10
    for ch in separators:
        assert len(one_line(f"a{ch}b").splitlines()) == 1
        assert one_line(f"a{ch}b").isprintable()


@pytest.mark.parametrize("ch", [chr(c) for c in range(0x21, 0x7F)])
def test_printable_ascii_is_shown_as_typed(ch: str) -> None:
    assert visible(f"a{ch}b") == f"a{ch}b"


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(codec=None, exclude_characters="\\"), max_size=60))
def test_what_is_shown_is_printable_and_reads_back_exactly(text: str) -> None:
    shown = one_line(text)
    assert decode(shown) == text
    assert "".join(shown.split(" ")).isprintable() or _only_kept_emoji_styles(shown)
    lines = visible(text)
    assert decode(lines) == text
    assert all(ch not in lines for ch in "\r\x1b\x08\x7f\x85\u2028\u2029\u202e")


def _only_kept_emoji_styles(shown: str) -> bool:
    """The one non-printable thing `visible` leaves: U+FE0E/U+FE0F after a symbol."""
    rest = "".join(ch for ch in shown if ch not in "\ufe0e\ufe0f" and ch != " ")
    return rest.isprintable()
