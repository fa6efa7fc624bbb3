"""The tools Reins ships with. `builtin_tools()` is the list the registry starts from."""

from __future__ import annotations

from kernel.tools.builtin.files import (
    edit_file,
    glob_files,
    grep,
    list_directory,
    read_file,
    write_file,
)
from kernel.tools.builtin.outputs import read_tool_output
from kernel.tools.spec import ToolSpec


def builtin_tools() -> list[ToolSpec]:
    """The file tools and read_tool_output (run_command comes from its own factory)."""
    return [
        read_file,
        write_file,
        edit_file,
        list_directory,
        glob_files,
        grep,
        read_tool_output,
    ]
