"""What key tools write: `openssl … -out F`, `-keyout F`; `ssh-keygen -f F` (F and
F.pub). Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from kernel.shell.words import Word
from kernel.shell.writers.options import _given, _opts, _scan


def _openssl(words: Sequence[Word]) -> list[Word]:
    """`openssl … -out FILE` (its options are long ones with one dash), `-keyout FILE`."""
    return [words[i + 1] for i in range(1, len(words) - 1)
            if words[i].text in ("-out", "-keyout") and words[i + 1].text != "-"]


def _ssh_keygen(words: Sequence[Word]) -> list[Word]:
    """`ssh-keygen -f FILE` writes FILE and FILE.pub."""
    found, _ = _scan(words, _SSH_KEYGEN)
    return [w for key in _given(found, "-f") for w in (key, Word(key.text + ".pub", key.kind))]


_SSH_KEYGEN = _opts("-f -b -t -C -N -P -O -n -I -V -z -m -a -E -Z -w -D -F -G -J -K -M -r "
                    "-s -S -T -Y")
