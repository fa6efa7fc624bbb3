"""What compressors write: `gzip F` writes F.gz and removes F, `gunzip F.gz` the
reverse (their suffixes and endings), xz, bzip2, zstd (`-o`), lz4 (`IN OUT`), brotli, lzip,
pigz, compress. Pure.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence

from kernel.shell.nested import base
from kernel.shell.words import Word
from kernel.shell.writers.options import _given, _has, _Options, _opts, _scan
from kernel.shell.writers.targets import _any_in


def _compressor(suffix: str, strips: dict[str, str], *, decompresses: bool = False,
                names: bool = False, removes: bool = True, spec: _Options
                ) -> Callable[[Sequence[Word]], list[Word]]:
    """gzip, xz, bzip2, zstd, brotli, lzip, pigz and their un- forms: each operand's
    compressed (`+suffix`) or decompressed (a suffix of `strips` replaced) file beside it, or
    `-o`/`--output FILE`, and the operand itself (removed, unless `-k`; zstd and brotli keep
    it unless `--rm`, brotli's `-j`); nothing to stdout (`-c`) or when testing or listing;
    under a folder with `-r`, and beside it under the name stored inside with `-N` (gzip)."""

    def written(words: Sequence[Word]) -> list[Word]:
        found, operands = _scan(words, spec)
        if _has(found, "-c", "--stdout", "--to-stdout", "-t", "--test", "-l", "--list"):
            return []
        output = [w for w in _given(found, "-o", "--output") if w.text != "-"]
        folders = _given(found, "--output-dir-flat", "--output-dir-mirror")
        if folders or _has(found, "-r", "--recursive", "--files", "--files0"):
            return output + [_any_in(w) for w in folders or operands] or [_any_in(Word("."))]
        unpack = decompresses or _has(found, "-d", "--decompress", "--uncompress")
        ending = (_given(found, "-S", "--suffix") or [Word(suffix)])[-1].text
        keep = (not removes and not _has(found, "--rm", "-j")) or _has(found, "-k", "--keep")
        out = list(output)
        for operand in (w for w in operands if w.text != "-"):
            if not keep:
                out.append(operand)
            if output:
                continue
            if unpack and names and _has(found, "-N", "--name"):
                out.append(_any_in(Word(posixpath.dirname(operand.text) or ".",
                                        operand.kind)))
            elif unpack:
                out += [Word(operand.text[:-len(old)] + new, operand.kind)
                        for old, new in ({ending: ""} | strips).items()
                        if old and operand.text.endswith(old)][:1]
            else:
                out.append(Word(operand.text + ending, operand.kind))
        return out

    return written


_GZIP = _opts("-S --suffix", "", "--stdout --to-stdout --decompress --uncompress --keep "
              "--recursive --name --no-name --test --list --force")
_XZ = _opts("-S --suffix -F --format -C --check -T --threads -M --memlimit --block-size "
            "--block-list --files --files0", "", "--stdout --decompress --uncompress --keep "
            "--test --list")
_BZIP2 = _opts("", "", "--stdout --decompress --keep --test")
_ZSTD = _opts("-o -D --patch-from --output-dir-flat --output-dir-mirror --format -T "
              "--threads -M --memory", "", "--stdout --decompress --uncompress --keep --test "
              "--list --recursive --rm")
_PIGZ = _opts("-S --suffix -b --blocksize -p --processes -I --iterations -J --maxsplits -C "
              "--comment -A --alias", "", "--stdout --to-stdout --decompress --uncompress "
              "--keep --recursive --name --no-name --test --list --force")
_BROTLI = _opts("-o --output -q --quality -w --lgwin -S --suffix -D --dictionary", "",
                "--stdout --decompress --keep --rm --test --force --no-copy-stat")
_LZIP = _opts("-o --output -b --member-size -m --match-length -s --dictionary-size -S "
              "--volume-size -n --threads -B --data-size", "", "--stdout --decompress --keep "
              "--test --list --force --recursive")
_GZ_ENDINGS = {".gz": "", ".z": "", "-gz": "", ".tgz": ".tar", ".taz": ".tar"}
_BZ_ENDINGS = {".bz2": "", ".bz": "", ".tbz2": ".tar", ".tbz": ".tar"}
_XZ_ENDINGS = {".xz": "", ".txz": ".tar", ".lzma": "", ".tlz": ".tar"}
_ZST_ENDINGS = {".zst": "", ".tzst": ".tar"}
_LZ_ENDINGS = {".lz": "", ".tlz": ".tar"}


def _zstd(*, decompresses: bool = False) -> Callable[[Sequence[Word]], list[Word]]:
    """zstd reads an `o` inside a bundle as naming the next word (`-qo OUT`; `-of OUT`:
    `f` is `--force`, not the file's name): its bundles are split so, then read as the
    other compressors'."""
    inner = _compressor(".zst", _ZST_ENDINGS, decompresses=decompresses, removes=False,
                        spec=_ZSTD)

    def written(words: Sequence[Word]) -> list[Word]:
        split: list[Word] = [words[0]]
        for i, word in enumerate(words[1:], 1):
            text = word.text
            if text == "--":
                split += words[i:]
                break
            if text.startswith("-") and not text.startswith("--") and "o" in text:
                before, _, after = text[1:].partition("o")
                split += [Word("-" + part, word.kind) for part in (before, after) if part]
                split.append(Word("-o", word.kind))
            else:
                split.append(word)
        return inner(split)

    return written


_LZ4 = _opts("-D", "-B -b -e -i --fast", "--rm --multiple --stdout --to-stdout --decompress "
             "--uncompress --compress --keep --test --list --force")


def _lz4(words: Sequence[Word]) -> list[Word]:
    """`lz4 IN OUT` writes OUT; `lz4 IN` (each IN with `-m`, `-r`) writes `IN.lz4`, or IN
    without `.lz4` when decompressing (`-d`, `unlz4`, or IN ending in `.lz4` without `-z`);
    `--rm` removes IN; `stdout`, `-c`, testing, listing and benchmarks (`-b`) write none."""
    found, operands = _scan(words, _LZ4)
    if _has(found, "-c", "--stdout", "--to-stdout", "-t", "--test", "--list", "-b"):
        return []
    inputs = [w for w in operands if w.text not in ("-", "stdin")]
    out = list(inputs) if _has(found, "--rm") else []
    if not _has(found, "-m", "--multiple", "-r") and len(operands) > 1:
        return out[:1] + [w for w in operands[1:2] if w.text not in ("-", "stdout")]
    unpack = base(words[0].text) == "unlz4" or _has(found, "-d", "--decompress",
                                                    "--uncompress")
    for w in inputs:
        if w.text.endswith(".lz4") and (unpack or not _has(found, "-z", "--compress")):
            out.append(Word(w.text.removesuffix(".lz4"), w.kind))
        elif not unpack:
            out.append(Word(w.text + ".lz4", w.kind))
    return out
