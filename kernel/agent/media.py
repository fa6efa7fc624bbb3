"""Images and documents that the Messages API accepts: checked, downscaled or replaced.

The API refuses a request (HTTP 400) for one image over 5 MB of base64 or 8000 pixels on a
side, for bytes that are not the declared media type, and for media types it does not read;
one such block in the history made every later request of a session fail the same way.
`fit_block` makes a block the API will take:

- an image of a supported type within the limits is left as it is;
- an image too large (bytes or pixels) is downscaled with Pillow (re-encoded as PNG when it
  has transparency, else JPEG) until it fits, with a note saying so;
- an image whose bytes are another supported type gets the right media type;
- anything else (unreadable, unsupported, a PDF over the size limit, a downscale that cannot
  fit) becomes a text block that says what it was and why it was not sent.

`fit_content` applies it to a list of blocks and the content of tool_result blocks, and
`fit_messages` to a history; both return the same objects when nothing changed. Nothing is
lost: `keep(block)` (the caller's I/O) is given each original that is changed and returns
where it was saved, which the note names. Pillow is
a dependency for this (decoding the header alone gives the size; only a block over the
limits is decoded in full, and decompression bombs are refused, not decoded).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import mimetypes
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from PIL import Image

MAX_IMAGE_BASE64 = 5 * 1024 * 1024
"""The API's limit for one image, measured on its base64 text."""
MAX_IMAGE_SIDE = 8000
MAX_DOCUMENT_BASE64 = 32 * 1024 * 1024
"""A request is at most 32 MB: a PDF larger than that can never be sent."""
IMAGE_TYPES = {"JPEG": "image/jpeg", "PNG": "image/png", "GIF": "image/gif",
               "WEBP": "image/webp"}
DOCUMENT_TYPES = frozenset({"application/pdf"})


@dataclass(frozen=True)
class Fitted:
    block: Mapping[str, Any]
    note: str = ""
    """What was changed, for people and the model ('' when the block was fine)."""

    @property
    def changed(self) -> bool:
        return bool(self.note)


def _size(data: str) -> int:
    return len(data) * 3 // 4


def _note_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def replaced(block: Mapping[str, Any], why: str) -> dict[str, Any]:
    """The text block that stands for a media block that is not sent."""
    source = block.get("source") if isinstance(block.get("source"), Mapping) else {}
    kind = str(block.get("type", "block"))
    media = str(source.get("media_type", "unknown type")) if source else "unknown type"
    data = str(source.get("data", "")) if source else ""
    return _note_block(f"[{kind} of type {media}, {_size(data)} bytes, not sent: {why}]")


def fit_block(block: Mapping[str, Any], *, max_bytes: int = MAX_IMAGE_BASE64,
              max_side: int = MAX_IMAGE_SIDE) -> Fitted:
    """A block the API accepts for `block` (itself when it already is)."""
    kind = block.get("type")
    source = block.get("source")
    if kind not in ("image", "document") or not isinstance(source, Mapping):
        return Fitted(block)
    if source.get("type") != "base64":
        return Fitted(block)
    data = source.get("data")
    if not isinstance(data, str):
        return Fitted(replaced(block, "its data is not base64 text"), "not base64")
    if kind == "document":
        if source.get("media_type") not in DOCUMENT_TYPES:
            return _refused(block, f"the API reads only {', '.join(sorted(DOCUMENT_TYPES))} "
                                   f"documents")
        if len(data) > MAX_DOCUMENT_BASE64:
            return _refused(block, "over the API's 32 MB request limit")
        return Fitted(block)
    return _fit_image(block, source, data, max_bytes, max_side)


def _refused(block: Mapping[str, Any], why: str) -> Fitted:
    return Fitted(replaced(block, why), why)


