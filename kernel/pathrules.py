"""The one list of secret locations and the one list of protected paths (pure, standard library).

Every route uses these lists: the path policy (file tools, the approval policy) and the sandbox
(what commands cannot read or write). A pattern is a glob over `/`-separated paths:

- it matches at ANY depth (`.ssh/**` matches `.ssh/id_rsa`, `~/.ssh/id_rsa` and
  `project/sub/.ssh/id_rsa`) and is matched against each segment as a file system that folds
  names may take it (`fold_name`): case ignored (`.SSH/ID_RSA`: macOS and Windows file
  systems, and Linux's case-folding ext4, fold case), trailing dots and spaces dropped
  (`.git.` is `.git` on vfat, exfat and NTFS), default-ignorable code points dropped
  (`.g\u200cit` is `.git` on HFS+ and on case-folding ext4/f2fs) and Unicode compatibility
  forms folded (`．git`: a look-alike spelling is refused rather than guessed about);
- `*` and `?` stay inside one path segment; `**` spans any number of segments;
- a pattern ending in `/**` names a FOLDER: it matches the folder itself and everything below
  it (the folder is what the sandbox hides or protects, see `subtree_root`);
- a pattern without `/` names an entry wherever it is (`.env`, `.netrc`).

Paths are matched as written (after dropping `.` segments and doubled slashes, each segment
folded): callers resolve `~`, `..` and symlinks first (the path policy does), and pass either
a path relative to the workspace or an absolute one.

Decisions recorded here (each is tested in tests/security/test_pathrules.py):
- `.env`, `.env.*` and `*.env` are secrets; committed templates (`.env.example`,
  `.env.sample`, `.env.template`, `.env.dist`, also `.env.local.example`) are not: they are
  meant to be read and shared, and hold placeholders. An exception only lifts a NAME pattern
  (`.env.*`), never a folder pattern (`.ssh/config.example` stays a secret), and only as
  written, case aside (`.env.example.` and `.env.ex\u200bample` stay secrets).
- `.envrc` is both: a secret (direnv files hold `export AWS_SECRET_ACCESS_KEY=...` and the
  like) and protected (direnv runs it on `cd`).
- `.github/workflows/**` is neither: workflows run in CI after the user pushes (and reviews)
  them, not on the user's machine when a file is merely looked at.
- `*.pem` and `*.key` are not secrets by extension (certificates, public keys and Keynote
  files share them); named private keys (`id_rsa`, `id_ed25519`, ... anywhere) and formats
  that always hold a private key (`*.ppk`, `*.p12`, `*.pfx`, `*.kdbx`) are.
- Writing a secret location also asks (see the path policy): `.ssh/authorized_keys`,
  `.ssh/config` (`ProxyCommand`), `.aws/config` (`credential_process`) and `.kube/config`
  (exec plugins) change who can log in or what runs.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import stat
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import PurePath, PurePosixPath
from typing import Literal

_SECRET_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("SSH private keys and configuration", (
        ".ssh/**", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk",
        "id_ed25519_sk", "*.ppk",
    )),
    ("cloud credentials", (
        ".aws/**", ".azure/**", ".config/gcloud/**", ".oci/**", ".config/doctl/**",
        ".boto", ".s3cfg", ".config/rclone/rclone.conf", ".pulumi/credentials.json",
        ".terraform.d/credentials.tfrc.json", ".terraformrc", "client_secret*.json",
    )),
    ("encryption keys (GnuPG, age, sops)", (".gnupg/**", ".config/sops/**", ".config/age/**")),
    ("passwords and tokens for servers and package registries", (
        ".netrc", "_netrc", ".git-credentials", ".config/git/credentials", ".npmrc",
        ".pypirc", ".docker/config.json", ".dockercfg", ".vault-token", ".cargo/credentials*",
        ".gem/credentials", ".m2/settings.xml", ".m2/settings-security.xml",
        ".gradle/gradle.properties", ".composer/auth.json", ".config/composer/auth.json",
        ".pgpass", ".my.cnf", ".mylogin.cnf",
    )),
    ("cluster and developer-tool tokens", (
        ".kube/**", ".config/gh/**", ".config/hub", ".config/glab-cli/**", ".config/op/**",
    )),
    ("keyrings and password stores", (
        ".local/share/keyrings/**", ".password-store/**", ".local/share/kwalletd/**",
        ".kde/share/apps/kwallet/**", ".kde4/share/apps/kwallet/**", "Library/Keychains/**",
        ".pki/**", "*.kdbx", "*.p12", "*.pfx",
    )),
    ("browser profiles (cookies, saved passwords, sessions)", (
        ".mozilla/**", ".thunderbird/**", ".config/google-chrome/**", ".config/chromium/**",
        ".config/BraveSoftware/**", ".config/microsoft-edge/**", ".config/vivaldi/**",
        ".config/opera/**", ".var/app/*/config/google-chrome/**",
        ".var/app/*/config/chromium/**", ".var/app/*/config/BraveSoftware/**",
        "Library/Application Support/Google/Chrome/**",
        "Library/Application Support/Firefox/**", "Library/Application Support/Chromium/**",
        "Library/Application Support/BraveSoftware/**", "Library/Cookies/**",
    )),
    ("shell and REPL histories (commands typed, often with passwords)", (
        ".bash_history", ".zsh_history", ".zhistory", ".histfile", ".sh_history",
        ".local/share/fish/fish_history", ".config/fish/fish_history", ".python_history",
        ".node_repl_history", ".psql_history", ".mysql_history", ".sqlite_history",
        ".rediscli_history", ".irb_history", ".pry_history", ".scala_history", ".Rhistory",
        ".dbshell", ".lesshst", ".viminfo",
    )),
    ("environment files (API keys and passwords)", (".env", ".env.*", "*.env", ".envrc")),
)

SECRET_PATTERNS: tuple[str, ...] = tuple(p for _, group in _SECRET_GROUPS for p in group)
"""Where credentials live, wherever they are (in the home or inside a project)."""

SECRET_EXCEPTIONS: tuple[str, ...] = (
    ".env.example", ".env.sample", ".env.template", ".env.dist",
    ".env.*.example", ".env.*.sample", ".env.*.template", ".env.*.dist",
)
"""Names that look like a secret name pattern but are committed templates. They lift only a
name pattern (one without `/`), never a folder pattern."""

PROTECTED_PATTERNS: tuple[str, ...] = (
    ".git",
    ".git/**",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".profile",
    ".kshrc",
    ".cshrc",
    ".tcshrc",
    ".config/fish/**",
    ".gitconfig",
    ".config/git/**",
    ".gitmodules",
    ".mcp.json",
    ".envrc",
    ".exrc",
    ".nvimrc",
    ".nvim.lua",
    ".vscode/**",
    "*.code-workspace",
    ".idea/**",
    ".devcontainer/**",
    ".devcontainer.json",
    ".dir-locals.el",
    ".dir-locals-2.el",
    ".zed/**",
    ".helix/**",
    "mise.toml",
    ".mise.toml",
    "mise.*.toml",
    ".mise.*.toml",
    ".mise/**",
    ".config/mise/**",
    ".vimrc",
    ".gvimrc",
    ".lvimrc",
    ".hg/hgrc",
    ".claude/**",
    ".cursor/**",
    ".gemini/**",
    ".config/autostart/**",
    ".config/systemd/user/**",
    ".config/environment.d/**",
    ".xprofile",
    ".xsession",
    ".xinitrc",
    ".pam_environment",
    ".tmux.conf",
    ".config/nvim/**",
    ".emacs",
    ".emacs.d/**",
    ".husky/**",
    ".pre-commit-config.yaml",
    ".pre-commit-config.yml",
    "lefthook.yml",
    "lefthook.yaml",
    "lefthook.json",
    "lefthook.toml",
    ".lefthook.yml",
    ".lefthook.yaml",
    "lefthook-local.yml",
    "lefthook-local.yaml",
    ".lefthook-local.yml",
    ".lefthook-local.yaml",
    ".lefthook/**",
    ".lefthook-local/**",
    ".simple-git-hooks.json",
    ".simple-git-hooks.js",
    ".simple-git-hooks.cjs",
    "simple-git-hooks.json",
    "simple-git-hooks.js",
    "simple-git-hooks.cjs",
    ".overcommit.yml",
    ".huskyrc",
    ".huskyrc.*",
    "husky.config.*",
    ".lintstagedrc",
    ".lintstagedrc.*",
    "lint-staged.config.*",
    ".tool-versions",
    ".rtx.toml",
    ".rtx.*.toml",
    "mise/config.toml",
    "mise/config.*.toml",
    ".npmrc",
    ".yarnrc",
    ".yarnrc.yml",
    ".yarnrc.yaml",
    ".yarn/plugins/**",
    ".yarn/releases/**",
    ".pnpmfile.cjs",
    ".pnpmfile.mjs",
    ".pnpmfile.js",
    "bunfig.toml",
    ".bunfig.toml",
    ".cargo/config",
    ".cargo/config.toml",
    "rust-toolchain",
    "rust-toolchain.toml",
    "site-packages/*.pth",
    "site-packages/sitecustomize.py",
    "site-packages/usercustomize.py",
    "dist-packages/*.pth",
    "dist-packages/sitecustomize.py",
    "dist-packages/usercustomize.py",
    "pyvenv.cfg",
    ".pdbrc",
    ".Rprofile",
    "gradle/wrapper/**",
    "gradle.properties",
    ".mvn/**",
    ".jvmopts",
    ".sbtopts",
    ".bazelrc",
)
"""What no tool may write without the user's approval of that very path, at any depth.

