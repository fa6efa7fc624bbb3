"""kernel.shared.keys.keyring_backend picks the backend keyring itself picks
(PYTHON_KEYRING_BACKEND, else keyring's config file, else the viable backend of highest
priority or the chainer), with real keyring backends, entry points and config files, each
row in a new process: the choice is compared with what keyring.core's own detection answers
in that process, and the macOS backend (whose import runs ldconfig and gcc) is not loaded
off macOS."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

RING = '''
import keyring.backend


class Keyring(keyring.backend.KeyringBackend):
    priority = {priority}

    def get_password(self, service, username):
        return "{name}-key"

    def set_password(self, service, username, password):
        raise NotImplementedError

    def delete_password(self, service, username):
        raise NotImplementedError
'''

CHAINER = "keyring.backends.chainer.ChainerBackend"
BROKEN_PLUGIN = "raise RuntimeError('this plugin cannot load')\n"

CHECK = '''
import json, sys
import keyring, keyring.core
from kernel.shared.keys import keyring_backend, KEYRING_SERVICE, KEYRING_USER

def name(ring):
    return type(ring).__module__ + "." + type(ring).__name__

if {preset!r}:
    import keyring.backends.null
    from kernel.shared.keys import use_backend
    use_backend(keyring.backends.null.Keyring())
ours = keyring_backend()
macos = "keyring.backends.macOS" in sys.modules
same = keyring.get_keyring() is ours
theirs = keyring.get_keyring() if {preset!r} else keyring.core._detect_backend()
print(json.dumps({{"ours": name(ours), "theirs": name(theirs), "macos": macos, "same": same,
                  "key": ours.get_password(KEYRING_SERVICE, KEYRING_USER)
                  if name(ours).startswith("ring_") else None}}))
'''


@dataclass(frozen=True)
class Row:
    expected: str
    env_backend: str | None = None
    config: str | None = None
    """keyringrc.cfg's text ({mods}: the folder of the test backends)."""
    plugins: dict[str, float] = field(default_factory=dict)
    """Backends registered as `keyring.backends` entry points: module name → priority."""
    broken_plugin: bool = False
    preset: bool = False
    on_path: dict[str, float] = field(default_factory=dict)
    """Backends importable by name only (PYTHONPATH): module name → priority."""


ROWS = {
    "nothing set, no D-Bus: fail": Row("keyring.backends.fail.Keyring"),
    "the variable names null": Row("keyring.backends.null.Keyring",
                                   env_backend="keyring.backends.null.Keyring"),
    "the variable names a backend on the path": Row(
        "ring_env.Keyring", env_backend="ring_env.Keyring", on_path={"ring_env": 1}),
    "the variable names one of priority 0": Row(
        "ring_env.Keyring", env_backend="ring_env.Keyring", on_path={"ring_env": 0},
        plugins={"ring_plugin": 3}),
    "the config file names one": Row(
        "ring_cfg.Keyring", config="[backend]\ndefault-keyring = ring_cfg.Keyring\n",
        on_path={"ring_cfg": 1}, plugins={"ring_plugin": 3}),
    "the config file's keyring-path finds it": Row(
        "ring_far.Keyring",
        config="[backend]\ndefault-keyring=ring_far.Keyring\nkeyring-path={mods}\n"),
    "the variable wins over the config file": Row(
        "ring_env.Keyring", env_backend="ring_env.Keyring", on_path={"ring_env": 1,
                                                                       "ring_cfg": 1},
        config="[backend]\ndefault-keyring=ring_cfg.Keyring\n"),
    "a config file without a backend section: discovery": Row(
        "ring_plugin.Keyring", config="[other]\nx = 1\n", plugins={"ring_plugin": 1}),
    "one plugin above fail": Row("ring_plugin.Keyring", plugins={"ring_plugin": 1}),
    "one plugin of priority 0.5": Row("ring_plugin.Keyring", plugins={"ring_plugin": 0.5}),
    "a plugin below fail: fail": Row("keyring.backends.fail.Keyring",
                                     plugins={"ring_plugin": -0.5}),
    "two usable plugins: the chainer": Row(
        CHAINER, plugins={"ring_a": 1, "ring_b": 2}),
    "a plugin above the chainer's 10": Row(
        "ring_a.Keyring", plugins={"ring_a": 20, "ring_b": 2}),
    "a plugin that fails to load is passed over": Row(
        "ring_plugin.Keyring", plugins={"ring_plugin": 1}, broken_plugin=True),
    "a backend already chosen in the process stays": Row(
        "keyring.backends.null.Keyring", plugins={"ring_plugin": 1}, preset=True),
}


def _environment(row: Row, tmp_path: Path) -> dict[str, str]:
    mods, site, config = tmp_path / "mods", tmp_path / "site", tmp_path / "config"
    for folder in (mods, site, config / "python_keyring"):
        folder.mkdir(parents=True)
    (mods / "ring_far.py").write_text(RING.format(priority=1, name="ring_far"))
    for name, priority in {**row.on_path, **row.plugins}.items():
        (site / f"{name}.py").write_text(RING.format(priority=priority, name=name))
    entries = [*row.plugins, *(["ring_broken"] if row.broken_plugin else [])]
    if entries:
        (site / "ring_broken.py").write_text(BROKEN_PLUGIN)
        dist = site / "reins_test_rings-1.0.dist-info"
        dist.mkdir()
        (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: reins-test-rings\n"
                                       "Version: 1.0\n")
        (dist / "entry_points.txt").write_text(
            "[keyring.backends]\n" + "".join(f"{name} = {name}\n" for name in entries))
    if row.config is not None:
        (config / "python_keyring" / "keyringrc.cfg").write_text(
            row.config.format(mods=mods))
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHON_KEYRING_BACKEND", "DBUS_SESSION_BUS_ADDRESS")
           and not k.startswith("KEYRING_PROPERTY_")}
    env.update(XDG_CONFIG_HOME=str(config), PYTHONPATH=os.pathsep.join(
        [str(site), str(Path(__file__).resolve().parents[2])]))
    if row.env_backend:
        env["PYTHON_KEYRING_BACKEND"] = row.env_backend
    return env


