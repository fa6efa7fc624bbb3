"""Which entries the sandbox pins (kernel.sandbox.pin.links_to_pin): every marked link, then
every folder above one inside the workspace, outermost first; nothing else."""

from __future__ import annotations

import pytest

from kernel.sandbox.marks import Mark
from kernel.sandbox.pin import Pin, links_to_pin


def _link(path: str, led: str = "t") -> Mark:
    return Mark(path, "protected", ".vscode/**", "link", 1, led)


@pytest.mark.parametrize(("marks", "pins"), [
    ([], []),
    ([Mark(".git", "git-dir", ".git", "dir", 1)], []),
    ([Mark(".env", "secret", ".env", "file", 1)], []),
    ([_link(".vscode", "shared")], [("/w/.vscode", "shared", False)]),
    ([_link("a/b/.idea", "../x")], [("/w/a/b/.idea", "../x", False), ("/w/a", "", True),
                                   ("/w/a/b", "", True)]),
    ([_link("a/c/.envrc"), _link("a/b/.idea")],
     [("/w/a/b/.idea", "t", False), ("/w/a/c/.envrc", "t", False), ("/w/a", "", True),
      ("/w/a/b", "", True), ("/w/a/c", "", True)]),
    ([_link("repo/.git/hooks", "../../h"), Mark("repo/.git", "git-dir", ".git", "dir", 2)],
     [("/w/repo/.git/hooks", "../../h", False), ("/w/repo", "", True),
      ("/w/repo/.git", "", True)]),
])
def test_what_is_pinned(marks: list[Mark], pins: list[tuple[str, str, bool]]) -> None:
    assert links_to_pin("/w", marks) == tuple(Pin(p, t, folder=f) for p, t, f in pins)