def _fit_image(block: Mapping[str, Any], source: Mapping[str, Any], data: str,
               max_bytes: int, max_side: int) -> Fitted:
    from PIL import Image  # only when there is an image: not on every run's start-up path

    try:
        raw = base64.b64decode(data, validate=True)
        with Image.open(io.BytesIO(raw)) as image:
            real = IMAGE_TYPES.get(str(image.format))
            width, height = image.size
            if real is None:
                return _refused(block, f"{image.format} images cannot be sent (the API takes "
                                       f"{', '.join(sorted(IMAGE_TYPES.values()))})")
            if len(data) <= max_bytes and max(width, height) <= max_side:
                if real == source.get("media_type"):
                    return Fitted(block)
                return Fitted({**block, "source": {**source, "media_type": real}},
                              f"media type corrected to {real}")
            return _downscaled(block, image, len(raw), max_bytes, max_side)
    except (binascii.Error, ValueError, OSError, Image.DecompressionBombError) as exc:
        return _refused(block, f"it cannot be read as an image ({type(exc).__name__})")


def _downscaled(block: Mapping[str, Any], image: Image.Image, size: int, max_bytes: int,
                max_side: int) -> Fitted:
    from PIL import Image

    width, height = image.size
    alpha = image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info
    frame = image.convert("RGBA" if alpha else "RGB")
    side = min(max_side, max(width, height))
    for _ in range(8):
        scale = side / max(width, height)
        target = (max(1, int(width * scale)), max(1, int(height * scale)))
        out = io.BytesIO()
        resized = frame.resize(target, Image.Resampling.LANCZOS)
        if alpha:
            resized.save(out, format="PNG", optimize=True)
        else:
            resized.save(out, format="JPEG", quality=85)
        encoded = base64.b64encode(out.getvalue()).decode("ascii")
        if len(encoded) <= max_bytes:
            media = "image/png" if alpha else "image/jpeg"
            note = (f"image downscaled from {width}x{height} ({size} bytes) to "
                    f"{target[0]}x{target[1]} ({len(out.getvalue())} bytes) to fit the API's "
                    f"limits")
            return Fitted({"type": "image", "source": {"type": "base64", "media_type": media,
                                                       "data": encoded}}, note)
        side = int(side * 0.7)
    return _refused(block, "it does not fit the API's 5 MB limit even downscaled")


Keep = Callable[[Mapping[str, Any]], str | None]
"""Saves an original media block; where it is, or None when it could not be saved."""


def _kept(replacement: Mapping[str, Any], original: Mapping[str, Any],
          keep: Keep | None) -> Mapping[str, Any]:
    """A note block naming where the original was kept."""
    where = keep(original) if keep is not None else None
    if where is None:
        return replacement
    text = str(replacement.get("text", ""))
    return _note_block(f"{text.removesuffix(']')}; the original is kept at {where}]"
                       if text.endswith("]") else f"{text} (the original is kept at {where})")


def fit_content(blocks: Sequence[Mapping[str, Any]], *, max_bytes: int = MAX_IMAGE_BASE64,
                max_side: int = MAX_IMAGE_SIDE, keep: Keep | None = None,
                ) -> tuple[list[Mapping[str, Any]], list[str]]:
    """Every block fitted (tool_result content too); a changed block is followed by a text
    note saying what changed (a replaced one is that note). Returns the blocks and the
    notes."""
    out: list[Mapping[str, Any]] = []
    notes: list[str] = []
    for block in blocks:
        if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
            inner, inner_notes = fit_content(block["content"], max_bytes=max_bytes,
                                             max_side=max_side, keep=keep)
            out.append({**block, "content": inner} if inner_notes else block)
            notes += inner_notes
            continue
        fitted = fit_block(block, max_bytes=max_bytes, max_side=max_side)
        if not fitted.changed:
            out.append(block)
            continue
        notes.append(fitted.note)
        if fitted.block.get("type") == "text":
            out.append(_kept(fitted.block, block, keep))
        else:
            out.append(fitted.block)
            out.append(_kept(_note_block(f"[{fitted.note}]"), block, keep))
    return out, notes


