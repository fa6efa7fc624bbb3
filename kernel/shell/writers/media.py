"""What image, audio, video and document tools write: exiftool, ImageMagick (`convert`,
`magick`, `mogrify -path DIR`, …) and GraphicsMagick's outputs, ffmpeg's outputs and
writing filters, ffprobe's reports, pandoc's output. Pure.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from kernel.shell.nested import base
from kernel.shell.words import EXPANDS, GLOB, LITERAL, Word
from kernel.shell.writers.options import _given, _has, _last, _opts, _scan, _scan_words
from kernel.shell.writers.targets import _any_in, _anywhere, _kind


def _exiftool(words: Sequence[Word]) -> list[Word]:
    """`exiftool -o OUT`; with tags assigned (`-TAG=V`, `-TAG<SRC`), each file in place;
    `-w` (files named from each one) and `-@ ARGFILE` cannot be read here."""
    out: list[Word] = []
    files: list[Word] = []
    assigns, i = False, 1
    while i < len(words):
        text = words[i].text
        i += 1
        name = text[1:].lower()
        if not text.startswith("-") or text == "-":
            files.append(words[i - 1])
        elif name in ("o", "out") and i < len(words):
            out.append(words[i])
            i += 1
        elif name.rstrip("!+") == "w" or name == "@":
            return [_anywhere("exiftool's arguments")]
        elif name in _EXIF_VALUES:
            i += 1
        elif "=" in text or "<" in text:
            assigns = True
    return out + (files if assigns and not out else [])


_EXIF_VALUES = frozenset({"p", "tagsfromfile", "srcfile", "ext", "extension", "if", "api",
                          "config", "charset", "lang", "sep", "d", "c", "x", "userparam",
                          "geotag", "globaltimeshift", "fileorder", "i", "list_dir"})


def _magick(words: Sequence[Word]) -> list[Word]:
    """convert, magick, montage, composite, compare, stream, import: the last word, and
    each `-write FILE`/`+write FILE` (`magick mogrify` as mogrify; a script, `-script`,
    may name any file)."""
    if len(words) > 1 and words[1].text == "mogrify":
        return _mogrify(words[1:])
    if any(w.text == "-script" for w in words[1:]):
        return [_anywhere(f"{base(words[0].text)}'s script")]
    named = [words[i + 1] for i in range(1, len(words) - 1)
             if words[i].text in ("-write", "+write")]
    if len(words) > 2 and not words[-1].text.startswith("-") and words[1].text not in (
            "identify", "-identify"):
        named.append(words[-1])
    return [out for w in named for out in _image_file(w)]


def _image_file(word: Word) -> list[Word]:
    """An image a magick program writes: without a `FORMAT:` before it (`png:out`);
    `%d` (`frame%03d.png`) numbers the frames; `%[filename:…]` takes the name from the
    image's properties; `-` is stdout."""
    text = re.sub(r"^[A-Za-z0-9]{2,}:", "", word.text)
    if text in ("", "-"):
        return []
    if "%[" in text:
        return [_any_in(Word(posixpath.dirname(text) or ".", word.kind))]
    return [_numbered(Word(text, word.kind))]


def _numbered(word: Word) -> Word:
    """`frame%03d.png`: the files a pattern numbers (`frame*.png`)."""
    text = re.sub(r"%[0-9]*d", "*", word.text)
    return word if text == word.text else Word(text, _kind(word, Word("*", GLOB)))


_MAGICK_VALUES = frozenset({
    "write", "path", "format", "resize", "quality", "density", "geometry", "crop", "rotate",
    "thumbnail", "colorspace", "depth", "gravity", "extent", "background", "fill", "font",
    "pointsize", "type", "units", "interlace", "define", "level", "modulate", "gamma", "blur",
    "sharpen", "unsharp", "border", "bordercolor", "scale", "sample", "shave", "alpha",
    "compose", "channel", "threshold", "colors", "posterize", "sampling-factor"})
"""mogrify's options known to take a value; its other options' words are read as files
too (over-counting only names a file more)."""


