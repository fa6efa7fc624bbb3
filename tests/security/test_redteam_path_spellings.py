"""Red team: other spellings of a protected or secret name, through the one list
(kernel.pathrules), the real path policy on a real workspace and the real file tools.

A file system may take a name for another: vfat, exfat and NTFS drop trailing dots and
spaces (`.git.` is `.git`), macOS (HFS+, APFS) and Linux's case-folding ext4/f2fs ignore
zero-width and other default-ignorable code points (`.g\u200cit` is `.git`) and fold case and
Unicode forms. A spelling that may name a protected or secret entry is judged as that entry;
a look-alike (`．git`, fullwidth) is refused too rather than guessed about.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest

from kernel.pathrules import fold_name, protected_match, secret_match, subtree_root
from kernel.paths import AppPaths
from kernel.policy.channels import FixedChannel
from kernel.policy.decide import Mode
from kernel.tools.pathpolicy import PathPolicy
from kernel.tools.spec import ErrorCode, ToolCall
from tests.policy.gatekit import Kit

PROTECTED_SPELLINGS = [
    ".git./config", ".git /config", ".git. ./hooks/pre-commit", ".g\u200cit/config",
    ".git\u200b/hooks/post-checkout", "\u200d.git/config", "\uff0egit/config",
    ".\uff47\uff49\uff54/config", ".git\ufeff/info/attributes", ".Vscode./tasks.json",
    ".vsc\u200dode/settings.json", ".vscode\u2060/launch.json", ".envrc.", ".envrc ",
    "x.code-workspace.", "sub/.git.", "sub/.GIT\u200e", ".gitmodules.", ".BASHRC ",
    ".bash\u00adrc", ".mcp.json\ufeff", ".\uff4dcp.json", ".idea\u2060/workspace.xml",
    ".devcontainer\u202e/devcontainer.json", ".zsh\u034frc", "deep/er/.profile...",
    ".g\u0130t/config", ".gi\u0307t/hooks/x", ".vsc\u00f6de/tasks.json", ".\u0130dea/x.xml",
]
SECRET_SPELLINGS = [
    ".env ", ".env.", ".e\u200cnv", "id_rsa.", "\uff49d_rsa", ".netrc\u200b",
    ".ssh\u200c/config", ".aws./credentials", "sub/.npmrc  ", ".git-credentials\u2063",
    ".ENV\u180e", ".ssh\ufe0f/known_hosts", ".env.example.", ".env.ex\u200bample",
    ".env.example\u200d", ".env.sample ", ".\u212aube/config", ".\u015bsh/id_ed25519.pub",
]
"""A template's name lifts the secret only as written: a spelling that may name the template
on one file system is another file on this one, and may hold anything."""
PLAIN = [
    ".gitignore", "git./config", ".github/workflows/ci.yml", "notes.txt.", ".ENV.EXAMPLE",
    ".gitkeep", ".vscodeignore", "\uff32\uff25\uff21\uff24\uff2d\uff25.md", "src/.git-blame",
    "caf\u00e9/menu.txt", "cafe\u0301/menu.txt", "...", "a/../b.txt",
]


@pytest.mark.parametrize("path", PROTECTED_SPELLINGS)
def test_a_spelling_of_a_protected_name_is_protected(path: str) -> None:
    assert protected_match(path) is not None, path
    assert protected_match(f"/home/u/project/{path}") is not None, path


@pytest.mark.parametrize("path", SECRET_SPELLINGS)
def test_a_spelling_of_a_secret_name_is_a_secret(path: str) -> None:
    assert secret_match(path) is not None, path
    assert secret_match(f"/home/u/{path}") is not None, path


@pytest.mark.parametrize("path", PLAIN)
def test_plain_names_stay_plain(path: str) -> None:
    assert protected_match(path) is None, path
    assert secret_match(path) is None, path


@pytest.mark.parametrize(("name", "folded"), [
    (".GIT", ".git"), (".git.", ".git"), (".git . .", ".git"), ("..", ".."), (".", "."),
    ("...", "..."), ("\u200b", ""), (".g\u200cit", ".git"), ("\uff0egit", ".git"),
    ("Stra\u00dfe", "strasse"), ("cafe\u0301", "cafe"), ("caf\u00e9", "cafe"), ("a b", "a b"),
    (".g\u0130t", ".git"), ("\u212aube", "kube"),
])
def test_fold_name(name: str, folded: str) -> None:
    assert fold_name(name) == folded


def test_the_secret_folder_keeps_its_own_spelling() -> None:
    """The folder an approval must lie in is the one on disk, as spelled there."""
    assert subtree_root("a/.SSH./id_rsa", ".ssh/**") == "a/.SSH."
    assert subtree_root("/h/.a\u200bws/x/y", ".aws/**") == "/h/.a\u200bws"


@pytest.fixture
def repo(workspace: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(workspace)], check=True)
    return workspace


@pytest.mark.parametrize("path", PROTECTED_SPELLINGS)
def test_the_path_policy_protects_the_spelling(repo: Path, reins_home: AppPaths,
                                               path: str) -> None:
    verdict = PathPolicy(repo, app_paths=reins_home).classify(path, write=True)
    assert verdict.protected is not None and not verdict.allowed, verdict


@pytest.mark.parametrize("path", SECRET_SPELLINGS)
def test_the_path_policy_sees_the_secret_spelling(repo: Path, reins_home: AppPaths,
                                                  path: str) -> None:
    verdict = PathPolicy(repo, app_paths=reins_home).classify(path, write=False)
    assert verdict.secret is not None and not verdict.allowed, verdict


def test_the_file_tools_ask_before_writing_or_reading_a_spelling_in_auto_mode(
        repo: Path, reins_home: AppPaths) -> None:
    for rel in SECRET_SPELLINGS:
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text("token = CANARY-spelled\n")
    kit = Kit(repo, reins_home, mode=Mode.AUTO, channel=FixedChannel("deny"))
    writes = [ToolCall(f"w{i}", "write_file", {"path": p, "content": "[core]\n"})
              for i, p in enumerate(PROTECTED_SPELLINGS)]
    reads = [ToolCall(f"r{i}", "read_file", {"path": p})
             for i, p in enumerate(SECRET_SPELLINGS)]
    results = asyncio.run(kit.dispatcher.dispatch_many([*writes, *reads]))
    assert [r.error_code for r in results] == [ErrorCode.APPROVAL_DENIED] * len(results)
    assert [r.call_id for r in kit.of_type("approval_request")] == [
        c.call_id for c in (*writes, *reads)]
    assert all("CANARY" not in r.text for r in results)
    assert not any((repo / p).exists() for p in PROTECTED_SPELLINGS)


RUN_WHEN_OPENED = [
    ".dir-locals.el", "src/.dir-locals-2.el", ".zed/settings.json", ".zed/tasks.json",
    ".helix/languages.toml", "mise.toml", ".mise.toml", "mise.local.toml",
    ".mise.production.toml", ".mise/config.toml", ".config/mise/config.toml", ".vimrc",
    "sub/.gvimrc", ".lvimrc", ".hg/hgrc", ".claude/settings.json",
    ".claude/settings.local.json", ".cursor/mcp.json", ".gemini/settings.json",
    ".config/autostart/x.desktop", ".config/systemd/user/x.service", ".xprofile",
    ".xsession", ".xinitrc", ".pam_environment", ".config/environment.d/10-x.conf",
    ".tmux.conf", ".config/nvim/init.lua", ".emacs", ".emacs.d/init.el",
]


@pytest.mark.parametrize("path", RUN_WHEN_OPENED)
def test_what_an_editor_a_shell_or_a_login_runs_from_the_folder_is_protected(
        repo: Path, reins_home: AppPaths, path: str) -> None:
    """Emacs's dir-locals, Zed's and Helix's language servers and tasks, mise's hooks and
    env, vim's exrc files, Mercurial's hooks, coding agents' hooks and MCP servers, and what
    a login starts: each runs code when the folder is opened or the user logs in."""
    assert protected_match(path) is not None
    verdict = PathPolicy(repo, app_paths=reins_home).classify(path, write=True)
    assert verdict.protected is not None and not verdict.allowed


@pytest.mark.parametrize("path", ["half/HEAD", "half/head", "half/HEAD.", "half/Head ",
                                  "half/HE\u200bAD", "bare/CONFIG", "bare/config.",
                                  "bare/HOOKS/pre-receive", "bare/info/ATTRIBUTES"])
def test_a_bare_git_directory_under_another_spelling(workspace: Path, reins_home: AppPaths,
                                                     path: str) -> None:
    """Writing a spelling of HEAD where objects/, refs/ and a config that runs code are
    completes a git directory; a spelling of a bare repository's config or hooks is its."""
    for folder in ("bare", "half"):
        (workspace / folder / "objects").mkdir(parents=True)
        (workspace / folder / "refs").mkdir()
    (workspace / "bare" / "HEAD").write_text("ref: refs/heads/main\n")
    (workspace / "half" / "config").write_text("[core]\n\tfsmonitor = ./run-me\n")
    verdict = PathPolicy(workspace, app_paths=reins_home).classify(path, write=True)
    assert verdict.protected is not None and verdict.protected.startswith("git-dir:"), verdict


