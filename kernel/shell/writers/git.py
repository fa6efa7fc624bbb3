"""What git's commands write: `git config` (the repository's config, or `--file`), `remote`,
`branch --set-upstream-to`, `submodule`, `apply`/`am` (what the patch names), `worktree
add`, `clone`, `init`, `archive -o`, `diff --output`, `format-patch -o`, `bundle create`,
`checkout -- P` (`restore`), `checkout-index --prefix=P`, `read-tree -u`, `merge-file`,
`mv`, `rm`, `clean`; under `-C DIR`, `--git-dir`, `--work-tree`. Branch switches, merges and
resets write the repository's own tracked files: not named. Pure.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from kernel.shell.words import EXPANDS, GLOB, LITERAL, TILDE, Word, normalized
from kernel.shell.writers.files import _copies
from kernel.shell.writers.options import _given, _has, _Options, _opts, _scan
from kernel.shell.writers.targets import _GLOB_CHARS, _any_in, _anywhere, _flagged, _kind, _under

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
