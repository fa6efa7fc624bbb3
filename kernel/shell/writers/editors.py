"""What rewrites files in place, or writes where its script says: `sed -i` and a sed
script's `w F` (kernel.shell.sedscript), `perl -i`, awk's `-i inplace` and `print > "F"`
(kernel.shell.awkscript), `patch`, vi/vim/ex/ed, formatters (`gofmt -w`, `prettier
--write`, `black`, `ruff format`), `sd`, `yq -i`, `crudini --set`, `dotenv set`. Pure.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Sequence

from kernel.shell.awkscript import read_program
from kernel.shell.nested import base
from kernel.shell.sedscript import read_script
from kernel.shell.words import LITERAL, Word
from kernel.shell.writers.options import _given, _has, _last, _Options, _opts, _scan
from kernel.shell.writers.targets import _any_in, _anywhere, _kind, _under

_SED = _opts("-e --expression -f --file -l --line-length", "-i --in-place",
             "--quiet --silent --debug --follow-symlinks --posix --regexp-extended "
             "--separate --sandbox --unbuffered --null-data --zero-terminated --binary "
             "--help --version")
_SED_SCRIPTS = ("-e", "--expression", "-f", "--file")


def _sed(words: Sequence[Word]) -> list[Word]:
    """`sed -i`: each file after the script; and the files the script's `w FILE`, `W FILE`
    and `s///w FILE` open (kernel.shell.sedscript): from each `-e` before `--sandbox` (sed
    reads them as it meets them), or from the script operand without `--sandbox`. A script
    file (`-f`), a script the shell changes (`"$S"`, an unquoted `*`), `e` commands and what
    cannot be read may name any file."""
    found, operands = _scan(words, _SED)
    given = _has(found, *_SED_SCRIPTS)
    out = (operands if given else operands[1:]) if _has(found, "-i", "--in-place") else []
    pieces: list[Word] = []
    for name, value in found:
        if name == "--sandbox":
            break
        if name in ("-f", "--file"):
            return [*out, _anywhere("sed's script file")]
        if name in _SED_SCRIPTS and value is not None:
            pieces.append(value)
    if not given and operands and not _has(found, "--sandbox"):
        pieces = operands[:1]
    if any(w.kind != LITERAL for w in pieces):
        return [*out, _anywhere("sed's script")]
    script = read_script([w.text for w in pieces])
    out += [Word("./" + name if name.startswith("~") else name) for name in script.files]
    return out + ([_anywhere("sed's script")] if script.runs or script.unread else [])


_PERL = _opts("-e -E -I -M -m -C -d -D -l -x", "-i -0")


def _perl(words: Sequence[Word]) -> list[Word]:
    found, operands = _scan(words, _PERL)
    if not _has(found, "-i"):
        return []
    return operands if _has(found, "-e", "-E") else operands[1:]


_PATCH = _opts("-p --strip -i --input -o --output -d --directory -r --reject-file -D "
               "--ifdef -B --prefix -Y --basename-prefix -z --suffix -V --version-control "
               "-F --fuzz -g --get --quoting-style", "--merge")


def _patch(words: Sequence[Word]) -> list[Word]:
    """The file patched (its first operand, or `-o FILE`; without either, the files the
    patch names: not known here), its backup (`-B PREFIX`, `-Y PREFIX`, `-z SUFFIX`) and
    the reject file, all from `-d DIR`."""
    found, operands = _scan(words, _PATCH)
    folder = (_given(found, "-d", "--directory") or [Word(".")])[-1]
    given = _given(found, "-o", "--output")
    output = [w for w in given if w.text != "-"]
    if not given and not operands:
        return [_any_in(folder)]
    targets = output if given else operands[:1]
    backups = [Word(p.text + t.text, _kind(p, t)) for p in _given(found, "-B", "--prefix")
               for t in targets]
    backups += [Word(posixpath.join(posixpath.dirname(t.text), p.text + base(t.text)),
                     _kind(p, t)) for p in _given(found, "-Y", "--basename-prefix")
                for t in targets]
    backups += [Word(t.text + z.text, _kind(t, z)) for z in _given(found, "-z", "--suffix")
                for t in targets]
    rejects = _given(found, "-r", "--reject-file")
    return [_under(folder, w) for w in targets + backups + rejects]


def _rewrites(spec: _Options, *, when: str = "", unless: str = "", skip: int = 0,
              take: int | None = None) -> Callable[[Sequence[Word]], list[Word]]:
    """A program that rewrites the files (or folders) it is given in place: formatters
    (`gofmt -w`, `clang-format -i`, `prettier --write`, `black`), `sd`, `crudini --set`.
    Its operands after `skip` leading ones (`sd FIND REPLACE`), at most `take`, when one of
    `when` is given (always without `when`) and none of `unless` (`--check`)."""

    def written(words: Sequence[Word]) -> list[Word]:
        found, operands = _scan(words, spec)
        if (when and not _has(found, *when.split())) or _has(found, *unless.split()):
            return []
        return operands[skip:] if take is None else operands[skip:skip + take]

    return written


_YQ = _opts("--from-file -o --output-format -p --input-format -I --indent --expression",
            "", "--inplace --in-place --null-input")


def _yq(words: Sequence[Word]) -> list[Word]:
    """`yq -i EXPRESSION FILES` (`yq eval -i`; the expression from `--from-file`): each
    file, rewritten."""
    found, operands = _scan(words, _YQ)
    if not _has(found, "-i", "--inplace", "--in-place"):
        return []
    if operands and operands[0].text in ("eval", "e", "eval-all", "ea"):
        operands = operands[1:]
    return operands if _has(found, "--from-file", "--expression") else operands[1:]


_RUFF = _opts("--config --select --ignore --extend-select --line-length --target-version "
              "--exclude --extend-exclude --stdin-filename --cache-dir --output-format",
              "", "--fix --check --diff --unsafe-fixes --fix-only")


def _ruff(words: Sequence[Word]) -> list[Word]:
    """`ruff format [PATHS]` (not `--check`, `--diff`), `ruff check --fix [PATHS]`: the
    paths, `.` when none."""
    found, operands = _scan(words, _RUFF)
    command = operands[0].text if operands else ""
    if _has(found, "--diff") or not (
            (command == "format" and not _has(found, "--check"))
            or (command == "check" and _has(found, "--fix", "--fix-only"))):
        return []
    return operands[1:] or [Word(".")]


def _dotenv(words: Sequence[Word]) -> list[Word]:
    """python-dotenv's `set` and `unset` rewrite the dotenv file (`-f FILE`, else `.env`)."""
    found, operands = _scan(words, _opts("-f --file -q --quote -e --export"))
    if not operands or operands[0].text not in ("set", "unset"):
        return []
    return [_last(found, "-f", "--file") or Word(".env")]


