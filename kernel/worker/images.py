"""Small pictures of a sent prompt's images, for the chat's history (GetPromptImages).

The images a person attached live in the session's history, as the image blocks the model
was sent (`kernel.agent.media` may have downscaled them, with a note block before). The
chat asks for them by the prompt's place (its user_message event's `at_message` and
`at_block`) and each attachment's number of blocks, and gets a small square PNG per image
(its middle, as the chat shows it): a few kilobytes over the pipe instead of megabytes,
decoded and scaled here, in a thread, with
Pillow's own guard against decompression bombs. One that cannot be read is "" (the chat
shows a placeholder), never an error.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import io
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from kernel import protocol as p

if TYPE_CHECKING:
    from kernel.worker.service import KernelService

SIDES = (16, 512)
"""The least and the most pixels a picture's longest side may be asked for."""


def prompt_blocks(message: Mapping[str, Any] | None, at_block: int,
                  blocks: Sequence[int]) -> list[list[Any]]:
    """Each attachment's history blocks: after the prompt's text block at `at_block`, the
    next `blocks[i]` blocks (fewer, or none, where the message has no more)."""
    content = message.get("content") if message is not None else None
    if not isinstance(content, list):
        return [[] for _ in blocks]
    out = []
    start = at_block + 1
    for count in blocks:
        out.append(content[start:start + max(0, count)])
        start += max(0, count)
    return out


def thumbnail(blocks: Sequence[Any], side: int) -> str:
    """The first image block's picture: the image scaled to cover a `side`-pixel square and
    cut to it, as base64 PNG; "" when there is no image block or it cannot be read."""
    from PIL import Image, ImageOps

    source = next((b.get("source") for b in blocks
                   if isinstance(b, dict) and b.get("type") == "image"), None)
    if not isinstance(source, dict) or source.get("type") != "base64":
        return ""
    try:
        data = base64.b64decode(str(source.get("data", "")), validate=True)
        with Image.open(io.BytesIO(data)) as image:
            image.draft("RGB", (side, side))  # a JPEG decodes at a fraction of its size
            picture = ImageOps.fit(image.convert("RGBA" if "A" in image.getbands()
                                                 else "RGB"), (side, side))
        out = io.BytesIO()
        picture.save(out, "PNG", optimize=False)
    except (binascii.Error, OSError, ValueError, Image.DecompressionBombError,
            SyntaxError):
        return ""
    return base64.b64encode(out.getvalue()).decode("ascii")


def prompt_images(message: Mapping[str, Any] | None, at_block: int, blocks: Sequence[int],
                  side: int) -> tuple[str, ...]:
    side = min(max(side, SIDES[0]), SIDES[1])
    return tuple(thumbnail(found, side) for found in prompt_blocks(message, at_block, blocks))


async def get_prompt_images(service: KernelService, message: p.GetPromptImages) -> None:
    """Read the prompt's history message and make its pictures, in a thread. (A prompt just
    sent: its user_message reached the UI once committed, its message was submitted right
    after; the barrier waits for that write.)"""
    await asyncio.wrap_future(service.store.barrier())
    stored = await asyncio.to_thread(service.store.message, message.session_id,
                                     message.at_message)
    images = await asyncio.to_thread(prompt_images, stored, message.at_block,
                                     message.blocks[:64], message.side)
    service.send(p.PromptImages(message.session_id, message.at_message, message.at_block,
                                images))
