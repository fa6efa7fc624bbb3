"""`reins --help`, as a newcomer reads it: plain `reins` opens the app, and every command is
listed with one line that says what it does."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys

from kernel.cli.main import build_parser


def _commands() -> dict[str, str]:
    """Each subcommand's name and its one-line help, as the parser holds them."""
    found = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    assert len(found) == 1
    return {choice.dest: choice.help or "" for choice in found[0]._choices_actions}


def test_help_says_plain_reins_opens_the_app_and_lists_every_command_on_one_line(tmp_path):
    done = subprocess.run([sys.executable, "-c", "from desktop.entry import main; main()",
                           "--help"], capture_output=True, text=True, timeout=60, check=False,
                          env={"REINS_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "Plain `reins`, with no command, opens the desktop app." in text
    commands = _commands()
    assert set(commands) == {"exec", "export", "undo", "doctor", "eval"}
    for name, words in commands.items():
        assert words, f"{name} has no help line"
        assert re.search(rf"^ +{name} +{re.escape(words)}$", text, re.MULTILINE), \
            f"{name} is not listed on one line with its help:\n{text}"
    assert "--self-test" in text


def test_a_command_named_wrongly_points_to_the_list():
    done = subprocess.run([sys.executable, "-c", "import sys; from kernel.cli.main import main; "
                           "sys.exit(main(['exce']))"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2
    assert "invalid choice: 'exce'" in done.stderr and "exec" in done.stderr
