"""No secret anywhere in the workspace is in a command's reach (issue 14 §4), whatever the
spelling: by name, through `..`, an absolute path, a link, a recursive grep, an archive of the
whole workspace, or a script. Real bubblewrap, as the current user (root in CI) and as nobody.
Templates (`.env.example`) and ordinary files stay readable; a secret a command writes is
hidden from the next command too."""

from __future__ import annotations

from pathlib import Path

from tests.security.conftest import Confined

CANARY = "CANARY-5e1f-DO-NOT-LEAK"
SECRETS = [
    ".env", "app/.env.production", "sub/.aws/credentials", "proj/.ssh/id_rsa",
    "deep/x/.npmrc", ".git-credentials", ".config/gh/hosts.yml", ".bash_history",
    "keys/id_ed25519", "vault/.vault-token", ".cargo/credentials.toml",
    ".docker/config.json", "k8s/.kube/config", "pw.kdbx", ".local/share/keyrings/login.keyring",
    ".mozilla/firefox/p/cookies.sqlite", "web/.pypirc", "svc/prod.env", "a/b/c/.netrc",
]
READS = [
    *(f"cat {path}" for path in SECRETS),
    "cat ./app/../.env", "cat \"$PWD/sub/.aws/credentials\"", "cat link-to-env",
    "cat ./KEYS/../keys/id_ed25519 2>/dev/null; cat keys//id_ed25519",
    "grep -r CANARY . 2>/dev/null", "find . -type f -exec cat {} + 2>/dev/null",
    "tar cf - . 2>/dev/null | strings | grep CANARY",
    "python3 -c \"import pathlib; [print(p.read_text(errors='replace')) for p in "
    "pathlib.Path('.').rglob('*') if p.is_file()]\"",
    "ls -la proj/.ssh sub/.aws; cp -r proj copied; cat copied/.ssh/id_rsa",
]


def _prepare(folder: Path) -> None:
    workspace = folder / "workspace"
    for rel in SECRETS:
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(f"token={CANARY}\n")
    (workspace / ".env.example").write_text("token=placeholder-example\n")
    (workspace / "notes.md").write_text("plain-notes-visible\n")
    (workspace / "link-to-env").symlink_to(".env")


def test_no_secret_is_in_reach_at_any_depth(confined: Confined) -> None:
    report = confined([*READS, "cat .env.example notes.md",
                       f"echo written-{CANARY} > made.env", "cat made.env"],
                      prepare=_prepare)
    outcomes = report["outcomes"]
    leaked = [o["command"] for o in outcomes if CANARY in o["output"]]
    assert not leaked, f"secrets reached a command: {leaked}"
    shown = outcomes[len(READS)]["output"]
    assert "placeholder-example" in shown and "plain-notes-visible" in shown, shown
    assert outcomes[-2]["exit_code"] == 0 and not outcomes[-2]["reverted"]
    assert CANARY not in outcomes[-1]["output"]
