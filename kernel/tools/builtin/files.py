"""Built-in file tools, confined by the one PathPolicy (read_file, write_file, edit_file,
list_directory, glob, grep). Every path goes through `ctx.path_policy`; reads and writes of
file content go through directory file descriptors (see pathpolicy)."""

from __future__ import annotations

import collections
import difflib
import itertools
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Annotated, TextIO

from kernel.pathrules import secret_match
from kernel.tools.externalize import looks_binary
from kernel.tools.pathpolicy import PathPolicy
from kernel.tools.schema import tool
from kernel.tools.spec import ErrorCode, Risk, ToolContext, ToolError, ToolResult
from kernel.transaction.changeset import Change, ChangeSet

MAX_READ_LINES = 2000
MAX_LINE_CHARS = 2000
COUNT_LINES_UP_TO_BYTES = 8 * 1024 * 1024
"""read_file counts all lines (for "lines a–b of N") only in files up to this size."""
COUNT_CHUNK_CHARS = 1 << 20
"""read_file reads, and counts lines, in pieces of this many characters."""
CHECK_EVERY = 4096
"""Lines or folder entries between two checks whether the call was stopped."""
MAX_LIST_ENTRIES = 1000
MAX_GLOB_RESULTS = 1000
MAX_GREP_MATCHES = 1000
MAX_GREP_LINE_CHARS = 300
MAX_GREP_FILE_BYTES = 20 * 1024 * 1024
SKIPPED_DIRS = frozenset({".git"})
"""Folders glob and grep do not descend into (name them explicitly in `path` to search them)."""
SECRET_MARK = "  (secret)"
"""How list_directory and glob mark a secret location (kernel.pathrules.SECRET_PATTERNS)."""
MAX_SECRETS_NAMED = 5

PathArg = Annotated[str, "A path relative to the workspace, or absolute, or starting with ~."]


def _shown(ctx: ToolContext, resolved: Path) -> str:
    """A path as the model should see it: relative inside the workspace, else absolute."""
    if resolved.is_relative_to(ctx.workspace):
        rel = resolved.relative_to(ctx.workspace).as_posix()
        return rel or "."
    return str(resolved)


MAX_COUNTED_BYTES = 4 << 20
"""A file larger than this is replaced without its lines counted."""


def _line_counts(old: bytes, new: bytes) -> tuple[int, int]:
    """Lines added and removed (as multisets of lines, as kernel.transaction reads them)."""
    before = collections.Counter(old.splitlines())
    after = collections.Counter(new.splitlines())
    return sum((after - before).values()), sum((before - after).values())


def _write_step(ctx: ToolContext, resolved: Path, data: bytes, old: bytes | None
                ) -> tuple[bool, ChangeSet | None]:
    """Write `data` to `resolved` as one checkpoint step of the call (kernel.transaction:
    what the file was is kept first, so the user can undo the write, as a command's changes).
    Whether it existed, and the change (None outside the workspace or without a store)."""
    workspace = ctx.path_policy.workspace
    if ctx.checkpoints is None or not resolved.is_relative_to(workspace):
        return ctx.path_policy.write_bytes(resolved, data), None
    rel = resolved.relative_to(workspace).as_posix()
    recorder = ctx.checkpoints.begin(ctx.session_id, ctx.call_id, workspace)
    try:
        recorder.keep(rel)
        existed = ctx.path_policy.write_bytes(resolved, data)
    except BaseException:
        recorder.rollback()
        raise
    added, removed = _line_counts(old or b"", data)
    changes = ChangeSet((Change(rel, "modified" if existed else "created", "file",
                                added=added, removed=removed),))
    recorder.commit(changes)
    return existed, changes


def _not_found(ctx: ToolContext, resolved: Path, raw: str) -> ToolError:
    hint = "Check the spelling, or use list_directory or glob to find it."
    names: list[str] = []
    if ctx.path_policy.classify(str(resolved.parent), write=False).names_allowed:
        try:
            names = os.listdir(resolved.parent)
        except OSError:
            names = []
    close = difflib.get_close_matches(resolved.name, names, n=3)
    if close:
        hint = f"Similar names in the same folder: {', '.join(close)}. " + hint
    return ToolError(f"{raw!r} ({_shown(ctx, resolved)}) does not exist.", hint=hint)


