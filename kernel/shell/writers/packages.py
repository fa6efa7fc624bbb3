"""What package tools write where the line names the folder: `pip install --target`,
`pip download -d`, `npm install --prefix` (what the packages hold, there), `python -m venv
DIR`, `python -m zipfile|tarfile`. Pure.
"""

from __future__ import annotations

from collections.abc import Sequence

from kernel.shell.nested import base
from kernel.shell.words import TILDE, Word
from kernel.shell.writers.options import _given, _has, _opts, _scan
from kernel.shell.writers.targets import _any_in, _anywhere

_VENV = _opts("--prompt -p --python --activators --seeder --app-data --extra-search-dir "
              "--creator --discovery --pip --setuptools --wheel")


def _py_archive(words: Sequence[Word]) -> list[Word]:
    """`python -m zipfile|tarfile -e ARCHIVE [DIR]`: into DIR (or here); `-c ARCHIVE`:
    the archive."""
    found, operands = _scan(words, _opts("", "", "--extract --create"))
    if _has(found, "-e", "--extract"):
        return [_any_in(operands[1] if len(operands) > 1 else Word("."))]
    return operands[:1] if _has(found, "-c", "--create") else []


_PIP = _opts(
    "-r --requirement -c --constraint -e --editable -t --target --platform "
    "--python-version --implementation --abi --root --prefix --src -i --index-url "
    "--extra-index-url -f --find-links --no-binary --only-binary --progress-bar --log "
    "--proxy --retries --timeout --exists-action --trusted-host --cert --client-cert "
    "--cache-dir --report --upgrade-strategy --global-option --config-settings --python "
    "-d --dest -w --wheel-dir", "", "--user")


def _pip(words: Sequence[Word]) -> list[Word]:
    """`pip install --target|--prefix|--root DIR` (`--user`: under ~/.local), `pip
    download -d DIR`, `pip wheel -w DIR`: what the packages hold, in DIR; `--log`,
    `--report` FILE. A plain install writes into the interpreter's environment, as the
    package's own build may: left to the sandbox."""
    found, operands = _scan(words, _PIP)
    command = operands[0].text if operands else ""
    out = [w for w in _given(found, "--log", "--report") if w.text != "-"]
    if command == "install":
        out += [_any_in(w) for w in _given(found, "-t", "--target", "--prefix", "--root")]
        if _has(found, "--user"):
            out.append(_any_in(Word("~/.local", TILDE)))
    elif command in ("download", "wheel"):
        out += [_any_in(w) for w in _given(found, "-d", "--dest", "-w", "--wheel-dir")
                ] or [_any_in(Word("."))]
    return out


_NPM_INSTALLS = frozenset({"install", "i", "ci", "add", "update", "up", "upgrade", "link",
                           "ln", "uninstall", "remove", "rm", "un", "unlink", "isntall",
                           "in", "ins", "inst", "insta", "instal", "isnt", "isnta",
                           "isntal", "install-test", "it", "install-ci-test", "cit"})
_NPM = _opts("--prefix -C --dir --cwd --modules-folder --global-folder --cache -w "
             "--workspace --registry --tag", "", "--global")


def _npm(words: Sequence[Word]) -> list[Word]:
    """npm, pnpm, yarn installing into a folder named on the line (`--prefix`, `-C`,
    `--dir`, `--cwd`, `--modules-folder`; `-g`: the global one, outside): what the packages
    hold, there. Installing into the project's own folder is left to the sandbox, as
    the packages' install scripts are."""
    found, operands = _scan(words, _NPM)
    if not operands or operands[0].text not in _NPM_INSTALLS:
        return []
    out = [_any_in(w) for w in _given(found, "--prefix", "-C", "--dir", "--cwd",
                                      "--modules-folder", "--global-folder")]
    if _has(found, "-g", "--global"):
        out.append(_anywhere(f"{base(words[0].text)}'s global folder"))
    return out