`.git` is the entry itself (creating or replacing a `.git` folder, or a `.git` FILE holding
`gitdir: elsewhere`); `.git/**` is everything in it, for the file tools. Commands inside the
sandbox may write the parts of a git directory git does not read as code (see GIT_DANGEROUS),
so `git commit` works there. The rest runs when a shell starts (`.bashrc`, fish config), when
git runs (`.gitconfig`, `.gitmodules`), when a folder is entered (`.envrc`, `.exrc`) or opened
in an editor (`.vscode/`, `.idea/`, `.devcontainer/`, `*.code-workspace`, Emacs's
`.dir-locals.el`, Zed's and Helix's language servers and tasks, vim's `exrc` files), when a
folder is entered with mise (`mise.toml`: hooks and env), when Mercurial runs (`.hg/hgrc`),
when a coding agent starts there (`.mcp.json`, `.claude/`, `.cursor/`, `.gemini/`: hooks and
MCP servers), when the user logs in or starts an editor (`.config/autostart/`, systemd
user units, `.xprofile`, `.tmux.conf`, nvim and Emacs configuration: in a home folder), or
when git runs a hook a hook manager installed: the scripts and configs its stubs run (husky's
`.husky/`, husky 4's `.huskyrc` and `husky.config.js`, pre-commit's, lefthook's,
simple-git-hooks', overcommit's and lint-staged's configs, which name commands; their keys
in package.json are judged by `kernel.transaction.judge`), or when asdf or mise enters a
folder (`.tool-versions`, mise's and its old name rtx's configs), or when a package manager
or toolchain runs in the folder, on the user's next plain `npm`, `yarn`, `pnpm`, `bun` or
`cargo` command: what it loads as code or as configuration naming code (`.npmrc`'s
`node-options` and `script-shell`; yarn's `.yarnrc`/`.yarnrc.yml` `yarnPath` and
`plugins` and the files they name in `.yarn/releases/` and `.yarn/plugins/`; pnpm's
`.pnpmfile.cjs` hooks; `bunfig.toml`'s `preload`; `.cargo/config.toml`'s
`rustc-wrapper`, runners and aliases; `rust-toolchain.toml`'s toolchain `path`), or when
any Python of a virtual environment starts, whatever it runs (an editor's Python extension
starts the workspace's interpreter as the folder opens): a site folder's `.pth` files and
`sitecustomize`/`usercustomize`, and `pyvenv.cfg` (its `home` picks the standard library
loaded), or when pdb or R starts in the folder (`.pdbrc`, `.Rprofile`), or when a JVM build
runs, an IDE's project sync among them: the Gradle and Maven wrappers (which distribution is
fetched and run), `gradle.properties` and `.mvn/` (`jvmargs`, `jvm.config`, build
extensions), sbt's `.jvmopts`/`.sbtopts`, and `.bazelrc` (`--run_under`, startup options).

Not protected, decided: files that only pick a version among released ones (`.nvmrc`,
`.node-version`, `.python-version`, `.ruby-version`: no code, nothing run that the user
did not install or the version manager does not fetch from its own source), and what a
package manager generates for the project's own code to load (`node_modules/`, yarn's
`.pnp.cjs`, a `.venv/`'s packages): running the project runs what the command wrote anyway,
as with any source file; a build's own scripts (`build.gradle`, `pom.xml`, `Makefile`) are
the project's source too."""

GIT_DANGEROUS: tuple[str, ...] = (
    "config",
    "config.worktree",
    "hooks/**",
    "info/attributes",
    "commondir",
    "gitdir",
    "worktrees/*/config.worktree",
    "worktrees/*/commondir",
    "worktrees/*/gitdir",
    "modules/**/config",
    "modules/**/config.worktree",
    "modules/**/hooks/**",
    "modules/**/info/attributes",
    "modules/**/commondir",
    "modules/**/gitdir",
)
"""Relative to a git directory (a `.git` folder, or a bare repository: see `is_git_dir`), the
entries git reads as code or configuration: `config` (`core.fsmonitor`, `core.hooksPath`,
`core.sshCommand`, filters, aliases), hooks, attribute filters, and the pointers to other git
directories (`commondir`, `gitdir`, per-worktree config). Unlike the other lists these are
ANCHORED at the git directory (`refs/heads/config` is a branch, not a config file).

Submodule git directories (`modules/<name>/`, nested for nested submodules) are git
directories themselves: their dangerous entries are listed through `modules/**/...`, so the
objects and refs a `git submodule update` writes stay writable. The rest of a git directory
(objects, refs, index, HEAD, logs, packed-refs) may be written by commands."""

GitNamed = Literal["folder", "config", "program"]
"""What a git config value names: folder (git runs what it holds: hooks, templates), config
(read as configuration, and read on), program (a command git runs)."""
GIT_FOLDER_KEYS: tuple[str, ...] = ("core.hookspath", "init.templatedir")
GIT_CONFIG_KEYS: tuple[str, ...] = ("include.path", "includeif.*.path")
GIT_PROGRAM_KEYS: tuple[str, ...] = (
    "core.sshcommand", "core.pager", "core.editor", "core.askpass", "core.fsmonitor",
    "core.gitproxy", "sequence.editor", "diff.external", "diff.*.command", "diff.*.textconv",
    "difftool.*.cmd", "difftool.*.path", "mergetool.*.cmd", "mergetool.*.path",
    "merge.*.driver", "filter.*.clean", "filter.*.smudge", "filter.*.process", "alias.*",
    "credential.helper", "credential.*.helper", "gpg.program", "gpg.*.program", "pager.*",
    "interactive.difffilter", "sendemail.sendmailcmd", "sendemail.smtpserver",
    "uploadpack.packobjectshook", "remote.*.uploadpack", "remote.*.receivepack",
    "web.browser", "browser.*.cmd", "browser.*.path", "man.*.cmd", "man.*.path",
    "guitool.*.cmd", "instaweb.httpd",
)  # fmt: skip
"""THE git config keys whose value git runs or reads as code, matched case-blind with `*`
for a subsection or name: what a repository's config names (kernel.sandbox.git_named) and
what `git -c KEY=VALUE` makes git run (kernel.shell.nested) are judged from these."""
_GIT_KEY_TABLES: tuple[tuple[GitNamed, tuple[str, ...]], ...] = (
    ("folder", GIT_FOLDER_KEYS), ("config", GIT_CONFIG_KEYS), ("program", GIT_PROGRAM_KEYS))


@functools.cache
def git_key_kind(key: str) -> GitNamed | None:
    """What the value of the git config `key` names (GitNamed), or None for a key whose
    value git neither runs nor reads."""
    folded = key.lower()
    for kind, patterns in _GIT_KEY_TABLES:
        if any(fnmatch.fnmatchcase(folded, pattern) for pattern in patterns):
            return kind
    return None


NAMED_PREFIX = "git-named:"
"""How the file tools' path policy is told a path is one a git config names:
`git-named:<rule>` (kernel.sandbox.guard.protected_links)."""
ANY_DEPTH = "**"
"""In such a path, the folder below which the rest is named at any depth."""


def at_any_depth(resolved: PurePath, key: PurePath) -> bool:
    """`resolved` is, or lies below, the path after `**` in `key` at a folder below the
    folder before it (`/ws/app/**/tools/t.sh`: `/ws/app/lib/tools/t.sh`)."""
    parts = key.parts
    at = parts.index(ANY_DEPTH)
    folder, tail = PurePath(*parts[:at]), parts[at + 1:]
    if not resolved.is_relative_to(folder):
        return False
    names = resolved.relative_to(folder).parts
    return any(names[i:i + len(tail)] == tail for i in range(len(names) - len(tail) + 1))


WORKTREE_PROTECTED: tuple[str, ...] = tuple(
    p for p in PROTECTED_PATTERNS if p not in (".git", ".git/**"))
"""PROTECTED_PATTERNS outside git directories, as the sandbox applies them to commands
(kernel.sandbox.marks): there a `.git` is judged as a whole (it cannot be made, renamed or
replaced) and only its GIT_DANGEROUS entries are read-only, so that `git commit` works."""


def _segment_regex(segment: str) -> str:
    out = ""
    for ch in segment:
        out += "[^/]*" if ch == "*" else "[^/]" if ch == "?" else re.escape(ch)
    return out


def _glob_body(pattern: str) -> str:
    """The regex of a glob's segments; a trailing `/**` also matches the folder itself."""
    segments = list(PurePosixPath(pattern).parts)
    folder = bool(segments) and segments[-1] == "**"
    if folder:
        segments.pop()
    body = "".join("(?:.*/)?" if s == "**" else _segment_regex(s) + "/" for s in segments)
    return body.removesuffix("/") + ("(?:/.*)?" if folder else "")


@functools.cache
def _anywhere(pattern: str) -> re.Pattern[str]:
    return re.compile(r"(?:.*/)?" + _glob_body(pattern), re.IGNORECASE | re.DOTALL)


@functools.cache
def _name(pattern: str) -> re.Pattern[str]:
    """A pattern without `/` as a regex over one path segment (the last one)."""
    return re.compile(_segment_regex(pattern), re.IGNORECASE | re.DOTALL)


@functools.cache
def _anchored(pattern: str) -> re.Pattern[str]:
    return re.compile(_glob_body(pattern), re.IGNORECASE | re.DOTALL)


_IGNORABLE = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
    (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
    (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)  # fmt: skip
"""Unicode's Default_Ignorable_Code_Point ranges: HFS+ and (before Linux 6.14) case-folding
ext4 and f2fs look names up without them."""


def _ignorable(ch: str) -> bool:
    code = ord(ch)
    return any(low <= code <= high for low, high in _IGNORABLE)


def fold_name(segment: str) -> str:
    """One path segment as the names a file system may take for it collapse, and its
    look-alikes with them: without default-ignorable code points, in NFKC, case-folded,
    without combining marks (`.gİt`, `.vscöde`) and without trailing dots and spaces
    (`.G\u200bit. ` is `.git`); `.` and `..` stay, and so does a name of only dots."""
    if segment.isascii():
        folded = segment.lower()
    else:
        kept = "".join(ch for ch in segment if not _ignorable(ch))
        split = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", kept).casefold())
        folded = "".join(ch for ch in split if unicodedata.category(ch) != "Mn")
    return folded.rstrip(". ") or folded


def _normal(path: str) -> str:
    """`path` with `.` segments, doubled and trailing slashes dropped (`..` kept as is)."""
    text = os.fspath(path)
    absolute = text.startswith("/")
    parts = [p for p in text.split("/") if p not in ("", ".")]
    return ("/" if absolute else "") + "/".join(parts)


def _folded(normal: str) -> str:
    """A `_normal` path with each segment folded (`fold_name`): what the lists match."""
    return "/".join(fold_name(p) if p else p for p in normal.split("/"))


@dataclass(frozen=True)
class _Index:
    """Patterns by a literal segment each needs in a path (casefolded), plus the patterns
    with no literal segment and one regex over a path's last segment that any of those
    needs: a path is tried only against the patterns it can match."""

    anchored: dict[str, tuple[int, ...]]
    wild: tuple[int, ...]
    wild_names: re.Pattern[str] | None


@functools.cache
def _index(patterns: tuple[str, ...]) -> _Index:
    anchored: dict[str, list[int]] = {}
    wild: list[int] = []
    for index, pattern in enumerate(patterns):
        literal = [s for s in PurePosixPath(pattern).parts if not any(c in s for c in "*?")]
        if literal:
            anchored.setdefault(literal[0].casefold(), []).append(index)
        else:
            wild.append(index)
    names = [patterns[i] for i in wild]
    wild_names = None
    if all("/" not in n for n in names):
        wild_names = re.compile("|".join(f"(?:{_segment_regex(n)})" for n in names) or "(?!)",
                                re.IGNORECASE | re.DOTALL)
    return _Index({k: tuple(v) for k, v in anchored.items()}, tuple(wild), wild_names)


def first_match(path: str, patterns: Iterable[str]) -> str | None:
    """The first of `patterns` (globs as above: any depth, each segment folded) matching
    `path`."""
    return _first_match(_folded(_normal(path)), tuple(patterns))


def _first_match(normal: str, ordered: tuple[str, ...]) -> str | None:
    """The first of `ordered` matching a `_normal` path, folded or as written (case is
    ignored either way)."""
    index = _index(ordered)
    segments = normal.casefold().split("/")
    candidates = [i for s in segments for i in index.anchored.get(s, ())]
    last = normal.rsplit("/", 1)[-1]
    if index.wild_names is None or index.wild_names.fullmatch(last):
        candidates.extend(index.wild)
    for i in sorted(candidates):
        pattern = ordered[i]
        if "/" not in pattern:
            if _name(pattern).fullmatch(last):
                return pattern
        elif _anywhere(pattern).fullmatch(normal):
            return pattern
    return None


_SECRET_FOLDERS = tuple(p for p in SECRET_PATTERNS if "/" in p)


def secret_match(path: str) -> str | None:
    """The secret pattern a POSIX path matches (at any depth, ignoring case), else None."""
    found = first_match(path, SECRET_PATTERNS)
    if found is None or "/" in found:
        return found
    if _first_match(_normal(path), SECRET_EXCEPTIONS) is not None:  # as written, case aside:
        # a spelling another file system takes for a template is another file here
        return first_match(path, _SECRET_FOLDERS)
    return found


def protected_match(path: str) -> str | None:
    """The protected pattern a POSIX path matches (at any depth, ignoring case), else None."""
    return first_match(path, PROTECTED_PATTERNS)


def git_dangerous_match(path: str) -> str | None:
    """The GIT_DANGEROUS pattern a path RELATIVE TO A GIT DIRECTORY matches, else None."""
    normal = _folded(_normal(path))
    for pattern in GIT_DANGEROUS:
        if _anchored(pattern).fullmatch(normal):
            return pattern
    return None


def describe_secret(pattern: str) -> str:
    """What a secret pattern holds, for people (`SSH private keys and configuration`)."""
    for what, group in _SECRET_GROUPS:
        if pattern in group:
            return what
    raise KeyError(pattern)


def subtree_root(path: str, pattern: str) -> str:
    """The top of the subtree `pattern` matched in `path`: for `a/b/.ssh/id_rsa` and
    `.ssh/**` it is `a/b/.ssh` (the outermost such folder); for a pattern naming an entry
    (`.env.*`) it is the path itself. Raises ValueError when `pattern` does not match."""
    normal = _normal(path)
    folded = _folded(normal)
    if not _anywhere(pattern).fullmatch(folded):
        raise ValueError(f"{pattern!r} does not match {path!r}")
    if not pattern.endswith("/**"):
        return normal
    head = _anywhere(pattern.removesuffix("/**"))
    segments, folded_segments = normal.split("/"), folded.split("/")
    for end in range(1, len(segments) + 1):
        candidate = "/".join(folded_segments[:end])
        if candidate and head.fullmatch(candidate):
            return "/".join(segments[:end])
    return normal


GIT_DIR_MARKERS = ("HEAD", "objects", "refs", "commondir")
"""The entries by which git tells a git directory (`looks_like_git_dir`)."""


def looks_like_git_dir(mode_of: Callable[[str], int | None]) -> bool:
    """Whether git takes a folder for a git directory, from the mode of each of its
    GIT_DIR_MARKERS (`lstat`'s; None when absent), as git's own check does: a HEAD that is a
    file or a link (old style), and `objects` and `refs` that are folders or links to them,
    or a `commondir` naming the git directory that has them (a linked worktree's). The one
    rule for the path policy, the sandbox's marks and the transaction's judge."""
    head = mode_of("HEAD")
    if head is None or not (stat.S_ISREG(head) or stat.S_ISLNK(head)):
        return False
    if mode_of("commondir") is not None:
        return True
    stores = [mode_of(name) for name in ("objects", "refs")]
    return all(m is not None and (stat.S_ISDIR(m) or stat.S_ISLNK(m)) for m in stores)


def is_git_dir(path: os.PathLike[str] | str) -> bool:
    """The folder (not a link) is one git takes for a git directory (`looks_like_git_dir`),
    its entries looked at without following links."""
    base = os.fspath(path)
    try:
        if not stat.S_ISDIR(os.lstat(base).st_mode):
            return False
    except (OSError, ValueError):
        return False
    return looks_like_git_dir(lambda name: _lstat_mode(os.path.join(base, name)))


def _lstat_mode(path: str) -> int | None:
    try:
        return os.lstat(path).st_mode
    except (OSError, ValueError):
        return None
