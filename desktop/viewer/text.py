"""Turning a row's raw bytes into what is painted: plain text plus colour spans (pure).

    line = render_row(raw, ansi=True)    # DisplayLine(text, spans)

- Invalid UTF-8 becomes U+FFFD (the replacement character).
- ANSI escape sequences never reach the screen: SGR colour codes (30–37, 90–97, 40–47,
  100–107, 38/48;5;n, 38/48;2;r;g;b, bold, reset) become `Span`s when `ansi` is True and are
  dropped when it is False; every other escape sequence is shown, escaped (`\\x1b[2K`).
- Tabs expand to 8 columns; every other control, bidirectional or invisible character is
  shown escaped by `kernel.visible` (`\\x0d`, `\\u202e`), so untrusted output cannot reorder
  or hide what is painted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kernel.visible import one_line

TAB = 8
_ESCAPE = re.compile(
    r"\x1b\[([0-?]*)[ -/]*([@-~])"  # CSI, e.g. SGR colours
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC, e.g. titles and hyperlinks
    r"|\x1b[@-Z\\-_]?"  # other escapes, and a lone ESC
)

BASIC = (
    "#000000", "#cd3131", "#0dbc79", "#e5e510", "#2472c8", "#bc3fbc", "#11a8cd", "#e5e5e5",
    "#666666", "#f14c4c", "#23d18b", "#f5f543", "#3b8eea", "#d670d6", "#29b8db", "#ffffff",
)


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    fg: str | None = None
    bg: str | None = None
    bold: bool = False


@dataclass(frozen=True)
class DisplayLine:
    text: str
    spans: tuple[Span, ...] = ()


def xterm_colour(n: int) -> str:
    if n < 16:
        return BASIC[n]
    if n < 232:
        n -= 16
        levels = (0, 95, 135, 175, 215, 255)
        return f"#{levels[n // 36]:02x}{levels[(n // 6) % 6]:02x}{levels[n % 6]:02x}"
    grey = 8 + (n - 232) * 10
    return f"#{grey:02x}{grey:02x}{grey:02x}"


@dataclass
class _Style:
    fg: str | None = None
    bg: str | None = None
    bold: bool = False

    def apply(self, params: str) -> None:
        codes = [int(p) if p.isdigit() else 0 for p in params.split(";")] if params else [0]
        i = 0
        while i < len(codes):
            c = codes[i]
            if c == 0:
                self.fg, self.bg, self.bold = None, None, False
            elif c == 1:
                self.bold = True
            elif c == 22:
                self.bold = False
            elif 30 <= c <= 37 or 90 <= c <= 97:
                self.fg = BASIC[c - 30 if c < 90 else c - 90 + 8]
            elif 40 <= c <= 47 or 100 <= c <= 107:
                self.bg = BASIC[c - 40 if c < 100 else c - 100 + 8]
            elif c == 39:
                self.fg = None
            elif c == 49:
                self.bg = None
            elif c in (38, 48) and i + 1 < len(codes):
                colour, used = _extended(codes[i + 1 :])
                if c == 38:
                    self.fg = colour
                else:
                    self.bg = colour
                i += used
            i += 1

    @property
    def plain(self) -> bool:
        return self.fg is None and self.bg is None and not self.bold


def _extended(codes: list[int]) -> tuple[str | None, int]:
    if codes[0] == 5 and len(codes) >= 2:
        return xterm_colour(codes[1] % 256), 2
    if codes[0] == 2 and len(codes) >= 4:
        r, g, b = (min(255, v) for v in codes[1:4])
        return f"#{r:02x}{g:02x}{b:02x}", 4
    return None, 1


def _visible(text: str, column: int) -> str:
    """Tabs expanded as if `text` started at `column`; hiding characters escaped."""
    if "\t" in text:
        out = []
        for ch in text:
            if ch == "\t":
                width = TAB - column % TAB
                out.append(" " * width)
                column += width
            else:
                out.append(ch)
                column += 1
        text = "".join(out)
    return one_line(text)


def render_row(raw: bytes, *, ansi: bool = True) -> DisplayLine:
    text = raw.decode("utf-8", "replace")
    if "\x1b" not in text:
        return DisplayLine(_visible(text, 0))
    parts: list[str] = []
    spans: list[Span] = []
    style = _Style()
    column = 0
    pos = 0
    for match in _ESCAPE.finditer(text):
        if match.group(2) != "m":
            continue  # not a colour: left in the text, where it is shown escaped
        chunk = _visible(text[pos : match.start()], column)
        if chunk:
            if ansi and not style.plain:
                spans.append(Span(column, column + len(chunk), style.fg, style.bg, style.bold))
            parts.append(chunk)
            column += len(chunk)
        if ansi:
            style.apply(match.group(1) or "")
        pos = match.end()
    chunk = _visible(text[pos:], column)
    if chunk:
        if ansi and not style.plain:
            spans.append(Span(column, column + len(chunk), style.fg, style.bg, style.bold))
        parts.append(chunk)
    return DisplayLine("".join(parts), tuple(spans))