def _stat_existing(ctx: ToolContext, resolved: Path, raw: str) -> os.stat_result:
    try:
        return os.stat(resolved)
    except FileNotFoundError:
        raise _not_found(ctx, resolved, raw) from None
    except OSError as exc:
        raise ToolError(f"Cannot access {_shown(ctx, resolved)}: {exc.strerror}.") from exc


def _open_text_file(ctx: ToolContext, resolved: Path, raw: str) -> int:
    """A read fd of a regular, non-binary file (or a ToolError saying why not)."""
    st = _stat_existing(ctx, resolved, raw)
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(
            f"{_shown(ctx, resolved)} is a folder, not a file.",
            hint="Use list_directory to see what it contains.",
        )
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(
            f"{_shown(ctx, resolved)} is not a regular file (a device, pipe or socket), "
            f"so it cannot be read as text.",
            hint="Only regular text files can be read.",
        )
    fd = ctx.path_policy.open_read(resolved)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ToolError(
                f"{_shown(ctx, resolved)} is not a regular file (a device, pipe or socket), "
                f"so it cannot be read as text.",
                hint="Only regular text files can be read.",
            )
        sample = os.pread(fd, 8192, 0)
        if looks_binary(sample):
            raise ToolError(
                f"{_shown(ctx, resolved)} is a binary file ({st.st_size} bytes); read_file "
                f"only shows text.",
                hint="Inspect it with a command suited to its format instead.",
            )
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_text_arg(name: str, value: str) -> bytes:
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ToolError(
            f"{name} contains an unpaired surrogate (\\u{ord(value[exc.start]):04x}) at "
            f"character {exc.start}, which cannot be written as UTF-8.",
            hint="Remove it or write the intended character instead.",
            code=ErrorCode.INVALID_ARGUMENTS,
        ) from exc


@dataclass(frozen=True)
class Lines:
    """What `read_lines` found: the lines asked for (without their line ends), how many
    lines the file has (when `counted`), and whether more lines follow uncounted."""

    shown: list[str]
    total: int
    more_unknown: bool


def read_lines(f: TextIO, first: int, limit: int, *, count_all: bool,
               check: Callable[[], None], chunk_chars: int = COUNT_CHUNK_CHARS) -> Lines:
    """Lines `first`..`first + limit - 1` of `f` (lines end at "\n", as reading a file
    opened with newline="\n" line by line splits them), with `count_all` counting the
    lines after them too. Lines are skipped CHECK_EVERY at a time and the rest counted in
    pieces of `chunk_chars` (no Python step per line); `check` is called between them (a
    stopped call raises there)."""
    number = 0
    while number < first - 1:
        passed = len(list(itertools.islice(f, min(CHECK_EVERY, first - 1 - number))))
        check()
        number += passed
        if not passed:
            return Lines([], number, False)
    shown = [line.removesuffix("\n") for line in itertools.islice(f, limit)]
    number += len(shown)
    if len(shown) < limit:
        return Lines(shown, number, False)
    if not count_all:
        return Lines(shown, number, bool(f.read(1)))
    last = "\n"
    while chunk := f.read(chunk_chars):
        check()
        number += chunk.count("\n")
        last = chunk
    return Lines(shown, number + (0 if last.endswith("\n") else 1), False)


