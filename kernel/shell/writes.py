"""What a command line writes: the files its redirections open for writing, and the files
common writing programs are told to write (`tee F`, `cp SRC DST`, `dd of=F`, `sed -i … F`
and a sed script's `w F` (kernel.shell.sedscript), `install`, `mv`, `ln`, `truncate`,
`touch`, `rsync`, `patch`, `curl -o`, `openssl -out`, `ssh-keygen -f`, git's commands (`git
config`, `checkout -- P`, `checkout-index --prefix=P`, `archive -o`, `diff --output`,
`clone`, `init`, …), compressors (`gzip F` writes F.gz and removes F, `lz4 IN OUT`, `zstd
-o`), `zip`, `split`, `sort -o`, `gawk -i inplace` and an awk program's `print > "F"`
(kernel.shell.awkscript), `sqlite3 DB`, `python -m venv DIR`, ImageMagick's output and
`mogrify -path DIR`, ffmpeg's outputs, compilers' (`cc -o`, `-Wl,-o,F`, `rustc --out-dir`,
`javac -d`, `go build -o`, `tsc --outDir`), what in-place editors and formatters rewrite
(`yq -i`, `sd`, `prettier --write`, `black`), …), in every simple command of the line,
those a wrapper, a shell or `find -exec` runs included (kernel.shell.parse derives them).
The policy judges each as a write of that file (kernel.policy.facts, `decide`), as it
judges `> f`.

Pure functions over words. A program's options are read as GNU's getopt reads them: before
or after the operands, up to `--`, short ones bundled (`-sfo FILE`), a value attached or
the next word, a long option by any unambiguous prefix (`--target-dir=D`); or as the
program reads them where it differs (one-dash names: ffmpeg, go, javac, openssl; tsc in any
case; zstd's `-qo FILE`). A program not in the table names no file here (the sandbox bounds
what it writes, as for `python -c`, `perl -e`, `make`, a plain `npm install` or `pip
install`, `tsc` building what tsconfig.json says, and git's branch switches, merges and
resets, which write the repository's own tracked files).

A written path the line names is `known`: literal or `~` words, and globs that cannot match
a protected or secret name (`src/*.py`; kernel.pathrules' lists, probed with each name they
hold). Others are `unknown` (asked about): an expansion (`tee "$F"`), a glob that could
match one (`sed -i … *`, `.g*/hooks/x`), what `find -exec` puts for `{}`, a relative path
after a `cd`, every glob a redirection names; and the files whose names only the data
knows, as `DIR/*` in the folder they land in: what an archive extracts (`tar -x`, `unzip`,
`cpio -i`, `7z x`, `ar x`, here without `-C`/`-d`/`-o`), what a patch names (`patch -p1`,
`git apply`, `git am`, under `-d`/`--directory`/`-C`/`--work-tree`), what packages hold
(`pip install --target`, `npm install --prefix`), what a server names (`curl -OJ`, `wget
-r`); and `(any file … may name)` where nothing bounds them: an editor's commands (`vim
-c`, `ex`, `ed`), SQL (`ATTACH`, `writefile()`, `.output`), members allowed `..` or `/`
(`tar -P`, `cpio -i`), a sed script or awk program read from a file, changed by the shell
or running commands (`-f`, `"$S"`, `e`, `print | "sh"`, `print > $1`), ffmpeg's writing
filters, a compiler's response file (`@FILE`). What a program keeps outside the workspace
for another to run later, outside the sandbox (`crontab`, `at`), is such a target too,
named for what it is: it always asks.
"""

from __future__ import annotations

import fnmatch
import itertools
import posixpath
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache

from kernel.pathrules import PROTECTED_PATTERNS, SECRET_PATTERNS, fold_name, protected_match
from kernel.pathrules import secret_match as _secret_match
from kernel.shell.awkscript import read_program
from kernel.shell.nested import PYTHONS, base, python_module
from kernel.shell.sedscript import read_script
from kernel.shell.words import (
    EXPANDS,
    GLOB,
    LITERAL,
    TILDE,
    CommandLine,
    SimpleCommand,
    Word,
    names_a_file,
    normalized,
)

_DOT_GLOBS = re.compile(r"dotglob|globignore|glob_?dots|nocaseglob", re.I)
"""Shell options under which a glob also matches names starting with `.`."""


@dataclass(frozen=True)
class _Options:
    values: frozenset[str] = frozenset()
    """Options that take a value: attached (`-oFILE`, `--output=FILE`) or the next word."""
    optional: frozenset[str] = frozenset()
    """Options whose value is only ever attached (`-i.bak`, `--in-place=.bak`)."""
    flags: frozenset[str] = frozenset()
    """Long options without a value that change what is written (for their prefixes)."""

    @property
    def long(self) -> tuple[str, ...]:
        return tuple(sorted(n for n in self.values | self.optional | self.flags
                            if n.startswith("--")))


def _opts(values: str = "", optional: str = "", flags: str = "") -> _Options:
    return _Options(frozenset(values.split()), frozenset(optional.split()),
                    frozenset(flags.split()))


Found = list[tuple[str, Word | None]]
"""The options given, in order: (`-t` or `--target-directory`, its value or None)."""


def _long(name: str, spec: _Options) -> str:
    """`--target-dir` is `--target-directory` (getopt takes any unambiguous prefix)."""
    known = spec.long
    if name in known:
        return name
    matches = [n for n in known if n.startswith(name)]
    return matches[0] if len(matches) == 1 else name


def _scan(words: Sequence[Word], spec: _Options) -> tuple[Found, list[Word]]:
    """The options and the operands after the program's name."""
    found: Found = []
    operands: list[Word] = []
    i = 1
    while i < len(words):
        word = words[i]
        text = word.text
        i += 1
        if text == "--":
            operands.extend(words[i:])
            break
        if not text.startswith("-") or text == "-":
            operands.append(word)
        elif text.startswith("--"):
            name, eq, attached = text.partition("=")
            name = _long(name, spec)
            if eq:
                found.append((name, Word(attached, word.kind)))
            elif name in spec.values and i < len(words):
                found.append((name, words[i]))
                i += 1
            else:
                found.append((name, None))
        else:
            for at in range(1, len(text)):
                flag, rest = f"-{text[at]}", text[at + 1:]
                if flag in spec.optional:
                    found.append((flag, Word(rest, word.kind)))
                    break
                if flag in spec.values:
                    if rest:
                        found.append((flag, Word(rest, word.kind)))
                    elif i < len(words):
                        found.append((flag, words[i]))
                        i += 1
                    else:
                        found.append((flag, None))
                    break
                found.append((flag, None))
    return found, operands


def _scan_words(words: Sequence[Word], values: Callable[[str], bool], *, signs: str = "-",
                fold: bool = False) -> tuple[Found, list[Word]]:
    """The options and operands of a program whose options are whole words (go, javac,
    kotlinc, tsc, ffmpeg, ImageMagick): `-name VALUE` where `values(name)`, `-name=VALUE`,
    `--name` as `-name`, `+name` where `signs` holds `+`; any other option is a flag; after
    `--` every word is an operand. Names come back without their signs (in lower case with
    `fold`: tsc's)."""
    found: Found = []
    operands: list[Word] = []
    i = 1
    while i < len(words):
        word = words[i]
        i += 1
        if word.text == "--":
            operands.extend(words[i:])
            break
        if len(word.text) < 2 or word.text[0] not in signs:
            operands.append(word)
            continue
        name, eq, attached = word.text.lstrip(word.text[0]).partition("=")
        name = name.lower() if fold else name
        if eq:
            found.append((name, Word(attached, word.kind)))
        elif values(name) and i < len(words):
            found.append((name, words[i]))
            i += 1
        else:
            found.append((name, None))
    return found, operands


def _given(found: Found, *names: str) -> list[Word]:
    return [value for name, value in found if name in names and value is not None]


def _last(found: Found, *names: str) -> Word | None:
    """The value the last of these options was given (a later one overrides)."""
    given = _given(found, *names)
    return given[-1] if given else None


def _has(found: Found, *names: str) -> bool:
    return any(name in names for name, _ in found)


def _kind(*words: Word) -> str:
    kinds = {w.kind for w in words}
    if EXPANDS in kinds or {GLOB, TILDE} <= kinds:
        return EXPANDS
    return GLOB if GLOB in kinds else TILDE if TILDE in kinds else LITERAL


def _inside(folder: Word, source: Word) -> Word:
    """Where `source` lands in `folder` (`cp x/.bashrc ~` writes `~/.bashrc`)."""
    name = posixpath.basename(source.text.rstrip("/")) or source.text
    return Word(posixpath.join(folder.text, name), _kind(folder, source))


def _any_in(folder: Word) -> Word:
    """Files whose names only the data knows (an archive's, a patch's), in `folder`."""
    return Word(posixpath.join(folder.text, "*"), EXPANDS)


