"""The policy sees what the shell will run (issue 15 §1–3), through the real path policy, the
real shell reader and classifier, and `decide()`: tables over modes and rules. What a
command writes is no longer guessed (issue 29): a redirection is words of the command, which
the rules see, and what it wrote is judged after it ran (a protected change is held:
tests/security/test_transaction_boundary.py)."""

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
    ("echo hello $(( $(id > ~/f; echo 1) ))", (ECHO,), (Q, Q, A)),
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
    # a redirection is words of the command: a rule sees those it can see, and what the
    # command wrote is judged after it ran (a protected change is held, in every mode)
    ("echo hello > x.pth", (ECHO,), (A, A, A)),
    ("echo hello '\\nimport os' > x.pth", (ECHO,), (A, A, A)),
    ("echo hello >> notes.txt", (ECHO,), (A, A, A)),
    ("echo hello 2> err.txt", (ECHO,), (A, A, A)),
    ("echo hello &> both.txt", (ECHO,), (A, A, A)),
    ("echo hello >| f", (ECHO,), (A, A, A)),
    ("echo hello 3<> f", (ECHO,), (A, A, A)),
    ("echo hello > ~/x.pth", (ECHO,), (Q, Q, A)),
    ("echo hello > /tmp/x.pth", (ECHO,), (A, A, A)),  # the sandbox's own tmpfs
    ("echo hello > .git/hooks/pre-commit", (ECHO,), (A, A, A)),
    ("echo hello >> ~/.bashrc", (ECHO,), (Q, Q, A)),
    ("echo hello > $F", (ECHO,), (Q, Q, A)),
    ("echo hello > \"$HOME/x\"", (ECHO,), (Q, Q, A)),
    ("echo hello > $(mktemp)", (ECHO,), (Q, Q, A)),
    ("cd sub && echo hello > x", (ECHO, "run_command(cd sub)"), (A, A, A)),
    ("cd sub && echo hello > x", (ECHO,), (Q, Q, A)),
    ("echo hello > /dev/null 2>&1", (ECHO,), (A, A, A)),
    ("echo hello 2>/dev/stderr >/dev/stdout >&2", (ECHO,), (A, A, A)),
    ("echo hello <<< word", (ECHO,), (A, A, A)),
    ("make > build/log.txt", ("run_command(make *)",), (A, A, A)),
    ("make > build/log.txt", ("run_command(make)",), (Q, Q, A)),
    ("echo hello > /etc/profile", (ECHO,), (Q, Q, Q)),  # into a system folder: destructive
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


def test_deny_and_ask_rules_see_a_redirection_s_words(world: PolicyWorld) -> None:
    deny = _decide(world, "echo x > secrets/a", Mode.AUTO, deny=("run_command(echo x > *)",))
    assert deny.verdict is D and deny.rule == "run_command(echo x '>' *)"
    ask = _decide(world, "make 2> a.log", Mode.AUTO, ask=("run_command(make *)",))
    assert ask.verdict is Q and ask.rule == "run_command(make *)"
    assert _decide(world, "echo x", Mode.AUTO, deny=("write_file",)).verdict is A


def test_a_working_folder_outside_the_workspace_asks(world: PolicyWorld) -> None:
    (world.workspace / "sub").mkdir()
    assert _decide(world, "echo x > out", Mode.AUTO, cwd="sub").verdict is A
    assert _decide(world, "echo x > out", Mode.AUTO, cwd=str(world.home)).verdict is Q


def _grants(world: PolicyWorld, command: str, mode: Mode) -> tuple[Grant, ...]:
    facts = world.run_facts(command)
    return tuple(Grant(r) for r in grant_rules(COMMAND, facts, world.session(mode)))


def test_a_session_grant_of_a_command_with_a_redirection_lets_it_run_again(
        world: PolicyWorld) -> None:
    first = _decide(world, "make > build.log", Mode.ASK)
    assert first.verdict is Q and first.can_session
    grants = _grants(world, "make > build.log", Mode.ASK)
    assert [g.rule.text for g in grants] == ["run_command(make '>' build.log)"]
    again = _decide(world, "make  >  build.log", Mode.ASK, grants=grants)
    assert again.verdict is A
    assert _decide(world, "make > other.log", Mode.ASK, grants=grants).verdict is Q


@pytest.mark.parametrize("command", [
    "echo hello $(id)", "echo $X", "ls ~", "echo > $F", "echo x >> ~/.bashrc",
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
        assert _decide(world, "cat x | sh", Mode.AUTO, allow=(rule,)).verdict is Q
        assert _decide(world, "$X -rf ~", Mode.AUTO, allow=(rule,)).verdict is Q


def _verdicts(decisions: Mapping[str, Decision]) -> dict[str, Verdict]:
    return {k: d.verdict for k, d in decisions.items()}


def test_reasons_say_why(world: PolicyWorld) -> None:
    got = {
        "mode": _decide(world, "echo hello > x.pth", Mode.ASK),
        "outside": _decide(world, "ls", Mode.AUTO, cwd=str(world.home)),
        "wrapped": _decide(world, "sh -c 'rm -rf ~'", Mode.AUTO),
        "blind": _decide(world, "cat x | sh", Mode.AUTO),
    }
    assert _verdicts(got) == {k: Q for k in got}
    assert "Commands need your OK in Ask mode" in got["mode"].reason
    assert "outside the workspace" in got["outside"].reason
    assert "recursive delete of ~" in got["wrapped"].reason
    assert "cannot tell what runs" in got["blind"].reason
