"""Package runners and environment managers are read like wrappers: the program they run
(`npx tsc`, `uv run pytest`, `conda run -n E python`) is a command of the line, by each
runner's own grammar (its options with and without a value, `--`, a package's spec that
names the program, `-c` shell text), so the classifier, the writer table and the rules see
it. What cannot be read is said; a runner of what only the project knows (`npm run`, `cargo
run`) runs nothing that is read, as before."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from kernel.shell import nested
from kernel.shell.nested import _npm_package, _npx_words, _python_package
from kernel.shell.parse import read
from kernel.shell.words import EXPANDS, Word

# (command, what runs inside it: (via, words))
RUNS = [
    # npx: its options up to the package's spec, which names the program
    ("npx tsc --outDir d x.ts", [("npx", ["tsc", "--outDir", "d", "x.ts"])]),
    ("npx -y tsc@5 -b", [("npx", ["tsc", "-b"])]),
    ("npx --yes @biomejs/biome@1 check", [("npx", ["biome", "check"])]),
    ("npx -p typescript tsc -b", [("npx", ["tsc", "-b"])]),
    ("npx --package=typescript@5 -- tsc -b", [("npx", ["tsc", "-b"])]),
    ("npx -p a -p b c", [("npx", ["c"])]),
    ("npx -- a --yes", [("npx", ["a", "--yes"])]),
    ("npx --yes -- a -c x", [("npx", ["a", "-c", "x"])]),
    ("npx --yes true a", [("npx", ["true", "a"])]),
    ("npx -q a", [("npx", ["a"])]),
    ("npx --loglevel silent a", [("npx", ["a"])]),
    ("npx --cache /tmp/c a", [("npx", ["a"])]),
    ("npx -w pkg a", [("npx", ["a"])]),
    ("npx --no-install a b", [("npx", ["a", "b"])]),
    ("npx --no a b", [("npx", ["a", "b"])]),
    ("npx -yp a b --c", [("npx", ["a", "b", "--c"])]),
    ("npx --npm x a", [("npx", ["a"])]),
    ("npx /bin/a -x", [("npx", ["/bin/a", "-x"])]),
    ("npx ./tools/a", [("npx", ["./tools/a"])]),
    ("npx -c 'a x; b'", [("npx -c", ["a", "x"]), ("npx -c", ["b"])]),
    ("npx --call='a x'", [("npx -c", ["a", "x"])]),
    ("npx -yc 'a x'", [("npx -c", ["a", "x"])]),
    ("npx --call= a x", [("npx", ["a", "x"])]),
    ("npx -c '' a x", [("npx", ["a", "x"])]),
    ("npx npm exec a", [("npx", ["npm", "exec", "a"]), ("npm exec", ["a"])]),
    # npm exec (exe, x): npm reads its options anywhere before `--`
    ("npm exec a b", [("npm exec", ["a", "b"])]),
    ("npm exec -- a --yes b", [("npm exec", ["a", "--yes", "b"])]),
    ("npm exec a --yes b", [("npm exec", ["a", "b"])]),
    ("npm exec --yes true a", [("npm exec", ["a"])]),
    ("npm x a", [("npm exec", ["a"])]),
    ("npm exe a", [("npm exec", ["a"])]),
    ("npm --prefix . exec a", [("npm exec", ["a"])]),
    ("npm -yq exec a", [("npm exec", ["a"])]),
    ("npm exec --package=b@2 -- a", [("npm exec", ["a"])]),
    ("npm exec -c 'a x'", [("npm exec -c", ["a", "x"])]),
    ("npm -- exec a", [("npm exec", ["a"])]),
    # pnpm: exec runs every word after it; -c before it makes them shell text; dlx
    ("pnpm exec a -c b", [("pnpm exec", ["a", "-c", "b"])]),
    ("pnpm exec -- a b", [("pnpm exec", ["a", "b"])]),
    ("pnpm --filter x -r exec a", [("pnpm exec", ["a"])]),
    ("pnpm -C dir exec a", [("pnpm exec", ["a"])]),
    ("pnpm -c exec 'a x; b'", [("pnpm exec", ["a", "x"]), ("pnpm exec", ["b"])]),
    ("pnpm dlx a@1 b", [("pnpm dlx", ["a", "b"])]),
    ("pnpm dlx --package x a b", [("pnpm dlx", ["a", "b"])]),
    ("pnpm dlx -c 'a; b'", [("pnpm dlx", ["a"]), ("pnpm dlx", ["b"])]),
    ("pnpx a b", [("pnpx", ["a", "b"])]),
    # yarn: exec in both readings (Yarn 2+: shell text; Yarn 1: its options anywhere), dlx
    ("yarn exec a b", [("yarn exec", ["a", "b"])]),
    ("yarn exec 'a x; b' c", [("yarn exec", ["a", "x"]), ("yarn exec", ["b", "c"])]),
    ("yarn exec X=1 a b", [("yarn exec", ["X=1", "a", "b"])]),
    ("yarn exec a --check b c", [("yarn exec", ["a", "--check", "b", "c"]),
                                 ("yarn exec", ["a", "c"])]),
    ("yarn --cwd d exec -- a", [("yarn exec", ["a"])]),
    ("yarn dlx -p x a b", [("yarn dlx", ["a", "b"])]),
    ("yarn dlx a@1 b", [("yarn dlx", ["a", "b"])]),
    ("yarn workspace pkg exec a", [("yarn workspace", ["yarn", "exec", "a"]),
                                   ("yarn exec", ["a"])]),
    # bun
    ("bunx a@1 b", [("bunx", ["a", "b"])]),
    ("bunx --bun -p x a", [("bunx", ["a"])]),
    ("bun x a b", [("bun x", ["a", "b"])]),
    # uv: run, tool run, uvx; global options before or after the subcommand
    ("uv run a b", [("uv run", ["a", "b"])]),
    ("uv run --with x --python 3.12 -- a -q", [("uv run", ["a", "-q"])]),
    ("uv run -qw x a", [("uv run", ["a"])]),
    ("uv run --with=x a", [("uv run", ["a"])]),
    ("uv --directory d run --no-project a", [("uv run", ["a"])]),
    ("uv run -m a b", [("uv run", ["a", "b"])]),
    ("uv run --frozen --env-file .env a", [("uv run", ["a"])]),
    ("uv tool run a b", [("uv tool run", ["a", "b"])]),
    ("uv -q tool uvx a", [("uv tool uvx", ["a"])]),
    ("uvx a@1 b", [("uvx", ["a", "b"])]),
    ("uvx 'a>=1' b", [("uvx", ["a", "b"])]),
    ("uvx 'a[x]==2' b", [("uvx", ["a", "b"])]),
    ("uvx --from x a b", [("uvx", ["a", "b"])]),
    ("uvx -p 3.12 --with y a", [("uvx", ["a"])]),
    # pipx, poetry, pdm, hatch, rye, pipenv
    ("pipx run a==1 b", [("pipx run", ["a", "b"])]),
    ("pipx run --spec x a b", [("pipx run", ["a", "b"])]),
    ("pipx run --sp x a", [("pipx run", ["a"])]),
    ("pipx exec env a b", [("pipx exec", ["a", "b"])]),
    ("poetry run a b", [("poetry run", ["a", "b"])]),
    ("poetry -C d run -q a", [("poetry run", ["a"])]),
    ("poetry run -- a -v", [("poetry run", ["a", "-v"])]),
    ("pdm run a b", [("pdm run", ["a", "b"])]),
    ("pdm run --venv v -p d a", [("pdm run", ["a"])]),
    ("hatch run a b", [("hatch run", ["a", "b"])]),
    ("hatch run test:a b", [("hatch run", ["a", "b"])]),
    ("hatch run +py=3.12 -v=x a", [("hatch run", ["a"])]),
    ("hatch -e test run a", [("hatch run", ["a"])]),
    ("hatch env run -e x -- a", [("hatch env run", ["a"])]),
    ("rye run a b", [("rye run", ["a", "b"])]),
    ("pipenv run a b", [("pipenv run", ["a", "b"])]),
    ("pipenv --python 3.12 run a", [("pipenv run", ["a"])]),
    ("pipenv run X=1 a b", [("pipenv run", ["a", "b"])]),
    # conda and its kin, pixi
    ("conda run -n base a b", [("conda run", ["a", "b"])]),
    ("conda run -p /opt/e --cwd d -- a", [("conda run", ["a"])]),
    ("mamba run -n e a", [("mamba run", ["a"])]),
    ("micromamba run -n e -e A=1 a", [("micromamba run", ["a"])]),
    ("pixi run a b", [("pixi run", ["a", "b"])]),
    ("pixi run -e dev 'a; b'", [("pixi run", ["a"]), ("pixi run", ["b"])]),
    ("pixi r a", [("pixi r", ["a"])]),
    ("pixi exec -s x a b", [("pixi exec", ["a", "b"])]),
    # nix, direnv, dotenv and kin
    ("nix-shell -p x --run 'a b'", [("nix-shell --run", ["a", "b"])]),
    ("nix-shell --command 'a'", [("nix-shell --command", ["a"])]),
    ("nix shell nixpkgs#x -c a b", [("nix", ["a", "b"])]),
    ("nix develop --command a", [("nix", ["a"])]),
    ("direnv exec . a b", [("direnv exec", ["a", "b"])]),
    ("dotenv run a b", [("dotenv run", ["a", "b"])]),
    ("dotenv -f .env run --no-override a", [("dotenv run", ["a"])]),
    ("dotenv -e .env -- a b", [("dotenv", ["a", "b"])]),
    ("dotenv -e .env a", [("dotenv", ["a"])]),
    ("dotenvx run -f .env -- a", [("dotenvx run", ["a"])]),
    ("env-cmd -f .env a b", [("env-cmd", ["a", "b"])]),
    ("env-cmd --use-shell 'a; b'", [("env-cmd", ["a"]), ("env-cmd", ["b"])]),
    ("cross-env A=1 B=2 a", [("cross-env", ["a"])]),
    ("cross-env-shell A=1 'a; b'", [("cross-env-shell", ["a"]), ("cross-env-shell", ["b"])]),
    ("op run --env-file x -- a", [("op run", ["a"])]),
    ("aws-vault exec prof -- a", [("aws-vault exec", ["a"])]),
    ("envdir d a", [("envdir", ["a"])]),
    # version managers, bundler, rustup, corepack, volta, fnm, shx
    ("mise x node@20 -- a b", [("mise x", ["a", "b"])]),
    ("mise exec -c 'a b'", [("mise exec -c", ["a", "b"])]),
    ("mise -C d exec --command='a' node", [("mise exec --command", ["a"])]),
    ("asdf exec a", [("asdf exec", ["a"])]),
    ("rbenv exec a b", [("rbenv exec", ["a", "b"])]),
    ("pyenv exec a", [("pyenv exec", ["a"])]),
    ("bundle exec a b", [("bundle exec", ["a", "b"])]),
    ("bundle e a", [("bundle e", ["a"])]),
    ("bundle exec --gemfile=G a", [("bundle exec", ["a"])]),
    ("rustup run stable a b", [("rustup run", ["a", "b"])]),
    ("corepack pnpm@9 exec a", [("corepack", ["pnpm", "exec", "a"]), ("pnpm exec", ["a"])]),
    ("volta run --node 20 a", [("volta run", ["a"])]),
    ("fnm exec --using 20 -- a", [("fnm exec", ["a"])]),
    ("shx --silent a b", [("shx", ["a", "b"])]),
    # npm runs the command with `SCRIPT-SHELL -c TEXT`: a program when it is no shell
    ("npx --shell /tmp/x.sh a b", [("npx", ["/tmp/x.sh", "-c", "a b"])]),
    ("npx --script-shell=python3 -c 'a b'", [("npx", ["python3", "-c", "a b"])]),
    ("npm exec --script-shell bash -- a", [("npm exec", ["a"])]),
    # python -m RUNNER is that runner
    ("python -m uv run a", [("python -m", ["uv", "run", "a"]), ("uv run", ["a"])]),
    ("python3 -Im pipx run a", [("python3 -m", ["pipx", "run", "a"]), ("pipx run", ["a"])]),
    ("python3.12 -W ignore -m poetry run a", [("python3.12 -m", ["poetry", "run", "a"]),
                                              ("poetry run", ["a"])]),
    # nested in wrappers, and wrappers in runners
    ("sudo npx a", [("sudo", ["npx", "a"]), ("npx", ["a"])]),
    ("env X=1 uvx a b", [("env", ["uvx", "a", "b"]), ("uvx", ["a", "b"])]),
    ("uv run nice a", [("uv run", ["nice", "a"]), ("nice", ["a"])]),
    ("npx -- sh -c 'a'", [("npx", ["sh", "-c", "a"]), ("sh -c", ["a"])]),
    ("timeout 5 poetry run a", [("timeout", ["poetry", "run", "a"]), ("poetry run", ["a"])]),
]


@pytest.mark.parametrize(("command", "inner"), RUNS)
def test_what_a_runner_runs(command: str, inner: list[tuple[str, list[str]]]) -> None:
    line = read(command)
    assert [(c.via, c.words) for c in line.commands if c.via] == inner
    assert line.blind == ()


# Runners whose program is not read, as before: a script or a program only the project or
# the package knows, a spec that names no program, a subcommand that runs none.
NOTHING = [
    "npm run build", "npm test", "npm install x", "npm install --foo bar",
    "npm exec", "npx", "npx github:user/repo", "npx git+https://x/y.git", "npx npm:x@1",
    "pnpm install", "pnpm build", "yarn build", "yarn add x", "bun run x",
    "yarn workspace pkg",
    "uv pip install x", "uv sync", "uvx git+https://x/y", "uvx ./pkg", "uv run",
    "pipx install x", "pipx run https://x/y.py", "poetry install", "pdm install",
    "hatch build", "hatch run test:", "conda install x", "conda run -n e",
    "pixi run", "pixi install", "nix run nixpkgs#x", "nix build", "nix-shell",
    "direnv allow", "dotenv list", "dotenv set A 1", "mise x node@20", "mise install",
    "corepack enable", "volta install node", "bundle install", "rustup update",
    "cargo run -- x", "go run . x", "dotnet run", "make", "uv run --help a",
    "nix run nixpkgs#x -- -c a", "nix shell nixpkgs#x -- --command a",
    "npx --version", "pnpm --help exec a", "python -m pytest",
    "python -c 'x' -m uv run a",
]


@pytest.mark.parametrize("command", NOTHING)
def test_what_is_not_read(command: str) -> None:
    line = read(command)
    assert [c.words for c in line.commands if c.via] == []
    assert line.blind == ()


# A word the reading depends on that it cannot read: what runs cannot be told.
UNREAD = [
    ("npx --foo a", "npx is given --foo, an option it is not known to take"),
    ("npx --pack x a", "npx is given --pack"),
    ("npm exec a --foo b", "npm is given --foo"),
    ("npm --foo bar exec a", "npm is given --foo"),
    ("npx --cache -y a", "npx's --cache takes a value and '-y' follows it"),
    ("uv run --foo x a", "uv run is given --foo, an option it is not known to take"),
    ("uvx --pyth 3.12 a", "uvx is given --pyth"),
    ("poetry run --foo x a", "poetry run is given --foo"),
    ("conda run -n e -Z x a", "conda run is given -Z"),
    ("bundle exec --foo x a", "bundle exec is given --foo"),
    ("uv $SUB a", "uv's subcommand '$SUB' is only known when it runs"),
    ("npm $CMD a", "npm's command '$CMD' is only known when it runs"),
    ("npx $TOOL x", "the program name '$TOOL' is an expansion"),
    ("uv run \"$P\" x", "the program name '$P' is an expansion"),
    ("npx -c \"$S\"", "npx -c runs text built from expansions"),
]


@pytest.mark.parametrize(("command", "word"), [
    ("pipenv run tee '$HOME/.bashrc'", "$HOME/.bashrc"),
    ("pdm run tee '${HOME}/.bashrc'", "${HOME}/.bashrc"),
    ("env-cmd --expand-envs tee '$HOME/x'", "$HOME/x"),
])
def test_a_runner_that_expands_variables_gives_words_known_when_it_runs(command: str,
                                                                       word: str) -> None:
    """pipenv and pdm put variables' values in the program's words themselves: a quoted
    `$HOME` is the home folder to the program, so it cannot be named here."""
    inner = next(c for c in read(command).commands if c.via)
    assert inner.kind(inner.argv.index(word)) == EXPANDS
    assert read(command.replace("$", "")).commands[-1].kind(1) != EXPANDS


@pytest.mark.parametrize(("command", "reason"), UNREAD)
def test_what_cannot_be_read_is_said(command: str, reason: str) -> None:
    assert any(reason in r for r in read(command).blind), read(command).blind


@pytest.mark.parametrize(("spec", "program"), [
    ("tsc", "tsc"), ("tsc@5.4.2", "tsc"), ("@biomejs/biome", "biome"),
    ("@biomejs/biome@1.9", "biome"), ("/bin/rm", "/bin/rm"), ("./tools/x", "./tools/x"),
    ("user/repo", "user/repo"), ("github:user/repo", None), ("git+https://x/y", None),
    ("npm:rimraf@5", None), ("https://x/y.tgz", None), ("@latest", None),
])
def test_npm_spec(spec: str, program: str | None) -> None:
    assert _npm_package(spec) == program


@pytest.mark.parametrize(("spec", "program"), [
    ("black", "black"), ("black@24.1", "black"), ("black==24.1", "black"),
    ("black>=24", "black"), ("black[d]", "black"), ("black[d]@24", "black"),
    ("black ~= 24.1", "black"), ("black; python_version>'3'", "black"),
    ("ruff.exe", "ruff.exe"), ("./pkg", None), ("git+https://x/y", None), ("a/b", None),
    ("https://x/y.py", None), ("", None),
])
def test_python_spec(spec: str, program: str | None) -> None:
    assert _python_package(spec) == program


@pytest.mark.parametrize(("words", "handed"), [
    (["a", "b"], ["--", "a", "b"]),
    (["-y", "a"], ["--yes", "--", "a"]),
    (["-p", "x", "a"], ["--package", "x", "--", "a"]),
    (["-p=x", "a"], ["--package=x", "--", "a"]),
    (["--shell", "bash", "a"], ["--script-shell", "bash", "--", "a"]),
    (["--no-install", "a"], ["--yes=false", "--", "a"]),
    (["-q", "a"], ["--loglevel", "warn", "--", "a"]),
    (["--npm", "x", "-n", "y", "a"], ["--", "a"]),
    (["--foo", "x", "a"], ["--foo", "x", "--", "a"]),
    (["--no", "x", "a"], ["--no-yes", "x", "--", "a"]),
    (["-yp", "x", "a", "--c", "d"], ["-yp", "x", "--", "a", "--c", "d"]),
    (["--", "a"], ["--", "a"]),
])
def test_what_npx_hands_npm_exec(words: list[str], handed: list[str]) -> None:
    """npm's bin/npx-cli.js: checked against the real npx by the test below."""
    assert [w.text for w in _npx_words([Word(w) for w in words])] == handed