_VIM = _opts("-c --cmd -S -w -W -T -u -U -i -t -q --servername --startuptime -r", "-V",
             "--version --help")


def _editor(words: Sequence[Word]) -> list[Word]:
    """vi, vim, nvim, ex, ed: each file they edit, and whatever their commands (`-c`,
    `+CMD`, `-s FILE`, stdin) write: any file (`:w ~/.bashrc`); `-w`/`-W` keep the keys
    typed in FILE, `-i` the viminfo file."""
    found, operands = _scan(words, _VIM if base(words[0].text) not in ("ed", "red")
                            else _opts("-p --prompt"))
    if _has(found, "--version", "--help", "-h") and not operands:
        return []
    files = [w for w in operands if not w.text.startswith("+") and w.text != "-"]
    return files + _given(found, "-w", "-W", "-i") + [
        _anywhere(f"{base(words[0].text)}'s commands")]


_AWK = _opts("-f --file -v --assign -F --field-separator -i --include -l --load -e --source "
             "-E --exec", "-d --dump-variables -o --pretty-print -p --profile -D --debug "
             "-L --lint", "")
_AWK_DEFAULTS = {"-d": "awkvars.out", "--dump-variables": "awkvars.out",
                 "-o": "awkprof.out", "--pretty-print": "awkprof.out",
                 "-p": "awkprof.out", "--profile": "awkprof.out"}


def _awk(words: Sequence[Word]) -> list[Word]:
    """gawk's `-i inplace` (`--include=inplace`): each file after the program; `-d`,
    `-o`, `-p` (`--profile`, …) write FILE (or their default file); the files the
    program's redirections name (`print > "F"`: kernel.shell.awkscript). A program read
    from a file (`-f`, `-E`), included or loaded (`-i LIB`, `-l EXT`, `@include`), changed
    by the shell (`"$P"`), running commands (`print | "sh"`, `system()`) or writing where
    no text names (`print > $1`) may name any file."""
    found, operands = _scan(words, _AWK)
    out = [w if w is not None and w.text else Word(_AWK_DEFAULTS[name])
           for name, w in found if name in _AWK_DEFAULTS]
    given = _has(found, "-f", "--file", "-e", "--source", "-E", "--exec")
    includes = [posixpath.splitext(base(w.text))[0] for w in _given(found, "-i", "--include")]
    if "inplace" in includes:
        files = operands if given else operands[1:]
        out += [w for w in files if not re.match(r"[A-Za-z_][A-Za-z0-9_]*=", w.text)]
    programs = _given(found, "-e", "--source") if given else operands[:1]
    if _has(found, "-f", "--file", "-E", "--exec", "-l", "--load") or any(
            name != "inplace" for name in includes) or any(w.kind != LITERAL for w in programs):
        return [*out, _anywhere(f"{base(words[0].text)}'s program")]
    read = [read_program(w.text) for w in programs]
    out += [Word("./" + name if name.startswith("~") else name) for r in read for name in r.files]
    return out + ([_anywhere(f"{base(words[0].text)}'s program")] if any(
        r.unknown for r in read) else [])
