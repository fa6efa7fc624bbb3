"""The `reins` entry point: subcommands go to the kernel CLI without loading Qt."""

from __future__ import annotations

import subprocess
import sys


def test_subcommands_run_the_kernel_cli_without_importing_qt(tmp_path):
    code = ("import sys\n"
            "from desktop.entry import main\n"
            "rc = main(['export', 'no-such-session'])\n"
            "assert not [m for m in sys.modules if m.startswith('PySide6')], 'Qt imported'\n"
            "sys.exit(rc)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"REINS_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
                          timeout=120, check=False)
    assert done.returncode == 2, done.stderr
    assert "no-such-session" in done.stderr
