"""Images and documents the API would refuse: fitted before sending (table tests over real
images made with Pillow), and one the API still refuses is replaced and the request sent
once more — the session is never stuck with it (against the fake server)."""

from __future__ import annotations

import base64
import io
import os
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from kernel.agent.media import (
    MAX_IMAGE_BASE64,
    fit_block,
    fit_content,
    fit_messages,
    replace_at,
    saver,
)
from kernel.fakemodel import FakeAnthropicServer, ToolUse, reply
from kernel.tools.schema import tool
from tests.agent.conftest import Harness


def encoded(size: tuple[int, int], fmt: str = "PNG", mode: str = "RGB", noise: bool = False
            ) -> str:
    if noise:
        image = Image.frombytes(mode, size, os.urandom(size[0] * size[1] * len(mode)))
    else:
        image = Image.new(mode, size, (10, 200, 30, 128)[:len(mode)])
    out = io.BytesIO()
    image.save(out, format=fmt)
    return base64.b64encode(out.getvalue()).decode("ascii")


def image(data: str, media: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}


def dimensions(block: Any) -> tuple[int, int]:
    raw = base64.b64decode(block["source"]["data"])
    with Image.open(io.BytesIO(raw)) as opened:
        return opened.size


SMALL = encoded((40, 30))
WIDE = encoded((9000, 20))
TALL_ALPHA = encoded((30, 8500), mode="RGBA")
NOISY = encoded((1500, 1500), noise=True)
PDF = base64.b64encode(b"%PDF-1.4\n%%EOF\n").decode("ascii")


