"""Red team: a permission rule that parses but can never match what it evidently says is
refused with a clear error (fail closed), never kept as a rule that silently matches
nothing. Claude Code writes a command prefix as `Bash(curl:*)`; in Reins `curl:*` would be
one word glob (`curl:x`), so a deny rule `run_command(curl:*)` would deny no curl at all."""

from __future__ import annotations

import json

import pytest

from kernel.paths import AppPaths
from kernel.policy.rules import RuleError, parse_rule
from kernel.policy.settings import SettingsError, load_settings, settings_problems

PREFIX_FORMS = [
    "run_command(curl:*)", "run_command(git push:*)", "run_command(npm run test:*)",
    "run_command( rm:* )", "run_command(/usr/bin/wget:*)", "run_command(env curl:*)",
    "run_command(docker pull ubuntu:*)",
]


@pytest.mark.parametrize("text", PREFIX_FORMS)
def test_the_prefix_form_is_refused_and_says_what_to_write(text: str) -> None:
    with pytest.raises(RuleError) as caught:
        parse_rule(text)
    head = text[text.index("(") + 1:text.rindex(":*")].strip()
    assert f"run_command({head} *)" in str(caught.value)
    assert f"`{head.rsplit(' ', 1)[-1]}:?*`" in str(caught.value)


@pytest.mark.parametrize(("text", "words"), [
    ("run_command(curl *)", ["curl", "x"]),
    ("run_command(docker pull ubuntu:?*)", ["docker", "pull", "ubuntu:22.04"]),
    ("run_command(git log --format=%h:*  --oneline)", ["git", "log", "--format=%h:x",
                                                       "--oneline"]),
])
def test_what_it_suggests_parses_and_matches(text: str, words: list[str]) -> None:
    rule = parse_rule(text)
    assert rule.command is not None and rule.command.matches(words)


@pytest.mark.parametrize("which", ["allow", "ask", "deny"])
def test_settings_with_the_prefix_form_do_not_load(reins_home: AppPaths, which: str) -> None:
    data = {"permissions": {which: ["run_command(curl:*)"]}}
    reins_home.settings_file.parent.mkdir(parents=True, exist_ok=True)
    reins_home.settings_file.write_text(json.dumps(data))
    with pytest.raises(SettingsError, match="curl"):
        load_settings(reins_home)
    [problem] = settings_problems(data)
    assert problem.path == ("permissions", which, "0")
