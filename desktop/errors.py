"""Errors in the app's own words: the kernel's messages also serve `reins exec`, so the
advice they give names command-line flags; inside the app the same advice names what the
app offers (the Retry button, Settings, the session's model).

`in_app_words` rewrites the known advice; `RETRYABLE_CODES` are the errors after which the
app offers Retry (the same turn is asked again: `ResumeRun`).
"""

from __future__ import annotations

import re

RETRYABLE_CODES = frozenset({"overloaded", "rate_limited", "server_error", "connection_error",
                             "timeout", "stream_broken", "internal_error"})
"""An overload, a network failure, a server failure, a broken stream: trying again can work."""

_ADVICE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Retry the run later \(reins exec --session ID resumes the same turn\)\.?"),
     "Press Retry to send the same turn again."),
    (re.compile(r"Retry the run later(?=[;.])"), "Press Retry to send the same turn again"),
    (re.compile(r"\s*\((?:reins exec )?--session ID[^)]*\)"), ""),
    (re.compile(r"Resume with --compact to summarize"), "Compact the session to summarize"),
    (re.compile(r"Resume with --compact"), "Compact the session"),
    (re.compile(r", --model\)"), ")"),
    (re.compile(r"Set a valid key in Settings \(stored in the keyring\) or in "
                r"ANTHROPIC_API_KEY\."), "Enter a valid key in Settings."),
    (re.compile(r"store one in Settings \(OS keyring\) or set ANTHROPIC_API_KEY"),
     "enter one in Settings"),
    (re.compile(r"or point ANTHROPIC_BASE_URL at"), "or set the base URL in Settings to"),
    (re.compile(r"the network or ANTHROPIC_BASE_URL"), "the network or the base URL in Settings"),
    (re.compile(r"retry the run(?= to ask again|\.)"), "press Retry"),
)


def in_app_words(message: str) -> str:
    """`message` with command-line advice replaced by the app's."""
    for pattern, words in _ADVICE:
        message = pattern.sub(words, message)
    return message
