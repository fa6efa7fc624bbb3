"""What compilers, assemblers, linkers and binutils write: `cc -o F`, `-Wl,-o,F`,
`-MF`, `rustc --out-dir`, `javac -d`, `kotlinc -d`, `tsc --outDir`, `go build -o`,
`objcopy IN OUT`, `strip`. Pure.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from kernel.shell.nested import base
from kernel.shell.words import GLOB, TILDE, Word
from kernel.shell.writers.options import _given, _has, _last, _opts, _scan, _scan_words
from kernel.shell.writers.targets import _any_in, _anywhere, _kind, _under

_CC_NEXT = frozenset({"-o", "--output", "-MF", "-MJ", "-aux-info", "-Map", "--Map",
                      "--dependency-file", "--out-implib"})
"""cc's, as's and ld's options whose next word is a file they write."""
_CC_JOINED = re.compile(r"(?:-o|-MF|--output=|-Map=|--Map=|--dependency-file=|--out-implib="
                        r"|-ftime-trace=|-foptimization-record-file=|-a[cdghlmns]*=)(.+)",
                        re.S)
"""… and the options with the file joined to them (`-oFILE`, `--output=FILE`, as's listing
`-alh=FILE`)."""


def _compiler(words: Sequence[Word]) -> list[Word]:
    """cc, gcc, clang, as, ld: `-o FILE` (`-oFILE`, `--output[=]FILE`), `-MF`, `-MJ`,
    `-aux-info`, a map or dependency file (`-Map`), the same in what is passed on to the
    linker or the assembler (`-Wl,-o,FILE`, `-Xlinker -o -Xlinker FILE`, `-Wa,-alh=FILE`),
    the prefix of `-dumpdir`'s files; a response file (`@FILE`) may name any. The default
    names (`a.out`, `x.o` here) are no protected or secret names."""
    own: list[Word] = []
    passed: dict[str, list[Word]] = {"l": [], "a": []}
    out: list[Word] = []
    i = 1
    while i < len(words):
        word = words[i]
        i += 1
        text = word.text
        if text.startswith("@"):
            return [_anywhere(f"{base(words[0].text)}'s response file")]
        if text in ("-Xlinker", "-Xassembler") and i < len(words):
            passed[text[2]].append(words[i])
            i += 1
        elif text.startswith(("-Wl,", "-Wa,")):
            passed[text[2]] += [Word(part, word.kind) for part in text[4:].split(",")]
        elif text == "-dumpdir" and i < len(words):
            out.append(Word(words[i].text + "*", _kind(words[i], Word("*", GLOB))))
            i += 1
        else:
            own.append(word)
    for listed in (own, *passed.values()):
        for at, word in enumerate(listed):
            joined = _CC_JOINED.fullmatch(word.text)
            if word.text in _CC_NEXT and at + 1 < len(listed):
                out.append(listed[at + 1])
            elif joined and word.text not in _CC_NEXT:
                out.append(Word(joined.group(1), word.kind))
    return [w for w in out if w.text != "-"]


_RUSTC = _opts("-o --out-dir --emit --print -C --codegen --crate-name --crate-type -L -l "
               "--cfg --check-cfg --target -A --allow -W --warn --force-warn -D --deny -F "
               "--forbid --cap-lints --explain --edition --error-format --json --color "
               "--diagnostic-width --remap-path-prefix --extern --sysroot -Z --env-set")