def _anywhere(what: str) -> Word:
    """Files anywhere, named only by `what` (a script, SQL, a patch allowed `..`)."""
    return Word(f"(any file {what} may name)", EXPANDS)


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


@lru_cache(maxsize=4096)
def _flagged(path: str) -> bool:
    return protected_match(path) is not None or _secret_match(path) is not None


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


_CURL = _opts(
    "-o --output -c --cookie-jar -D --dump-header --output-dir --trace --trace-ascii "
    "--stderr --libcurl --etag-save --hsts --alt-svc -d --data --data-raw --data-binary "
    "--data-urlencode -H --header -X --request -u --user -A --user-agent -e --referer -b "
    "--cookie -K --config -T --upload-file -F --form -x --proxy -w --write-out -m --max-time "
    "--connect-timeout -r --range -C --continue-at -Y --speed-limit -y --speed-time -z "
    "--time-cond -E --cert --key --cacert -Q --quote --resolve --retry -U --proxy-user",
    "", "--remote-name --remote-name-all --create-dirs --remote-header-name")


def _url_name(url: Word) -> Word:
    path = re.sub(r"^[a-z][a-z0-9+.-]*://[^/]*", "", url.text, flags=re.I).split("?")[0]
    return Word(posixpath.basename(path) or "index.html", url.kind)


def _curl(words: Sequence[Word]) -> list[Word]:
    found, operands = _scan(words, _CURL)
    out = [w for w in _given(found, "-o", "--output", "-c", "--cookie-jar", "-D",
                             "--dump-header", "--trace", "--trace-ascii", "--stderr",
                             "--libcurl", "--etag-save", "--hsts", "--alt-svc")
           if w.text != "-"]
    if _has(found, "-O", "--remote-name", "--remote-name-all"):
        folder = (_given(found, "--output-dir") or [Word(".")])[-1]
        if _has(found, "-J", "--remote-header-name"):  # the server names the file
            return [*out, _any_in(folder)]
        out += [_inside(folder, _url_name(u)) for u in operands]
    return out


_WGET = _opts(
    "-O --output-document -P --directory-prefix -o --output-file -a --append-output -i "
    "--input-file -e --execute -U --user-agent --header -t --tries -T --timeout -w --wait -Q "
    "--quota -l --level -A --accept -R --reject -D --domains -I --include-directories -X "
    "--exclude-directories --post-data --post-file --user --password --load-cookies "
    "--save-cookies --ca-certificate --certificate --private-key -B --base",
    "", "--recursive --mirror --content-disposition --trust-server-names "
    "--force-directories")


def _wget(words: Sequence[Word]) -> list[Word]:
    found, operands = _scan(words, _WGET)
    out = [w for w in _given(found, "-o", "--output-file", "-a", "--append-output",
                             "--save-cookies") if w.text != "-"]
    document = _given(found, "-O", "--output-document")
    if document:
        return out + [w for w in document if w.text != "-"]
    folder = (_given(found, "-P", "--directory-prefix") or [Word(".")])[-1]
    if _has(found, "-r", "--recursive", "-m", "--mirror", "-i", "--input-file",
            "--content-disposition", "--trust-server-names", "-x", "--force-directories"):
        return [*out, _any_in(folder)]  # names from the pages, the server, a list
    return out + [_inside(folder, _url_name(u)) for u in operands]


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


def _elsewhere(what: str) -> Word:
    """What a program keeps outside the workspace for another to run later, outside the
    sandbox (a crontab, an at job): no path here names it, and it is asked about as a file
    that cannot be named."""
    return Word(f"({what})", EXPANDS)


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


def _option_values(spec: _Options, *names: str) -> Callable[[Sequence[Word]], list[Word]]:
    def written(words: Sequence[Word]) -> list[Word]:
        found, _ = _scan(words, spec)
        return [w for w in _given(found, *names) if w.text != "-"]

    return written


def _nth(spec: _Options, n: int) -> Callable[[Sequence[Word]], list[Word]]:
    def written(words: Sequence[Word]) -> list[Word]:
        return _scan(words, spec)[1][n:n + 1]

    return written


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

_GIT_VALUES = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace",
                         "--config-env", "--super-prefix", "--exec-path"})
"""git's own options before its command that take a value (the next word, or `=value`)."""
_GIT_CONFIG_READS = frozenset({"--get", "--get-all", "--get-regexp", "--get-urlmatch",
                               "--get-color", "--get-colorbool", "--list", "-l", "get",
                               "list", "--blob"})
_GIT_CONFIG = _opts("-f --file --blob --type --default --comment -t --show-scope")
_GIT_REMOTE_WRITES = frozenset({"add", "rename", "remove", "rm", "set-url", "set-branches",
                                "set-head"})
_GIT_BRANCH_WRITES = frozenset({"-u", "--set-upstream-to", "--unset-upstream",
                                "--edit-description", "--track"})


@dataclass(frozen=True)
class _Repo:
    """Where a git command works: the folder (`-C`), the git directory (`--git-dir`) and
    the work tree (`--work-tree`), each as the line names it."""

    folder: Word
    git_dir: Word
    work_tree: Word

    def config(self) -> Word:
        return _under(self.git_dir, Word("config"))

    def at(self, path: Word) -> Word:
        """A path the command's words give, from the folder it runs in."""
        return _under(self.folder, path)


def _git(words: Sequence[Word]) -> list[Word]:
    """What git's commands write (_GIT_COMMANDS); a `-C DIR`, `--git-dir` or `--work-tree`
    before the command says which repository and which tree."""
    folder, git_dir, work_tree, i = Word("."), None, None, 1
    while i < len(words) and words[i].text.startswith("-") and words[i].text != "-":
        name, eq, attached = words[i].text.partition("=")
        value = Word(attached, words[i].kind) if eq else (
            words[i + 1] if name in _GIT_VALUES and i + 1 < len(words) else None)
        i += 1 if eq or name not in _GIT_VALUES else 2
        if value is not None and name == "-C":
            folder = _under(folder, value)
        elif value is not None and name == "--git-dir":
            git_dir = value
        elif value is not None and name == "--work-tree":
            work_tree = value
    if i >= len(words):
        return []
    repo = _Repo(folder, _under(folder, git_dir or Word(".git")),
                 _under(folder, work_tree) if work_tree is not None else folder)
    command = _GIT_COMMANDS.get(words[i].text)
    return [] if command is None else command(repo, [words[i], *words[i + 1:]])


def _git_config(repo: _Repo, rest: list[Word]) -> list[Word]:
    """`git config`: the repository's `.git/config` unless told `--file`, `--global`,
    `--system`, `--worktree`; nothing when it only reads."""
    found, operands = _scan(rest, _GIT_CONFIG)
    if _has(found, *_GIT_CONFIG_READS) or (operands and operands[0].text in
                                           _GIT_CONFIG_READS):
        return []
    files = _given(found, "-f", "--file")
    if files:
        return files
    if _has(found, "--global"):
        return [Word("~/.gitconfig", TILDE)]
    if _has(found, "--system"):
        return [Word("/etc/gitconfig")]
    if _has(found, "--worktree"):
        return [_under(repo.git_dir, Word("config.worktree"))]
    return [repo.config()]


def _git_remote(repo: _Repo, rest: list[Word]) -> list[Word]:
    return [repo.config()] if len(rest) > 1 and rest[1].text in _GIT_REMOTE_WRITES else []


def _git_branch(repo: _Repo, rest: list[Word]) -> list[Word]:
    return [repo.config()] if any(w.text.partition("=")[0] in _GIT_BRANCH_WRITES
                                  for w in rest[1:]) else []


def _git_submodule(repo: _Repo, rest: list[Word]) -> list[Word]:
    if any(w.text == "add" for w in rest[1:]):
        return [repo.at(Word(".gitmodules")), repo.config()]
    return []


_GIT_APPLY = _opts("-p -C --exclude --include --directory --whitespace -S --build-fake-ancestor "
                   "--patch-format --resolvemsg --show-current-patch",
                   "", "--cached --check --stat --numstat --summary --apply --unsafe-paths "
                   "--index --abort --quit")


def _git_patches(repo: _Repo, rest: list[Word]) -> list[Word]:
    """`git apply`, `git am`: the files the patches name, in the work tree (under
    `--directory`); `--cached` and the reports (`--check`, `--stat`) write no file."""
    found, _ = _scan(rest, _GIT_APPLY)
    if rest[0].text == "apply" and (_has(found, "--cached") or (
            _has(found, "--check", "--stat", "--numstat", "--summary")
            and not _has(found, "--apply"))):
        return []
    if rest[0].text == "am" and _has(found, "--show-current-patch", "--quit"):
        return []
    if _has(found, "--unsafe-paths"):
        return [_anywhere(f"git {rest[0].text}'s patches")]
    tree = repo.work_tree
    for root in _given(found, "--directory"):
        tree = _under(tree, root)
    return [_any_in(tree)]


