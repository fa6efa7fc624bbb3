"""Pathological Markdown degrades gracefully: thousands of unclosed brackets, quotes or lists
nested to the parser's limit render at once, and as plain text that keeps every character,
instead of taking seconds (`[` × 40,000 took 1.5 s, `![` × 20,000 3 s) or dropping the rest
of the message (nesting past maxNesting)."""

from __future__ import annotations

import time

import pytest
from pytestqt.qtbot import QtBot

from desktop.chat.markdown import (
    SCAN_BUDGET,
    SPECIALS_BUDGET,
    bracket_scan,
    plain_inline,
    render_markdown,
)

BUDGET_S = 1.0

PATHOLOGICAL = {
    "open brackets": "[" * 40_000 + " tail",
    "balanced brackets": "[" * 20_000 + "]" * 20_000 + " tail",
    "image openers": "![" * 20_000 + " tail",
    "link openers": "[a](" * 10_000 + " tail",
    "angle brackets": "<" * 40_000 + " tail",
    "underscores": "_a" * 20_000 + " tail",
    "stars": "*a " * 10_000 + " tail",
    "entities": "&#" * 20_000 + " tail",
    "backslashes": "\\[" * 20_000 + " tail",
    "many small blocks": ("[" * 190 + "\n\n") * 200 + "tail",
    "nested quotes": "> " * 5_000 + "tail",
    "nested bullets": "- " * 3_000 + "tail",
    "nested numbers": "1. " * 3_000 + "tail",
    "quotes and lists": "> - " * 2_000 + "tail",
    "indented lists": "".join("  " * i + "- item\n" for i in range(300)) + "tail",
    "quote per line": "".join(">" * i + " line\n" for i in range(300)) + "tail",
}


@pytest.mark.parametrize("name", list(PATHOLOGICAL))
def test_pathological_text_renders_at_once_and_keeps_its_text(qtbot: QtBot,
                                                              name: str) -> None:
    text = PATHOLOGICAL[name]
    render_markdown("warm up [a](https://x.org)", 600)
    start = time.perf_counter()
    pieces = render_markdown(text, 600)
    took = time.perf_counter() - start
    assert took < BUDGET_S, f"{name}: {took:.2f} s"
    shown = "".join(piece.toPlainText() for piece in pieces)
    assert shown.rstrip().endswith("tail"), f"{name}: the end of the message was dropped"


@pytest.mark.parametrize(("content", "scanned"), [
    ("no brackets at all (or parentheses)", 0),
    ("[a](https://x.org)", 2 + 15),
    ("[link](u) and [another](v)", 5 + 3 + 8 + 3),
    ("[[nested] label]", 7 + 15),
    ("[unclosed", 9),
    ("a ] stray closer ) too", 0),
    ("[" * 4, 4 + 3 + 2 + 1),
    ("[" * 200, 200 * 201 // 2),
    ("[" * 100 + "]" * 100, sum(2 * i + 1 for i in range(100))),
    ("![alt](img.png) ![x", 4 + 9 + 2),
    ("[a](" * 3, 2 + 10 + 2 + 6 + 2 + 2),  # each `](` open to the end
    ("(x) [a](b (c) d)", 2 + 6),  # `)` closes the link's `(` only when it is on top
])
def test_bracket_scan(content: str, scanned: int) -> None:
    assert bracket_scan(content) == scanned


@pytest.mark.parametrize(("content", "spent", "plain"), [
    ("a paragraph with [a link](https://x.org) and **bold**", (0, 0), False),
    ("[x](https://x.org) " * 500, (0, 0), False),  # hundreds of links: still Markdown
    ("line with **bold**, _em_, `code` & <b>\n" * 1_000, (0, 0), False),
    ("[" * 199, (0, 0), False),
    ("[" * 200, (0, 0), True),
    ("![" * 200, (0, 0), True),
    ("[" * 150 + "]" * 150, (0, 0), True),
    ("[a](" * 200, (0, 0), True),
    ("<" * SPECIALS_BUDGET, (0, 0), False),
    ("<" * (SPECIALS_BUDGET + 1), (0, 0), True),
    ("_a" * (SPECIALS_BUDGET + 1), (0, 0), True),
    ("[a]", (SCAN_BUDGET - 2, 0), False),
    ("[ab]", (SCAN_BUDGET - 2, 0), True),  # the message's budget is spent
    ("**", (0, SPECIALS_BUDGET - 2), False),
    ("***", (0, SPECIALS_BUDGET - 2), True),
])
def test_plain_inline(content: str, spent: tuple[int, int], plain: bool) -> None:
    assert plain_inline(content, spent) is plain


def test_ordinary_markdown_around_a_pathological_paragraph_stays_markdown(
        qtbot: QtBot) -> None:
    text = "**bold** and [a link](https://x.org)\n\n" + "[" * 5_000 + "\n\n> a quote"
    pieces = render_markdown(text, 600)
    doc = pieces[0]
    shown = doc.toPlainText()
    assert shown.startswith("bold and a link\n")  # parsed: no stars, no brackets left
    assert "[" * 5_000 in shown  # the heavy paragraph as it was written
    assert shown.rstrip().endswith("a quote") and "> a quote" not in shown


def test_deep_nesting_becomes_the_plain_text_of_the_message(qtbot: QtBot) -> None:
    text = "intro **x**\n\n" + "> " * 40 + "deep [link](https://x.org)"
    shown = "".join(piece.toPlainText() for piece in render_markdown(text, 600))
    assert shown == text.replace("\n\n", "\n\n")  # every character, unparsed
    moderate = "> > > > > quoted five deep"
    shown = "".join(piece.toPlainText() for piece in render_markdown(moderate, 600))
    assert shown.strip() == "quoted five deep", "ordinary nesting is still Markdown"
