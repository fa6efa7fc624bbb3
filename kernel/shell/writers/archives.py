"""What archive tools write: what they extract (`tar -x`, `unzip`, `cpio -i`, `7z x`, `ar
x`, `pax -r`, `dpkg-deb -x`: names only the archive knows, in the folder they land in, or
anywhere where members may climb out) and the archives they create (`tar -cf`, `zip`).
Pure.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Sequence

from kernel.shell.nested import base
from kernel.shell.words import Word
from kernel.shell.writers.options import _given, _has, _Options, _opts, _scan
from kernel.shell.writers.targets import _any_in, _anywhere

_TAR = _opts(
    "-f --file -C --directory -T --files-from -X --exclude-from -b --blocking-factor -H "
    "--format -K --starting-file -N --newer --after-date -g --listed-incremental -V --label "
    "--owner --group --mode --mtime --exclude --transform --xform --strip-components "
    "--level --suffix -L --tape-length --record-size --use-compress-program -I "
    "--to-command --info-script -F --new-volume-script --checkpoint-action --rsh-command "
    "--volno-file --index-file --atime-preserve --occurrence --sparse-version "
    "--hole-detection --quoting-style --blocking-factor",
    "--backup --checkpoint",
    "--extract --get --create --append --update --catenate --concatenate --to-stdout "
    "--list --diff --compare --delete --absolute-names")
_TAR_KEYS = {"x": "-x", "c": "-c", "r": "-r", "u": "-u", "A": "-A", "t": "-t"}


def _tar(words: Sequence[Word]) -> list[Word]:
    """Extracting: names only the archive knows, in each `-C DIR` (or here; anywhere with
    `-P`; none to stdout or to a command); creating or adding to: the archive (`-f
    FILE`)."""
    words = list(words)
    if len(words) > 1 and not words[1].text.startswith("-"):  # `tar xzf a.tar`: old keys
        keys, rest = words[1].text, words[2:]
        bundled = [Word("-" + "".join(k for k in keys if k != "f"))] if keys != "f" else []
        if "f" in keys and rest:
            bundled += [Word("-f"), rest[0]]
            rest = rest[1:]
        words = [words[0], *bundled, *rest]
    found, _operands = _scan(words, _TAR)
    out: list[Word] = []
    if _has(found, "-x", "--extract", "--get") and not _has(found, "-O", "--to-stdout",
                                                            "--to-command"):
        if _has(found, "-P", "--absolute-names"):
            return [_anywhere(f"{base(words[0].text)}'s archive")]
        out += [_any_in(d) for d in _given(found, "-C", "--directory")] or [_any_in(Word("."))]
    if _has(found, "-c", "--create", "-r", "--append", "-u", "--update", "-A", "--catenate",
            "--concatenate"):
        out += [w for w in _given(found, "-f", "--file") if w.text != "-"]
    return out


def _extract(list_only: str, *, folder: str = "", anywhere: str = "", spec: _Options
             ) -> Callable[[Sequence[Word]], list[Word]]:
    """An archive tool: what it extracts lands in `folder`'s value (or here) under names
    only the archive knows; nothing with one of `list_only` (listing, testing, to stdout);
    anywhere with `anywhere` (members may climb out with `..` or be absolute)."""

    def written(words: Sequence[Word]) -> list[Word]:
        found, _ = _scan(words, spec)
        if _has(found, *list_only.split()):
            return []
        if anywhere and _has(found, *anywhere.split()):
            return [_anywhere(f"{base(words[0].text)}'s archive")]
        return [_any_in(d) for d in _given(found, *folder.split())] or [_any_in(Word("."))]

    return written


_UNZIP = _opts("-d -x -P -I -O")


def _cpio(words: Sequence[Word]) -> list[Word]:
    """`cpio -i` extracts members as their names say, absolute ones included (unless
    `--no-absolute-filenames`: then under `-D DIR`); `-p DIR` copies into DIR; `-o`
    writes its archive (`-O`/`-F FILE`)."""
    found, operands = _scan(words, _CPIO)
    if _has(found, "-o", "--create"):
        return [w for w in _given(found, "-O", "-F", "--file") if w.text != "-"]
    if _has(found, "-p", "--pass-through"):
        return [_any_in(w) for w in operands[:1]]
    if not _has(found, "-i", "--extract") or _has(found, "-t", "--list", "--to-stdout"):
        return []
    if not _has(found, "--no-absolute-filenames"):
        return [_anywhere("cpio's archive")]
    return [_any_in(d) for d in _given(found, "-D", "--directory")] or [_any_in(Word("."))]


_CPIO = _opts("-D --directory -E --pattern-file -F --file -H --format -I -O -M --message "
              "-R --owner -C --io-size --block-size --rsh-command", "",
              "--extract --create --pass-through --list --to-stdout --no-absolute-filenames")


def _7z(words: Sequence[Word]) -> list[Word]:
    """`7z x|e ARCHIVE [-oDIR]`: into DIR (or here); `7z a|u|d|rn ARCHIVE`: the archive."""
    switches = [w for w in words[1:] if w.text.startswith("-") and w.text != "--"]
    operands = [w for w in words[1:] if not w.text.startswith("-")]
    if not operands:
        return []
    command = operands[0].text
    if command in ("x", "e"):
        if any(w.text == "-so" for w in switches):
            return []
        into = [Word(w.text[2:], w.kind) for w in switches if w.text.startswith("-o")]
        return [_any_in(into[-1] if into else Word("."))]
    if command in ("a", "u", "d", "rn") and len(operands) > 1:
        return operands[1:2]
    return []


def _ar(words: Sequence[Word]) -> list[Word]:
    """`ar x ARCHIVE`: its members here (or in `--output DIR`); `ar r|q|d|m|s ARCHIVE`:
    the archive."""
    found, operands = _scan(words, _AR)
    if not operands:
        return []
    keys, archive = operands[0].text.lstrip("-"), operands[1:2]
    if "x" in keys:
        return [_any_in((_given(found, "--output") or [Word(".")])[-1])]
    return archive if set(keys) & set("rqdmsS") else []


_AR = _opts("--plugin --target --output")


def _pax(words: Sequence[Word]) -> list[Word]:
    """`pax -r` extracts here; `-rw … DIR` copies into DIR; `-w -f FILE` writes FILE."""
    found, operands = _scan(words, _opts("-f -s -o -x -b -B -G -T -U"))
    reads, writes = _has(found, "-r"), _has(found, "-w")
    if reads and writes:
        return [_any_in(w) for w in operands[-1:]]
    if reads:
        return [_anywhere("pax's archive")]
    return [w for w in _given(found, "-f") if w.text != "-"] if writes else []


def _dpkg_deb(words: Sequence[Word]) -> list[Word]:
    """`dpkg-deb -x|-X|-R DEB DIR` (and `dpkg -x`): the package's files in DIR."""
    found, operands = _scan(words, _opts("", "", "--extract --vextract --raw-extract"))
    if _has(found, "-x", "-X", "-R", "--extract", "--vextract", "--raw-extract"):
        return [_any_in(w) for w in operands[1:2]] or [_any_in(Word("."))]
    return []


