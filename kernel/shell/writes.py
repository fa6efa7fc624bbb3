"""What a command line writes: the files its redirections open for writing, and the files
common writing programs are told to write (`tee F`, `cp SRC DST`, `dd of=F`, `sed -i … F`,
`install`, `mv`, `ln`, `truncate`, `touch`, `rsync`, `tar -x -C DIR`, `patch`, `curl -o`,
`openssl -out`, `ssh-keygen -f`, `git config`, …), in every simple command of the line,
those a wrapper, a shell or `find -exec` runs included (kernel.shell.parse derives them).
The policy judges each as a write of that file (kernel.policy.facts, `decide`), as it
judges `> f`.

Pure functions over words. A program's options are read as GNU's getopt reads them: before
or after the operands, up to `--`, short ones bundled (`-sfo FILE`), a value attached or
the next word, a long option by any unambiguous prefix (`--target-dir=D`). A program not
in the table names no file here (the sandbox bounds what it writes, as for `python -c`).

A written path the line names is `known`: literal or `~` words, and globs that cannot match
a protected or secret name (`src/*.py`; kernel.pathrules' lists, probed with each name they
hold). Others are `unknown` (asked about): an expansion (`tee "$F"`), a glob that could
match one (`sed -i … *`, `.g*/hooks/x`), what `find -exec` puts for `{}`, a relative path
after a `cd`, and every glob a redirection names.
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
from kernel.shell.nested import base
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


def _given(found: Found, *names: str) -> list[Word]:
    return [value for name, value in found if name in names and value is not None]


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


def _remote(word: Word) -> bool:
    """`host:path` or `user@host:path` (rsync, scp): not a file here."""
    head = word.text.split("/", 1)[0]
    return ":" in head


def _copies(spec: _Options, *, moves: bool = False, remote: bool = False
            ) -> Callable[[Sequence[Word]], list[Word]]:
    """cp, mv, install, ln, rsync, scp: the last operand (or each source's name inside
    `-t DIR`); a source's name inside the last operand too where only that spelling is a
    protected or secret path, or the last operand is plainly a folder (`…/`, `.`, `~`);
    `mv` also removes its sources; `ln` with one operand makes its name here. What a
    folder's contents copied (`rsync -a src/ dst`) are called is not known here. `remote`:
    `host:path` is on another computer (rsync, scp; for cp, `a:b` is a folder here)."""

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
             "--null-data --separate")


def _sed(words: Sequence[Word]) -> list[Word]:
    found, operands = _scan(words, _SED)
    if not _has(found, "-i", "--in-place"):
        return []
    script = _has(found, "-e", "--expression", "-f", "--file")
    return operands if script else operands[1:]


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
    "--list --diff --compare --delete")
_TAR_KEYS = {"x": "-x", "c": "-c", "r": "-r", "u": "-u", "A": "-A", "t": "-t"}


def _tar(words: Sequence[Word]) -> list[Word]:
    """Extracting: each `-C DIR` (what lands there is the archive's); creating or adding
    to: the archive (`-f FILE`)."""
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
    if _has(found, "-x", "--extract", "--get"):
        out += _given(found, "-C", "--directory")
    if _has(found, "-c", "--create", "-r", "--append", "-u", "--update", "-A", "--catenate",
            "--concatenate"):
        out += [w for w in _given(found, "-f", "--file") if w.text != "-"]
    return out


_PATCH = _opts("-p --strip -i --input -o --output -d --directory -r --reject-file -D "
               "--ifdef -B --prefix -Y --basename-prefix -z --suffix -V --version-control "
               "-F --fuzz -g --get --quoting-style", "--merge")


def _patch(words: Sequence[Word]) -> list[Word]:
    """The file patched (its first operand, or `-o FILE`), the reject file, `-d DIR`."""
    found, operands = _scan(words, _PATCH)
    output = _given(found, "-o", "--output")
    out = [w for w in output if w.text != "-"] or operands[:1]
    return out + _given(found, "-r", "--reject-file", "-d", "--directory")


_CURL = _opts(
    "-o --output -c --cookie-jar -D --dump-header --output-dir --trace --trace-ascii "
    "--stderr --libcurl --etag-save --hsts --alt-svc -d --data --data-raw --data-binary "
    "--data-urlencode -H --header -X --request -u --user -A --user-agent -e --referer -b "
    "--cookie -K --config -T --upload-file -F --form -x --proxy -w --write-out -m --max-time "
    "--connect-timeout -r --range -C --continue-at -Y --speed-limit -y --speed-time -z "
    "--time-cond -E --cert --key --cacert -Q --quote --resolve --retry -U --proxy-user",
    "", "--remote-name --remote-name-all --create-dirs")


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
        out += [_inside(folder, _url_name(u)) for u in operands]
    return out


_WGET = _opts(
    "-O --output-document -P --directory-prefix -o --output-file -a --append-output -i "
    "--input-file -e --execute -U --user-agent --header -t --tries -T --timeout -w --wait -Q "
    "--quota -l --level -A --accept -R --reject -D --domains -I --include-directories -X "
    "--exclude-directories --post-data --post-file --user --password --load-cookies "
    "--save-cookies --ca-certificate --certificate --private-key -B --base",
    "", "--recursive --mirror")


def _wget(words: Sequence[Word]) -> list[Word]:
    found, operands = _scan(words, _WGET)
    out = [w for w in _given(found, "-o", "--output-file", "-a", "--append-output",
                             "--save-cookies") if w.text != "-"]
    document = _given(found, "-O", "--output-document")
    if document:
        return out + [w for w in document if w.text != "-"]
    folder = (_given(found, "-P", "--directory-prefix") or [Word(".")])[-1]
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


def _option_values(spec: _Options, *names: str) -> Callable[[Sequence[Word]], list[Word]]:
    def written(words: Sequence[Word]) -> list[Word]:
        found, _ = _scan(words, spec)
        return [w for w in _given(found, *names) if w.text != "-"]

    return written


def _nth(spec: _Options, n: int) -> Callable[[Sequence[Word]], list[Word]]:
    def written(words: Sequence[Word]) -> list[Word]:
        return _scan(words, spec)[1][n:n + 1]

    return written


_CP = _opts("-t --target-directory -S --suffix --sparse --no-preserve",
            "--backup --reflink --preserve --context --update",
            "--no-target-directory")
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


def _git(words: Sequence[Word]) -> list[Word]:
    """The config files git's commands that change configuration write: `git config` (the
    repository's `.git/config` unless told `--file`, `--global`, `--system`), `git remote
    add|set-url|…`, `git branch -u|--set-upstream-to|…`, `git submodule add` (and its
    `.gitmodules`); a `-C DIR` or `--git-dir` before the command says which repository."""
    folder, git_dir, i = Word("."), None, 1
    while i < len(words) and words[i].text.startswith("-") and words[i].text != "-":
        name, eq, attached = words[i].text.partition("=")
        value = Word(attached, words[i].kind) if eq else (
            words[i + 1] if name in _GIT_VALUES and i + 1 < len(words) else None)
        i += 1 if eq or name not in _GIT_VALUES else 2
        if value is not None and name == "-C":
            folder = _under(folder, value)
        elif value is not None and name == "--git-dir":
            git_dir = value
    if i >= len(words):
        return []
    git_dir = _under(folder, git_dir or Word(".git"))
    repo_config = _under(git_dir, Word("config"))
    command, rest = words[i].text, [words[i], *words[i + 1:]]
    if command == "config":
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
            return [_under(git_dir, Word("config.worktree"))]
        return [repo_config]
    if command == "remote" and len(rest) > 1 and rest[1].text in _GIT_REMOTE_WRITES:
        return [repo_config]
    if command == "branch" and any(w.text.partition("=")[0] in _GIT_BRANCH_WRITES
                                   for w in rest[1:]):
        return [repo_config]
    if command == "submodule" and any(w.text == "add" for w in rest[1:]):
        return [_under(folder, Word(".gitmodules")), repo_config]
    return []


def _under(folder: Word, path: Word) -> Word:
    """`path` taken from `folder` (`-C sub` then `.git`: `sub/.git`)."""
    if folder.text == "." or path.text.startswith(("/", "~")):
        return path
    return Word(posixpath.join(folder.text, path.text), _kind(folder, path))


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
    "rmdir": _all(_Options()),
    "unlink": _all(_Options()),
    "shred": _all(_opts("-n --iterations -s --size --random-source", "--remove")),
    "chmod": _all(_opts("", "--reference"), skip_first=_chmod_mode),
    "chown": _all(_opts("", "--reference --from"), skip_first=_owner_first),
    "chgrp": _all(_opts("", "--reference"), skip_first=_owner_first),
    "chattr": _all(_opts("-v -p"), skip_first=_attr_first),
    "setfacl": _all(_opts("-m --modify -M --modify-file -x --remove -X --remove-file "
                          "--set --set-file")),
    "sed": _sed,
    "perl": _perl,
    "tar": _tar,
    "unzip": _option_values(_opts("-d -x -P -Z"), "-d"),
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
    program = WRITERS.get(base(command.argv[0]))
    if program is None:
        return []
    found = [w for w in program(command.args) if w.text and names_a_file(w.text)]
    if command.via.startswith("find"):  # what -exec puts for `{}` is known when it runs
        found = [Word(w.text, EXPANDS) if "{}" in w.text else w for w in found]
    return found


def line_writes(line: CommandLine) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The files the line writes: (paths it names, targets it cannot name). A relative path
    after a `cd` cannot be named (which folder is it in?), nor a glob a redirection names."""
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
            if named and not (line.changes_directory and relative):
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