_GIT_WORKTREE = _opts("-b -B --reason")


def _git_worktree(repo: _Repo, rest: list[Word]) -> list[Word]:
    """`git worktree add PATH`: the folder PATH, a checked-out tree."""
    operands = _scan(rest, _GIT_WORKTREE)[1]
    if len(operands) < 2 or operands[0].text != "add":
        return []
    return [repo.at(operands[1])]


_GIT_CLONE = _opts("-o --origin -b --branch -u --upload-pack --reference --reference-if-able "
                   "--separate-git-dir --depth --shallow-since --shallow-exclude -c --config "
                   "--server-option -j --jobs --filter --template --bundle-uri --revision "
                   "--ref-format", "--recurse-submodules", "--bare --mirror")


def _git_clone(repo: _Repo, rest: list[Word]) -> list[Word]:
    """`git clone URL [DIR]`: the new folder DIR (named after the URL when not given), a
    repository and its tree, and its git directory elsewhere with `--separate-git-dir`;
    what `--template` puts in the git directory (hooks) is not named."""
    found, operands = _scan(rest, _GIT_CLONE)
    if not operands:
        return []
    if len(operands) > 1:
        into = operands[1]
    else:
        name = re.sub(r"(/\.git)?/*$", "", operands[0].text)
        name = re.split(r"[/:]", name)[-1]
        name = name.removesuffix(".git") + (".git" if _has(found, "--bare", "--mirror")
                                            else "")
        into = Word(name or ".", operands[0].kind)
    out = [repo.at(into)] + [repo.at(d) for d in _given(found, "--separate-git-dir")]
    return out + ([_any_in(out[-1])] if _has(found, "--template") else [])


_GIT_INIT = _opts("--template --separate-git-dir -b --initial-branch --object-format "
                  "--ref-format", "--shared", "--bare")


def _git_init(repo: _Repo, rest: list[Word]) -> list[Word]:
    """`git init [DIR]`: the git directory (`DIR/.git`, DIR with `--bare`, or
    `--separate-git-dir`); what `--template` puts in it (hooks) is not named."""
    found, operands = _scan(rest, _GIT_INIT)
    into = repo.at(operands[0]) if operands else repo.folder
    separate = _given(found, "--separate-git-dir")
    if separate:
        git_dir = repo.at(separate[-1])
    elif _has(found, "--bare"):
        git_dir = into
    else:
        git_dir = repo.git_dir if not operands else _under(into, Word(".git"))
    return [git_dir] + ([_any_in(git_dir)] if _has(found, "--template") else [])


_GIT_OUTPUT = _opts("-o --output --output-directory --prefix --remote --exec --add-file "
                    "--add-virtual-file --suffix --subject-prefix --in-reply-to --to --cc "
                    "--signature --signature-file --base --interdiff --range-diff "
                    "--creation-factor --reroll-count", "--from", "--stdout --numbered-files")
_GIT_ARCHIVE = _opts("-o --output --format --prefix --remote --exec --add-file "
                     "--add-virtual-file")
_GIT_DIFFS = frozenset({"diff", "log", "show", "whatchanged", "diff-tree", "diff-files",
                        "diff-index", "range-diff", "format-patch"})


def _git_output(repo: _Repo, rest: list[Word]) -> list[Word]:
    """`--output FILE` (diff, log, show, …), `git archive -o FILE`, the patches
    `git format-patch` writes (into `-o DIR`)."""
    command = rest[0].text
    found, _ = _scan(rest, _GIT_ARCHIVE if command == "archive" else _GIT_OUTPUT)
    short = ("-o",) if command == "archive" else ()
    out = [repo.at(w) for w in _given(found, "--output", *short) if w.text != "-"]
    if command == "format-patch" and not out and not _has(found, "--stdout"):
        folder = repo.at((_given(found, "-o", "--output-directory") or [Word(".")])[-1])
        suffix = (_given(found, "--suffix") or [Word(".patch")])[-1]
        out.append(Word(posixpath.join(folder.text, "*" + suffix.text),
                        _kind(folder, suffix, Word("*", GLOB))))
    return out


def _git_bundle(repo: _Repo, rest: list[Word]) -> list[Word]:
    operands = _scan(rest, _Options())[1]
    return [repo.at(operands[1])] if len(operands) > 1 and operands[0].text == "create" else []


def _pathspecs(repo: _Repo, words: Iterable[Word]) -> list[Word]:
    """Pathspecs from the work tree: git matches their glob characters itself, quoted or
    not, and `:(…)` magic cannot be read here."""
    out = []
    for word in words:
        kind = EXPANDS if word.text.startswith(":") else (
            GLOB if set(word.text) & _GLOB_CHARS and word.kind == LITERAL else word.kind)
        out.append(_under(repo.folder, Word(word.text, kind)))
    return out


def _after_dashes(rest: list[Word]) -> list[Word] | None:
    texts = [w.text for w in rest]
    return rest[texts.index("--") + 1:] if "--" in texts else None


_GIT_CHECKOUT = _opts("-b -B --orphan -s --source --pathspec-from-file --conflict "
                      "--inter-hunk-context -U --unified", "--track --recurse-submodules",
                      "--staged --worktree --patch")


def _git_checkout(repo: _Repo, rest: list[Word]) -> list[Word]:
    """`git checkout [TREE] -- PATHS`, `git restore PATHS`: the paths named (a branch
    switch writes the tree's files, which are not named: left to the sandbox);
    `--pathspec-from-file` names them elsewhere."""
    found, operands = _scan(rest, _GIT_CHECKOUT)
    if rest[0].text == "restore" and _has(found, "-S", "--staged") and not _has(
            found, "-W", "--worktree"):
        return []
    if _has(found, "--pathspec-from-file"):
        return [_any_in(repo.work_tree)]
    named = _after_dashes(rest)
    if named is None:
        if rest[0].text == "restore":
            named = operands
        elif _has(found, "-b", "-B", "--orphan"):
            named = []
        else:
            named = operands[1:] or [w for w in operands if _flagged(normalized(w.text))]
    return _pathspecs(repo, named)


_GIT_CHECKOUT_INDEX = _opts("--prefix --stage", "", "--all --stdin --temp")


def _git_checkout_index(repo: _Repo, rest: list[Word]) -> list[Word]:
    """`git checkout-index [--prefix=P] FILES`: each file, P before its name (`--prefix`
    is text put before the path: `.git/hooks/` makes `pre-commit` a hook); `-a`, `--stdin`:
    names the index holds."""
    found, operands = _scan(rest, _GIT_CHECKOUT_INDEX)
    if _has(found, "--temp"):
        return []
    prefix = (_given(found, "--prefix") or [Word("")])[-1]
    files = [Word(prefix.text + w.text, _kind(prefix, w)) for w in operands]
    if _has(found, "-a", "--all", "--stdin"):
        files.append(Word(prefix.text + "*", EXPANDS) if prefix.text else
                      _any_in(repo.work_tree))
    return [repo.at(w) for w in files]


def _git_read_tree(repo: _Repo, rest: list[Word]) -> list[Word]:
    """`git read-tree -u` checks the tree's files out."""
    found, _ = _scan(rest, _opts("--prefix --index-output --exclude-per-directory"))
    if not _has(found, "-u"):
        return []
    prefix = (_given(found, "--prefix") or [Word("")])[-1]
    return [_any_in(repo.at(prefix) if prefix.text else repo.work_tree)]


def _git_merge_file(repo: _Repo, rest: list[Word]) -> list[Word]:
    """`git merge-file CURRENT BASE OTHER` writes CURRENT (not with `-p`)."""
    found, operands = _scan(rest, _opts("-L --marker-size --diff-algorithm", "",
                                        "--stdout"))
    return [] if _has(found, "-p", "--stdout") else [repo.at(w) for w in operands[:1]]


def _git_mv(repo: _Repo, rest: list[Word]) -> list[Word]:
    return [repo.at(w) for w in _copies(_Options(), moves=True)(rest)]


def _git_rm(repo: _Repo, rest: list[Word]) -> list[Word]:
    """`git rm PATHS` removes them (`--cached`: from the index only)."""
    found, operands = _scan(rest, _opts("--pathspec-from-file", "", "--cached --dry-run"))
    if _has(found, "--cached", "-n", "--dry-run"):
        return []
    if _has(found, "--pathspec-from-file"):
        return [_any_in(repo.work_tree)]
    return _pathspecs(repo, operands)


def _git_clean(repo: _Repo, rest: list[Word]) -> list[Word]:
    """`git clean -f` removes untracked files, not named."""
    found, operands = _scan(rest, _opts("-e --exclude", "", "--dry-run --force"))
    if _has(found, "-n", "--dry-run"):
        return []
    return [_any_in(w) for w in _pathspecs(repo, operands)] or [_any_in(repo.work_tree)]


