"""The pictures of sent prompts' images in the chat's history, asked of the kernel.

The kernel keeps a prompt's images in the session's history (the UI keeps no copy, so they
show after a restart too). For each `user_message` with images the chat shows, this asks
once (GetPromptImages) and hands each small square PNG of the answer (PromptImages) to
desktop.chat.thumbs, which decodes it off the UI thread; an image the kernel could not read,
or one of a session from before prompts had a place, is a placeholder.
"""

from __future__ import annotations

import base64
import binascii

from desktop.chat.thumbs import THUMB, PromptPicture, Thumbnails, prompt_pictures
from kernel import events as ev
from kernel import protocol as p

KERNEL_SIDE = 2 * THUMB
"""The kernel's pictures are this many pixels wide: sharp on a screen of 2×."""

Place = tuple[str, int, int]


class PictureRequests:
    """Which prompts' pictures were asked for, and where each answer goes."""

    def __init__(self, thumbs: Thumbnails) -> None:
        self.thumbs = thumbs
        self._asked: dict[Place, tuple[PromptPicture, ...]] = {}

    def request_for(self, event: ev.Event) -> p.GetPromptImages | None:
        """The request for `event`'s pictures (None: not a prompt with images, or they are
        here or asked for already)."""
        if not isinstance(event, ev.UserMessage):
            return None
        keys = prompt_pictures(event.session_id, event.at_message, event.at_block,
                               event.attachments)
        place = (event.session_id, event.at_message, event.at_block)
        if not keys or place in self._asked or all(self.thumbs.get(k) is not None for k in keys):
            return None
        if event.at_message < 0:
            for key in keys:
                self.thumbs.broken(key)
            return None
        self._asked[place] = keys
        return p.GetPromptImages(event.session_id, event.at_message, event.at_block,
                                 tuple(_blocks(a.get("blocks")) for a in event.attachments),
                                 KERNEL_SIDE)

    def received(self, message: p.PromptImages, ratio: float) -> None:
        """The kernel's pictures: each decoded for this pixel ratio, or a placeholder."""
        keys = self._asked.pop((message.session_id, message.at_message, message.at_block), ())
        for key in keys:
            data = message.images[key.position] if key.position < len(message.images) else ""
            try:
                picture = base64.b64decode(data, validate=True)
            except (binascii.Error, ValueError):
                picture = b""
            if picture:
                self.thumbs.request(key, picture, THUMB, ratio)
            else:
                self.thumbs.broken(key)

    def forget(self) -> None:
        """A new kernel: what the old one was asked will not be answered."""
        self._asked.clear()


def _blocks(value: object) -> int:
    return value if isinstance(value, int) and value >= 0 else 1
