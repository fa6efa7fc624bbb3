"""kernel.pathrules: the one list of secret locations and of protected paths, as tables.

Every row is tried in several spellings (relative, `./`, absolute in a home, deep in a
project, upper case, doubled slashes); look-alikes must not match.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kernel.pathrules import (
    PROTECTED_PATTERNS,
    SECRET_PATTERNS,
    WORKTREE_PROTECTED,
    describe_secret,
    git_dangerous_match,
    is_git_dir,
    protected_match,
    secret_match,
    subtree_root,
)


def spellings(rel: str) -> list[str]:
    """One relative path written the ways a caller may pass it."""
    return [
        rel,
        f"./{rel}",
        f"/home/alice/{rel}",
        f"/root/{rel}",
        f"projects/app/sub/{rel}",
        f"/work/repo//{rel}",
        rel.upper(),
        f"Projects/App/{rel.swapcase()}",
        f"{rel}/" if not rel.endswith("/") else rel,
    ]


SECRETS: list[tuple[str, str]] = [
    (".ssh/id_rsa", ".ssh/**"),
    (".ssh/id_ed25519", ".ssh/**"),
    (".ssh/config", ".ssh/**"),
    (".ssh/authorized_keys", ".ssh/**"),
    (".ssh/keys/deploy", ".ssh/**"),
    (".ssh", ".ssh/**"),
    (".ssh/config.example", ".ssh/**"),
    ("id_rsa", "id_rsa"),
    ("keys/id_ed25519", "id_ed25519"),
    ("deploy/id_ecdsa", "id_ecdsa"),
    ("putty.ppk", "*.ppk"),
    (".aws/credentials", ".aws/**"),
    (".aws/config", ".aws/**"),
    (".aws/sso/cache/abc.json", ".aws/**"),
    (".azure/accessTokens.json", ".azure/**"),
    (".config/gcloud/application_default_credentials.json", ".config/gcloud/**"),
    (".config/gcloud/credentials.db", ".config/gcloud/**"),
    (".oci/config", ".oci/**"),
    (".boto", ".boto"),
    (".s3cfg", ".s3cfg"),
    (".config/rclone/rclone.conf", ".config/rclone/rclone.conf"),
    (".terraform.d/credentials.tfrc.json", ".terraform.d/credentials.tfrc.json"),
    (".terraformrc", ".terraformrc"),
    ("client_secret_1234.apps.googleusercontent.com.json", "client_secret*.json"),
    (".pulumi/credentials.json", ".pulumi/credentials.json"),
    (".gnupg/private-keys-v1.d/ABC.key", ".gnupg/**"),
    (".gnupg/pubring.kbx", ".gnupg/**"),
    (".config/sops/age/keys.txt", ".config/sops/**"),
    (".netrc", ".netrc"),
    ("_netrc", "_netrc"),
    (".git-credentials", ".git-credentials"),
    (".config/git/credentials", ".config/git/credentials"),
    (".npmrc", ".npmrc"),
    (".pypirc", ".pypirc"),
    (".docker/config.json", ".docker/config.json"),
    (".dockercfg", ".dockercfg"),
    (".vault-token", ".vault-token"),
    (".cargo/credentials", ".cargo/credentials*"),
    (".cargo/credentials.toml", ".cargo/credentials*"),
    (".gem/credentials", ".gem/credentials"),
    (".m2/settings.xml", ".m2/settings.xml"),
    (".m2/settings-security.xml", ".m2/settings-security.xml"),
    (".gradle/gradle.properties", ".gradle/gradle.properties"),
    (".composer/auth.json", ".composer/auth.json"),
    (".config/composer/auth.json", ".config/composer/auth.json"),
    (".pgpass", ".pgpass"),
    (".my.cnf", ".my.cnf"),
    (".mylogin.cnf", ".mylogin.cnf"),
    (".kube/config", ".kube/**"),
    (".kube/cache/discovery/x.json", ".kube/**"),
    (".config/gh/hosts.yml", ".config/gh/**"),
    (".config/hub", ".config/hub"),
    (".config/glab-cli/config.yml", ".config/glab-cli/**"),
    (".config/op/config", ".config/op/**"),
    (".local/share/keyrings/login.keyring", ".local/share/keyrings/**"),
    (".password-store/email/work.gpg", ".password-store/**"),
    (".local/share/kwalletd/kdewallet.kwl", ".local/share/kwalletd/**"),
    (".kde/share/apps/kwallet/kdewallet.kwl", ".kde/share/apps/kwallet/**"),
    ("Library/Keychains/login.keychain-db", "Library/Keychains/**"),
    (".pki/nssdb/cert9.db", ".pki/**"),
    ("Passwords.kdbx", "*.kdbx"),
    ("certs/client.p12", "*.p12"),
    ("certs/client.pfx", "*.pfx"),
    (".mozilla/firefox/abc.default/logins.json", ".mozilla/**"),
    ("snap/firefox/common/.mozilla/firefox/x/cookies.sqlite", ".mozilla/**"),
    (".thunderbird/x.default/key4.db", ".thunderbird/**"),
    (".config/google-chrome/Default/Cookies", ".config/google-chrome/**"),
    (".config/chromium/Default/Login Data", ".config/chromium/**"),
    (".config/BraveSoftware/Brave-Browser/Default/Cookies", ".config/BraveSoftware/**"),
    (".config/microsoft-edge/Default/Cookies", ".config/microsoft-edge/**"),
    (".config/vivaldi/Default/Cookies", ".config/vivaldi/**"),
    (".var/app/com.google.Chrome/config/google-chrome/Default/Cookies",
     ".var/app/*/config/google-chrome/**"),
    ("Library/Application Support/Google/Chrome/Default/Cookies",
     "Library/Application Support/Google/Chrome/**"),
    ("Library/Cookies/Cookies.binarycookies", "Library/Cookies/**"),
    (".bash_history", ".bash_history"),
    (".zsh_history", ".zsh_history"),
    (".zhistory", ".zhistory"),
    (".histfile", ".histfile"),
    (".local/share/fish/fish_history", ".local/share/fish/fish_history"),
    (".python_history", ".python_history"),
    (".node_repl_history", ".node_repl_history"),
    (".psql_history", ".psql_history"),
    (".mysql_history", ".mysql_history"),
    (".sqlite_history", ".sqlite_history"),
    (".rediscli_history", ".rediscli_history"),
    (".irb_history", ".irb_history"),
    (".viminfo", ".viminfo"),
    (".env", ".env"),
    (".env.local", ".env.*"),
    (".env.production", ".env.*"),
    (".env.development.local", ".env.*"),
    ("prod.env", "*.env"),
    ("docker/app.env", "*.env"),
    (".envrc", ".envrc"),
    (".aws/.env.example", ".aws/**"),
]

NOT_SECRETS = [
    ".envelope", "envelope.txt", ".environment", "env", "env.py", ".env.example",
    ".env.sample", ".env.template", ".env.dist", ".env.local.example", "docs/.env.example",
    "my.ssh.txt", "ssh", "docs/ssh.md", ".sshx/key", "ssh/config", ".ssh.md", "x.ssh/id",
    ".github/workflows/x.yml", ".gitconfig", "gitconfig.md", "aws/credentials.md",
    ".aws.md", "awscredentials", "id_rsa.md", "id_rsa.pub", "README.md", "src/main.py",
    "netrc", ".netrc.md", "npmrc.txt", "credentials.md", ".config/ghost/x",
    ".config/gcloud.md", ".kubeconfig.md", "kube/config", ".cargo/config.toml",
    ".cargo/registry/index", "bash_history.md", "history", ".mozilla.md", "chromium/src/x.cc",
    "server.pem", "server.key", "Keynote.key", ".local/share/recently-used.xbel",
    ".docker/daemon.json", "env/lib/python3.11/site.py", ".env/lib/python3.11/site.py",
]


@pytest.mark.parametrize(("rel", "pattern"), SECRETS)
def test_secret_locations_match_in_every_spelling(rel: str, pattern: str) -> None:
    for path in spellings(rel):
        assert secret_match(path) == pattern, path


@pytest.mark.parametrize("rel", NOT_SECRETS)
def test_look_alikes_are_not_secrets(rel: str) -> None:
    for path in spellings(rel):
        assert secret_match(path) is None, path


def test_every_secret_pattern_is_described_and_tested() -> None:
    tested = {pattern for _, pattern in SECRETS}
    for pattern in SECRET_PATTERNS:
        assert describe_secret(pattern)
    missing = {p for p in SECRET_PATTERNS if p not in tested} - {
        "id_dsa", "id_ecdsa_sk", "id_ed25519_sk", ".config/doctl/**", ".config/age/**",
        ".kde4/share/apps/kwallet/**", ".config/opera/**", ".var/app/*/config/chromium/**",
        ".var/app/*/config/BraveSoftware/**", "Library/Application Support/Firefox/**",
        "Library/Application Support/Chromium/**", "Library/Application Support/BraveSoftware/**",
        ".sh_history", ".config/fish/fish_history", ".pry_history", ".scala_history",
        ".Rhistory", ".dbshell", ".lesshst",
    }
    assert not missing
    with pytest.raises(KeyError):
        describe_secret("nothing/**")


@pytest.mark.parametrize(
    "issue_item",
    [".ssh/", ".aws/", ".gnupg/", ".netrc", ".git-credentials", ".npmrc", ".pypirc",
     ".docker/config.json", ".kube/", ".config/gh/", ".vault-token", ".cargo/credentials"],
)
def test_the_issue_list_is_covered(issue_item: str) -> None:
    path = issue_item + "x" if issue_item.endswith("/") else issue_item
    assert secret_match(path) is not None and secret_match("/home/u/" + path) is not None


PROTECTED: list[tuple[str, str]] = [
    (".git", ".git"),
    (".git/config", ".git/**"),
    (".git/hooks/pre-commit", ".git/**"),
    (".git/HEAD", ".git/**"),
    (".git/commondir", ".git/**"),
    (".git/info/attributes", ".git/**"),
    (".git/worktrees/w/config.worktree", ".git/**"),
    (".git/modules/lib/hooks/post-checkout", ".git/**"),
    (".bashrc", ".bashrc"),
    (".bash_profile", ".bash_profile"),
    (".bash_login", ".bash_login"),
    (".zshrc", ".zshrc"),
    (".zshenv", ".zshenv"),
    (".zprofile", ".zprofile"),
    (".profile", ".profile"),
    (".config/fish/config.fish", ".config/fish/**"),
    (".config/fish/conf.d/x.fish", ".config/fish/**"),
    (".gitconfig", ".gitconfig"),
    (".config/git/config", ".config/git/**"),
    (".config/git/attributes", ".config/git/**"),
    (".gitmodules", ".gitmodules"),
    (".mcp.json", ".mcp.json"),
    (".envrc", ".envrc"),
    (".exrc", ".exrc"),
    (".nvim.lua", ".nvim.lua"),
    (".vscode/tasks.json", ".vscode/**"),
    (".vscode/settings.json", ".vscode/**"),
    (".vscode/launch.json", ".vscode/**"),
    (".vscode", ".vscode/**"),
    ("app.code-workspace", "*.code-workspace"),
    (".idea/workspace.xml", ".idea/**"),
    (".idea/runConfigurations/x.xml", ".idea/**"),
    (".devcontainer/devcontainer.json", ".devcontainer/**"),
    (".devcontainer.json", ".devcontainer.json"),
    (".husky/pre-commit", ".husky/**"),
    ("web/.husky/_/h", ".husky/**"),
    (".pre-commit-config.yaml", ".pre-commit-config.yaml"),
    ("sub/lefthook.yml", "lefthook.yml"),
    (".lefthook/pre-commit/x.sh", ".lefthook/**"),
    (".simple-git-hooks.json", ".simple-git-hooks.json"),
    (".tool-versions", ".tool-versions"),
    ("web/.huskyrc", ".huskyrc"),
    (".huskyrc.json", ".huskyrc.*"),
    ("husky.config.js", "husky.config.*"),
    (".lintstagedrc", ".lintstagedrc"),
    ("app/.lintstagedrc.yaml", ".lintstagedrc.*"),
    ("lint-staged.config.mjs", "lint-staged.config.*"),
    # package and version managers: loaded as code or config naming code on the user's
    # next plain `npm`/`yarn`/`pnpm`/`bun`/`cargo`/`mise` command (pathrules' docstring)
    (".npmrc", ".npmrc"),
    ("packages/web/.npmrc", ".npmrc"),
    (".yarnrc", ".yarnrc"),
    (".yarnrc.yml", ".yarnrc.yml"),
    ("apps/site/.yarnrc.yml", ".yarnrc.yml"),
    (".yarnrc.yaml", ".yarnrc.yaml"),
    (".yarn/plugins/@yarnpkg/plugin-x.cjs", ".yarn/plugins/**"),
    ("apps/site/.yarn/plugins/p.cjs", ".yarn/plugins/**"),
    (".yarn/releases/yarn-4.1.0.cjs", ".yarn/releases/**"),
    (".pnpmfile.cjs", ".pnpmfile.cjs"),
    ("packages/a/.pnpmfile.cjs", ".pnpmfile.cjs"),
    (".pnpmfile.mjs", ".pnpmfile.mjs"),
    ("bunfig.toml", "bunfig.toml"),
    ("sub/dir/bunfig.toml", "bunfig.toml"),
    (".bunfig.toml", ".bunfig.toml"),
    (".mise.toml", ".mise.toml"),
    ("mise.toml", "mise.toml"),
    ("deep/er/mise.toml", "mise.toml"),
    ("mise.local.toml", "mise.*.toml"),
    (".config/mise.toml", "mise.toml"),
    (".config/mise/config.toml", ".config/mise/**"),
    ("mise/config.toml", "mise/config.toml"),
    (".mise/config.toml", ".mise/**"),
    (".rtx.toml", ".rtx.toml"),
    (".cargo/config.toml", ".cargo/config.toml"),
    ("crates/x/.cargo/config", ".cargo/config"),
    ("rust-toolchain.toml", "rust-toolchain.toml"),
    ("rust-toolchain", "rust-toolchain"),
    # what every start of a virtual environment's Python runs, whatever the program
    (".venv/lib/python3.12/site-packages/evil.pth", "site-packages/*.pth"),
    ("venv/Lib/site-packages/__editable__.x.pth", "site-packages/*.pth"),
    ("env/lib/python3/dist-packages/a.pth", "dist-packages/*.pth"),
    (".venv/lib/python3.11/site-packages/sitecustomize.py", "site-packages/sitecustomize.py"),
    (".tox/py311/lib/python3.11/site-packages/usercustomize.py",
     "site-packages/usercustomize.py"),
    (".venv/pyvenv.cfg", "pyvenv.cfg"),
    (".pdbrc", ".pdbrc"),
    ("analysis/.Rprofile", ".Rprofile"),
    # what a JVM build (an IDE's project sync among them) runs or passes to the JVM
    ("gradle/wrapper/gradle-wrapper.properties", "gradle/wrapper/**"),
    ("app/gradle/wrapper/gradle-wrapper.jar", "gradle/wrapper/**"),
    ("gradle.properties", "gradle.properties"),
    ("sub/gradle.properties", "gradle.properties"),
    (".mvn/jvm.config", ".mvn/**"),
    ("svc/.mvn/wrapper/maven-wrapper.properties", ".mvn/**"),
    (".mvn/extensions.xml", ".mvn/**"),
    (".jvmopts", ".jvmopts"),
    (".sbtopts", ".sbtopts"),
    (".bazelrc", ".bazelrc"),
]

NOT_PROTECTED = [
    ".github/workflows/x.yml", "gitconfig.md", "my.bashrc", "src/.profile.d/x", "vscode/x",
    ".gitignore", ".gitattributes", ".git-blame-ignore-revs", ".gitkeep", "git/config",
    "docs/.git.md", ".github/CODEOWNERS", ".vscodeignore", "idea/notes", ".bashrc.md",
    "devcontainer.json", ".envrc.md", "README.md", ".editorconfig", "pre-commit-config.yaml",
    "husky/pre-commit", ".lefthook.md",
    "huskyrc", "lintstagedrc.json", "husky.md", "lint-staged.md",
    # decided: a version pick names no code; what the project's own code loads is its code
    ".nvmrc", "web/.nvmrc", ".node-version", ".python-version", ".ruby-version",
    "node_modules/left-pad/index.js", ".pnp.cjs", ".pnp.loader.mjs", "yarn.lock",
    ".yarn/cache/x.zip", ".yarn/install-state.gz", "package-lock.json", "pnpm-lock.yaml",
    "bun.lockb", "Cargo.toml", "Cargo.lock", "cargo/config.toml", "npmrc", ".npmrc.md",
    "yarnrc.yml", "pnpmfile.cjs", "bunfig.toml.md", "docs/mise.md",
    ".venv/lib/python3.12/site-packages/requests/__init__.py", ".venv/bin/activate",
    "site-packages.pth", "docs/site-packages/x.pth.md", "src/paths.pth.txt", "pyvenv.cfg.bak",
    "build.gradle", "settings.gradle.kts", "pom.xml", "gradlew", "mvnw", "gradle/libs.toml",
    "mvn/jvm.config", "gradle.properties.md", "bazelrc", "BUILD.bazel", "Rprofile.R",
]


@pytest.mark.parametrize(("rel", "pattern"), PROTECTED)
def test_protected_paths_match_in_every_spelling(rel: str, pattern: str) -> None:
    for path in spellings(rel):
        assert protected_match(path) == pattern, path


@pytest.mark.parametrize("rel", NOT_PROTECTED)
def test_look_alikes_are_not_protected(rel: str) -> None:
    for path in spellings(rel):
        assert protected_match(path) is None, path


def test_the_previous_protected_list_is_kept() -> None:
    for old in (".git/hooks/pre-commit", ".git/config", ".bashrc", ".bash_profile", ".zshrc",
                ".zprofile", ".profile", ".gitconfig", ".gitmodules", ".mcp.json",
                ".vscode/x", ".idea/x"):
        assert protected_match(old) is not None and protected_match("a/b/" + old) is not None


GIT_ROWS: list[tuple[str, str | None]] = [
    ("config", "config"),
    ("CONFIG", "config"),
    ("./config", "config"),
    ("config.worktree", "config.worktree"),
    ("hooks", "hooks/**"),
    ("hooks/pre-commit", "hooks/**"),
    ("hooks/sub/x", "hooks/**"),
    ("info/attributes", "info/attributes"),
    ("commondir", "commondir"),
    ("gitdir", "gitdir"),
    ("worktrees/w1/config.worktree", "worktrees/*/config.worktree"),
    ("worktrees/w1/commondir", "worktrees/*/commondir"),
    ("worktrees/w1/gitdir", "worktrees/*/gitdir"),
    ("modules/lib/config", "modules/**/config"),
    ("modules/a/modules/b/config", "modules/**/config"),
    ("modules/lib/hooks/post-checkout", "modules/**/hooks/**"),
    ("modules/lib/info/attributes", "modules/**/info/attributes"),
    ("modules/lib/commondir", "modules/**/commondir"),
    ("HEAD", None),
    ("index", None),
    ("ORIG_HEAD", None),
    ("packed-refs", None),
    ("objects/ab/cdef", None),
    ("objects/pack/pack-1.pack", None),
    ("refs/heads/main", None),
    ("refs/heads/config", None),
    ("refs/tags/hooks", None),
    ("logs/HEAD", None),
    ("logs/refs/heads/config", None),
    ("info/exclude", None),
    ("description", None),
    ("COMMIT_EDITMSG", None),
    ("worktrees/w1/HEAD", None),
    ("worktrees/w1/index", None),
    ("modules/lib/objects/ab/cd", None),
    ("modules/lib/refs/heads/main", None),
    ("modules/lib/HEAD", None),
]


@pytest.mark.parametrize(("rel", "pattern"), GIT_ROWS)
def test_git_dangerous_entries_are_anchored_at_the_git_dir(rel: str, pattern: str | None
                                                           ) -> None:
    assert git_dangerous_match(rel) == pattern


def test_worktree_protected_is_the_protected_list_without_git() -> None:
    assert ".git" not in WORKTREE_PROTECTED and ".git/**" not in WORKTREE_PROTECTED
    assert set(PROTECTED_PATTERNS) - {".git", ".git/**"} == set(WORKTREE_PROTECTED)


@pytest.mark.parametrize(
    ("path", "pattern", "root"),
    [
        ("a/b/.ssh/id_rsa", ".ssh/**", "a/b/.ssh"),
        ("/home/u/.ssh/keys/id", ".ssh/**", "/home/u/.ssh"),
        ("./.ssh//id_rsa", ".ssh/**", ".ssh"),
        ("a/.SSH/id_rsa", ".ssh/**", "a/.SSH"),
        ("a/.ssh/b/.ssh/k", ".ssh/**", "a/.ssh"),
        (".ssh", ".ssh/**", ".ssh"),
        ("x/.env.local", ".env.*", "x/.env.local"),
        ("/p/.env", ".env", "/p/.env"),
        ("/h/.config/gh/hosts.yml", ".config/gh/**", "/h/.config/gh"),
        ("/h/.local/share/keyrings/login.keyring", ".local/share/keyrings/**",
         "/h/.local/share/keyrings"),
        (".var/app/com.google.Chrome/config/google-chrome/Default/Cookies",
         ".var/app/*/config/google-chrome/**",
         ".var/app/com.google.Chrome/config/google-chrome"),
        ("w/.git/hooks/pre-commit", ".git/**", "w/.git"),
        ("w/.vscode/tasks.json", ".vscode/**", "w/.vscode"),
        (".cargo/credentials.toml", ".cargo/credentials*", ".cargo/credentials.toml"),
    ],
)
def test_subtree_root(path: str, pattern: str, root: str) -> None:
    assert subtree_root(path, pattern) == root


def test_subtree_root_of_a_pattern_that_does_not_match_is_an_error() -> None:
    with pytest.raises(ValueError, match="does not match"):
        subtree_root("docs/ssh.md", ".ssh/**")


def _make_git_dir(path: Path) -> Path:
    (path / "objects").mkdir(parents=True)
    (path / "refs").mkdir()
    (path / "HEAD").write_text("ref: refs/heads/main\n")
    return path


def test_is_git_dir(tmp_path: Path) -> None:
    bare = _make_git_dir(tmp_path / "bare.git")
    assert is_git_dir(bare) and is_git_dir(str(bare))
    assert not is_git_dir(tmp_path / "missing")
    assert not is_git_dir(bare / "HEAD")
    (tmp_path / "link").symlink_to(bare)
    assert not is_git_dir(tmp_path / "link")
    partial = tmp_path / "partial"
    (partial / "objects").mkdir(parents=True)
    (partial / "HEAD").write_text("x")
    assert not is_git_dir(partial)
    (partial / "refs").write_text("not a folder")
    assert not is_git_dir(partial)
    links = tmp_path / "links"
    links.mkdir()
    for name in ("objects", "refs", "HEAD"):
        (links / name).symlink_to(bare / name)
    assert is_git_dir(links)  # git takes it for one: a HEAD link, objects/ and refs/ links
    worktree = tmp_path / "worktree"
    worktree.mkdir()
    (worktree / "HEAD").write_text("ref: refs/heads/main\n")
    assert not is_git_dir(worktree)
    (worktree / "commondir").write_text("../bare.git\n")
    assert is_git_dir(worktree)  # a linked worktree's git directory
    head_dir = _make_git_dir(tmp_path / "head-dir")
    os.unlink(head_dir / "HEAD")
    (head_dir / "HEAD").mkdir()
    assert not is_git_dir(head_dir)
    assert not is_git_dir("bad\x00path")


@pytest.mark.parametrize(
    ("patterns", "path", "found"),
    [
        (("*/secret.txt",), "a/secret.txt", "*/secret.txt"),
        (("*/secret.txt",), "x/y/A/SECRET.txt", "*/secret.txt"),
        (("*/secret.txt",), "secret.txt", None),
        (("**/*.bak",), "deep/er/x.bak", "**/*.bak"),
        (("**/*.bak",), "x.bak", "**/*.bak"),
        (("build/**", "*.log"), "out/build/x/y", "build/**"),
        (("build/**", "*.log"), "out/builder/x.log", "*.log"),
        (("build/**", "*.log"), "out/builder/x.txt", None),
        (("a?c",), "dir/abc", "a?c"),
        (("a?c",), "dir/abbc", None),
        ((), "anything", None),
        ((".ssh/**", "*.env"), "/h/.ssh/x.env", ".ssh/**"),
        (("*.env", ".ssh/**"), "/h/.ssh/x.env", "*.env"),
    ],
)
def test_first_match_keeps_the_patterns_order_and_any_glob(patterns: tuple[str, ...], path: str,
                                                           found: str | None) -> None:
    from kernel.pathrules import first_match

    assert first_match(path, patterns) == found
    assert first_match(path, list(patterns)) == found