@pytest.mark.parametrize("path", ["linked/config", "linked/hooks/pre-commit",
                                  "stores/config", "worktree/config",
                                  "worktree/hooks/post-checkout", "halfwt/commondir",
                                  "halfwt/COMMONDIR"])
def test_a_git_directory_as_git_tells_one(workspace: Path, reins_home: AppPaths,
                                          path: str) -> None:
    """Git takes a folder whose HEAD is a link (old style), or whose objects/ and refs/ are
    links, or a HEAD with a `commondir` (a linked worktree's git directory), for a git
    directory: its config and hooks are protected from the file tools as a `.git`'s are
    (kernel.pathrules.looks_like_git_dir, the rule the transaction's judge uses too), and so
    is the `commondir` that would make one of a folder holding a config."""
    elsewhere = workspace / "store"
    (elsewhere / "objects").mkdir(parents=True)
    (elsewhere / "refs").mkdir()
    linked = workspace / "linked"
    (linked / "objects").mkdir(parents=True)
    (linked / "refs").mkdir()
    (linked / "HEAD").symlink_to("refs/heads/main")
    stores = workspace / "stores"
    stores.mkdir()
    (stores / "HEAD").write_text("ref: refs/heads/main\n")
    (stores / "objects").symlink_to(elsewhere / "objects")
    (stores / "refs").symlink_to(elsewhere / "refs")
    worktree = workspace / "worktree"
    worktree.mkdir()
    (worktree / "HEAD").write_text("ref: refs/heads/main\n")
    (worktree / "commondir").write_text("../store\n")
    halfwt = workspace / "halfwt"
    halfwt.mkdir()
    (halfwt / "HEAD").write_text("ref: refs/heads/main\n")
    (halfwt / "config").write_text("[core]\n\tpager = ./run-me\n")
    verdict = PathPolicy(workspace, app_paths=reins_home).classify(path, write=True)
    assert verdict.protected is not None and verdict.protected.startswith("git-dir:"), verdict
