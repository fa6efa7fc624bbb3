"""The policy sees what the shell will run (issue 15 §1–3), through the real path policy, the
real shell reader and classifier, and `decide()`: tables over modes and rules."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from kernel.policy.decide import Decision, Grant, Mode, Verdict
from kernel.policy.grants import grant_rules
from kernel.tools.spec import ErrorCode
from tests.policy.worldkit import COMMAND, PolicyWorld

A, Q, D = Verdict.ALLOW, Verdict.ASK, Verdict.DENY
ECHO = "run_command(echo hello *)"


@pytest.fixture
def world(tmp_path: Path) -> PolicyWorld:
    return PolicyWorld(tmp_path)


def _decide(world: PolicyWorld, command: str, mode: Mode, *, allow: Sequence[str] = (),
            ask: Sequence[str] = (), deny: Sequence[str] = (), grants: Sequence[Grant] = (),
            cwd: str | None = None) -> Decision:
    return world.decide_command(command, mode, allow=allow, ask=ask, deny=deny, grants=grants,
                                cwd=cwd)


# (command, allow rules, verdict in: ask, auto-edit, auto)
TABLE: list[tuple[str, tuple[str, ...], tuple[Verdict, Verdict, Verdict]]] = [
    # the rule sees literal words only
    ("echo hello world", (ECHO,), (A, A, A)),
    ("echo hello 'a b' \"c d\"", (ECHO,), (A, A, A)),
    ("echo hello $(( $(id > f; echo 1) ))", (ECHO,), (Q, Q, A)),
    ("echo hello $(( $(id > ~/f; echo 1) ))", (ECHO,), (Q, Q, Q)),
    ("echo hello $((1 + 2))", (ECHO,), (Q, Q, A)),
    ("echo hello $(id)", (ECHO,), (Q, Q, A)),
    ("echo hello `id`", (ECHO,), (Q, Q, A)),
    ("echo hello \"$(id)\"", (ECHO,), (Q, Q, A)),
    ("echo hello ${X:-$(id)}", (ECHO,), (Q, Q, A)),
    ("echo hello <(id)", (ECHO,), (Q, Q, A)),
    ("echo hello $X", (ECHO,), (Q, Q, A)),
    ("echo hello ${X:=v}", (ECHO,), (Q, Q, A)),
    ("echo hello ${X%/}", (ECHO,), (Q, Q, A)),
    ("echo hello ~", (ECHO,), (Q, Q, A)),
    ("echo hello {a,b}", (ECHO,), (Q, Q, A)),
    ("echo hello *.txt", (ECHO,), (A, A, A)),
    # a redirection to a file is a write of that file
    ("echo hello > x.pth", (ECHO,), (Q, A, A)),
    ("echo hello '\\nimport os' > x.pth", (ECHO,), (Q, A, A)),
    ("echo hello >> notes.txt", (ECHO,), (Q, A, A)),
    ("echo hello 2> err.txt", (ECHO,), (Q, A, A)),
    ("echo hello &> both.txt", (ECHO,), (Q, A, A)),
    ("echo hello >| f", (ECHO,), (Q, A, A)),
    ("echo hello 3<> f", (ECHO,), (Q, A, A)),
    ("echo hello > ~/x.pth", (ECHO,), (Q, Q, Q)),
    ("echo hello > /tmp/x.pth", (ECHO,), (A, A, A)),  # the sandbox's own tmpfs
    ("echo hello > /var/tmp/x.pth", (ECHO,), (Q, Q, Q)),
    ("echo hello > .git/hooks/pre-commit", (ECHO,), (Q, Q, Q)),
    ("echo hello > .git/config", (ECHO,), (Q, Q, Q)),
    ("echo hello > .vscode/settings.json", (ECHO,), (Q, Q, Q)),
    ("echo hello >> ~/.bashrc", (ECHO,), (Q, Q, Q)),
    ("echo hello > .env", (ECHO,), (Q, Q, Q)),
    ("echo hello > $F", (ECHO,), (Q, Q, Q)),
    ("echo hello > \"$HOME/x\"", (ECHO,), (Q, Q, Q)),
    ("echo hello > $(mktemp)", (ECHO,), (Q, Q, Q)),
    ("cd sub && echo hello > x", (ECHO, "run_command(cd sub)"), (Q, Q, Q)),
    ("echo hello > /dev/null 2>&1", (ECHO,), (A, A, A)),
    ("echo hello 2>/dev/stderr >/dev/stdout >&2", (ECHO,), (A, A, A)),
    ("echo hello <<< word", (ECHO,), (A, A, A)),
    # write_file rules apply to redirections
    ("make > build/log.txt", ("run_command(make *)", "write_file(build/**)"), (A, A, A)),
    ("make > other.log", ("run_command(make *)", "write_file(build/**)"), (Q, A, A)),
    ("make > /tmp/log", ("run_command(make *)", "write_file(/tmp/**)"), (A, A, A)),
    # the classifier looks through wrappers in every mode
    ("sh -c 'rm -rf ~'", (), (Q, Q, Q)),
    ("echo rm -rf . | sh", (), (Q, Q, Q)),
    ("bash <<EOF\nrm -rf .\nEOF", (), (Q, Q, Q)),
    ("echo ~ | xargs rm -rf", (), (Q, Q, Q)),
    ("X=rm; $X -rf ~", (), (Q, Q, Q)),
    ("busybox rm -rf ~", ("run_command(busybox *)", "run_command(rm *)"), (Q, Q, Q)),
    ("rm -rf .git", ("run_command(rm *)",), (Q, Q, Q)),
    ("rm -rf ?*", ("run_command(rm *)",), (Q, Q, Q)),
    ("git -c clean.requireForce=false clean -dx", ("run_command(git *)",), (Q, Q, Q)),
    ("nice make", ("run_command(nice *)",), (Q, Q, A)),
    ("nice make", ("run_command(nice *)", "run_command(make)"), (A, A, A)),
    ("echo hi # it's fine", (), (Q, Q, A)),
    ("echo hi # it's fine", ("run_command(echo *)",), (A, A, A)),
]


@pytest.mark.parametrize(("command", "allow", "verdicts"), TABLE)
def test_modes_and_rules(world: PolicyWorld, command: str, allow: tuple[str, ...],
                         verdicts: tuple[Verdict, Verdict, Verdict]) -> None:
    (world.workspace / "sub").mkdir()
    got = tuple(_decide(world, command, mode, allow=allow).verdict
                for mode in (Mode.ASK, Mode.AUTO_EDIT, Mode.AUTO))
    assert got == verdicts, command


def test_table_size() -> None:
    assert len(TABLE) >= 50


@pytest.mark.parametrize("command", [
    "echo 'unclosed", "echo \"x", "echo $(ls", "echo `ls", "(echo a", "echo >", "ls\x00",
])
def test_unreadable_is_refused_before_anyone_is_asked(world: PolicyWorld, command: str) -> None:
    for mode in (Mode.ASK, Mode.AUTO):
        decision = _decide(world, command, mode, allow=("run_command",))
        assert decision.verdict is D and decision.error_code is ErrorCode.INVALID_ARGUMENTS
        assert "cannot be parsed" in decision.reason


def test_the_refusal_says_what_it_could_not_read(world: PolicyWorld) -> None:
    decision = _decide(world, "echo hi; echo 'oops", Mode.AUTO)
    assert "unterminated single quote starting at column 15" in decision.reason


def test_deny_and_ask_rules_for_write_file_apply_to_redirections(world: PolicyWorld) -> None:
    deny = _decide(world, "echo x > secrets/a", Mode.AUTO, deny=("write_file(secrets/**)",))
    assert deny.verdict is D and deny.rule == "write_file(secrets/**)"
    ask = _decide(world, "echo x > a.pth", Mode.AUTO, ask=("write_file(**/*.pth)",))
    assert ask.verdict is Q and ask.rule == "write_file(**/*.pth)"
    assert _decide(world, "echo x", Mode.AUTO, deny=("write_file",)).verdict is A


def test_a_redirection_into_reins_data_is_denied(world: PolicyWorld) -> None:
    target = world.paths.settings_file
    decision = _decide(world, f"echo '{{}}' > {target}", Mode.AUTO, allow=("run_command",))
    assert decision.verdict is D and "Reins' own settings" in decision.reason


def test_relative_redirections_are_judged_from_the_cwd(world: PolicyWorld) -> None:
    (world.workspace / "sub").mkdir()
    inside = _decide(world, "echo x > out", Mode.AUTO, cwd="sub")
    assert inside.verdict is A
    hook = _decide(world, "echo x > hooks/pre-commit", Mode.AUTO, cwd=".git")
    assert hook.verdict is Q


def _grants(world: PolicyWorld, command: str, mode: Mode) -> tuple[Grant, ...]:
    facts = world.run_facts(command)
    return tuple(Grant(r) for r in grant_rules(COMMAND, facts, world.session(mode)))


def test_a_session_grant_of_a_command_with_a_redirection_lets_it_run_again(
        world: PolicyWorld) -> None:
    first = _decide(world, "make > build.log", Mode.ASK)
    assert first.verdict is Q and first.can_session
    grants = _grants(world, "make > build.log", Mode.ASK)
    assert [g.rule.text for g in grants] == ["run_command(make '>' build.log)",
                                             "write_file(build.log)"]
    again = _decide(world, "make  >  build.log", Mode.ASK, grants=grants)
    assert again.verdict is A
    assert _decide(world, "make > other.log", Mode.ASK, grants=grants).verdict is Q


@pytest.mark.parametrize("command", [
    "echo hello $(id)", "echo $X", "ls ~", "echo > $F", "echo x >> ~/.bashrc",
    "echo x > .git/config",
])
def test_what_a_grant_could_not_match_again_is_allowed_once_only(
        world: PolicyWorld, command: str) -> None:
    decision = _decide(world, command, Mode.ASK)
    assert decision.verdict is Q
    assert not decision.can_session and not decision.can_always


def test_allow_every_command_still_asks_for_what_always_asks(world: PolicyWorld) -> None:
    everything = ("run_command", "run_command(*)")
    for rule in everything:
        assert _decide(world, "echo $(id) $X", Mode.ASK, allow=(rule,)).verdict is A
        assert _decide(world, "sh -c 'rm -rf ~'", Mode.AUTO, allow=(rule,)).verdict is Q
        assert _decide(world, "echo x > ~/x.pth", Mode.AUTO, allow=(rule,)).verdict is Q
        assert _decide(world, "echo x > $F", Mode.AUTO, allow=(rule,)).verdict is Q


def _verdicts(decisions: Mapping[str, Decision]) -> dict[str, Verdict]:
    return {k: d.verdict for k, d in decisions.items()}


def test_reasons_say_why(world: PolicyWorld) -> None:
    got = {
        "write": _decide(world, "echo hello > x.pth", Mode.ASK, allow=(ECHO,)),
        "outside": _decide(world, "echo hello > ~/y", Mode.AUTO),
        "unknown": _decide(world, "echo hello > $F", Mode.AUTO),
        "wrapped": _decide(world, "sh -c 'rm -rf ~'", Mode.AUTO),
        "blind": _decide(world, "cat x | sh", Mode.AUTO),
    }
    assert _verdicts(got) == {k: Q for k in got}
    assert "This command writes x.pth, and changes need your OK in Ask mode" in got["write"].reason
    assert "outside the workspace" in got["outside"].reason
    assert "cannot be named before it runs: $F" in got["unknown"].reason
    assert "recursive delete of ~" in got["wrapped"].reason
    assert "cannot tell what runs" in got["blind"].reason