@pytest.mark.parametrize("row", ROWS.values(), ids=ROWS.keys())
def test_the_backend_is_the_one_keyring_picks(row: Row, tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", CHECK.format(preset=row.preset)],
                          env=_environment(row, tmp_path), cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["ours"] == found["theirs"] == row.expected
    assert found["same"], "keyring's own calls (get_password, set_password) use it too"
    if row.expected != CHAINER:  # the chainer is keyring's own discovery's answer
        assert not found["macos"] or sys.platform == "darwin"
    if row.expected.startswith("ring_"):
        assert found["key"] == row.expected.split(".")[0] + "-key"
    if row.broken_plugin:
        assert "this plugin cannot load" in done.stderr  # logged, as keyring logs it


def test_a_backend_that_cannot_be_loaded_raises_as_keyring_does(tmp_path: Path) -> None:
    env = _environment(Row("", env_backend="no_such_ring.Keyring"), tmp_path)
    code = "from kernel.shared.keys import keyring_backend; keyring_backend()"
    for script in (code, "import keyring; keyring.get_keyring()"):
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                              text=True, timeout=60, check=False)
        assert done.returncode == 1 and "No module named 'no_such_ring'" in done.stderr


DOCTOR = """
import sys
if {preset!r}:
    import ring_plugin
    from kernel.shared.keys import use_backend
    use_backend(ring_plugin.Keyring())
if {loaded!r}:
    import keyring
from kernel.cli.main import main
rc = main(['doctor'])
print('KEYRING', 'keyring' in sys.modules, 'HERE', 'ring_plugin' in sys.modules,
      'MACOS', 'keyring.backends.macOS' in sys.modules)
"""


@pytest.mark.parametrize(("preset", "loaded"), [(False, False), (True, False), (False, True)],
                         ids=["nothing set: a child reads", "chosen in the process: read here",
                              "keyring loaded, nothing chosen: read here"])
def test_doctor_reads_the_chosen_backend_without_the_macos_backend(preset: bool, loaded: bool,
                                                                   tmp_path: Path) -> None:
    """The whole `reins doctor` in a process where nothing names a backend: the key comes
    from the one keyring would pick (a plugin, found through the entry points of a folder
    on PYTHONPATH, which the child interpreter gets as sys.path), read by a child
    interpreter that loads keyring instead of this process; with a backend chosen in the
    process (kernel.shared.keys.use_backend; only the plugin module on the path: discovery would
    choose fail), from that one, read here; with keyring already loaded (nothing for a
    child to take off this process), discovered and read here. The macOS module is never
    loaded."""
    row = Row("", on_path={"ring_plugin": 1}) if preset else Row("", plugins={"ring_plugin": 1})
    env = _environment(row, tmp_path)
    env.update(REINS_HOME=str(tmp_path / "home"), ANTHROPIC_API_KEY="environment-key")
    done = subprocess.run([sys.executable, "-c", DOCTOR.format(preset=preset, loaded=loaded)],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
                          check=False)
    assert "API key: found in the keyring" in done.stdout, done.stdout + done.stderr
    assert f"KEYRING {preset or loaded} HERE {preset or loaded}" in done.stdout
    assert ("MACOS False" in done.stdout) or sys.platform == "darwin"


LATER = '''
import keyring, keyring.backends.null
from kernel.shared.keys import keyring_backend, picks_as_a_new_process
before = picks_as_a_new_process()
first = keyring_backend()
later = keyring.backends.null.Keyring()
keyring.set_keyring(later)
print(before, picks_as_a_new_process(), type(first).__module__, keyring_backend() is later)
'''


def test_once_chosen_keyrings_current_backend_is_the_answer(tmp_path: Path) -> None:
    """After the first choice (which a new process would make the same way until then), a
    backend set with keyring.set_keyring is what keyring_backend() answers, as keyring's
    own calls use it."""
    env = _environment(Row("", plugins={"ring_plugin": 1}), tmp_path)
    done = subprocess.run([sys.executable, "-c", LATER], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.stdout.split() == ["True", "False", "ring_plugin", "True"], done.stderr


TWICE = '''
import sys
from kernel.cli.main import main
for _ in range(2):
    main(['doctor'])
    print('KEYRING', 'keyring' in sys.modules)
'''


def test_a_process_that_asks_again_reads_the_keyring_itself(tmp_path: Path) -> None:
    """A child for the first lookup only: one calling main() again and again (the eval
    runner's workers) then loads keyring once rather than an interpreter for each call;
    both find the key of the backend keyring picks."""
    env = _environment(Row("", plugins={"ring_plugin": 1}), tmp_path)
    env.update(REINS_HOME=str(tmp_path / "home"))
    done = subprocess.run([sys.executable, "-c", TWICE], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)
    lines = done.stdout.splitlines()
    assert [line for line in lines if line.startswith("KEYRING")] == ["KEYRING False",
                                                                      "KEYRING True"]
    assert sum("API key: found in the keyring" in line for line in lines) == 2, done.stdout
