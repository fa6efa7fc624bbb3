"""Files and images a person attaches to a prompt: what each is, and the blocks it becomes.

One decision for the app and `reins exec --attach`: `read_attachment(name, data)` looks at
the bytes (never at the name alone) and gives an `Attachment`, or raises AttachmentError
saying why it cannot be sent:

- an image the Messages API reads (PNG, JPEG, GIF, WebP, known by their first bytes) becomes
  an image block; one larger than the API takes is downscaled by the agent
  (`kernel.agent.media.fit_content`), so only absurd sizes are refused here;
- a PDF becomes a document block (the API's 32 MB request limit);
- text (UTF-8, or UTF-16 with its byte order mark; no NUL) becomes a text block naming the
  file, up to MAX_TEXT_BYTES;
- anything else (binary, another image format, an empty file) is refused.

Pure (stdlib only, no state): the desktop checks an attachment with it when it is added,
before anything is sent.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_TEXT_BYTES = 256 * 1024
"""A text file larger than this is refused (it would crowd the context window)."""
MAX_IMAGE_BYTES = 30 * 1024 * 1024
"""Larger images are refused; smaller ones over the API's limits are downscaled."""
MAX_DOCUMENT_BYTES = 24 * 1024 * 1024
"""A PDF's base64 must fit the API's 32 MB request."""
MAX_ATTACHMENT_BYTES = max(MAX_TEXT_BYTES, MAX_IMAGE_BYTES, MAX_DOCUMENT_BYTES)
"""Nothing larger is read at all."""
MAX_ATTACHMENTS = 20

_IMAGE_MAGIC = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)
_OTHER_IMAGES = (
    (b"BM", "BMP"), (b"II*\x00", "TIFF"), (b"MM\x00*", "TIFF"), (b"\x00\x00\x01\x00", "ICO"),
)


class AttachmentError(ValueError):
    """A file that cannot be attached; the message says which and why."""


@dataclass(frozen=True)
class Attachment:
    name: str
    """The file's name as shown (no folder)."""
    kind: str
    """image | document | text"""
    media_type: str
    data: bytes

    def blocks(self) -> list[dict[str, Any]]:
        """The Messages API blocks for it (images not yet fitted to the API's limits)."""
        if self.kind == "text":
            return [{"type": "text", "text": f'<attachment name="{_attr(self.name)}">\n'
                                             f"{text_of(self.data)}\n</attachment>"}]
        encoded = base64.b64encode(self.data).decode("ascii")
        return [{"type": self.kind, "source": {"type": "base64",
                                               "media_type": self.media_type,
                                               "data": encoded}}]

    def summary(self, blocks: int = 1) -> dict[str, Any]:
        """What the stored user_message says about it (`blocks`: how many history blocks
        it became, a downscale note included)."""
        return {"name": self.name, "kind": self.kind, "media_type": self.media_type,
                "bytes": len(self.data), "blocks": blocks}


def _attr(name: str) -> str:
    return name.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;")


def image_type(data: bytes) -> str | None:
    """The media type of an image the API reads, from its first bytes; None otherwise."""
    for magic, media in _IMAGE_MAGIC:
        if data.startswith(magic):
            return media
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def text_of(data: bytes) -> str:
    """The text of a text file's bytes; raises UnicodeDecodeError when it is not text."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = data.decode("utf-16")
    else:
        text = data.decode("utf-8-sig")
    if "\x00" in text:
        raise UnicodeDecodeError("utf-8", data, 0, 1, "a NUL character")
    return text


def format_size(n: int) -> str:
    if n < 1024:
        return f"{n} bytes"
    if n < 1024 * 1024:
        return f"{n / 1024:.0f} KB"
    return f"{n / (1024 * 1024):.1f} MB"


def read_attachment(name: str, data: bytes) -> Attachment:
    """What `data` (the file `name`) is as an attachment; AttachmentError when it is none."""
    shown = Path(name).name or "clipboard"
    if not data:
        raise AttachmentError(f"{shown} is empty: there is nothing to attach")
    media = image_type(data)
    if media is not None:
        if len(data) > MAX_IMAGE_BYTES:
            raise AttachmentError(f"{shown} is too large to attach ({format_size(len(data))}; "
                                  f"images up to {format_size(MAX_IMAGE_BYTES)})")
        return Attachment(shown, "image", media, data)
    if data.startswith(b"%PDF-"):
        if len(data) > MAX_DOCUMENT_BYTES:
            raise AttachmentError(f"{shown} is too large to attach ({format_size(len(data))}; "
                                  f"PDFs up to {format_size(MAX_DOCUMENT_BYTES)})")
        return Attachment(shown, "document", "application/pdf", data)
    for magic, kind in _OTHER_IMAGES:
        if data.startswith(magic):
            raise AttachmentError(f"{shown} is a {kind} image, which the model cannot read: "
                                  f"attach it as PNG, JPEG, GIF or WebP")
    try:
        text_of(data)
    except UnicodeDecodeError:
        raise AttachmentError(f"{shown} is not a text file, an image (PNG, JPEG, GIF, WebP) "
                              f"or a PDF: it cannot be attached") from None
    if len(data) > MAX_TEXT_BYTES:
        raise AttachmentError(f"{shown} is too large to attach ({format_size(len(data))}; "
                              f"text files up to {format_size(MAX_TEXT_BYTES)}): attach a "
                              f"part of it, or let the model read it with its tools")
    return Attachment(shown, "text", "text/plain", data)


def load_attachment(path: str | os.PathLike[str]) -> Attachment:
    """Read and check the file at `path` (nothing over MAX_ATTACHMENT_BYTES is read)."""
    where = Path(path)
    try:
        if where.is_dir():
            raise AttachmentError(f"{where} is a folder, not a file")
        if where.exists() and not where.is_file():
            raise AttachmentError(f"{where} is not a regular file")
        with where.open("rb") as handle:
            data = handle.read(MAX_ATTACHMENT_BYTES + 1)
    except OSError as exc:
        raise AttachmentError(f"{where} cannot be read: {exc.strerror or exc}") from None
    if len(data) > MAX_ATTACHMENT_BYTES:
        raise AttachmentError(f"{where.name} is too large to attach (over "
                              f"{format_size(MAX_ATTACHMENT_BYTES)})")
    return read_attachment(where.name, data)