def _rustc(words: Sequence[Word]) -> list[Word]:
    """rustc: `-o FILE`, each `--emit KIND=FILE` and `--print KIND=FILE`, `-C
    incremental=DIR`'s cache, the linker's `-o` in `-C link-arg(s)`; what it names after
    the crate (`--crate-name`, else the source's name) in `--out-dir DIR` (or here): the
    program or `libCRATE.rlib`, and beside them the other kinds under endings no list
    holds (`.d`, `.o`, `.rmeta`). A response file (`@FILE`) may name any file."""
    if any(w.text.startswith("@") for w in words[1:]):
        return [_anywhere("rustc's response file")]
    found, operands = _scan(words, _RUSTC)
    out = [w for w in _given(found, "-o") if w.text != "-"]
    for value in _given(found, "--emit", "--print"):
        out += [Word(part.partition("=")[2], value.kind) for part in value.text.split(",")
                if "=" in part and part.partition("=")[2] not in ("", "-")]
    linker: list[Word] = [words[0]]
    for value in _given(found, "-C", "--codegen"):
        key, _, setting = value.text.partition("=")
        if key == "incremental":
            out.append(_any_in(Word(setting, value.kind)))
        elif key in ("link-arg", "link-args"):
            linker += [Word(part, value.kind) for part in setting.split()]
    out += _compiler(linker)
    if "-o" in (name for name, _ in found) or not operands:
        return out
    folder = (_given(found, "--out-dir") or [Word(".")])[-1]
    named = _given(found, "--crate-name") or [
        Word(posixpath.splitext(base(w.text))[0].replace("-", "_"), w.kind)
        for w in operands[:1] if w.text != "-"] or [Word("rust_out")]
    crate = named[-1]
    return out + [Word(posixpath.join(folder.text, name % crate.text), _kind(folder, crate))
                  for name in ("%s", "lib%s.rlib")]


def _javac(words: Sequence[Word]) -> list[Word]:
    """javac: the classes under `-d DIR` (by package), or beside each source; the sources
    annotation processors make under `-s DIR`, the headers under `-h DIR`. An argument file
    (`@FILE`) may name any folder."""
    if any(w.text.startswith("@") for w in words[1:]):
        return [_anywhere("javac's argument file")]
    found, operands = _scan_words(words, _JAVAC_VALUES.__contains__)
    out = [Word(posixpath.join(w.text, pattern), _kind(w, Word("*", GLOB)))
           for name, pattern in (("d", "**/*.class"), ("s", "**/*.java"), ("h", "*.h"))
           for w in _given(found, name)]
    if not _given(found, "d"):
        out += [Word(posixpath.join(posixpath.dirname(w.text) or ".", "*.class"),
                     _kind(w, Word("*", GLOB))) for w in operands if w.text.endswith(".java")]
    return out


_JAVAC_VALUES = frozenset({
    "d", "s", "h", "cp", "classpath", "class-path", "sourcepath", "source-path", "encoding",
    "source", "target", "release", "processorpath", "processor-path", "processor",
    "module-path", "p", "add-modules", "module", "m", "module-source-path", "system",
    "upgrade-module-path", "limit-modules", "bootclasspath", "boot-class-path",
    "endorseddirs", "extdirs", "profile", "module-version", "processor-module-path",
    "add-exports", "add-reads", "patch-module", "default-module-for-created-files"})


def _kotlinc(words: Sequence[Word]) -> list[Word]:
    """kotlinc: the classes and module file its sources make under `-d DIR` (or here), or a
    jar (`-d X.jar`); kotlinc-native's `-o NAME` (`NAME.kexe`, …)."""
    found, operands = _scan_words(words, _KOTLINC_VALUES.__contains__)
    out = [Word(w.text + "*", _kind(w, Word("*", GLOB))) for w in _given(found, "o", "output")]
    folder = _last(found, "d")
    if base(words[0].text) == "kotlinc-native" or not any(
            w.text.endswith((".kt", ".java")) for w in operands):
        return out
    if folder is not None and folder.text.endswith(".jar"):
        return [*out, folder]
    where = folder or Word(".")
    return out + [Word(posixpath.join(where.text, pattern), _kind(where, Word("*", GLOB)))
                  for pattern in ("**/*.class", "META-INF/*.kotlin_module")]


_KOTLINC_VALUES = frozenset({"d", "o", "output", "cp", "classpath", "jvm-target",
                             "module-name", "api-version", "language-version", "kotlin-home",
                             "jdk-home", "script-templates", "opt-in", "p", "produce",
                             "target", "library", "l"})


_TSC_FILES = frozenset({"outfile", "out", "tsbuildinfofile", "generatecpuprofile"})
_TSC_FOLDERS = frozenset({"outdir", "declarationdir", "generatetrace"})
_TS_SOURCE = re.compile(r"(.*)\.([cm]?)(?:tsx?|jsx?)")