_ZIP_VALUES = frozenset({"-b", "-n", "-t", "-tt", "-P", "-Z", "-s", "-O", "-lf", "-TT", "-ds",
                         "--temp-path", "--suffixes", "--from-date", "--before-date",
                         "--password", "--compression-method", "--split-size",
                         "--output-file", "--logfile-path", "--unzip-command"})
_ZIP_LISTS = frozenset({"-x", "-i", "--exclude", "--include"})
_ZIP_WORDS = re.compile(r"-(tt|TT|lf|la|li|sb|sc|sd|so|sf|su|sp|sv|ds|dc|dd|dg|du|dv|FS|MM|"
                        r"UN=?.*|ws|ic|nw|AC|AS|db|dt|FF|Dr?|Ai?|[0-9])")


def _zip(words: Sequence[Word]) -> list[Word]:
    """`zip ARCHIVE FILES`: the archive (`.zip` added to a name without one, or `-O
    FILE` instead); its files too with `-m` (moved into it)."""
    operands: list[Word] = []
    output: list[Word] = []
    moves, i = False, 1
    while i < len(words):
        text = words[i].text
        i += 1
        if text in _ZIP_LISTS:
            while i < len(words) and not words[i].text.startswith("-"):
                i += 1
        elif text in _ZIP_VALUES:
            if text in ("-O", "--output-file") and i < len(words):
                output.append(words[i])
            i += 1
        elif text == "--move" or (text.startswith("-") and not text.startswith("--")
                                  and not _ZIP_WORDS.fullmatch(text) and "m" in text):
            moves = True
        elif not text.startswith("-") or text == "-":
            operands.append(words[i - 1])
    if not operands:
        return output
    archive, files = operands[0], operands[1:]
    if archive.text == "-":
        written = list(output)
    elif output:
        written = output
    else:
        name = posixpath.basename(archive.text)
        written = [archive] + ([Word(archive.text + ".zip", archive.kind)]
                               if "." not in name[1:] else [])
    return written + (files if moves else [])