def test_an_expansion_keeps_its_kind() -> None:
    words = read("npx -p=$P a").commands[0].args
    assert _npx_words(words[1:])[0].kind == EXPANDS


def _npm_definitions() -> tuple[set[str], set[str]] | None:
    npm = shutil.which("npm")
    if npm is None:
        return None
    root = Path(os.path.realpath(npm)).parent.parent
    script = ("const {definitions} = require(process.argv[1]); const v = [], b = [];"
              "for (const [k, d] of Object.entries(definitions))"
              " ([].concat(d.type).includes(Boolean) ? b : v).push(k);"
              "console.log(JSON.stringify([v, b]))")
    found = root / "node_modules/@npmcli/config/lib/definitions"
    if not found.exists():
        return None
    out = subprocess.run(["node", "-e", script, str(found)], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    values, flags = json.loads(out)
    return set(values), set(flags)


def test_npm_settings_are_those_of_the_installed_npm() -> None:
    """A newer npm's settings: a value one unknown here would make its value read as the
    program; an unknown one already cannot be read when a word follows it."""
    found = _npm_definitions()
    if found is None:
        pytest.skip("npm is not installed")
    values, flags = found
    assert values == nested._NPM_VALUES
    assert flags == nested._NPM_FLAGS


# npx and npm exec spellings, each run by the real npm in a project with bins `a` and `b`
# that print their name and arguments (`b` also as the bin of a package `a`): what it runs
# is what the reading says.
REAL_NPM = [
    "npx a x y", "npx -y a x", "npx -p a b q", "npx --package=a -- b q",
    "npx -q a x", "npx --no-install a x", "npx -yp a b", "npx -- a --yes",
    "npm exec a --yes x", "npm exec --yes true a x", "npm x a", "npm --prefix . exec a x",
    "npm exec -- a --yes x", "npx -c 'a x; b y'", "npx --call= a x",
]


@pytest.mark.parametrize("command", REAL_NPM)
def test_npm_reading_matches_the_installed_npm(command: str, tmp_path: Path) -> None:
    if shutil.which("npm") is None or shutil.which("npx") is None:
        pytest.skip("npm is not installed")
    (tmp_path / "package.json").write_text(
        '{"name": "t", "version": "1.0.0", "dependencies": {"a": "1.0.0"}}')
    package = tmp_path / "node_modules" / "a"
    (package / "bin").mkdir(parents=True)
    (package / "package.json").write_text(
        '{"name": "a", "version": "1.0.0", "bin": {"b": "bin/b"}}')
    bin_dir = tmp_path / "node_modules" / ".bin"
    bin_dir.mkdir()
    for name, where in (("a", bin_dir / "a"), ("b", bin_dir / "b"), ("b", package / "bin/b")):
        where.write_text(f'#!/bin/sh\necho "{name} $*"\n')
        where.chmod(0o755)
    env = {**os.environ, "npm_config_offline": "true", "npm_config_update_notifier": "false",
           "npm_config_cache": str(tmp_path / "cache"), "npm_config_fund": "false"}
    ran = subprocess.run(["sh", "-c", command], cwd=tmp_path, env=env, capture_output=True,
                         text=True, timeout=120).stdout.splitlines()
    ran = [line.strip() for line in ran]
    read_ = [" ".join([c.argv[0].rsplit("/", 1)[-1], *c.argv[1:]])
             for c in read(command).commands if c.via and c.via.startswith(("npx", "npm"))]
    assert ran == read_
