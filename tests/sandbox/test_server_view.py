"""What a sandboxed MCP server is shown besides a command's view: the folders its entry
names (kernel.sandbox.server.entry_path, server_view), never one too broad to show."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel.paths import AppPaths
from kernel.sandbox.server import entry_path, server_view


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "home" / "mcp" / "dist").mkdir(parents=True)
    (tmp_path / "home" / "mcp" / "dist" / "index.js").write_text("")
    pkg = tmp_path / "home" / "code" / "node_modules" / "@scope" / "server"
    (pkg / "dist").mkdir(parents=True)
    (pkg / "dist" / "index.js").write_text("")
    (pkg / "package.json").write_text("{}")
    (tmp_path / "home" / "code" / "package.json").write_text("{}")
    (tmp_path / "home" / "package.json").write_text("{}")  # the home: never shown
    (tmp_path / "opt" / "tool" / "bin").mkdir(parents=True)
    (tmp_path / "opt" / "tool" / "bin" / "serve").write_text("")
    return tmp_path


@pytest.mark.parametrize(("arg", "shown"), [
    ("{t}/home/mcp/dist/index.js", "{t}/home/mcp/dist"),  # a script: its folder
    # a package's script: the outermost project above it, whose node_modules it imports
    ("{t}/home/code/node_modules/@scope/server/dist/index.js", "{t}/home/code"),
    ("{t}/home/mcp", "{t}/home/mcp"),  # a folder: itself
    ("{t}/home", None),  # the home
    ("{t}/home/../home/mcp/dist", "{t}/home/mcp/dist"),  # resolved
    ("/", None),
    ("/usr", None),  # a top-level folder
    ("/etc/hostname", None),  # a file of a top-level folder: its folder is /etc
    ("mcp/dist/index.js", None),  # relative: no telling where it leads
    ("{t}/home/mcp/missing.js", None),
    ("--port=8080", None),
])
def test_an_entry_names_a_folder_to_show(tree: Path, arg: str, shown: str | None) -> None:
    home = str(tree / "home")
    expected = shown.format(t=tree) if shown is not None else None
    assert entry_path(arg.format(t=tree), home) == expected


def test_a_server_sees_its_program_and_script_folders_and_its_state_as_home(
        tree: Path) -> None:
    paths = AppPaths(data=tree / "data", config=tree / "config")
    state = tree / "data" / "mcp-state" / "s"
    state.mkdir(parents=True)
    view = server_view(program=(str(tree / "opt" / "tool" / "bin" / "serve"),
                                str(tree / "home" / "mcp" / "dist" / "index.js"), "/"),
                       state=str(state), workspace=None, home=str(tree / "home"), paths=paths)
    shown = {m.path: m.how for m in (*view.system, *view.after)}
    assert shown[str(tree / "opt" / "tool")] == "read-only"  # a bin folder brings its parent
    assert shown[str(tree / "home" / "mcp" / "dist")] == "read-only"
    assert shown[str(state)] == "writable"
    assert str(tree / "home") not in shown and "/" not in {
        path for path, how in shown.items() if how in ("read-only", "writable")}
    assert not any(path.startswith(("/run/", "/srv/", "/home/", "/opt/")) for path in shown)
    assert all("named by /etc" in m.why for m in view.system if m.path.startswith("/var/"))