@tool(
    risk=Risk.READ,
    concurrent_safe=True,
    timeout_s=30,
    path_params=("path",),
    summarize=lambda a: str(a.get("path", "")),
)
def read_file(
    ctx: ToolContext,
    path: PathArg,
    offset: Annotated[int, "The first line to show (1 = the first line).", {"minimum": 1}] = 1,
    limit: Annotated[
        int, "How many lines to show at most.", {"minimum": 1, "maximum": MAX_READ_LINES}
    ] = MAX_READ_LINES,
) -> str:
    """Read a text file. Lines are shown numbered ("   12\\tcontent"); use offset and limit to
    read a long file in parts. Binary files are refused."""
    resolved = ctx.path_policy.resolve_read(path)
    fd = _open_text_file(ctx, resolved, path)
    size = os.fstat(fd).st_size
    count_all = size <= COUNT_LINES_UP_TO_BYTES
    with open(fd, encoding="utf-8", errors="replace", newline="\n") as f:
        found = read_lines(f, offset, limit, count_all=count_all, check=ctx.check_stop)
    total = found.total
    shown: list[str] = []
    for number, line in enumerate(found.shown, offset):
        text = line.rstrip("\r\n")
        if len(text) > MAX_LINE_CHARS:
            text = text[:MAX_LINE_CHARS] + f"… [line cut at {MAX_LINE_CHARS} characters]"
        shown.append(f"{number:6}\t{text}")
    name = _shown(ctx, resolved)
    if found.more_unknown:
        last = offset + len(shown) - 1
        return "\n".join(shown) + (
            f"\n[lines {offset}–{last} of {name} ({size} bytes, more lines follow); call "
            f"read_file with offset={last + 1} for more]"
        )
    if total == 0:
        return f"[{name} is empty]"
    if offset > total:
        raise ToolError(
            f"{name} has {total} lines, so offset {offset} is past the end.",
            hint=f"Use an offset between 1 and {total}.",
            code=ErrorCode.INVALID_ARGUMENTS,
        )
    last = offset + len(shown) - 1
    body = "\n".join(shown)
    if offset > 1 or last < total:
        more = f"; call read_file with offset={last + 1} for more" if last < total else ""
        body += f"\n[lines {offset}–{last} of {total} in {name}{more}]"
    return body


@tool(
    risk=Risk.WRITE,
    timeout_s=30,
    path_params=("path",),
    summarize=lambda a: f"{a.get('path', '')} ({len(str(a.get('content', '')))} chars)",
)
def write_file(
    ctx: ToolContext,
    path: PathArg,
    content: Annotated[str, "The complete new content of the file."],
) -> ToolResult:
    """Create a file or replace its whole content (missing parent folders are created). The
    file is replaced atomically: readers see the old or the new content, never a mix."""
    resolved = ctx.path_policy.resolve_write(path)
    data = _check_text_arg("content", content)
    if resolved.is_dir():
        raise ToolError(
            f"{_shown(ctx, resolved)} is a folder; write_file writes files.",
            hint="Give a file path inside that folder.",
        )
    try:
        old: bytes | None = ctx.path_policy.read_bytes(resolved, max_bytes=MAX_COUNTED_BYTES)
    except OSError:
        old = None
    existed, changes = _write_step(ctx, resolved, data, old)
    lines = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
    what = "replaced its previous content" if existed else "new file"
    return ToolResult(ctx.call_id, f"Wrote {len(data)} bytes ({lines} lines) to "
                      f"{_shown(ctx, resolved)} ({what}).", changes=changes)


@tool(
    risk=Risk.WRITE,
    timeout_s=30,
    path_params=("path",),
    summarize=lambda a: str(a.get("path", "")),
)
def edit_file(
    ctx: ToolContext,
    path: PathArg,
    old_string: Annotated[str, "The exact text to replace, including whitespace."],
    new_string: Annotated[str, "The text to put in its place."],
    replace_all: Annotated[bool, "Replace every occurrence instead of exactly one."] = False,
) -> ToolResult:
    """Replace text in an existing UTF-8 file. old_string must occur exactly once unless
    replace_all is true; include enough surrounding lines to make it unique."""
    resolved = ctx.path_policy.resolve_write(path)
    name = _shown(ctx, resolved)
    _check_text_arg("new_string", new_string)
    if not old_string:
        raise ToolError(
            "old_string is empty, so there is nothing to find.",
            hint="Give the exact text to replace; to write a whole file use write_file.",
            code=ErrorCode.INVALID_ARGUMENTS,
        )
    if old_string == new_string:
        raise ToolError(
            "old_string and new_string are identical, so the edit would change nothing.",
            hint="Give the new text in new_string.",
            code=ErrorCode.INVALID_ARGUMENTS,
        )
    fd = _open_text_file(ctx, resolved, path)
    with os.fdopen(fd, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"{name} is not valid UTF-8 (byte {exc.start}), so edit_file cannot change it safely.",
            hint="Rewrite it with write_file if you know its full content.",
        ) from exc
    old, new = old_string, new_string
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\n" in old and "\r\n" not in old:
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = text.count(old)
    if count == 0:
        raise ToolError(
            f"old_string was not found in {name} (0 matches).",
            hint="Read the file again and copy the exact text, including indentation and "
            "line breaks.",
        )
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_string occurs {count} times in {name}; it must be unique.",
            hint="Add surrounding lines to old_string so it matches once, or set "
            "replace_all=true to change all of them.",
        )
    first_line = text.count("\n", 0, text.index(old)) + 1
    updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    _existed, changes = _write_step(ctx, resolved, updated.encode("utf-8"), raw)
    replaced = count if replace_all else 1
    return ToolResult(ctx.call_id, f"Edited {name}: replaced {replaced} occurrence(s), the "
                      f"first at line {first_line}.", changes=changes)


