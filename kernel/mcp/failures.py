"""Why a server did not start, in words a user can act on (pure functions).

The classes: the command is missing (not on the server's PATH, or no such file), it is not
executable, its interpreter is missing (a `#!` line naming a program that does not exist,
or `/usr/bin/env node` with no `node` on the PATH: exit code 127), it exited, it did not
answer within its `startup_timeout_s`.
"""

from __future__ import annotations

import errno

STARTUP_TIMEOUT_HINT = ("a first `npx -y` or `uvx` start downloads the package: raise "
                        "\"startup_timeout_s\" in its mcpServers entry if it needs longer")


def exit_hint(code: int | None) -> str:
    """What an exit code says beyond itself ('' when nothing)."""
    if code == 127:
        return ("code 127: a program it runs was not found; is its interpreter (node, "
                "python, uv …) on the server's PATH?")
    if code == 126:
        return "code 126: a program it runs is not executable"
    return ""


def shebang_interpreter(first_line: bytes) -> str:
    """The interpreter a script's `#!` line names ('' when it has none)."""
    if not first_line.startswith(b"#!"):
        return ""
    words = first_line[2:].decode("utf-8", "replace").split()
    return words[0] if words else ""


def start_error(program: str, error: OSError, *, search_path: str,
                first_line: bytes | None, missing_cwd: str | None = None) -> str:
    """Why `program` could not be executed. `first_line` is the program file's first line
    when the file exists (None when it does not); `search_path` the PATH it was looked up
    on (for a bare name); `missing_cwd` the folder it was to start in, when that is missing."""
    if missing_cwd is not None:
        return (f"its folder {missing_cwd!r} does not exist (\"cwd\" in its mcpServers "
                f"entry)")
    if error.errno == errno.ENOENT or isinstance(error, FileNotFoundError):
        if first_line is not None:
            interpreter = shebang_interpreter(first_line)
            named = f" {interpreter!r}" if interpreter else ""
            return (f"the command {program!r} exists but its interpreter{named} (from its #! "
                    f"line) does not")
        if "/" not in program:
            return (f"the command {program!r} is not on the server's PATH "
                    f"({search_path or 'empty'}); install it, or give its full path in "
                    f"\"command\"")
        return f"the command {program!r} does not exist (No such file or directory)"
    if error.errno == errno.EACCES or isinstance(error, PermissionError):
        return f"the command {program!r} is not executable (permission denied)"
    if error.errno == errno.ENOEXEC:
        return f"the command {program!r} is not a program this system can run (no #! line?)"
    return f"cannot start {program!r}: {error.strerror or error}"


def with_hint(text: str, hint: str) -> str:
    """`text (hint)`, or `text` when there is no hint."""
    return f"{text} ({hint})" if hint else text
