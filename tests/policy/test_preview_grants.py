"""Previews for people, grants made from approved calls, offered tools in read-only mode."""

from __future__ import annotations

from kernel.events import ApprovalDecision, GrantRevoked
from kernel.policy.decide import Mode, Verdict, offered_tools
from kernel.policy.facts import command_facts
from kernel.policy.grants import (
    decode_rules,
    describe,
    encode_rules,
    grant_rules,
    session_grants,
)
from kernel.policy.preview import MAX_LINES, build_preview, command_preview
from kernel.policy.rules import parse_rule
from kernel.tools.builtin.files import edit_file, read_file, write_file
from kernel.tools.spec import Risk
from tests.policy.worldkit import COMMAND, MCP_READ, READ, WRITE, PolicyWorld, make_spec


def _preview(world: PolicyWorld, spec: object, args: dict) -> str:
    facts = world.facts(spec, args)  # type: ignore[arg-type]
    return build_preview(spec, args, policy=world.policy, paths=facts.paths,  # type: ignore[arg-type]
                         sandbox="bubblewrap", network=False)


def test_write_preview_is_a_diff_against_the_current_file(world: PolicyWorld) -> None:
    (world.workspace / "a.txt").write_text("one\ntwo\nthree\n")
    text = _preview(world, write_file, {"path": "a.txt", "content": "one\n2\nthree\n"})
    assert f"--- a{world.workspace}/a.txt" in text
    assert "-two\n+2\n" in text
    assert " one\n" in text


def test_write_preview_of_a_new_file(world: PolicyWorld) -> None:
    text = _preview(world, write_file, {"path": "new/b.txt", "content": "hello"})
    assert text.startswith("--- /dev/null")
    assert "+hello\n\\ No newline at end of file" in text
    assert not (world.workspace / "new").exists()


def test_edit_preview_applies_the_edit_in_memory(world: PolicyWorld) -> None:
    target = world.workspace / "c.py"
    target.write_text("x = 1\ny = 1\n")
    text = _preview(world, edit_file, {"path": "c.py", "old_string": "y = 1",
                                       "new_string": "y = 2"})
    assert "-y = 1\n+y = 2\n" in text
    assert target.read_text() == "x = 1\ny = 1\n"
    ambiguous = _preview(world, edit_file, {"path": "c.py", "old_string": "= 1",
                                            "new_string": "= 3"})
    assert "will fail" in ambiguous and "2 times" in ambiguous
    missing = _preview(world, edit_file, {"path": "nope.py", "old_string": "a",
                                          "new_string": "b"})
    assert "does not exist" in missing


def test_large_and_binary_previews_are_bounded(world: PolicyWorld) -> None:
    (world.workspace / "bin").write_bytes(b"\x00\x01\x02")
    assert "binary" in _preview(world, write_file, {"path": "bin", "content": "x"})
    big = "".join(f"line {i}\n" for i in range(MAX_LINES * 2))
    text = _preview(world, write_file, {"path": "big.txt", "content": big})
    assert len(text.splitlines()) == MAX_LINES + 1
    assert "more lines not shown" in text


def test_command_preview_says_command_cwd_sandbox_and_network(world: PolicyWorld) -> None:
    text = build_preview(COMMAND, {"command": "npm  install"}, policy=world.policy, paths={},
                         sandbox="none (bwrap missing)", network=True)
    assert text == command_preview("npm  install", cwd=world.workspace,
                                   sandbox="none (bwrap missing)", network=True)
    assert text.splitlines() == ["$ npm  install", f"cwd: {world.workspace}",
                                 "sandbox: none (bwrap missing)",
                                 "network: yes, the internet only (a network namespace of "
                                 "its own through pasta: not this machine's local services "
                                 "or sockets)"]
    local = command_preview("curl localhost", cwd=world.workspace, sandbox="bubblewrap",
                            network=True, local_network=True)
    assert local.splitlines()[-1].startswith("network: yes, this machine's network, local "
                                             "services, X11 and D-Bus sockets included")
    assert command_preview("ls", cwd=world.workspace, sandbox="bubblewrap", network=False,
                           local_network=True).splitlines()[-1] == "network: no"


