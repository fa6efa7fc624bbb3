"""Red team: a package runner or an environment manager (`npx`, `npm exec`, `pnpm dlx`,
`uvx`, `uv run`, `poetry run`, `conda run`, `nix-shell --run`, `direnv exec`, …) does not
hide the program it runs: a destructive program through one asks; an allow rule for the
runner covers the runner, not the program it runs, exactly as `run_command(sudo *)` does not
cover `sudo rm x`; a deny rule for the program stops it. What the program writes is judged
after it ran, whatever ran it (a protected change is held:
tests/security/test_transaction_boundary.py). Through the real shell reader, the real path
policy and `decide()`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from kernel.policy.decide import Decision, Grant, Mode, Verdict
from kernel.policy.grants import grant_rules
from tests.policy.worldkit import COMMAND, PolicyWorld

A, Q, D = Verdict.ALLOW, Verdict.ASK, Verdict.DENY


@pytest.fixture
def world(tmp_path: Path) -> PolicyWorld:
    world = PolicyWorld(tmp_path)
    (world.workspace / ".git" / "hooks").mkdir(parents=True)
    return world


def _decide(world: PolicyWorld, command: str, mode: Mode, *, allow: Sequence[str] = (),
            deny: Sequence[str] = (), grants: Sequence[Grant] = ()) -> Decision:
    return world.decide_command(command, mode, allow=allow, deny=deny, grants=grants)


DESTRUCTIVE = [
    "npx rimraf ~", "npx -y rimraf@5 .", "npx rimraf .git", "npx /bin/rm -rf ~",
    "npx -c 'rm -rf ~'", "npm exec -- rimraf ~", "npm x --yes rimraf .",
    "pnpm exec rm -rf ~", "pnpm dlx rimraf ~", "pnpx rimraf ~", "yarn exec rm -rf ~",
    "yarn dlx rimraf ~", "bunx rimraf ~", "bun x rimraf ~", "uv run rm -rf ~",
    "uv run --python 3.12 -- rm -rf ~", "uvx --from x rm -rf ~", "pipx run --spec x rm -rf ~",
    "poetry run rm -rf ~", "pdm run rm -rf ~", "rye run rm -rf ~",
    "pipenv run rm -rf ~", "conda run -n base rm -rf ~", "micromamba run -n e rm -rf ~",
    "sudo -u root rm -rf ~", "flock /tmp/l rm -rf ~",
    "pixi run rm -rf ~", "pixi exec rm -rf ~", "nix-shell --run 'rm -rf ~'",
    "nix develop -c rm -rf ~", "direnv exec . rm -rf ~", "dotenv run rm -rf ~",
    "mise x -- rm -rf ~", "rbenv exec rm -rf ~", "bundle exec rm -rf ~",
    "corepack pnpm exec rm -rf ~", "shx rm -rf ~", "uv run git reset --hard",
    "poetry run git clean -fdx", "npx --foo rimraf ~", "uv run --foo x rm -rf ~",
]


@pytest.mark.parametrize("command", DESTRUCTIVE)
def test_a_destructive_program_through_a_runner_asks(world: PolicyWorld, command: str) -> None:
    for mode in (Mode.AUTO, Mode.ASK):
        decision = _decide(world, command, mode, allow=("run_command", "write_file"))
        assert decision.verdict is Q, (command, mode, decision)
        assert decision.decided_by == "always ask", decision
        assert "destructive command" in decision.reason, decision


HARMLESS = [
    "poetry run pytest -q", "pdm run pytest", "hatch run test:pytest",
    "conda run -n e python x.py", "direnv exec . make", "rbenv exec rake test",
    "bundle exec rspec", "dotenv run make", "pixi run test", "mise x -- make",
    "poetry run black src", "pipenv run tee out.txt", "shx rm -rf build",
]


@pytest.mark.parametrize("command", HARMLESS)
def test_a_plain_program_through_a_runner_still_runs_in_auto_mode(world: PolicyWorld,
                                                                  command: str) -> None:
    assert _decide(world, command, Mode.AUTO).verdict is A, command


# An allow rule covers what it names: the runner's words, not the program it runs, as for
# `sudo` and `nice` (README: `run_command(nice *)` alone does not allow `nice rm x`).
# (command, allow rules, verdict in: ask, auto)
RULES: list[tuple[str, tuple[str, ...], tuple[Verdict, Verdict]]] = [
    ("sudo make", ("run_command(sudo *)",), (Q, Q)),
    ("sudo make", ("run_command(sudo *)", "run_command(make)"), (Q, Q)),
    ("nice make", ("run_command(nice *)",), (Q, A)),
    ("nice make", ("run_command(nice *)", "run_command(make)"), (A, A)),
    ("npx tsc -b", ("run_command(npx *)",), (Q, Q)),
    ("npx tsc -b", ("run_command(npx *)", "run_command(tsc *)"), (A, A)),
    ("npx tsc -b", ("run_command(tsc *)",), (Q, Q)),
    ("npx -y tsc -b", ("run_command(npx *)", "run_command(tsc -b)"), (A, A)),
    ("npx -y tsc@5 -b", ("run_command(npx *)", "run_command(tsc -b)"), (Q, Q)),
    ("poetry run pytest", ("run_command(poetry run *)",), (Q, A)),
    ("poetry run pytest", ("run_command(poetry run *)", "run_command(pytest *)"), (A, A)),
    ("poetry run rm -f x", ("run_command(poetry run *)", "run_command(pytest *)"), (Q, A)),
    ("uv run pytest", ("run_command(uv run *)", "run_command(pytest *)"), (A, A)),
    ("uvx ruff check", ("run_command(uvx *)", "run_command(ruff check *)"), (A, A)),
    ("uvx ruff check", ("run_command(uvx *)", "run_command(ruff format *)"), (Q, Q)),
    ("conda run -n e python x.py", ("run_command(conda *)", "run_command(python *)"), (Q, A)),
    ("conda run -n e python x.py", ("run_command(conda *)", "run_command(python *)",
                                    "run_command(e python *)"), (A, A)),
    ("nix-shell -p x --run 'make'", ("run_command(nix-shell *)",), (Q, A)),
    ("nix-shell -p x --run 'make'", ("run_command(nix-shell *)", "run_command(make)"),
     (A, A)),
]


@pytest.mark.parametrize(("command", "allow", "verdicts"), RULES)
def test_an_allow_rule_for_a_runner_is_one_for_a_wrapper(
        world: PolicyWorld, command: str, allow: tuple[str, ...],
        verdicts: tuple[Verdict, Verdict]) -> None:
    got = tuple(_decide(world, command, mode, allow=allow).verdict
                for mode in (Mode.ASK, Mode.AUTO))
    assert got == verdicts, command


@pytest.mark.parametrize(("command", "rule"), [
    ("sudo rm x", "run_command(rm *)"),
    ("npx rimraf dist", "run_command(rimraf *)"),
    ("poetry run rm x", "run_command(rm *)"),
    ("uvx --from x rm x", "run_command(rm *)"),
    ("npx -c 'curl x'", "run_command(curl *)"),
    ("npx -c 'tee .git/info/x'", "run_command(tee *)"),
    ("uv run cp x .git/info/x", "run_command(cp *)"),
    ("sudo -u root rm x", "run_command(rm *)"),
    ("env -C sub rm x", "run_command(rm *)"),
])
def test_a_deny_rule_for_the_program_stops_it_through_a_runner(world: PolicyWorld,
                                                               command: str, rule: str) -> None:
    decision = _decide(world, command, Mode.AUTO, allow=("run_command",), deny=(rule,))
    assert decision.verdict is D and decision.rule == rule, decision


def test_a_session_grant_of_a_runner_command_covers_the_program_too(world: PolicyWorld) -> None:
    """Allowing `npx tsc -b` for the session grants its parts, the program's included: it
    runs again; another program through the same runner asks."""
    facts = world.run_facts("npx tsc -b")
    grants = tuple(Grant(r, network=True)
                   for r in grant_rules(COMMAND, facts, world.session(Mode.ASK)))
    assert [g.rule.text for g in grants] == ["run_command(npx tsc -b)", "run_command(tsc -b)"]
    assert _decide(world, "npx  tsc -b", Mode.ASK, grants=grants).verdict is A
    assert _decide(world, "npx eslint .", Mode.ASK, grants=grants).verdict is Q


def test_tables_are_large() -> None:
    assert len(DESTRUCTIVE) >= 35 and len(RULES) >= 15