def _tsc(words: Sequence[Word]) -> list[Word]:
    """tsc (options in any case, one dash or two): `--outFile FILE`, `--tsBuildInfoFile`,
    `--generateCpuProfile`; what lands in `--outDir`, `--declarationDir`,
    `--generateTrace`; `--init`'s tsconfig.json; else each source's script beside it
    (`x.ts`: `x.js`, and `x.d.ts`, `x.js.map` under endings no list holds). Without
    sources it writes what tsconfig.json says, as `make` does a Makefile's: left to the
    sandbox."""
    found, operands = _scan_words(words, (_TSC_FILES | _TSC_FOLDERS).__contains__, fold=True)
    out = [Word("tsconfig.json")] if _has(found, "init") else []
    out += [w if name in _TSC_FILES else _any_in(w) for name, w in found
            if w is not None and name in _TSC_FILES | _TSC_FOLDERS]
    if not _has(found, "outfile", "out", "outdir"):
        out += [Word(f"{match.group(1)}.{match.group(2)}js", w.kind) for w in operands
                if not w.text.endswith(".d.ts") and (match := _TS_SOURCE.fullmatch(w.text))]
    return out


_GO_PROFILES = ("coverprofile", "cpuprofile", "memprofile", "blockprofile", "mutexprofile",
                "trace")
_GO_FILES = frozenset({"o", "output", "modfile", *_GO_PROFILES})
"""go's flags whose value is a file it writes (`-modfile` may be written; `-output` is
`go tool pprof`'s)."""
_GO_VALUES = frozenset({"C", "p", "tags", "ldflags", "gcflags", "asmflags", "gccgoflags",
                        "mod", "overlay", "pgo", "pkgdir", "toolexec", "compiler",
                        "buildmode", "installsuffix", "run", "bench", "count", "cpu",
                        "timeout", "outputdir", "covermode", "coverpkg", "exec", "vet",
                        "skip", "parallel", "benchtime", "shuffle", "fuzz", "fuzztime"})


def _go(words: Sequence[Word]) -> list[Word]:
    """go (flags as Go reads them: `-o FILE`, `-o=FILE`, `--o FILE`): `-o` and a test's
    profiles (`-coverprofile`, …, in `-outputdir`), from `-C DIR`; `-pkgdir DIR`'s
    archives; `go mod vendor -o DIR`'s packages; `go env -w`'s file; `go tool`'s `-o`.
    `go install` writes into GOBIN, outside; a binary without `-o` is named after its
    package, here."""
    if len(words) < 2:
        return []
    found, operands = _scan_words(words[1:], (_GO_FILES | _GO_VALUES).__contains__)
    if words[1].text == "env":
        return [Word("~/.config/go/env", TILDE)] if _has(found, "w", "u") else []
    folder = (_given(found, "C") or [Word(".")])[-1]
    profiles = _under(folder, (_given(found, "outputdir") or [Word(".")])[-1])
    if words[1].text == "mod":
        if operands and operands[0].text == "vendor":
            return [_any_in(_under(folder, w)) for w in _given(found, "o")]
        return [_under(folder, w) for w in _given(found, "modfile")]
    out = [_under(folder, w) for w in _given(found, "o", "output", "modfile")]
    out += [_under(profiles, w) for w in _given(found, *_GO_PROFILES)]
    out += [_any_in(_under(folder, w)) for w in _given(found, "pkgdir")]
    return [w for w in out if w.text != "-"]


_BINUTILS = _opts("-I --input-target -O --output-target -B --binary-architecture -F "
                  "--target -j --only-section -R --remove-section -K --keep-symbol -N "
                  "--strip-symbol -L --localize-symbol -G --keep-global-symbol -W "
                  "--weaken-symbol -b --byte -i --interleave --add-section --dump-section "
                  "--update-section --rename-section --set-section-flags --redefine-sym "
                  "--redefine-syms --keep-symbols --strip-symbols --add-symbol -o")


def _objcopy(words: Sequence[Word]) -> list[Word]:
    """`objcopy IN [OUT]` (IN in place without OUT), `strip [-o OUT] FILES` (each in
    place), the files `--dump-section NAME=FILE` writes."""
    found, operands = _scan(words, _BINUTILS)
    out = [Word(w.text.partition("=")[2], w.kind) for w in _given(found, "--dump-section")
           if "=" in w.text]
    if base(words[0].text).endswith("strip"):
        return out + (_given(found, "-o") or operands)
    return out + (operands[1:2] or operands[:1])