def test_other_tools_preview_their_arguments(world: PolicyWorld) -> None:
    text = build_preview(MCP_READ, {"repo": "x"}, policy=world.policy, paths={},
                         sandbox="bubblewrap", network=False)
    assert '"repo": "x"' in text


def test_grant_rules_match_the_call_and_equivalent_spellings(world: PolicyWorld) -> None:
    facts = world.facts(COMMAND, {"command": "git  status && ls '*'"},
                        command=command_facts("git  status && ls '*'"))
    rules = grant_rules(COMMAND, facts, world.session(Mode.ASK))
    assert [r.text for r in rules] == ["run_command(git status)", "run_command(ls [*])"]
    again = command_facts("git status")
    assert rules[0].command is not None and rules[0].command.matches(again.parts[0])
    assert rules[1].command is not None
    assert rules[1].command.matches(["ls", "*"])
    assert not rules[1].command.matches(["ls", "secret"])


def test_grant_rules_for_paths_and_plain_tools(world: PolicyWorld) -> None:
    session = world.session(Mode.ASK)
    inside = grant_rules(WRITE, world.facts(WRITE, {"path": "docs/a.md"}), session)
    assert [r.text for r in inside] == ["write_file(docs/a.md)"]
    home = grant_rules(READ, world.facts(READ, {"path": "~/notes/x.md"}), session)
    assert [r.text for r in home] == ["read_file(~/notes/x.md)"]
    outside = grant_rules(READ, world.facts(READ, {"path": "/etc/hostname"}), session)
    assert [r.text for r in outside] == ["read_file(/etc/hostname)"]
    plain = grant_rules(MCP_READ, world.facts(MCP_READ, {}), session)
    assert [r.text for r in plain] == ["mcp__git__status"]


def test_describe_says_the_rule_in_words() -> None:
    assert describe(parse_rule("run_command(git status)")) == (
        "run_command: the command `git status` (any spacing or quoting), in every session")
    assert "followed by any arguments" in describe(parse_rule("run_command(npm test *)"))
    assert describe(parse_rule("write_file(docs/**)")) == (
        "write_file: paths matching docs/** in the session's workspace")
    assert "home folder" in describe(parse_rule("read_file(~/n/**)"))
    assert describe(parse_rule("mcp__git__*")) == (
        "every call of every tool named like mcp__git__*")


def test_session_grants_are_rebuilt_from_events() -> None:
    events = [
        ApprovalDecision("s", "c1", "allow_session", scope="session",
                         rule=encode_rules(["run_command(git status)", "run_command(ls)"])),
        ApprovalDecision("s", "c2", "allow_session", scope="session",
                         rule="run_command(npm install)", network=True),
        ApprovalDecision("s", "c3", "allow_once", scope="once"),
        ApprovalDecision("s", "c4", "allow", decided_by="policy", scope="call",
                         rule="mode auto"),
        GrantRevoked("s", rule="run_command(ls)", scope="session"),
    ]
    grants = session_grants(events)
    assert [(g.rule.text, g.network) for g in grants] == [
        ("run_command(git status)", False), ("run_command(npm install)", True)]
    assert decode_rules(encode_rules(["a + b"])) == ["a + b"]
    assert decode_rules("") == []


def test_read_only_offers_only_read_tools() -> None:
    specs = [read_file, write_file, edit_file, COMMAND, make_spec("wipe", Risk.DESTRUCTIVE)]
    assert offered_tools(specs, Mode.READ_ONLY) == ["read_file"]
    for mode in (Mode.ASK, Mode.AUTO_EDIT, Mode.AUTO):
        assert offered_tools(specs, mode) is None


def test_command_facts_use_the_shell_parser_and_classifier() -> None:
    facts = command_facts("FOO=1 rm -rf ~")
    assert facts.destructive and facts.destructive_reason
    assert facts.parts == (("FOO=1", "rm", "-rf", "~"),)
    assert command_facts("curl https://example.com").network
    broken = command_facts("echo 'x")
    assert broken.parse_error and not broken.parts


def test_unparsable_command_is_denied_before_rules(world: PolicyWorld) -> None:
    facts = command_facts("echo 'x")
    d = world.decide(COMMAND, {"command": "echo 'x"}, Mode.AUTO, command=facts)
    assert d.verdict is Verdict.DENY
