"""What is kept for another program to run later, outside the sandbox: the user's
crontab (`crontab`), the at queue (`at`, `batch`, `atrm`); asked about as targets no path
names. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from kernel.shell.nested import base
from kernel.shell.words import Word
from kernel.shell.writers.options import _given, _has, _opts, _scan
from kernel.shell.writers.targets import _elsewhere

_CRONTAB = _opts("-u -c -n -T", "", "--help --version")


def _crontab(words: Sequence[Word]) -> list[Word]:
    """`crontab FILE`, `crontab -` or `crontab` (stdin), `-e` (an editor), `-r`: the
    user's crontab (`-u USER`'s), which cron runs outside the sandbox; listing (`-l`) and
    checking (`-T FILE`) write none."""
    found, _ = _scan(words, _CRONTAB)
    if _has(found, "-l", "-T", "-V", "-h", "--help", "--version"):
        return []
    user = _given(found, "-u")
    whose = f"{user[-1].text}'s" if user else "the user's"
    return [_elsewhere(f"{whose} crontab, which cron runs outside the sandbox")]


def _at(words: Sequence[Word]) -> list[Word]:
    """`at TIME`, `batch` (commands from stdin or `-f FILE`), `at -r`/`-d`, `atrm`: the
    user's at queue, whose jobs atd runs outside the sandbox; listing (`-l`) and printing a
    job (`-c`) write none."""
    found, _ = _scan(words, _opts("-q -f -t"))
    if base(words[0].text) == "at" and _has(found, "-l", "-c", "-V", "-h"):
        return []
    return [_elsewhere("the user's at queue, whose jobs atd runs outside the sandbox")]
