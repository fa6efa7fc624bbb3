"""The window a local model server says it serves: its answers read (a table) and a real
loopback HTTP server asked (kernel.model.server_limits)."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from kernel.cli.cmd_doctor import doctor_report
from kernel.model.provider_config import KeySource
from kernel.model.server_limits import probe_context, served_context
from kernel.paths import AppPaths

# (/props answer, /v1/models answer, window)
ANSWERS = [
    ({"default_generation_settings": {"n_ctx": 8192}}, None, 8192),
    ({"default_generation_settings": {"n_ctx": 4096}, "n_ctx": 9999}, None, 4096),
    ({"n_ctx": 2048}, None, 2048),
    (None, {"data": [{"id": "m", "meta": {"n_ctx_train": 8192}}]}, 8192),
    (None, {"data": [{"id": "m", "meta": {"n_ctx": 4096, "n_ctx_train": 8192}}]}, 4096),
    ({"default_generation_settings": {}}, {"data": [{"meta": {"n_ctx_train": 2048}}]}, 2048),
    ({"default_generation_settings": {"n_ctx": 0}}, None, None),
    ({"default_generation_settings": {"n_ctx": True}}, None, None),
    ({"default_generation_settings": {"n_ctx": "8192"}}, None, None),
    (None, {"data": [{"id": "m"}]}, None),
    (None, {"data": "x"}, None),
    ([], [], None),
    (None, None, None),
]


@pytest.mark.parametrize(("props", "models", "window"), ANSWERS)
def test_the_served_window_is_read_from_the_servers_answers(props: Any, models: Any,
                                                            window: int | None) -> None:
    assert served_context(props, models) == window


@contextlib.contextmanager
def _server(routes: Mapping[str, bytes]) -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = routes.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.end_headers()
            self.wfile.write(body or b"not found")

        def log_message(self, *_args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


# (what the server answers, the window probed)
SERVERS = [
    ({"/props": json.dumps({"default_generation_settings": {"n_ctx": 6144}}).encode()}, 6144),
    ({"/v1/models": json.dumps({"data": [{"meta": {"n_ctx_train": 2048}}]}).encode()}, 2048),
    ({"/props": b"<html>not json</html>"}, None),
    ({}, None),
]


@pytest.mark.parametrize(("routes", "window"), SERVERS)
def test_a_server_is_asked_for_its_window(routes: Mapping[str, bytes],
                                          window: int | None) -> None:
    with _server(routes) as url:
        assert probe_context(url) == window
        assert probe_context(url + "/v1/") == window  # a base URL written with /v1


def test_no_base_url_or_no_server_is_no_window() -> None:
    assert probe_context(None) is None
    assert probe_context("http://127.0.0.1:9", timeout_s=0.5) is None


def test_doctor_names_the_window_a_local_server_serves(tmp_path: Path) -> None:
    paths = AppPaths(data=tmp_path / "data", config=tmp_path / "config")
    paths.config.mkdir(parents=True)
    routes = {"/props": json.dumps({"default_generation_settings": {"n_ctx": 6144}}).encode()}
    with _server(routes) as url:
        paths.settings_file.write_text(json.dumps({"base_url": url, "model": "smollm2"}))
        text, _ = doctor_report(paths, lambda: KeySource(None, "none"),
                                sandbox_text=lambda: "sandbox: (not asked)")
    assert "model: smollm2 (context window 6144, max_tokens 1536: server)" in text, text