_GIT_COMMANDS: dict[str, Callable[[_Repo, list[Word]], list[Word]]] = {
    "config": _git_config,
    "remote": _git_remote,
    "branch": _git_branch,
    "submodule": _git_submodule,
    "apply": _git_patches,
    "am": _git_patches,
    "worktree": _git_worktree,
    "clone": _git_clone,
    "init": _git_init,
    "archive": _git_output,
    **dict.fromkeys(_GIT_DIFFS, _git_output),
    "bundle": _git_bundle,
    "checkout": _git_checkout,
    "restore": _git_checkout,
    "checkout-index": _git_checkout_index,
    "read-tree": _git_read_tree,
    "merge-file": _git_merge_file,
    "mv": _git_mv,
    "rm": _git_rm,
    "clean": _git_clean,
}
"""What each git command writes, from the words after it (the command's name first). The
config files of commands that change configuration; the named paths of those that write
tree files; the files a patch, an archive or another repository names, as unknown names
in the folder they land in. Switching branches, merging, pulling and resetting write the
repository's own tracked files (never under `.git`: git refuses such paths): not named."""


def _under(folder: Word, path: Word) -> Word:
    """`path` taken from `folder` (`-C sub` then `.git`: `sub/.git`)."""
    if folder.text == "." or path.text.startswith(("/", "~")):
        return path
    return Word(posixpath.join(folder.text, path.text), _kind(folder, path))


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


