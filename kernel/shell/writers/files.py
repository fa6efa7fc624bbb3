"""What file utilities write: `cp`, `mv`, `install`, `ln`, `rsync`, `scp` (the target, and
a source's name inside it), the programs that write every operand (`tee`, `touch`, `rm`,
`chmod MODE F`, …), `dd of=F`, `split`, `csplit`, `rename`, `script`, `xxd -r`. Pure.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Sequence

from kernel.shell.nested import base
from kernel.shell.words import GLOB, LITERAL, TILDE, Word, normalized
from kernel.shell.writers.options import Found, _given, _has, _Options, _opts, _scan
from kernel.shell.writers.targets import _any_in, _anywhere, _flagged, _inside, _kind


def _remote(word: Word) -> bool:
    """`host:path` or `user@host:path` (rsync, scp): not a file here."""
    head = word.text.split("/", 1)[0]
    return ":" in head


def _copies(spec: _Options, *, moves: bool = False, remote: bool = False
            ) -> Callable[[Sequence[Word]], list[Word]]:
    """cp, mv, install, ln, rsync, scp: the last operand (or each source's name inside
    `-t DIR`; its whole path inside the last operand with `cp --parents`); a source's
    name inside the last operand too where only that spelling is a protected or secret
    path, or the last operand is plainly a folder (`…/`, `.`, `~`); `mv` also removes its
    sources; `ln` with one operand makes its name here. What a folder's contents copied
    (`rsync -a src/ dst`) are called is not known here. `remote`: `host:path` is on another
    computer (rsync, scp; for cp, `a:b` is a folder here)."""

    def written(words: Sequence[Word]) -> list[Word]:
        found, operands = _scan(words, spec)
        return [w for w in _copied(words[0], found, operands) if not (remote and _remote(w))]

    def _copied(program: Word, found: Found, operands: list[Word]) -> list[Word]:
        into = _given(found, "-t", "--target-directory")
        if base(program.text) == "install" and _has(found, "-d", "--directory"):
            return operands
        out = list(operands) if moves else []
        if into:
            return out + [_inside(into[-1], s) for s in operands]
        if not operands:
            return out
        if _has(found, "--parents") and len(operands) > 1:
            *sources, target = operands
            return out + [target] + [Word(posixpath.join(target.text, s.text.lstrip("/")),
                                          _kind(target, s)) for s in sources]
        if len(operands) == 1:
            return out + ([_inside(Word("."), operands[0])]
                          if base(program.text) in ("ln", "link") else [])
        *sources, target = operands
        out.append(target)
        if not _has(found, "-T", "--no-target-directory"):
            out += [inside for s in sources if not _contents(s)
                    and _lands_apart(target, inside := _inside(target, s))]
        return out

    return written


def _contents(source: Word) -> bool:
    """`src/` (rsync) and `src/.` (cp -r) copy what is in src, not src: its names are
    unknown here."""
    return source.text.endswith(("/", "/.")) and source.text not in ("/", "/.")


def _lands_apart(folder: Word, inside: Word) -> bool:
    plain = normalized(folder.text)
    return (folder.text.endswith("/") or plain in (".", "..", "~")
            or inside.kind not in (LITERAL, TILDE)
            or (_flagged(inside.text) and not _flagged(folder.text)))


def _all(spec: _Options, *, skip_first: Callable[[Found, list[Word]], bool] | None = None
         ) -> Callable[[Sequence[Word]], list[Word]]:
    """Every operand (after the first where it is a mode or an owner: chmod, chown)."""

    def written(words: Sequence[Word]) -> list[Word]:
        found, operands = _scan(words, spec)
        if skip_first is not None and operands and skip_first(found, operands):
            operands = operands[1:]
        return [w for w in operands if w.text != "-"]

    return written


_MODE = re.compile(r"[0-7]+|[ugoa]*(?:[-+=][rwxXstugo]*)+(?:,[ugoa]*(?:[-+=][rwxXstugo]*)+)*")


def _chmod_mode(found: Found, operands: list[Word]) -> bool:
    return not _has(found, "--reference") and bool(_MODE.fullmatch(operands[0].text))


def _owner_first(found: Found, operands: list[Word]) -> bool:
    return not _has(found, "--reference")


def _attr_first(found: Found, operands: list[Word]) -> bool:
    return operands[0].text[:1] in "+="


def _dd(words: Sequence[Word]) -> list[Word]:
    return [Word(w.text[3:], w.kind) for w in words[1:] if w.text.startswith("of=")]


_CP = _opts("-t --target-directory -S --suffix --sparse --no-preserve",
            "--backup --reflink --preserve --context --update",
            "--no-target-directory --parents")
_INSTALL = _opts("-t --target-directory -S --suffix -m --mode -o --owner -g --group "
                 "--strip-program", "--backup --context",
                 "--no-target-directory --directory --strip")
_RSYNC = _opts(
    "-e --rsh --rsync-path -f --filter --exclude --include --exclude-from --include-from "
    "--files-from -T --temp-dir --log-file --log-file-format --password-file --backup-dir "
    "--compare-dest --copy-dest --link-dest --chmod --chown --timeout --contimeout --port "
    "--bwlimit -M --remote-option --out-format --suffix --max-size --min-size --partial-dir "
    "-B --block-size --iconv --info --debug -@ --modify-window --usermap --groupmap "
    "--skip-compress --max-delete --sockopts --outbuf --write-batch --only-write-batch "
    "--read-batch --protocol --checksum-choice --compress-choice --compress-level "
    "--stop-after --stop-at --address --max-alloc --early-input", "",
    "--partial --compress --checksum --backup --links --copy-links --delete")
_SCP = _opts("-c -F -i -J -l -o -P -S -D -X")

_SPLIT = _opts("-a --suffix-length --additional-suffix -b --bytes -C --line-bytes -l --lines "
               "-n --number -t --separator --filter", "--numeric-suffixes --hex-suffixes",
               "--elide-empty-files --verbose")


def _split(words: Sequence[Word]) -> list[Word]:
    """`split [IN [PREFIX]]`: PREFIX (`x`) and a suffix; with `--filter` a command gets
    each part, and what it writes cannot be read here."""
    found, operands = _scan(words, _SPLIT)
    if _has(found, "--filter"):
        return [_anywhere("split's --filter command")]
    prefix = operands[1] if len(operands) > 1 else Word("x")
    suffix = (_given(found, "--additional-suffix") or [Word("")])[-1]
    return [Word(prefix.text + "*" + suffix.text, _kind(prefix, suffix, Word("*", GLOB)))]


def _csplit(words: Sequence[Word]) -> list[Word]:
    """`csplit FILE PATTERN…`: `-f PREFIX` (`xx`) and a number."""
    found, _ = _scan(words, _opts("-b --suffix-format -f --prefix -n --digits"))
    prefix = (_given(found, "-f", "--prefix") or [Word("xx")])[-1]
    return [Word(prefix.text + "*", _kind(prefix, Word("*", GLOB)))]


def _rename(words: Sequence[Word]) -> list[Word]:
    """`rename EXPR FILES` (perl's) or `rename FROM TO FILES` (util-linux's): each file
    (renamed away) and a new name beside it that only the expression knows."""
    found, operands = _scan(words, _opts("-e -E", "", "--no-act --nono --just-print"))
    if _has(found, "-n", "--no-act", "--nono", "--just-print"):
        return []
    files = operands if _has(found, "-e", "-E") else operands[1:]
    return [w for f in files for w in
            (f, _any_in(Word(posixpath.dirname(f.text) or ".", f.kind)))]


def _script(words: Sequence[Word]) -> list[Word]:
    """`script [FILE]` keeps the session in FILE (`typescript`), `-O`, `-I`, `-B`, `-T`."""
    found, operands = _scan(words, _SCRIPT)
    logs = [w for w in _given(found, "-O", "--log-out", "-I", "--log-in", "-B", "--log-io",
                              "-T", "--log-timing", "-t", "--timing") if w.text]
    if operands:
        return operands[:1] + logs
    return logs if _has(found, "-O", "--log-out", "-B", "--log-io") else [
        Word("typescript"), *logs]


_SCRIPT = _opts("-c --command -E --echo -I --log-in -O --log-out -B --log-io -T --log-timing "
                "-m --logging-format", "-t --timing")
_XXD_VALUES = frozenset({"-c", "-cols", "-g", "-groupsize", "-l", "-len", "-s", "-seek", "-o",
                         "-offset", "-n", "-name"})


def _xxd(words: Sequence[Word]) -> list[Word]:
    """`xxd [-r] IN OUT` writes OUT."""
    operands, i = [], 1
    while i < len(words):
        text = words[i].text
        i += 1
        if text in _XXD_VALUES:
            i += 1
        elif not text.startswith("-") or text == "-":
            operands.append(words[i - 1])
    return [w for w in operands[1:2] if w.text != "-"]
