"""What a file is as an attachment (kernel.shared.attachments), decided by its bytes: table tests
with many spellings of each kind, and real files on disk."""

from __future__ import annotations

import io
import os
import socket

import pytest
from PIL import Image

from kernel.shared.attachments import (
    MAX_IMAGE_BYTES,
    MAX_TEXT_BYTES,
    AttachmentError,
    load_attachment,
    read_attachment,
)


def picture(fmt: str) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (4, 3), (1, 2, 3)).save(out, format=fmt)
    return out.getvalue()


@pytest.mark.parametrize(("name", "data", "kind", "media"), [
    ("a.png", picture("PNG"), "image", "image/png"),
    ("a.jpg", picture("JPEG"), "image", "image/jpeg"),
    ("a.gif", picture("GIF"), "image", "image/gif"),
    ("a.webp", picture("WEBP"), "image", "image/webp"),
    ("no-suffix", picture("PNG"), "image", "image/png"),  # the bytes decide, not the name
    ("photo.txt", picture("JPEG"), "image", "image/jpeg"),
    ("paper.pdf", b"%PDF-1.7\n%%EOF\n", "document", "application/pdf"),
    ("notes.txt", b"hello\n", "text", "text/plain"),
    ("main.py", b"print('hi')\n", "text", "text/plain"),
    ("README", "naïve café — 漢字\n".encode(), "text", "text/plain"),
    ("bom.txt", b"\xef\xbb\xbfwith a BOM", "text", "text/plain"),
    ("wide.txt", "utf-16 text".encode("utf-16"), "text", "text/plain"),
    ("fake.png", b"not really a png", "text", "text/plain"),
    ("/some/folder/deep.md", b"# title", "text", "text/plain"),
])
def test_what_a_file_is(name, data, kind, media):
    attachment = read_attachment(name, data)
    assert (attachment.kind, attachment.media_type) == (kind, media)
    assert "/" not in attachment.name
    (block,) = attachment.blocks()
    assert block["type"] == kind


@pytest.mark.parametrize(("name", "data", "says"), [
    ("empty.txt", b"", "is empty"),
    ("a.bmp", picture("BMP"), "BMP image, which the model cannot read"),
    ("a.tiff", picture("TIFF"), "TIFF image"),
    ("a.ico", picture("ICO"), "ICO image"),
    ("prog", b"\x7fELF\x02\x01\x01\x00" + bytes(64), "is not a text file"),
    ("nul.txt", b"text with a \x00 inside", "is not a text file"),
    ("latin1.txt", b"caf\xe9 au lait", "is not a text file"),
    ("archive.zip", b"PK\x03\x04" + bytes(30), "is not a text file"),
    ("big.txt", b"x" * (MAX_TEXT_BYTES + 1), "text files up to 256 KB"),
    ("huge.png", picture("PNG") + bytes(MAX_IMAGE_BYTES), "images up to 30.0 MB"),
    ("huge.pdf", b"%PDF-1.4" + bytes(25 * 1024 * 1024), "PDFs up to 24.0 MB"),
])
def test_what_cannot_be_attached_says_why(name, data, says):
    with pytest.raises(AttachmentError, match=says):
        read_attachment(name, data)


def test_a_text_file_names_itself_and_a_name_cannot_break_out():
    (block,) = read_attachment('x"><b>.txt', b"body").blocks()
    assert block["text"] == '<attachment name="x&quot;>&lt;b>.txt">\nbody\n</attachment>'


def test_files_on_disk(tmp_path):
    (tmp_path / "n.txt").write_text("note")
    assert load_attachment(tmp_path / "n.txt").data == b"note"
    with pytest.raises(AttachmentError, match="is a folder"):
        load_attachment(tmp_path)
    with pytest.raises(AttachmentError, match="cannot be read"):
        load_attachment(tmp_path / "missing.txt")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(AttachmentError, match="not a regular file"):
        load_attachment(tmp_path / "fifo")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "sock"))
    with pytest.raises(AttachmentError, match="not a regular file"):
        load_attachment(tmp_path / "sock")
    server.close()
    (tmp_path / "big.bin").write_bytes(bytes(31 * 1024 * 1024))
    with pytest.raises(AttachmentError, match="too large"):
        load_attachment(tmp_path / "big.bin")