def _mogrify(words: Sequence[Word]) -> list[Word]:
    """`mogrify FILES` rewrites each file in place; `-format EXT` writes each beside it
    with that ending instead (after its last dot: `.png` becomes `.EXT`), `-path DIR` into
    DIR; `-write FILE` too. mogrify expands `*` and `?` itself (`'*.png'`), and `@LIST`
    names its files in LIST."""
    found, files = _scan_words(words, _MAGICK_VALUES.__contains__, signs="-+")
    if _has(found, "script") or any(w.text.startswith("@") for w in files):
        return [_anywhere(f"{base(words[0].text)}'s file list")]
    out = [o for w in _given(found, "write") for o in _image_file(w)]
    folder, ending = _last(found, "path"), _last(found, "format")
    for file in files:
        text = re.sub(r"^[A-Za-z0-9]{2,}:", "", file.text)
        kind = GLOB if file.kind == LITERAL and set(text) & {"*", "?"} else file.kind
        name = posixpath.basename(text)
        if ending is not None:
            name = f"{name.rpartition('.')[0] if '.' in name else name}.{ending.text}"
        where = folder if folder is not None else Word(posixpath.dirname(text) or ".")
        parts = [where, Word(name, kind)] + ([ending] if ending is not None else [])
        out.append(Word(posixpath.join(where.text, name) if folder is not None or ending
                        is not None else text, _kind(*parts)))
    return out


def _gm(words: Sequence[Word]) -> list[Word]:
    """GraphicsMagick: `gm convert|composite|montage|mogrify …` as ImageMagick's; `gm
    batch` and `gm conjure` run scripts."""
    if len(words) < 2:
        return []
    command = words[1].text
    if command in ("batch", "conjure"):
        return [_anywhere(f"gm {command}'s script")]
    if command == "mogrify":
        return _mogrify(words[1:])
    return _magick(words[1:]) if command in ("convert", "composite", "montage") else []


_FFMPEG_VALUES = frozenset({
    "i", "f", "c", "codec", "vcodec", "acodec", "scodec", "dcodec", "b", "ab", "vb", "r", "s",
    "ar", "ac", "aq", "q", "qscale", "crf", "preset", "tune", "profile", "level", "pix_fmt",
    "map", "map_metadata", "map_chapters", "metadata", "disposition", "ss", "sseof", "t", "to",
    "fs", "frames", "vframes", "aframes", "dframes", "itsoffset", "itsscale", "stream_loop", "g",
    "maxrate", "minrate", "bufsize", "threads", "loglevel", "v", "movflags", "fflags", "tag",
    "sample_fmt", "channel_layout", "ch_layout", "framerate", "video_size", "pixel_format",
    "probesize", "analyzeduration", "fps_mode", "vsync", "hwaccel", "hwaccel_device",
    "hwaccel_output_format", "init_hw_device", "filter_hw_device", "strict", "safe",
    "protocol_whitelist", "user_agent", "headers", "aspect", "vol", "attach", "fpre", "vpre",
    "apre", "spre"})
"""ffmpeg's options known to take a value that is no file it writes. Its other options'
next words are read as outputs (an option it does not know takes a value: `-segment_list
FILE`, `-hls_segment_filename`, `-sdp_file`, `-progress`, a muxer's file; over-counting only
names a file more)."""
_FFMPEG_FILTERS = frozenset({"vf", "af", "filter", "filter_complex", "lavfi"})
_FFMPEG_WRITING = re.compile(r"\b(?:a?metadata|psnr|ssim|xpsnr|vmafmotion|libvmaf|"
                             r"vidstabdetect|signature|asr|whisper)\b")
"""The filters that write files their options name (`metadata=print:file=F`, `psnr=F`)."""
_FFMPEG_PROTOCOLS = re.compile(r"(?:file|crypto|cache|async):")