@tool(
    risk=Risk.READ,
    concurrent_safe=True,
    timeout_s=30,
    path_params=("path",),
    summarize=lambda a: str(a.get("path", ".")),
)
def list_directory(ctx: ToolContext, path: PathArg = ".") -> str:
    """List a folder: sub-folders end with '/', symlinks show their target, files show
    their size in bytes. Secret locations (keys, credentials, .env files) are marked
    '(secret)': reading one asks the user."""
    resolved = ctx.path_policy.resolve_read(path, names_only=True)
    st = _stat_existing(ctx, resolved, path)
    name = _shown(ctx, resolved)
    if not stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{name} is a file, not a folder.", hint="Use read_file to read it.")
    try:
        with os.scandir(resolved) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        raise ToolError(f"Cannot list {name}: {exc.strerror}.") from exc
    lines = []
    secrets = 0
    for entry in entries[:MAX_LIST_ENTRIES]:
        try:
            if entry.is_symlink():
                line = f"{entry.name} -> {os.readlink(entry.path)}"
            elif entry.is_dir(follow_symlinks=False):
                line = f"{entry.name}/"
            else:
                line = f"{entry.name}  ({entry.stat(follow_symlinks=False).st_size} bytes)"
        except OSError:
            line = f"{entry.name}  (unreadable)"
        if secret_match(entry.path) is not None:
            secrets += 1
            line += SECRET_MARK
        lines.append(line)
    if not entries:
        return f"[{name} is empty]"
    header = f"{name}/ ({len(entries)} entries)"
    if len(entries) > MAX_LIST_ENTRIES:
        lines.append(f"[… {len(entries) - MAX_LIST_ENTRIES} more entries not shown]")
    return header + "\n" + "\n".join(lines) + _secret_footer(secrets)