def _compressor(suffix: str, strips: dict[str, str], *, decompresses: bool = False,
                names: bool = False, removes: bool = True, spec: _Options = _Options()
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


def _exiftool(words: Sequence[Word]) -> list[Word]:
    """`exiftool -o OUT`; with tags assigned (`-TAG=V`, `-TAG<SRC`), each file in place;
    `-w` (files named from each one) and `-@ ARGFILE` cannot be read here."""
    out: list[Word] = []
    files: list[Word] = []
    assigns, i = False, 1
    while i < len(words):
        text = words[i].text
        i += 1
        name = text[1:].lower()
        if not text.startswith("-") or text == "-":
            files.append(words[i - 1])
        elif name in ("o", "out") and i < len(words):
            out.append(words[i])
            i += 1
        elif name.rstrip("!+") == "w" or name == "@":
            return [_anywhere("exiftool's arguments")]
        elif name in _EXIF_VALUES:
            i += 1
        elif "=" in text or "<" in text:
            assigns = True
    return out + (files if assigns and not out else [])


_EXIF_VALUES = frozenset({"p", "tagsfromfile", "srcfile", "ext", "extension", "if", "api",
                          "config", "charset", "lang", "sep", "d", "c", "x", "userparam",
                          "geotag", "globaltimeshift", "fileorder", "i", "list_dir"})


def _magick(words: Sequence[Word]) -> list[Word]:
    """convert, magick, montage, composite, compare, stream, import: the last word, and
    each `-write FILE`/`+write FILE` (`magick mogrify` as mogrify; a script, `-script`,
    may name any file)."""
    if len(words) > 1 and words[1].text == "mogrify":
        return _mogrify(words[1:])
    if any(w.text == "-script" for w in words[1:]):
        return [_anywhere(f"{base(words[0].text)}'s script")]
    named = [words[i + 1] for i in range(1, len(words) - 1)
             if words[i].text in ("-write", "+write")]
    if len(words) > 2 and not words[-1].text.startswith("-") and words[1].text not in (
            "identify", "-identify"):
        named.append(words[-1])
    return [out for w in named for out in _image_file(w)]


def _image_file(word: Word) -> list[Word]:
    """An image a magick program writes: without a `FORMAT:` before it (`png:out`);
    `%d` (`frame%03d.png`) numbers the frames; `%[filename:…]` takes the name from the
    image's properties; `-` is stdout."""
    text = re.sub(r"^[A-Za-z0-9]{2,}:", "", word.text)
    if text in ("", "-"):
        return []
    if "%[" in text:
        return [_any_in(Word(posixpath.dirname(text) or ".", word.kind))]
    return [_numbered(Word(text, word.kind))]


def _numbered(word: Word) -> Word:
    """`frame%03d.png`: the files a pattern numbers (`frame*.png`)."""
    text = re.sub(r"%[0-9]*d", "*", word.text)
    return word if text == word.text else Word(text, _kind(word, Word("*", GLOB)))


_MAGICK_VALUES = frozenset({
    "write", "path", "format", "resize", "quality", "density", "geometry", "crop", "rotate",
    "thumbnail", "colorspace", "depth", "gravity", "extent", "background", "fill", "font",
    "pointsize", "type", "units", "interlace", "define", "level", "modulate", "gamma", "blur",
    "sharpen", "unsharp", "border", "bordercolor", "scale", "sample", "shave", "alpha",
    "compose", "channel", "threshold", "colors", "posterize", "sampling-factor"})
"""mogrify's options known to take a value; its other options' words are read as files
too (over-counting only names a file more)."""


def _mogrify(words: Sequence[Word]) -> list[Word]:
    """`mogrify FILES` rewrites each file in place; `-format EXT` writes each beside it
    with that ending instead (after its last dot: `.png` becomes `.EXT`), `-path DIR` into
    DIR; `-write FILE` too. mogrify expands `*` and `?` itself (`'*.png'`), and `@LIST`
    names its files in LIST."""
    found, files = _scan_words(words, _MAGICK_VALUES.__contains__, signs="-+")
    if _has(found, "script") or any(w.text.startswith("@") for w in files):
        return [_anywhere(f"{base(words[0].text)}'s file list")]
    out = [o for w in _given(found, "write") for o in _image_file(w)]
    folder, ending = _last(found, "path"), _last(found, "format")
    for file in files:
        text = re.sub(r"^[A-Za-z0-9]{2,}:", "", file.text)
        kind = GLOB if file.kind == LITERAL and set(text) & {"*", "?"} else file.kind
        name = posixpath.basename(text)
        if ending is not None:
            name = f"{name.rpartition('.')[0] if '.' in name else name}.{ending.text}"
        where = folder if folder is not None else Word(posixpath.dirname(text) or ".")
        parts = [where, Word(name, kind)] + ([ending] if ending is not None else [])
        out.append(Word(posixpath.join(where.text, name) if folder is not None or ending
                        is not None else text, _kind(*parts)))
    return out


def _gm(words: Sequence[Word]) -> list[Word]:
    """GraphicsMagick: `gm convert|composite|montage|mogrify …` as ImageMagick's; `gm
    batch` and `gm conjure` run scripts."""
    if len(words) < 2:
        return []
    command = words[1].text
    if command in ("batch", "conjure"):
        return [_anywhere(f"gm {command}'s script")]
    if command == "mogrify":
        return _mogrify(words[1:])
    return _magick(words[1:]) if command in ("convert", "composite", "montage") else []


_FFMPEG_VALUES = frozenset({
    "i", "f", "c", "codec", "vcodec", "acodec", "scodec", "dcodec", "b", "ab", "vb", "r", "s",
    "ar", "ac", "aq", "q", "qscale", "crf", "preset", "tune", "profile", "level", "pix_fmt",
    "map", "map_metadata", "map_chapters", "metadata", "disposition", "ss", "sseof", "t", "to",
    "fs", "frames", "vframes", "aframes", "dframes", "itsoffset", "itsscale", "stream_loop", "g",
    "maxrate", "minrate", "bufsize", "threads", "loglevel", "v", "movflags", "fflags", "tag",
    "sample_fmt", "channel_layout", "ch_layout", "framerate", "video_size", "pixel_format",
    "probesize", "analyzeduration", "fps_mode", "vsync", "hwaccel", "hwaccel_device",
    "hwaccel_output_format", "init_hw_device", "filter_hw_device", "strict", "safe",
    "protocol_whitelist", "user_agent", "headers", "aspect", "vol", "attach", "fpre", "vpre",
    "apre", "spre"})
"""ffmpeg's options known to take a value that is no file it writes. Its other options'
next words are read as outputs (an option it does not know takes a value: `-segment_list
FILE`, `-hls_segment_filename`, `-sdp_file`, `-progress`, a muxer's file; over-counting only
names a file more)."""
_FFMPEG_FILTERS = frozenset({"vf", "af", "filter", "filter_complex", "lavfi"})
_FFMPEG_WRITING = re.compile(r"\b(?:a?metadata|psnr|ssim|xpsnr|vmafmotion|libvmaf|"
                             r"vidstabdetect|signature|asr|whisper)\b")
"""The filters that write files their options name (`metadata=print:file=F`, `psnr=F`)."""
_FFMPEG_PROTOCOLS = re.compile(r"(?:file|crypto|cache|async):")


def _ffmpeg(words: Sequence[Word]) -> list[Word]:
    """ffmpeg: every word that is no option, no option's value and no input (`-i`) is an
    output (`-` and `pipe:` are stdout, a URL is elsewhere; `tee:A|B` and `-f tee` write
    each of A and B; `%d` numbers files); `-passlogfile PREFIX`'s logs (`ffmpeg2pass` with
    `-pass`), `-report`'s and `-vstats`' logs, `-dump_attachment`'s files, what an
    encoder's parameters name (`-x264-params stats=F`). Filters that write
    (`metadata=…:file=F`), a filter graph the shell changes or one read from a file
    (`-/vf F`, `-filter_script`) may name any file."""
    found, operands = _scan_words(words, lambda name: _ffmpeg_value(name.split(":", 1)[0]))
    named = [(name.split(":", 1)[0], value) for name, value in found]
    tee = any(name == "f" and value is not None and (value.text == "tee" or value.kind ==
              EXPANDS) for name, value in named)
    out = [o for w in operands for o in _media_output(w, tee=tee)]
    for name, value in named:
        if name in ("report", "vstats"):
            out.append(Word("ffmpeg-*.log" if name == "report" else "vstats_*.log", GLOB))
        if value is None:
            continue
        if name.startswith("/") or name.endswith("script") or (name in _FFMPEG_FILTERS and (
                value.kind != LITERAL or _FFMPEG_WRITING.search(value.text))):
            out.append(_anywhere("ffmpeg's filters"))
        elif name.endswith(("params", "opts")):
            out += [Word(part.partition("=")[2], value.kind)
                    for part in re.split(r"[:,]", value.text) if "=" in part]
        elif name in ("passlogfile", "pass"):
            prefix = value if name == "passlogfile" else Word("ffmpeg2pass")
            out.append(Word(prefix.text + "-*", _kind(prefix, Word("*", GLOB))))
        elif name == "dump_attachment":
            out.append(value if value.text else _any_in(Word(".")))
    return [w for w in out if w.text]


def _ffmpeg_value(name: str) -> bool:
    """The option (without its stream specifier) takes the next word."""
    return name in _FFMPEG_VALUES or name in _FFMPEG_FILTERS or name in (
        "passlogfile", "pass", "dump_attachment") or name.startswith("/") or name.endswith(
        ("params", "opts", "script"))


def _media_output(word: Word, *, tee: bool) -> list[Word]:
    """One output of ffmpeg: its protocol taken off (`file:`, `crypto:`), none for stdout
    (`-`, `pipe:`, `fd:`) or another computer (`rtmp://…`); `tee:A|B` (and the tee
    muxer's `A|B`) is A and B, each without its `[options]`, whose values may name files
    (`[f=segment:segment_list=F]`)."""
    text = word.text
    if text.startswith("tee:"):
        text, tee = text[4:], True
    out: list[Word] = []
    for part in text.split("|") if tee else [text]:
        options, _, rest = part[1:].partition("]") if part.startswith("[") else ("", "", part)
        out += [Word(o.partition("=")[2], word.kind) for o in options.split(":") if "=" in o]
        rest = _FFMPEG_PROTOCOLS.sub("", rest, count=1)
        if rest not in ("", "-") and not rest.startswith(("pipe:", "fd:")) and "://" not in rest:
            out.append(_numbered(Word(rest, word.kind)))
    return out


def _ffprobe(words: Sequence[Word]) -> list[Word]:
    """ffprobe: `-o FILE`, `-report`'s log."""
    out = [o for i in range(1, len(words) - 1) if words[i].text == "-o"
           for o in _media_output(words[i + 1], tee=False)]
    return out + [Word("ffprobe-*.log", GLOB) for w in words[1:] if w.text == "-report"]


_PANDOC = _opts(
    "-f --from -r --read -t --to -w --write -o --output --data-dir -M --metadata "
    "--metadata-file -d --defaults --template -V --variable --extract-media --resource-path "
    "-H --include-in-header -B --include-before-body -A --include-after-body "
    "--highlight-style --syntax-definition --dpi --wrap --columns --toc-depth -L "
    "--lua-filter -F --filter --abbreviations --reference-doc --epub-cover-image "
    "--epub-metadata --epub-embed-font --pdf-engine --pdf-engine-opt --bibliography --csl "
    "--citation-abbreviations --log --title-prefix -T --css -c --number-offset "
    "--shift-heading-level-by --indented-code-classes --default-image-extension "
    "--tab-stop --email-obfuscation --id-prefix --slide-level --reference-location "
    "--top-level-division --eol --request-header")


def _pandoc(words: Sequence[Word]) -> list[Word]:
    """`pandoc -o FILE`, `--log FILE`; the media `--extract-media DIR` takes out of the
    document."""
    found, _ = _scan(words, _PANDOC)
    return ([w for w in _given(found, "-o", "--output", "--log") if w.text != "-"]
            + [_any_in(w) for w in _given(found, "--extract-media")])


_SQLITE_VALUES = frozenset({"-init", "-cmd", "-separator", "-newline", "-nullvalue", "-vfs",
                            "-mmap", "-maxsize", "-pagecache", "-lookaside", "-heap",
                            "-escape"})
_SQL_WRITES = re.compile(r"(?is)\battach\b|\bvacuum\b|writefile|edit\s*\(|^\s*\.(?!(?:tables"
                         r"|schema|mode|headers?|indexes|indices|help|show|dump|width|timer"
                         r"|changes|databases|fullschema|stats)\b)")


def _sqlite3(words: Sequence[Word]) -> list[Word]:
    """`sqlite3 DB [SQL…]`: the database (not `:memory:`, not with `-readonly`); and
    whatever file its SQL names: `ATTACH`, `VACUUM INTO`, `writefile()`, a dot-command
    that writes (`.output`, `.save`, `.backup`, …), SQL read from stdin or `-init`
    (not under `-safe`)."""
    operands: list[Word] = []
    flags: set[str] = set()
    i = 1
    while i < len(words):
        text = words[i].text
        i += 1
        if text.startswith("-"):
            name = "-" + text.lstrip("-")
            flags.add(name)
            i += name in _SQLITE_VALUES
        else:
            operands.append(words[i - 1])
    if not operands:
        return []
    database, sql = operands[0], operands[1:]
    out = [] if "-readonly" in flags or database.text in ("", ":memory:") else [
        Word(re.sub(r"^file:|\?.*$", "", database.text), database.kind)]
    if "-safe" not in flags and ("-init" in flags or "-cmd" in flags or not sql or any(
            w.kind == EXPANDS or _SQL_WRITES.search(w.text) for w in sql)):
        out.append(_anywhere("sqlite3's SQL"))
    return out


_VENV = _opts("--prompt -p --python --activators --seeder --app-data --extra-search-dir "
              "--creator --discovery --pip --setuptools --wheel")


def _python(words: Sequence[Word]) -> list[Word]:
    """`python -m MODULE …`: what that module's command line writes (_PY_MODULES, else the
    program of its name: `python -m black` is `black`)."""
    found = python_module(words)
    if found is None:
        return []
    module, tail = found
    program = _PY_MODULES.get(module.text) or WRITERS.get(module.text)
    return program([module, *tail]) if program is not None else []


def _py_archive(words: Sequence[Word]) -> list[Word]:
    """`python -m zipfile|tarfile -e ARCHIVE [DIR]`: into DIR (or here); `-c ARCHIVE`:
    the archive."""
    found, operands = _scan(words, _opts("", "", "--extract --create"))
    if _has(found, "-e", "--extract"):
        return [_any_in(operands[1] if len(operands) > 1 else Word("."))]
    return operands[:1] if _has(found, "-c", "--create") else []


_PIP = _opts(
    "-r --requirement -c --constraint -e --editable -t --target --platform "
    "--python-version --implementation --abi --root --prefix --src -i --index-url "
    "--extra-index-url -f --find-links --no-binary --only-binary --progress-bar --log "
    "--proxy --retries --timeout --exists-action --trusted-host --cert --client-cert "
    "--cache-dir --report --upgrade-strategy --global-option --config-settings --python "
    "-d --dest -w --wheel-dir", "", "--user")


def _pip(words: Sequence[Word]) -> list[Word]:
    """`pip install --target|--prefix|--root DIR` (`--user`: under ~/.local), `pip
    download -d DIR`, `pip wheel -w DIR`: what the packages hold, in DIR; `--log`,
    `--report` FILE. A plain install writes into the interpreter's environment, as the
    package's own build may: left to the sandbox."""
    found, operands = _scan(words, _PIP)
    command = operands[0].text if operands else ""
    out = [w for w in _given(found, "--log", "--report") if w.text != "-"]
    if command == "install":
        out += [_any_in(w) for w in _given(found, "-t", "--target", "--prefix", "--root")]
        if _has(found, "--user"):
            out.append(_any_in(Word("~/.local", TILDE)))
    elif command in ("download", "wheel"):
        out += [_any_in(w) for w in _given(found, "-d", "--dest", "-w", "--wheel-dir")
                ] or [_any_in(Word("."))]
    return out


_PY_MODULES: dict[str, Callable[[Sequence[Word]], list[Word]]] = {
    "venv": _all(_VENV),
    "virtualenv": _all(_VENV),
    "pip": _pip,
    "zipfile": _py_archive,
    "tarfile": _py_archive,
    "json.tool": _nth(_opts("--indent"), 1),
}
"""What `python -m MODULE` writes, by module."""


_NPM_INSTALLS = frozenset({"install", "i", "ci", "add", "update", "up", "upgrade", "link",
                           "ln", "uninstall", "remove", "rm", "un", "unlink", "isntall",
                           "in", "ins", "inst", "insta", "instal", "isnt", "isnta",
                           "isntal", "install-test", "it", "install-ci-test", "cit"})
_NPM = _opts("--prefix -C --dir --cwd --modules-folder --global-folder --cache -w "
             "--workspace --registry --tag", "", "--global")


def _npm(words: Sequence[Word]) -> list[Word]:
    """npm, pnpm, yarn installing into a folder named on the line (`--prefix`, `-C`,
    `--dir`, `--cwd`, `--modules-folder`; `-g`: the global one, outside): what the packages
    hold, there. Installing into the project's own folder is left to the sandbox, as
    the packages' install scripts are."""
    found, operands = _scan(words, _NPM)
    if not operands or operands[0].text not in _NPM_INSTALLS:
        return []
    out = [_any_in(w) for w in _given(found, "--prefix", "-C", "--dir", "--cwd",
                                      "--modules-folder", "--global-folder")]
    if _has(found, "-g", "--global"):
        out.append(_anywhere(f"{base(words[0].text)}'s global folder"))
    return out


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


_CC_NEXT = frozenset({"-o", "--output", "-MF", "-MJ", "-aux-info", "-Map", "--Map",
                      "--dependency-file", "--out-implib"})
"""cc's, as's and ld's options whose next word is a file they write."""
_CC_JOINED = re.compile(r"(?:-o|-MF|--output=|-Map=|--Map=|--dependency-file=|--out-implib="
                        r"|-ftime-trace=|-foptimization-record-file=|-a[cdghlmns]*=)(.+)",
                        re.S)
"""… and the options with the file joined to them (`-oFILE`, `--output=FILE`, as's listing
`-alh=FILE`)."""


def _compiler(words: Sequence[Word]) -> list[Word]:
    """cc, gcc, clang, as, ld: `-o FILE` (`-oFILE`, `--output[=]FILE`), `-MF`, `-MJ`,
    `-aux-info`, a map or dependency file (`-Map`), the same in what is passed on to the
    linker or the assembler (`-Wl,-o,FILE`, `-Xlinker -o -Xlinker FILE`, `-Wa,-alh=FILE`),
    the prefix of `-dumpdir`'s files; a response file (`@FILE`) may name any. The default
    names (`a.out`, `x.o` here) are no protected or secret names."""
    own: list[Word] = []
    passed: dict[str, list[Word]] = {"l": [], "a": []}
    out: list[Word] = []
    i = 1
    while i < len(words):
        word = words[i]
        i += 1
        text = word.text
        if text.startswith("@"):
            return [_anywhere(f"{base(words[0].text)}'s response file")]
        if text in ("-Xlinker", "-Xassembler") and i < len(words):
            passed[text[2]].append(words[i])
            i += 1
        elif text.startswith(("-Wl,", "-Wa,")):
            passed[text[2]] += [Word(part, word.kind) for part in text[4:].split(",")]
        elif text == "-dumpdir" and i < len(words):
            out.append(Word(words[i].text + "*", _kind(words[i], Word("*", GLOB))))
            i += 1
        else:
            own.append(word)
    for listed in (own, *passed.values()):
        for at, word in enumerate(listed):
            joined = _CC_JOINED.fullmatch(word.text)
            if word.text in _CC_NEXT and at + 1 < len(listed):
                out.append(listed[at + 1])
            elif joined and word.text not in _CC_NEXT:
                out.append(Word(joined.group(1), word.kind))
    return [w for w in out if w.text != "-"]


_RUSTC = _opts("-o --out-dir --emit --print -C --codegen --crate-name --crate-type -L -l "
               "--cfg --check-cfg --target -A --allow -W --warn --force-warn -D --deny -F "
               "--forbid --cap-lints --explain --edition --error-format --json --color "
               "--diagnostic-width --remap-path-prefix --extern --sysroot -Z --env-set")


def _rustc(words: Sequence[Word]) -> list[Word]:
    """rustc: `-o FILE`, each `--emit KIND=FILE` and `--print KIND=FILE`, `-C
    incremental=DIR`'s cache, the linker's `-o` in `-C link-arg(s)`; what it names after
    the crate (`--crate-name`, else the source's name) in `--out-dir DIR` (or here): the
    program or `libCRATE.rlib`, and beside them the other kinds under endings no list
    holds (`.d`, `.o`, `.rmeta`). A response file (`@FILE`) may name any file."""
    if any(w.text.startswith("@") for w in words[1:]):
        return [_anywhere("rustc's response file")]
    found, operands = _scan(words, _RUSTC)
    out = [w for w in _given(found, "-o") if w.text != "-"]
    for value in _given(found, "--emit", "--print"):
        out += [Word(part.partition("=")[2], value.kind) for part in value.text.split(",")
                if "=" in part and part.partition("=")[2] not in ("", "-")]
    linker: list[Word] = [words[0]]
    for value in _given(found, "-C", "--codegen"):
        key, _, setting = value.text.partition("=")
        if key == "incremental":
            out.append(_any_in(Word(setting, value.kind)))
        elif key in ("link-arg", "link-args"):
            linker += [Word(part, value.kind) for part in setting.split()]
    out += _compiler(linker)
    if "-o" in (name for name, _ in found) or not operands:
        return out
    folder = (_given(found, "--out-dir") or [Word(".")])[-1]
    named = _given(found, "--crate-name") or [
        Word(posixpath.splitext(base(w.text))[0].replace("-", "_"), w.kind)
        for w in operands[:1] if w.text != "-"] or [Word("rust_out")]
    crate = named[-1]
    return out + [Word(posixpath.join(folder.text, name % crate.text), _kind(folder, crate))
                  for name in ("%s", "lib%s.rlib")]


def _javac(words: Sequence[Word]) -> list[Word]:
    """javac: the classes under `-d DIR` (by package), or beside each source; the sources
    annotation processors make under `-s DIR`, the headers under `-h DIR`. An argument file
    (`@FILE`) may name any folder."""
    if any(w.text.startswith("@") for w in words[1:]):
        return [_anywhere("javac's argument file")]
    found, operands = _scan_words(words, _JAVAC_VALUES.__contains__)
    out = [Word(posixpath.join(w.text, pattern), _kind(w, Word("*", GLOB)))
           for name, pattern in (("d", "**/*.class"), ("s", "**/*.java"), ("h", "*.h"))
           for w in _given(found, name)]
    if not _given(found, "d"):
        out += [Word(posixpath.join(posixpath.dirname(w.text) or ".", "*.class"),
                     _kind(w, Word("*", GLOB))) for w in operands if w.text.endswith(".java")]
    return out


_JAVAC_VALUES = frozenset({
    "d", "s", "h", "cp", "classpath", "class-path", "sourcepath", "source-path", "encoding",
    "source", "target", "release", "processorpath", "processor-path", "processor",
    "module-path", "p", "add-modules", "module", "m", "module-source-path", "system",
    "upgrade-module-path", "limit-modules", "bootclasspath", "boot-class-path",
    "endorseddirs", "extdirs", "profile", "module-version", "processor-module-path",
    "add-exports", "add-reads", "patch-module", "default-module-for-created-files"})


def _kotlinc(words: Sequence[Word]) -> list[Word]:
    """kotlinc: the classes and module file its sources make under `-d DIR` (or here), or a
    jar (`-d X.jar`); kotlinc-native's `-o NAME` (`NAME.kexe`, …)."""
    found, operands = _scan_words(words, _KOTLINC_VALUES.__contains__)
    out = [Word(w.text + "*", _kind(w, Word("*", GLOB))) for w in _given(found, "o", "output")]
    folder = _last(found, "d")
    if base(words[0].text) == "kotlinc-native" or not any(
            w.text.endswith((".kt", ".java")) for w in operands):
        return out
    if folder is not None and folder.text.endswith(".jar"):
        return [*out, folder]
    where = folder or Word(".")
    return out + [Word(posixpath.join(where.text, pattern), _kind(where, Word("*", GLOB)))
                  for pattern in ("**/*.class", "META-INF/*.kotlin_module")]


_KOTLINC_VALUES = frozenset({"d", "o", "output", "cp", "classpath", "jvm-target",
                             "module-name", "api-version", "language-version", "kotlin-home",
                             "jdk-home", "script-templates", "opt-in", "p", "produce",
                             "target", "library", "l"})


_TSC_FILES = frozenset({"outfile", "out", "tsbuildinfofile", "generatecpuprofile"})
_TSC_FOLDERS = frozenset({"outdir", "declarationdir", "generatetrace"})
_TS_SOURCE = re.compile(r"(.*)\.([cm]?)(?:tsx?|jsx?)")


def _tsc(words: Sequence[Word]) -> list[Word]:
    """tsc (options in any case, one dash or two): `--outFile FILE`, `--tsBuildInfoFile`,
    `--generateCpuProfile`; what lands in `--outDir`, `--declarationDir`,
    `--generateTrace`; `--init`'s tsconfig.json; else each source's script beside it
    (`x.ts`: `x.js`, and `x.d.ts`, `x.js.map` under endings no list holds). Without
    sources it writes what tsconfig.json says, as `make` does a Makefile's: left to the
    sandbox."""
    found, operands = _scan_words(words, (_TSC_FILES | _TSC_FOLDERS).__contains__, fold=True)
    out = [Word("tsconfig.json")] if _has(found, "init") else []
    out += [w if name in _TSC_FILES else _any_in(w) for name, w in found
            if w is not None and name in _TSC_FILES | _TSC_FOLDERS]
    if not _has(found, "outfile", "out", "outdir"):
        out += [Word(f"{match.group(1)}.{match.group(2)}js", w.kind) for w in operands
                if not w.text.endswith(".d.ts") and (match := _TS_SOURCE.fullmatch(w.text))]
    return out


_GO_PROFILES = ("coverprofile", "cpuprofile", "memprofile", "blockprofile", "mutexprofile",
                "trace")
_GO_FILES = frozenset({"o", "output", "modfile", *_GO_PROFILES})
"""go's flags whose value is a file it writes (`-modfile` may be written; `-output` is
`go tool pprof`'s)."""
_GO_VALUES = frozenset({"C", "p", "tags", "ldflags", "gcflags", "asmflags", "gccgoflags",
                        "mod", "overlay", "pgo", "pkgdir", "toolexec", "compiler",
                        "buildmode", "installsuffix", "run", "bench", "count", "cpu",
                        "timeout", "outputdir", "covermode", "coverpkg", "exec", "vet",
                        "skip", "parallel", "benchtime", "shuffle", "fuzz", "fuzztime"})


def _go(words: Sequence[Word]) -> list[Word]:
    """go (flags as Go reads them: `-o FILE`, `-o=FILE`, `--o FILE`): `-o` and a test's
    profiles (`-coverprofile`, …, in `-outputdir`), from `-C DIR`; `-pkgdir DIR`'s
    archives; `go mod vendor -o DIR`'s packages; `go env -w`'s file; `go tool`'s `-o`.
    `go install` writes into GOBIN, outside; a binary without `-o` is named after its
    package, here."""
    if len(words) < 2:
        return []
    found, operands = _scan_words(words[1:], (_GO_FILES | _GO_VALUES).__contains__)
    if words[1].text == "env":
        return [Word("~/.config/go/env", TILDE)] if _has(found, "w", "u") else []
    folder = (_given(found, "C") or [Word(".")])[-1]
    profiles = _under(folder, (_given(found, "outputdir") or [Word(".")])[-1])
    if words[1].text == "mod":
        if operands and operands[0].text == "vendor":
            return [_any_in(_under(folder, w)) for w in _given(found, "o")]
        return [_under(folder, w) for w in _given(found, "modfile")]
    out = [_under(folder, w) for w in _given(found, "o", "output", "modfile")]
    out += [_under(profiles, w) for w in _given(found, *_GO_PROFILES)]
    out += [_any_in(_under(folder, w)) for w in _given(found, "pkgdir")]
    return [w for w in out if w.text != "-"]


_BINUTILS = _opts("-I --input-target -O --output-target -B --binary-architecture -F "
                  "--target -j --only-section -R --remove-section -K --keep-symbol -N "
                  "--strip-symbol -L --localize-symbol -G --keep-global-symbol -W "
                  "--weaken-symbol -b --byte -i --interleave --add-section --dump-section "
                  "--update-section --rename-section --set-section-flags --redefine-sym "
                  "--redefine-syms --keep-symbols --strip-symbols --add-symbol -o")


def _objcopy(words: Sequence[Word]) -> list[Word]:
    """`objcopy IN [OUT]` (IN in place without OUT), `strip [-o OUT] FILES` (each in
    place), the files `--dump-section NAME=FILE` writes."""
    found, operands = _scan(words, _BINUTILS)
    out = [Word(w.text.partition("=")[2], w.kind) for w in _given(found, "--dump-section")
           if "=" in w.text]
    if base(words[0].text).endswith("strip"):
        return out + (_given(found, "-o") or operands)
    return out + (operands[1:2] or operands[:1])


WRITERS: dict[str, Callable[[Sequence[Word]], list[Word]]] = {
    "tee": _all(_opts("", "--output-error")),
    "dd": _dd,
    "cp": _copies(_CP),
    "mv": _copies(_CP, moves=True),
    "install": _copies(_INSTALL),
    "ln": _copies(_opts("-t --target-directory -S --suffix", "--backup",
                        "--no-target-directory")),
    "link": _nth(_Options(), 1),
    "rsync": _copies(_RSYNC, remote=True),
    "scp": _copies(_SCP, remote=True),
    "truncate": _all(_opts("-s --size -r --reference")),
    "touch": _all(_opts("-d --date -r --reference -t")),
    "mkdir": _all(_opts("-m --mode", "--context")),
    "mkfifo": _all(_opts("-m --mode", "--context")),
    "mknod": _nth(_opts("-m --mode", "--context"), 0),
    "rm": _all(_Options()),
    "rimraf": _all(_Options()),
    "rmdir": _all(_Options()),
    "unlink": _all(_Options()),
    "shred": _all(_opts("-n --iterations -s --size --random-source", "--remove")),
    "chmod": _all(_opts("", "--reference"), skip_first=_chmod_mode),
    "chown": _all(_opts("", "--reference --from"), skip_first=_owner_first),
    "chgrp": _all(_opts("", "--reference"), skip_first=_owner_first),
    "chattr": _all(_opts("-v -p"), skip_first=_attr_first),
    "setfacl": _all(_opts("-m --modify -M --modify-file -x --remove -X --remove-file "
                          "--set --set-file")),
    **dict.fromkeys(("sed", "gsed"), _sed),
    "perl": _perl,
    "tar": _tar,
    "unzip": _extract("-l -t -v -p -c -z -Z", folder="-d", anywhere="-:", spec=_UNZIP),
    "bsdtar": _tar,
    "gtar": _tar,
    "jar": _tar,
    "cpio": _cpio,
    "7z": _7z,
    "7za": _7z,
    "7zr": _7z,
    "7zz": _7z,
    "ar": _ar,
    "pax": _pax,
    "dpkg-deb": _dpkg_deb,
    "dpkg": _dpkg_deb,
    "unrar": _extract("", spec=_opts("-p -x -n -ap -ad")),
    "unar": _extract("", folder="-o --output-directory",
                     spec=_opts("-o --output-directory -p --password -e --encoding")),
    "gzip": _compressor(".gz", _GZ_ENDINGS, names=True, spec=_GZIP),
    "gunzip": _compressor(".gz", _GZ_ENDINGS, names=True, decompresses=True, spec=_GZIP),
    "xz": _compressor(".xz", _XZ_ENDINGS, spec=_XZ),
    "unxz": _compressor(".xz", _XZ_ENDINGS, decompresses=True, spec=_XZ),
    "lzma": _compressor(".lzma", _XZ_ENDINGS, spec=_XZ),
    "unlzma": _compressor(".lzma", _XZ_ENDINGS, decompresses=True, spec=_XZ),
    "bzip2": _compressor(".bz2", _BZ_ENDINGS, spec=_BZIP2),
    "bunzip2": _compressor(".bz2", _BZ_ENDINGS, decompresses=True, spec=_BZIP2),
    "zstd": _zstd(),
    "unzstd": _zstd(decompresses=True),
    "lz4": _lz4,
    "unlz4": _lz4,
    "brotli": _compressor(".br", {".br": ""}, removes=False, spec=_BROTLI),
    "unbrotli": _compressor(".br", {".br": ""}, decompresses=True, removes=False,
                            spec=_BROTLI),
    "pigz": _compressor(".gz", _GZ_ENDINGS, names=True, spec=_PIGZ),
    "unpigz": _compressor(".gz", _GZ_ENDINGS, names=True, decompresses=True, spec=_PIGZ),
    **dict.fromkeys(("lzip", "plzip"), _compressor(".lz", _LZ_ENDINGS, spec=_LZIP)),
    "lunzip": _compressor(".lz", _LZ_ENDINGS, decompresses=True, spec=_LZIP),
    "zstdmt": _zstd(),
    "compress": _compressor(".Z", {".Z": ""}, spec=_opts("-b")),
    "uncompress": _compressor(".Z", {".Z": ""}, decompresses=True, spec=_opts("-b")),
    "zip": _zip,
    "split": _split,
    "csplit": _csplit,
    "rename": _rename,
    "prename": _rename,
    "file-rename": _rename,
    "perl-rename": _rename,
    "rename.ul": _rename,
    "exiftool": _exiftool,
    **dict.fromkeys(("convert", "magick", "montage", "composite", "compare", "stream",
                     "import"), _magick),
    "mogrify": _mogrify,
    "gm": _gm,
    "conjure": lambda words: [_anywhere("conjure's script")],
    "ffmpeg": _ffmpeg,
    "ffprobe": _ffprobe,
    "pandoc": _pandoc,
    "sqlite3": _sqlite3,
    **dict.fromkeys(PYTHONS, _python),
    "virtualenv": _all(_VENV),
    "pip": _pip,
    "pip3": _pip,
    "npm": _npm,
    "dotenv": _dotenv,
    "pnpm": _npm,
    "yarn": _npm,
    **dict.fromkeys(("vi", "vim", "nvim", "ex", "view", "vimdiff", "rvim", "ed", "red"),
                    _editor),
    **dict.fromkeys(("awk", "gawk", "mawk", "nawk"), _awk),
    "sponge": _all(_Options()),
    **dict.fromkeys(("gofmt", "goimports", "shfmt"), _rewrites(
        _opts("-r -l -i -ln --language-dialect -s"), when="-w --write")),
    "clang-format": _rewrites(_opts("--style --assume-filename --lines --offset --length "
                                    "--fallback-style"), when="-i"),
    "prettier": _rewrites(_opts("--config --parser --plugin --ignore-path --log-level "
                                "--print-width --tab-width --end-of-line"),
                          when="--write -w"),
    **dict.fromkeys(("autopep8", "yapf"), _rewrites(
        _opts("--style --select --ignore --max-line-length -p --parallel --exclude"),
        when="-i --in-place")),
    **dict.fromkeys(("black", "isort", "rustfmt", "stylua"), _rewrites(
        _opts("-l --line-length -t --target-version --config --include --exclude "
              "--extend-exclude --edition --profile --settings-path -p --src"),
        unless="--check --diff -c --check-only --version -h --help")),
    "ruff": _ruff,
    "eslint": _rewrites(_opts("-c --config --ext --rule --plugin --parser --env --format -f "
                              "-o --output-file --ignore-path --resolve-plugins-relative-to"),
                        when="--fix"),
    "sd": _rewrites(_opts("-n --max-replacements -f --flags"), unless="-p --preview", skip=2),
    "yq": _yq,
    "xmlstarlet": _rewrites(_opts("-u --update -v --value -d --delete -i --insert -a "
                                  "--append -s --subnode -t --type -n --name -r --rename "
                                  "-m --move -x --expr -N"), when="-L --inplace", skip=1),
    "crudini": _rewrites(_opts("--format --ini-options"), when="--set --del --merge",
                         take=1),
    "script": _script,
    "xxd": _xxd,
    "iconv": _option_values(_opts("-f --from-code -t --to-code -o --output"), "-o",
                            "--output"),
    **dict.fromkeys(("dos2unix", "unix2dos", "mac2unix", "unix2mac"),
                    _all(_opts("-c --convmode"))),
    **dict.fromkeys(("cc", "gcc", "g++", "c++", "clang", "clang++", "as", "ld", "ld.bfd",
                     "ld.gold", "ld.lld", "lld", "mold", "tcc", "nasm", "yasm"), _compiler),
    **dict.fromkeys(("objcopy", "strip", "llvm-objcopy", "llvm-strip"), _objcopy),
    "ranlib": _all(_Options()),
    "go": _go,
    "rustc": _rustc,
    "javac": _javac,
    **dict.fromkeys(("kotlinc", "kotlinc-jvm", "kotlinc-native"), _kotlinc),
    "tsc": _tsc,
    "patch": _patch,
    "curl": _curl,
    "wget": _wget,
    "sort": _option_values(_opts("-o --output -k --key -t --field-separator -S "
                                 "--buffer-size -T --temporary-directory --parallel "
                                 "--files0-from --batch-size --compress-program"),
                           "-o", "--output"),
    "uniq": _nth(_opts("-f --skip-fields -s --skip-chars -w --check-chars"), 1),
    "openssl": _openssl,
    "ssh-keygen": _ssh_keygen,
    "crontab": _crontab,
    **dict.fromkeys(("at", "batch", "atrm"), _at),
    "git": _git,
    "gpg": _option_values(_opts("-o --output -r --recipient -u --local-user --homedir -e "
                                "--passphrase --passphrase-file --default-key"),
                          "-o", "--output"),
}
"""The programs whose written files are read from their words, and how."""


def program_writes(command: SimpleCommand) -> list[Word]:
    """The files one simple command's program is told to write (WRITERS), besides its
    redirections; /dev/null and the like are no files."""
    if not command.argv or command.kind(0) not in (LITERAL, TILDE):
        return []
    program = _writer(base(command.argv[0]))
    if program is None:
        return []
    found = [w for w in program(command.args) if w.text and names_a_file(w.text)]
    if command.via.startswith("find"):  # what -exec puts for `{}` is known when it runs
        found = [Word(w.text, EXPANDS) if "{}" in w.text else w for w in found]
    return found


def _writer(name: str) -> Callable[[Sequence[Word]], list[Word]] | None:
    """WRITERS' entry for a program, also under a versioned or cross-compiling name
    (`gcc-12`, `clang++-18`, `x86_64-linux-gnu-gcc`, `arm-none-eabi-ld`)."""
    plain = re.sub(r"-[0-9][0-9.]*\Z", "", name)
    for _ in range(5):
        if name in WRITERS or plain in WRITERS:
            return WRITERS.get(name) or WRITERS[plain]
        name, plain = name.partition("-")[2], plain.partition("-")[2]
    return None


def line_writes(line: CommandLine) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The files the line writes: (paths it names, targets it cannot name). A relative path
    after a `cd`, or of a command run in another folder (`env -C DIR`, `uv --directory DIR
    run`), cannot be named (which folder is it in?), nor a glob a redirection names."""
    known: list[str] = []
    unknown: list[str] = []
    dots = bool(_DOT_GLOBS.search(line.text))
    for command in line.commands:
        redirected = [(r.target, False) for r in command.redirects if r.writes_file]
        for target, by_program in redirected + [(w, True) for w in program_writes(command)]:
            relative = not target.text.startswith(("/", "~"))
            named = target.kind in (LITERAL, TILDE) or (
                by_program and target.kind == GLOB and not (
                    set(target.text) & _GLOB_CHARS and _may_match_flagged(target.text, dots)))
            if named and not ((line.changes_directory or command.elsewhere) and relative):
                known.append(target.text)
            else:
                unknown.append(target.text)
    return tuple(dict.fromkeys(known)), tuple(dict.fromkeys(unknown))


@cache
def _probes() -> tuple[tuple[str, str], ...]:
    """Every name the protected and secret lists hold (`*` in a name as one letter), and
    its folded form."""
    names = {segment.replace("*", "x").replace("?", "x")
             for pattern in (*PROTECTED_PATTERNS, *SECRET_PATTERNS)
             for segment in pattern.split("/") if segment and segment != "**"}
    return tuple((name, fold_name(name)) for name in sorted(names))


_MAX_CANDIDATES = 256
_GLOB_CHARS = frozenset("*?[")


@lru_cache(maxsize=1024)
def _may_match_flagged(glob: str, dots: bool) -> bool:
    """Could this glob name a protected or secret path? Each name with glob characters is
    tried as each listed name it matches (as a file system that folds names may take it,
    a leading `.` only where it is written or `dots`); a path of such names is a protected
    or secret path when kernel.pathrules says so."""
    choices: list[Iterable[str]] = []
    count = 1
    for segment in glob.split("/"):
        if not set(segment) & _GLOB_CHARS:
            choices.append((segment,))
            continue
        matches = re.compile(fnmatch.translate(fold_name(segment)), re.S).match
        hidden = dots or segment.startswith(".")
        names = [n for n, folded in _probes() if (hidden or not n.startswith("."))
                 and matches(folded)]
        names.append(re.sub(r"[*?]|\[[^\]]*\]", "x", segment))
        count *= len(names)
        if count > _MAX_CANDIDATES:
            return True
        choices.append(names)
    return any(_flagged("/".join(path)) for path in itertools.product(*choices))