def _ffmpeg(words: Sequence[Word]) -> list[Word]:
    """ffmpeg: every word that is no option, no option's value and no input (`-i`) is an
    output (`-` and `pipe:` are stdout, a URL is elsewhere; `tee:A|B` and `-f tee` write
    each of A and B; `%d` numbers files); `-passlogfile PREFIX`'s logs (`ffmpeg2pass` with
    `-pass`), `-report`'s and `-vstats`' logs, `-dump_attachment`'s files, what an
    encoder's parameters name (`-x264-params stats=F`). Filters that write
    (`metadata=…:file=F`), a filter graph the shell changes or one read from a file
    (`-/vf F`, `-filter_script`) may name any file."""
    found, operands = _scan_words(words, lambda name: _ffmpeg_value(name.split(":", 1)[0]))
    named = [(name.split(":", 1)[0], value) for name, value in found]
    tee = any(name == "f" and value is not None and (value.text == "tee" or value.kind ==
              EXPANDS) for name, value in named)
    out = [o for w in operands for o in _media_output(w, tee=tee)]
    for name, value in named:
        if name in ("report", "vstats"):
            out.append(Word("ffmpeg-*.log" if name == "report" else "vstats_*.log", GLOB))
        if value is None:
            continue
        if name.startswith("/") or name.endswith("script") or (name in _FFMPEG_FILTERS and (
                value.kind != LITERAL or _FFMPEG_WRITING.search(value.text))):
            out.append(_anywhere("ffmpeg's filters"))
        elif name.endswith(("params", "opts")):
            out += [Word(part.partition("=")[2], value.kind)
                    for part in re.split(r"[:,]", value.text) if "=" in part]
        elif name in ("passlogfile", "pass"):
            prefix = value if name == "passlogfile" else Word("ffmpeg2pass")
            out.append(Word(prefix.text + "-*", _kind(prefix, Word("*", GLOB))))
        elif name == "dump_attachment":
            out.append(value if value.text else _any_in(Word(".")))
    return [w for w in out if w.text]


def _ffmpeg_value(name: str) -> bool:
    """The option (without its stream specifier) takes the next word."""
    return name in _FFMPEG_VALUES or name in _FFMPEG_FILTERS or name in (
        "passlogfile", "pass", "dump_attachment") or name.startswith("/") or name.endswith(
        ("params", "opts", "script"))


def _media_output(word: Word, *, tee: bool) -> list[Word]:
    """One output of ffmpeg: its protocol taken off (`file:`, `crypto:`), none for stdout
    (`-`, `pipe:`, `fd:`) or another computer (`rtmp://…`); `tee:A|B` (and the tee
    muxer's `A|B`) is A and B, each without its `[options]`, whose values may name files
    (`[f=segment:segment_list=F]`)."""
    text = word.text
    if text.startswith("tee:"):
        text, tee = text[4:], True
    out: list[Word] = []
    for part in text.split("|") if tee else [text]:
        options, _, rest = part[1:].partition("]") if part.startswith("[") else ("", "", part)
        out += [Word(o.partition("=")[2], word.kind) for o in options.split(":") if "=" in o]
        rest = _FFMPEG_PROTOCOLS.sub("", rest, count=1)
        if rest not in ("", "-") and not rest.startswith(("pipe:", "fd:")) and "://" not in rest:
            out.append(_numbered(Word(rest, word.kind)))
    return out


def _ffprobe(words: Sequence[Word]) -> list[Word]:
    """ffprobe: `-o FILE`, `-report`'s log."""
    out = [o for i in range(1, len(words) - 1) if words[i].text == "-o"
           for o in _media_output(words[i + 1], tee=False)]
    return out + [Word("ffprobe-*.log", GLOB) for w in words[1:] if w.text == "-report"]


_PANDOC = _opts(
    "-f --from -r --read -t --to -w --write -o --output --data-dir -M --metadata "
    "--metadata-file -d --defaults --template -V --variable --extract-media --resource-path "
    "-H --include-in-header -B --include-before-body -A --include-after-body "
    "--highlight-style --syntax-definition --dpi --wrap --columns --toc-depth -L "
    "--lua-filter -F --filter --abbreviations --reference-doc --epub-cover-image "
    "--epub-metadata --epub-embed-font --pdf-engine --pdf-engine-opt --bibliography --csl "
    "--citation-abbreviations --log --title-prefix -T --css -c --number-offset "
    "--shift-heading-level-by --indented-code-classes --default-image-extension "
    "--tab-stop --email-obfuscation --id-prefix --slide-level --reference-location "
    "--top-level-division --eol --request-header")


def _pandoc(words: Sequence[Word]) -> list[Word]:
    """`pandoc -o FILE`, `--log FILE`; the media `--extract-media DIR` takes out of the
    document."""
    found, _ = _scan(words, _PANDOC)
    return ([w for w in _given(found, "-o", "--output", "--log") if w.text != "-"]
            + [_any_in(w) for w in _given(found, "--extract-media")])
