"""Rows as painted: ANSI colours rendered or stripped, bad UTF-8 and controls made visible."""

from __future__ import annotations

from desktop.viewer.text import BASIC, Span, render_row, xterm_colour


def test_plain_text_passes_through() -> None:
    assert render_row(b"hello world").text == "hello world"
    assert render_row(b"hello world").spans == ()


def test_invalid_utf8_becomes_replacement_characters() -> None:
    assert render_row(b"ok \xff\xfe end \xe2\x82").text == "ok \ufffd\ufffd end \ufffd"


def test_ansi_colours_rendered_or_stripped() -> None:
    raw = b"a \x1b[1;31mred bold\x1b[0m \x1b[38;5;208mx\x1b[48;2;1;2;3my\x1b[39;49m z"
    rendered = render_row(raw)
    assert rendered.text == "a red bold xy z"
    assert rendered.spans == (
        Span(2, 10, BASIC[1], None, True),
        Span(11, 12, xterm_colour(208), None, False),
        Span(12, 13, xterm_colour(208), "#010203", False),
    )
    stripped = render_row(raw, ansi=False)
    assert stripped.text == rendered.text and stripped.spans == ()


def test_other_escapes_and_controls_never_reach_the_screen() -> None:
    raw = b"\x1b]0;title\x07\x1b[2Jclear\x1b[Kline\x07bell\x1b\r\xc2\x9b"
    for ansi in (True, False):
        line = render_row(raw, ansi=ansi)
        assert line.text == ("\\x1b]0;title\\x07\\x1b[2Jclear\\x1b[Kline\\x07bell\\x1b"
                             "\\x0d\\x9b")
        assert line.text.isprintable()


def test_tabs_expand_and_bidi_overrides_are_neutralised() -> None:
    assert render_row(b"a\tb").text == "a       b"
    assert render_row(b"\x1b[31mab\x1b[0m\tc").text == "ab      c"
    assert render_row("x\u202eevil".encode()).text == "x\\u202eevil"
    assert render_row("a\u200bb\u2028c\u2066d".encode()).text == "a\\u200bb\\u2028c\\u2066d"


def test_xterm_palette() -> None:
    assert xterm_colour(1) == BASIC[1]
    assert xterm_colour(16) == "#000000"
    assert xterm_colour(231) == "#ffffff"
    assert xterm_colour(232) == "#080808"
