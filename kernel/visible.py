"""Untrusted text (from a model or a tool) made safe to show to a person: `visible(text)`.

Every place a person reads such text — the terminal approval prompt, `reins exec`'s human
output, the approval dialog, the chat, the timeline, the output viewer — passes it through
`visible` (nothing else decides this), so no character can move the cursor, erase or
overwrite what was written, reorder it, split a line, or hide itself.

Escaped (shown as a visible escape, never interpreted):
- C0 controls U+0000–U+001F (ESC, CR, BS, NUL, VT, FF, the separators U+001C–U+001E …)
  except the ones in `keep`, DEL U+007F, and C1 controls U+0080–U+009F (NEL U+0085, CSI …);
- every format character (Unicode category Cf): bidirectional embeddings, overrides and
  isolates U+202A–U+202E, U+2066–U+2069, the marks U+200E, U+200F, U+061C, zero-width
  characters U+200B–U+200D, U+2060, U+FEFF, the soft hyphen, invisible operators, tags …;
- line and paragraph separators U+2028, U+2029;
- spaces other than U+0020 (no-break, en, em, thin, ideographic …: a shell reads them as
  part of a word, so showing them as blanks would lie about where words end);
- lone surrogates (text decoded from JSON can hold them; they cannot even be encoded);
- private-use characters, and code points this Python's Unicode database does not assign
  (fail closed) — in short, everything `str.isprintable()` calls unprintable;
- blank-looking letters and marks (Hangul fillers, the braille blank, the combining grapheme
  joiner, Mongolian and Khmer invisible marks) and variation selectors — except one U+FE0E
  or U+FE0F right after a symbol, which is how an emoji is asked to look.

Notation: `\\xHH` for code points below U+0100, `\\uHHHH` below U+10000, else `\\UHHHHHHHH`
(lower-case hex: ESC is `\\x1b`, CR `\\x0d`, RLO `\\u202e`). There are no short forms such as
`\\r`, so a command's own `\\r` or `\\n` (common in `printf`, `sed`) is never mistaken for one.
Backslashes of the text are shown as they are: the four characters `\\x1b` typed by a model
look like an escaped ESC, and both are plainly visible — what matters is that nothing can
hide, move or overwrite text. So the escapes a text already holds stay as they are: JSON's
own (`\\u001b`, `\\\\`, `\\n`) read the same after `visible` as before, and text without
backslashes can be read back exactly.

`keep` names the characters a place may show as themselves: "\\n\\t" (the default) where
text is shown as lines (a preview, a message), "" where one line must stay one line (a
timeline row, a tool label, a one-line summary).

Pure and free of heavy imports: the desktop process imports it too.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

MULTI_LINE = "\n\t"
ONE_LINE = ""

_BLANK_LOOKING = frozenset(
    {0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x180B, 0x180C, 0x180D, 0x180F, 0x2800, 0x3164,
     0xFFA0}
)
_EMOJI_STYLE = frozenset({0xFE0E, 0xFE0F})
_PLAIN = re.compile(r"[ -~]*")
"""Printable ASCII: nothing to escape."""


@lru_cache(maxsize=4096)
def _always_hidden(ch: str) -> bool:
    """Whether `ch` is escaped wherever it stands (the variation-selector rule aside)."""
    code = ord(ch)
    if 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF:
        return True
    return not ch.isprintable() or code in _BLANK_LOOKING


def escape_char(ch: str) -> str:
    """The visible escape of one character (whether or not it needs one)."""
    code = ord(ch)
    if code < 0x100:
        return f"\\x{code:02x}"
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _hidden(ch: str, previous: str, keep: str) -> bool:
    if ch in keep:
        return False
    if not _always_hidden(ch):
        return False
    if ord(ch) in _EMOJI_STYLE and previous:
        return _always_hidden(previous) or unicodedata.category(previous) != "So"
    return True


def visible(text: str, *, keep: str = MULTI_LINE) -> str:
    """`text` with every character that could hide or move text shown as an escape (see
    the module's docstring for which, and for the notation). Printable text is unchanged."""
    if _PLAIN.fullmatch(text):
        return text
    return "".join(escape_char(ch) if _hidden(ch, text[i - 1] if i else "", keep) else ch
                   for i, ch in enumerate(text))


def one_line(text: str) -> str:
    """`visible` for a place that shows one line: newlines and tabs are escaped too."""
    return visible(text, keep=ONE_LINE)
