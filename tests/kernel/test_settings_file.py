"""SettingsFile, the one reading of settings.json a running kernel and its gates share: read
again only when the file changed on disk, a broken file an error naming its line until it
is fixed, this process's own writes taken without reading back."""

from __future__ import annotations

import os

import pytest

from kernel.paths import AppPaths
from kernel.policy.settings import (
    SettingsError,
    SettingsFile,
    add_rule,
    file_stamp,
    parse_settings,
)


def write(paths: AppPaths, text: str) -> None:
    paths.settings_file.parent.mkdir(parents=True, exist_ok=True)
    tmp = paths.settings_file.with_suffix(".tmp")
    tmp.write_text(text)
    os.replace(tmp, paths.settings_file)  # as editors and update_settings save


def test_a_missing_file_is_the_defaults_and_creating_it_is_seen(reins_home: AppPaths) -> None:
    source = SettingsFile(reins_home)
    first = source.current()
    assert first.model is None and source.current() is first, "unchanged: not read again"
    write(reins_home, '{"model": "m1"}')
    assert source.current().model == "m1"
    reins_home.settings_file.unlink()
    assert source.current().model is None


@pytest.mark.parametrize(("text", "line"), [
    ('{\n  "model": "m",\n  "default_mode": "yolo"\n}', 3),
    ('{\n  "model": "m",\n}', 3),
    ('{\n "permissions": {"allow": [\n  "run_command("]}}', 3),
    ('[1]', 1),
])
def test_a_hand_edit_that_breaks_the_file_is_an_error_until_fixed(
        reins_home: AppPaths, text: str, line: int) -> None:
    write(reins_home, '{"model": "m1"}')
    source = SettingsFile(reins_home)
    assert source.current().model == "m1"
    write(reins_home, text)
    for _ in range(2):  # every call says so, not only the first
        with pytest.raises(SettingsError) as info:
            source.current()
        assert info.value.line == line
    write(reins_home, '{"model": "m2"}')
    assert source.current().model == "m2"


def test_an_edit_of_the_same_size_in_the_same_instant_is_seen(reins_home: AppPaths) -> None:
    write(reins_home, '{"model": "aa"}')
    source = SettingsFile(reins_home)
    assert source.current().model == "aa"
    before = file_stamp(reins_home.settings_file)
    write(reins_home, '{"model": "bb"}')  # same size; os.replace gives a new inode
    assert before is not None and os.stat(reins_home.settings_file).st_size == before[1]
    assert source.current().model == "bb"


def test_own_writes_are_taken_as_written_and_others_are_read(reins_home: AppPaths) -> None:
    write(reins_home, '{"model": "m"}')
    source = SettingsFile(reins_home)
    source.current()
    written = add_rule(reins_home, "allow", "run_command(git status)")
    source.saved(written)
    assert source.current() is written
    other = SettingsFile(reins_home)  # e.g. `reins exec` in another process
    other.current()
    add_rule(reins_home, "allow", "write_file(docs/**)")
    assert [r.text for r in source.current().permissions.allow.rules] == [
        "run_command(git status)", "write_file(docs/**)"]


def test_settings_given_at_the_start_count_as_read_now(reins_home: AppPaths) -> None:
    write(reins_home, '{"model": "on-disk"}')
    given = parse_settings('{"model": "given"}')
    source = SettingsFile(reins_home, given)
    assert source.current() is given
    write(reins_home, '{"model": "edited"}')
    assert source.current().model == "edited"
