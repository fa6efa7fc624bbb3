"""A sent prompt's images as small square pictures for the chat's history
(kernel.worker.images), and through the real kernel worker: asked after a restart, read
from the session's history."""

from __future__ import annotations

import base64
import io
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from kernel import protocol as p
from kernel.agent.media import fit_content
from kernel.events import UserMessage
from kernel.fakemodel import FakeAnthropicServer, reply
from kernel.shared.attachments import read_attachment
from kernel.worker.images import prompt_images
from tests.security.test_workspace_broad import Worker


def halves(size: tuple[int, int], kind: str = "PNG") -> bytes:
    """Red on the left half, blue on the right."""
    image = Image.new("RGB", size, (220, 0, 0))
    image.paste((0, 0, 220), (size[0] // 2, 0, size[0], size[1]))
    out = io.BytesIO()
    image.save(out, kind)
    return out.getvalue()


def picture(data: str) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(data)))


def prompt_message(*files: tuple[str, bytes]) -> tuple[dict[str, Any], list[int]]:
    """A user message as the agent stores it: a tool result, the prompt's text, then each
    attachment's blocks (an image fitted to the API's limits)."""
    blocks: list[Any] = [{"type": "tool_result", "tool_use_id": "t", "content": "x"},
                         {"type": "text", "text": "look"}]
    counts = []
    for name, data in files:
        fitted, _ = fit_content(read_attachment(name, data).blocks())
        blocks += fitted
        counts.append(len(fitted))
    return {"role": "user", "content": blocks}, counts


def test_each_image_is_a_square_of_its_middle_and_the_rest_are_empty() -> None:
    wide = halves((900, 300))
    message, counts = prompt_message(("a.png", wide), ("n.txt", b"notes"),
                                     ("b.jpg", halves((300, 900), "JPEG")))
    images = prompt_images(message, 1, counts, 64)
    assert images[1] == ""
    first, third = picture(images[0]), picture(images[2])
    assert first.size == third.size == (64, 64) and first.format == "PNG"
    rgb = first.convert("RGB")
    assert rgb.getpixel((5, 32))[0] > 180 and rgb.getpixel((58, 32))[2] > 180


@pytest.mark.parametrize("message", [
    None,
    {"role": "user", "content": "just text"},
    {"role": "user", "content": [{"type": "text", "text": "look"}]},  # fewer blocks
    {"role": "user", "content": [{"type": "text", "text": "look"}, {
        "type": "image", "source": {"type": "base64", "media_type": "image/png",
                                    "data": base64.b64encode(b"\x89PNG\r\n\x1a\nbroken")
                                    .decode()}}]},
    {"role": "user", "content": [{"type": "text", "text": "look"}, {
        "type": "image", "source": {"type": "base64", "media_type": "image/png",
                                    "data": "not base64 !"}}]},
    {"role": "user", "content": [{"type": "text", "text": "look"}, {
        "type": "image", "source": {"type": "url", "url": "https://example.com/x.png"}}]},
])
def test_what_cannot_be_read_is_empty_never_an_error(message: dict[str, Any] | None) -> None:
    assert prompt_images(message, 0, [1], 64) == ("",)


def test_the_side_asked_is_kept_within_bounds() -> None:
    message, counts = prompt_message(("a.png", halves((40, 40))))
    assert picture(prompt_images(message, 1, counts, 10_000)[0]).size == (512, 512)
    assert picture(prompt_images(message, 1, counts, 1)[0]).size == (16, 16)


@pytest.mark.slow  # two kernel worker processes
def test_the_worker_gives_a_prompts_pictures_after_a_restart(
        served: tuple[FakeAnthropicServer, Worker], workspace: Path) -> None:
    server, worker = served
    worker.send(p.NewSession(str(workspace), "auto"))
    session = worker.wait_for(p.SessionLoaded).info.session_id
    server.add(reply("a red and blue picture"))
    files = (("shot.png", halves((600, 200))), ("n.txt", b"notes"))
    worker.send(p.StartRun(session, "what is this?", tuple(
        p.AttachmentData(n, base64.b64encode(d).decode()) for n, d in files)))
    while not any(isinstance(m, p.EventMessage) and isinstance(m.event, UserMessage)
                  for m in worker.received):
        worker.wait_for(p.EventMessage, len(
            [m for m in worker.received if isinstance(m, p.EventMessage)]) + 1)
    sent = next(m.event for m in worker.received if isinstance(m, p.EventMessage)
                and isinstance(m.event, UserMessage))
    # Asked the moment the prompt shows: its history message is there.
    worker.send(p.GetPromptImages(session, sent.at_message, sent.at_block, (1, 1), 32))
    assert picture(worker.wait_for(p.PromptImages).images[0]).size == (32, 32)
    worker.wait_for(p.RunStatus, 2)
    worker.close()

    again = Worker()
    try:
        again.send(p.OpenSession(session))
        (prompt,) = [e for e in again.wait_for(p.SessionLoaded).events
                     if isinstance(e, UserMessage)]
        blocks = tuple(int(a["blocks"]) for a in prompt.attachments)
        again.send(p.GetPromptImages(session, prompt.at_message, prompt.at_block, blocks, 48))
        answer = again.wait_for(p.PromptImages)
        assert (answer.session_id, answer.at_message, answer.at_block) == (
            session, prompt.at_message, prompt.at_block)
        assert picture(answer.images[0]).size == (48, 48) and answer.images[1] == ""
        again.send(p.GetPromptImages(session, prompt.at_message + 5, 0, blocks, 48))
        assert again.wait_for(p.PromptImages, 2).images == ("", "")
    finally:
        again.close()