@pytest.mark.parametrize(("block", "kept", "says"), [
    (image(SMALL), True, ""),
    (image(encoded((40, 30), "JPEG"), "image/jpeg"), True, ""),
    (image(encoded((40, 30), "GIF"), "image/gif"), True, ""),
    (image(encoded((40, 30), "WEBP"), "image/webp"), True, ""),
    (image(encoded((40, 30), "JPEG"), "image/png"), False, "media type corrected to image/jpeg"),
    (image(WIDE), False, "downscaled from 9000x20"),
    (image(TALL_ALPHA), False, "downscaled from 30x8500"),
    (image(encoded((40, 30), "BMP"), "image/bmp"), False, "BMP images cannot be sent"),
    (image(encoded((40, 30), "TIFF"), "image/png"), False, "TIFF images cannot be sent"),
    (image("not base64 at all!"), False, "cannot be read as an image"),
    (image(base64.b64encode(b"just bytes").decode()), False, "cannot be read as an image"),
    (image(""), False, "cannot be read"),
    ({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": 5}},
     False, "not base64"),
    ({"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                     "data": PDF}}, True, ""),
    ({"type": "document", "source": {"type": "base64", "media_type": "application/zip",
                                     "data": PDF}}, False, "documents"),
    ({"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                                     "data": "A" * (33 * 1024 * 1024)}}, False, "32 MB"),
    ({"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}, True, ""),
    ({"type": "text", "text": "hello"}, True, ""),
    ({"type": "tool_use", "id": "x", "name": "n", "input": {}}, True, ""),
])
def test_fit_block(block, kept, says):
    fitted = fit_block(block)
    assert (fitted.block is block) is kept
    assert says in fitted.note
    if not kept and fitted.block.get("type") == "image":
        width, height = dimensions(fitted.block)
        assert max(width, height) <= 8000
        assert len(fitted.block["source"]["data"]) <= MAX_IMAGE_BASE64
        assert fit_block(fitted.block).block is fitted.block


def test_an_image_over_the_byte_limit_is_downscaled_until_it_fits():
    fitted = fit_block(image(NOISY), max_bytes=len(NOISY) // 3)
    assert "downscaled from 1500x1500" in fitted.note
    assert len(fitted.block["source"]["data"]) <= len(NOISY) // 3
    assert fitted.block["source"]["media_type"] == "image/jpeg"
    hopeless = fit_block(image(NOISY), max_bytes=200)
    assert hopeless.block["type"] == "text" and "even downscaled" in hopeless.block["text"]


def test_an_alpha_image_stays_png_when_downscaled():
    fitted = fit_block(image(TALL_ALPHA))
    assert fitted.block["source"]["media_type"] == "image/png"


def test_fit_content_reaches_into_tool_results_and_notes_each_change():
    result = {"type": "tool_result", "tool_use_id": "t", "content": [
        {"type": "text", "text": "a picture:"}, image(WIDE)]}
    blocks, notes = fit_content([{"type": "text", "text": "x"}, result])
    assert len(notes) == 1 and "downscaled" in notes[0]
    inner = blocks[1]["content"]
    assert [b["type"] for b in inner] == ["text", "image", "text"]
    assert "downscaled" in inner[2]["text"]
    clean = [{"type": "text", "text": "x"}]
    assert fit_content(clean) == (clean, [])


def test_originals_are_kept_where_the_note_says(tmp_path):
    keep = saver(tmp_path / "media")
    result = {"type": "tool_result", "tool_use_id": "t", "content": [image(WIDE)]}
    blocks, _ = fit_content([result, image("garbage!"), image(SMALL)], keep=keep)
    inner = blocks[0]["content"]
    kept = Path(inner[1]["text"].split("kept at ")[1].rstrip("]"))
    assert kept.read_bytes() == base64.b64decode(WIDE)
    assert blocks[1]["type"] == "text" and "not sent" in blocks[1]["text"]
    assert Path(blocks[1]["text"].split("kept at ")[1].rstrip("]")).read_text() == "garbage!"
    assert blocks[2] == image(SMALL) and len(list((tmp_path / "media").iterdir())) == 2
    unwritable = saver(tmp_path / "file")
    (tmp_path / "file").write_text("not a folder")
    note = fit_content([image(WIDE)], keep=unwritable)[0][1]["text"]
    assert "kept at" not in note and "downscaled" in note


def test_fit_messages_names_only_the_changed_messages():
    history = [{"role": "user", "content": "hi"},
               {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
               {"role": "user", "content": [image(SMALL)]},
               {"role": "user", "content": [image("bad")]}]
    fitted, changed = fit_messages(history)
    assert changed == [3] and fitted[2] is history[2]


@pytest.mark.parametrize(("place", "changed", "left"), [
    ((1, 0), [1], 1),
    ((2, 0, 1), [2], 1),
    ((2, 0, 0), [1, 2], 0),
    ((), [1, 2], 0),
    ((9, 9), [1, 2], 0),
])
def test_replace_at(place, changed, left):
    history = [{"role": "user", "content": "hi"},
               {"role": "user", "content": [image(SMALL)]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t",
                                             "content": [{"type": "text", "text": "x"},
                                                         image(SMALL)]}]}]
    out, touched = replace_at(history, place, "refused")
    assert touched == changed
    remaining = str(out).count("'type': 'image'")
    assert remaining == left
    assert history[1]["content"][0]["type"] == "image"


def _picture_tool(harness: Harness, data: str) -> None:
    @tool(concurrent_safe=True)
    def screenshot() -> list[dict[str, Any]]:
        """Returns a picture."""
        return [{"type": "text", "text": "the screen:"}, image(data)]

    harness.registry.register(screenshot)


def test_a_tool_image_over_the_limits_is_downscaled_before_sending(harness: Harness):
    _picture_tool(harness, WIDE)
    harness.server.add(reply(ToolUse("screenshot", {})), reply("I see it."))
    sid, finished = harness.run("look")
    assert finished.stop_reason == "end_turn" and not harness.server.problems
    sent = harness.server.requests[1].body["messages"][-1]["content"][0]["content"]
    assert max(dimensions(sent[1])) <= 8000 and "downscaled" in sent[2]["text"]
    stored = harness.store.messages(sid)[2]["content"][0]["content"]
    assert max(dimensions(stored[1])) <= 8000
    kept = Path(sent[2]["text"].split("the original is kept at ")[1].rstrip("]"))
    assert kept.read_bytes() == base64.b64decode(WIDE) and kept.suffix == ".png"


def test_an_image_the_api_still_refuses_is_replaced_once_and_the_session_goes_on(
        reins_home, workspace):
    from kernel.agent.store import SessionStore
    from kernel.tools.builtin import builtin_tools
    from kernel.tools.registry import ToolRegistry

    with FakeAnthropicServer(api_key="test-key", max_image_bytes=500) as server:
        harness = Harness(server, reins_home, workspace, SessionStore(reins_home.database),
                          ToolRegistry(builtin_tools()))
        try:
            _picture_tool(harness, encoded((300, 300), noise=True))
            server.add(reply(ToolUse("screenshot", {})), reply("No picture, fine."))
            sid, finished = harness.run("look")
            assert finished.stop_reason == "end_turn"
            assert len(server.requests) == 3 and "image exceeds" in server.problems[0]
            retried = server.requests[2].body["messages"][-1]["content"][0]["content"]
            assert retried[1]["type"] == "text" and "refused by the API" in retried[1]["text"]
            assert Path(retried[1]["text"].split("kept at ")[1].rstrip("]")).is_file()
            server.add(reply("still here"))
            _, again = harness.run("and now?", session_id=sid)
            assert again.stop_reason == "end_turn" and len(server.problems) == 1
        finally:
            harness.store.close()


def test_a_stored_history_with_an_oversized_image_is_fitted_when_the_session_runs(
        harness: Harness):
    sid = harness.session()
    harness.store.append_message(sid, {"role": "user", "content": [
        {"type": "text", "text": "look"}, image(WIDE)]})
    harness.store.append_message(sid, {"role": "assistant", "content": [
        {"type": "text", "text": "seen"}]})
    harness.server.add(reply("ok"))
    _, finished = harness.run("again", session_id=sid)
    assert finished.stop_reason == "end_turn" and not harness.server.problems
    first = harness.server.requests[0].body["messages"][0]["content"]
    assert max(dimensions(first[1])) <= 8000
    assert max(dimensions(harness.store.messages(sid)[0]["content"][1])) <= 8000
