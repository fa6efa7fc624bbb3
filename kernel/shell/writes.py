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

This module owns the table (WRITERS: which program is read by which reader; `python -m
MODULE` by _PY_MODULES, else as that program) and the entry points (`program_writes`,
`line_writes`, and whether a glob could match a protected or secret name). The readers
live in kernel.shell.writers, one module per program family (files, editors, archives,
compressors, downloads, keys, schedulers, media, sqlite, packages, compilers, git), over
its shared option scanners (writers.options) and target words (writers.targets).
"""

from __future__ import annotations

import fnmatch
import itertools
import re
from collections.abc import Callable, Iterable, Sequence
from functools import cache, lru_cache

from kernel.pathrules import PROTECTED_PATTERNS, SECRET_PATTERNS, fold_name
from kernel.shell.nested import PYTHONS, base, python_module
from kernel.shell.words import (
    EXPANDS,
    GLOB,
    LITERAL,
    TILDE,
    CommandLine,
    SimpleCommand,
    Word,
    names_a_file,
)
from kernel.shell.writers.archives import (
    _UNZIP,
    _7z,
    _ar,
    _cpio,
    _dpkg_deb,
    _extract,
    _pax,
    _tar,
    _zip,
)
from kernel.shell.writers.compilers import _compiler, _go, _javac, _kotlinc, _objcopy, _rustc, _tsc
from kernel.shell.writers.compressors import (
    _BROTLI,
    _BZ_ENDINGS,
    _BZIP2,
    _GZ_ENDINGS,
    _GZIP,
    _LZ_ENDINGS,
    _LZIP,
    _PIGZ,
    _XZ,
    _XZ_ENDINGS,
    _compressor,
    _lz4,
    _zstd,
)
from kernel.shell.writers.downloads import _curl, _wget
from kernel.shell.writers.editors import (
    _awk,
    _dotenv,
    _editor,
    _patch,
    _perl,
    _rewrites,
    _ruff,
    _sed,
    _yq,
)
from kernel.shell.writers.files import (
    _CP,
    _INSTALL,
    _RSYNC,
    _SCP,
    _all,
    _attr_first,
    _chmod_mode,
    _copies,
    _csplit,
    _dd,
    _owner_first,
    _rename,
    _script,
    _split,
    _xxd,
)
from kernel.shell.writers.git import _git
from kernel.shell.writers.keys import _openssl, _ssh_keygen
from kernel.shell.writers.media import _exiftool, _ffmpeg, _ffprobe, _gm, _magick, _mogrify, _pandoc
from kernel.shell.writers.options import _nth, _option_values, _Options, _opts
from kernel.shell.writers.packages import _VENV, _npm, _pip, _py_archive
from kernel.shell.writers.schedulers import _at, _crontab
from kernel.shell.writers.sqlite import _sqlite3
from kernel.shell.writers.targets import _GLOB_CHARS, _anywhere, _flagged

_DOT_GLOBS = re.compile(r"dotglob|globignore|glob_?dots|nocaseglob", re.I)
"""Shell options under which a glob also matches names starting with `.`."""


def _python(words: Sequence[Word]) -> list[Word]:
    """`python -m MODULE …`: what that module's command line writes (_PY_MODULES, else the
    program of its name: `python -m black` is `black`)."""
    found = python_module(words)
    if found is None:
        return []
    module, tail = found
    program = _PY_MODULES.get(module.text) or WRITERS.get(module.text)
    return program([module, *tail]) if program is not None else []


_PY_MODULES: dict[str, Callable[[Sequence[Word]], list[Word]]] = {
    "venv": _all(_VENV),
    "virtualenv": _all(_VENV),
    "pip": _pip,
    "zipfile": _py_archive,
    "tarfile": _py_archive,
    "json.tool": _nth(_opts("--indent"), 1),
}
"""What `python -m MODULE` writes, by module."""


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