def _secret_footer(count: int) -> str:
    if not count:
        return ""
    return (f"\n[{count} marked (secret): secret locations (keys, credentials, tokens, .env "
            f"files); reading one with read_file asks the user, grep skips them]")


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A relative glob as a regex over '/'-separated paths: `*` and `?` stay inside one
    folder, `**` spans any number of folders, `[...]` is a character class."""
    out = []
    segments = PurePosixPath(pattern).parts
    for i, segment in enumerate(segments):
        last = i == len(segments) - 1
        if segment == "**":
            out.append(".*" if last else "(?:[^/]+/)*")
            continue
        j = 0
        part = ""
        while j < len(segment):
            ch = segment[j]
            if ch == "*":
                part += "[^/]*"
            elif ch == "?":
                part += "[^/]"
            elif ch == "[" and segment.find("]", j + 2) > 0:
                end = segment.find("]", j + 2)
                body = segment[j + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                part += "[" + body.replace("\\", "\\\\") + "]"
                j = end
            else:
                part += re.escape(ch)
            j += 1
        out.append(part + ("" if last else "/"))
    return re.compile("".join(out) + r"\Z")


def _compile_glob(pattern: str, field: str) -> re.Pattern[str]:
    if not pattern or pattern.startswith(("/", "~")) or ".." in PurePosixPath(pattern).parts:
        raise ToolError(
            f"{field} {pattern!r} must be a relative pattern without '..' (like '**/*.py').",
            hint="Put the folder to search in `path` and keep the pattern relative to it.",
            code=ErrorCode.INVALID_ARGUMENTS,
        )
    try:
        return glob_regex(pattern)
    except re.error as exc:
        raise ToolError(
            f"{field} {pattern!r} is not a valid glob: {exc}.",
            hint="Check the [...] character classes in the pattern.",
            code=ErrorCode.INVALID_ARGUMENTS,
        ) from exc


def _walk(ctx: ToolContext, base: Path, prune: Callable[[str], bool] = lambda _rel: False
          ) -> Iterator[tuple[str, bool]]:
    """(path relative to base, is folder) for everything below base; links not followed.
    A folder for which `prune(relative path)` is true is listed but not descended into.
    Ends (ToolStopped) once the call is stopped."""
    for root, dirs, files in os.walk(base, followlinks=False):
        ctx.check_stop()
        rel_root = os.path.relpath(root, base)
        prefix = "" if rel_root == "." else rel_root.replace(os.sep, "/") + "/"
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for d in dirs:
            yield prefix + d, True
        dirs[:] = [d for d in dirs if not prune(prefix + d)]
        for n, f in enumerate(sorted(files), 1):
            if n % CHECK_EVERY == 0:
                ctx.check_stop()
            yield prefix + f, False


def _folder(ctx: ToolContext, raw: str) -> Path:
    resolved = ctx.path_policy.resolve_read(raw, names_only=True)
    st = _stat_existing(ctx, resolved, raw)
    if not stat.S_ISDIR(st.st_mode):
        raise ToolError(
            f"{_shown(ctx, resolved)} is a file; `path` must be a folder to search in.",
            hint="Pass its folder, or read the file with read_file.",
            code=ErrorCode.INVALID_ARGUMENTS,
        )
    return resolved


@tool(
    name="glob",
    risk=Risk.READ,
    concurrent_safe=True,
    timeout_s=60,
    path_params=("path",),
    summarize=lambda a: f"{a.get('pattern', '')} in {a.get('path', '.')}",
)
def glob_files(
    ctx: ToolContext,
    pattern: Annotated[str, "A glob like '**/*.py' or 'src/*.txt' ('**' spans folders)."],
    path: Annotated[str, "The folder to search in (default: the workspace)."] = ".",
) -> str:
    """Find files and folders whose path (relative to `path`) matches a glob pattern.
    Results are sorted; folders end with '/'. .git folders are skipped. Secret locations
    (keys, credentials, .env files) are listed, marked '(secret)': reading one asks the user."""
    # A secret location's NAME is not a secret (list_directory shows it too); listing it
    # marked tells the model up front that its content needs the user's approval, instead
    # of hiding files the model then cannot account for.
    regex = _compile_glob(pattern, "pattern")
    base = _folder(ctx, path)
    matches = [rel + ("/" if is_dir else "") for rel, is_dir in _walk(ctx, base)
               if regex.match(rel)]
    matches.sort()
    where = _shown(ctx, base)
    if not matches:
        return f"No paths match {pattern!r} in {where}."
    prefix = "" if where == "." else where.rstrip("/") + "/"
    lines = []
    secrets = 0
    for match in matches[:MAX_GLOB_RESULTS]:
        secret = secret_match((base / match).as_posix()) is not None
        secrets += secret
        lines.append(prefix + match + (SECRET_MARK if secret else ""))
    if len(matches) > MAX_GLOB_RESULTS:
        lines.append(
            f"[… {len(matches) - MAX_GLOB_RESULTS} more matches not shown; use a narrower "
            f"pattern or path]"
        )
    head = f"{len(matches)} match(es) for {pattern!r} in {where}:\n"
    return head + "\n".join(lines) + _secret_footer(secrets)


def _grep_targets(
    ctx: ToolContext, resolved: Path, file_glob: str | None, regex: re.Pattern[str] | None,
    skipped: list[str],
) -> Iterator[tuple[Path, str]]:
    """The files grep searches; secret locations it may not read are not searched (secret
    folders not even entered) and their names are added to `skipped`."""
    if not resolved.is_dir():
        yield resolved, _shown(ctx, resolved)
        return
    name_only = file_glob is not None and "/" not in file_glob

    def secret_folder(rel: str) -> bool:
        verdict = ctx.path_policy.classify(str(resolved / rel), write=False)
        hidden = verdict.secret is not None and not verdict.secret_approved
        if hidden:
            skipped.append(_shown(ctx, resolved / rel) + "/")
        return hidden

    for rel, is_dir in _walk(ctx, resolved, prune=secret_folder):
        if is_dir:
            continue
        if regex is not None and not regex.match(rel.rsplit("/", 1)[-1] if name_only else rel):
            continue
        yield resolved / rel, _shown(ctx, resolved / rel)


def _readable_text(policy: PathPolicy, path: Path, skipped: list[str], name: str
                   ) -> bytes | None:
    """The file's bytes when it is a small regular text file the policy lets us read (a
    secret location the user has not approved is added to `skipped` instead)."""
    try:
        verdict = policy.classify(str(path), write=False)
        if verdict.secret is not None and not verdict.secret_approved:
            skipped.append(name)
            return None
        if not verdict.allowed:
            return None
        real = verdict.resolved
        st = os.stat(real)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_GREP_FILE_BYTES:
            return None
        data = policy.read_bytes(real)
    except (OSError, ToolError):
        return None
    return None if looks_binary(data[:8192]) else data


@tool(
    risk=Risk.READ,
    concurrent_safe=True,
    timeout_s=60,
    path_params=("path",),
    summarize=lambda a: f"/{a.get('pattern', '')}/ in {a.get('path', '.')}",
)
def grep(
    ctx: ToolContext,
    pattern: Annotated[str, "A Python regular expression to search for, line by line."],
    path: Annotated[str, "A file or folder to search (default: the workspace)."] = ".",
    glob: Annotated[
        str | None, "Only search files matching this glob ('*.py' matches names)."
    ] = None,
    case_insensitive: Annotated[bool, "Ignore upper/lower case."] = False,
    max_matches: Annotated[
        int, "Stop listing after this many matches.", {"minimum": 1, "maximum": MAX_GREP_MATCHES}
    ] = 100,
) -> str:
    """Search text files for a regular expression. Shows 'path:line: text' for each match,
    at most max_matches, and counts the rest. Binary files, files over 20 MB and .git
    folders are skipped, and so are secret locations (keys, credentials, .env files; the
    result names them): read_file one of them to ask the user."""
    try:
        regex = re.compile(pattern, re.IGNORECASE if case_insensitive else 0)
    except re.error as exc:
        raise ToolError(
            f"The pattern {pattern!r} is not a valid regular expression: {exc}.",
            hint="Escape special characters like ( [ . * with a backslash, or fix the syntax.",
            code=ErrorCode.INVALID_ARGUMENTS,
        ) from exc
    file_regex = _compile_glob(glob, "glob") if glob is not None else None
    resolved = ctx.path_policy.resolve_read(path)
    _stat_existing(ctx, resolved, path)
    shown: list[str] = []
    total = 0
    files_with_matches = 0
    searched = 0
    skipped: list[str] = []
    for file_path, name in _grep_targets(ctx, resolved, glob, file_regex, skipped):
        ctx.check_stop()
        data = _readable_text(ctx.path_policy, file_path, skipped, name)
        if data is None:
            continue
        searched += 1
        found = False
        for lineno, line in enumerate(data.decode("utf-8", "replace").split("\n"), 1):
            if lineno % CHECK_EVERY == 0:
                ctx.check_stop()
            if regex.search(line):
                found = True
                total += 1
                if len(shown) < max_matches:
                    text = (
                        line
                        if len(line) <= MAX_GREP_LINE_CHARS
                        else (line[:MAX_GREP_LINE_CHARS] + "…")
                    )
                    shown.append(f"{name}:{lineno}: {text}")
        files_with_matches += found
    where = _shown(ctx, resolved)
    note = _skipped_note(skipped)
    if total == 0:
        return f"No matches for /{pattern}/ in {where} ({searched} text files searched).{note}"
    head = f"{total} match(es) in {files_with_matches} file(s) under {where}:"
    tail = ""
    if total > len(shown):
        tail = (
            f"\n[… {total - len(shown)} more matches not shown; narrow the pattern, path or "
            f"glob, or raise max_matches]"
        )
    return head + "\n" + "\n".join(shown) + tail + note


def _skipped_note(skipped: list[str]) -> str:
    if not skipped:
        return ""
    named = ", ".join(skipped[:MAX_SECRETS_NAMED])
    more = f" and {len(skipped) - MAX_SECRETS_NAMED} more" if len(skipped) > MAX_SECRETS_NAMED \
        else ""
    return (f"\n[{len(skipped)} secret location(s) not searched: {named}{more}. They hold keys, "
            f"credentials or tokens, so grep never shows their content; read_file one of them "
            f"to ask the user for it.]")