def fit_messages(messages: Sequence[Mapping[str, Any]], keep: Keep | None = None,
                 ) -> tuple[list[Mapping[str, Any]], list[int]]:
    """The history with every media block fitted; the indexes of the messages changed."""
    out: list[Mapping[str, Any]] = []
    changed: list[int] = []
    for index, message in enumerate(messages):
        content = message.get("content")
        if isinstance(content, list) and _has_media(content):
            blocks, notes = fit_content(content, keep=keep)
            if notes:
                out.append({**message, "content": blocks})
                changed.append(index)
                continue
        out.append(message)
    return out, changed


def _has_media(blocks: Sequence[Any]) -> bool:
    for block in blocks:
        if not isinstance(block, Mapping):
            continue
        if block.get("type") in ("image", "document"):
            return True
        if block.get("type") == "tool_result" and isinstance(block.get("content"), list) \
                and _has_media(block["content"]):
            return True
    return False


def replace_at(messages: Sequence[Mapping[str, Any]], place: tuple[int, ...],
               why: str, keep: Keep | None = None,
               ) -> tuple[list[dict[str, Any]], list[int]]:
    """The messages with the media block at `place` (message, block[, inner block]) replaced
    by a note — or, when `place` is () or names no media block, every media block; the
    indexes of the messages changed."""
    out = [dict(m) for m in messages]
    if len(place) >= 2 and place[0] < len(out):
        content = out[place[0]].get("content")
        if isinstance(content, list) and place[1] < len(content):
            blocks = list(content)
            target = blocks[place[1]]
            if len(place) == 3 and isinstance(target, Mapping) \
                    and isinstance(target.get("content"), list) \
                    and place[2] < len(target["content"]):
                inner = list(target["content"])
                if _is_media(inner[place[2]]):
                    inner[place[2]] = _kept(replaced(inner[place[2]], why), inner[place[2]],
                                            keep)
                    blocks[place[1]] = {**target, "content": inner}
                    out[place[0]]["content"] = blocks
                    return out, [place[0]]
            elif _is_media(target):
                blocks[place[1]] = _kept(replaced(target, why), target, keep)
                out[place[0]]["content"] = blocks
                return out, [place[0]]
    changed = []
    for index, message in enumerate(out):
        content = message.get("content")
        if isinstance(content, list) and _has_media(content):
            message["content"] = [_drop_media(b, why, keep) for b in content]
            changed.append(index)
    return out, changed


def _is_media(block: Any) -> bool:
    return isinstance(block, Mapping) and block.get("type") in ("image", "document")


def _drop_media(block: Any, why: str, keep: Keep | None) -> Any:
    if _is_media(block):
        return _kept(replaced(block, why), block, keep)
    if isinstance(block, Mapping) and isinstance(block.get("content"), list):
        return {**block, "content": [_drop_media(b, why, keep) for b in block["content"]]}
    return block


def saver(folder: Path) -> Keep:
    """A `keep` that writes each original into `folder` (named by its content's hash, so
    the same image is kept once); None when it cannot be written."""

    def keep(block: Mapping[str, Any]) -> str | None:
        source = block.get("source")
        data = source.get("data") if isinstance(source, Mapping) else None
        if not isinstance(source, Mapping) or not isinstance(data, str):
            return None
        try:
            raw = base64.b64decode(data, validate=True)
            suffix = mimetypes.guess_extension(str(source.get("media_type", ""))) or ".bin"
        except (binascii.Error, ValueError):
            raw, suffix = data.encode("utf-8", "surrogateescape"), ".b64.txt"
        path = folder / f"{hashlib.sha256(raw).hexdigest()[:24]}{suffix}"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            if not path.exists():
                path.write_bytes(raw)
        except OSError:
            return None
        return str(path)

    return keep
