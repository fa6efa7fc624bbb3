"""`at_any_depth` and the git-named vocabulary live beside the path rules (issue 29 §5), so
the file tools' path policy imports no sandbox internal."""

from __future__ import annotations

import subprocess
import sys
from pathlib import PurePath

import pytest

from kernel import pathrules


def test_the_path_policy_loads_no_sandbox_module() -> None:
    code = ("import sys, kernel.tools.pathpolicy; "
            "print([m for m in sys.modules if m.startswith('kernel.sandbox')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]"


@pytest.mark.parametrize("resolved, key, expected", [
    ("/ws/app/lib/tools/t.sh", "/ws/app/**/tools/t.sh", True),
    ("/ws/app/tools/t.sh", "/ws/app/**/tools/t.sh", True),
    ("/ws/app/tools/t.sh/x", "/ws/app/**/tools/t.sh", True),
    ("/ws/other/tools/t.sh", "/ws/app/**/tools/t.sh", False),
    ("/ws/app/lib/tools/u.sh", "/ws/app/**/tools/t.sh", False),
    ("/ws/app/t.sh", "/ws/app/**/tools/t.sh", False),
])
def test_at_any_depth(resolved: str, key: str, expected: bool) -> None:
    assert pathrules.at_any_depth(PurePath(resolved), PurePath(key)) is expected
