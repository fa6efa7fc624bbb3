"""A real HTTP server on loopback that speaks the Anthropic Messages API, scripted.

`POST /v1/messages` answers with the next turn of the script: a JSON message, or an SSE
stream when the request asks for `stream: true` (chunked transfer encoding, like the real
API, so a stream cut part-way is a protocol error for the client, not a clean end). Every
request is recorded (body and headers) for the test to inspect. Requests that break a rule
the real API enforces get the real API's 400 answer, and so do the limits it enforces:
a prompt over `context_limit_tokens` ("prompt is too long", counted as JSON characters /
`chars_per_token`), an image over `max_image_bytes` of base64 or `max_image_side` pixels, an
image whose bytes are not its media type, text with a lone surrogate.
`GET /v1/models` lists `models` (and `/v1/models/ID` answers for one of them); with `api_key`
set, every route wants it, as the real API does (401).

Used by the tests, the benchmarks, and `reins --self-test` (its built-in loopback model).
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kernel.fakemodel.script import Failure, Reply, Silence, Turn, message_json, sse_events
from kernel.fakemodel.validate import (
    MAX_IMAGE_BASE64,
    MAX_IMAGE_SIDE,
    limit_problem,
    request_problem,
)


@dataclass(frozen=True)
class RecordedRequest:
    body: Mapping[str, Any]
    headers: Mapping[str, str]
    """Header names in lower case."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    fake: FakeAnthropicServer


class FakeAnthropicServer:
    """Start with `start()` (or `with`); point the SDK at `base_url`."""

    def __init__(
        self,
        script: Iterable[Turn] = (),
        *,
        responder: Callable[[Mapping[str, Any]], Reply | Failure | Silence] | None = None,
        api_key: str | None = None,
        host: str = "127.0.0.1",
        context_limit_tokens: int | None = None,
        chars_per_token: float = 3.5,
        max_image_bytes: int = MAX_IMAGE_BASE64,
        max_image_side: int = MAX_IMAGE_SIDE,
        models: Sequence[str] = ("claude-sonnet-4-6", "claude-haiku-4-5"),
    ) -> None:
        self._turns: deque[Turn] = deque(script)
        self._responder = responder
        self.api_key = api_key
        """When set, requests must carry it (`x-api-key` or a bearer token), else 401."""
        self.context_limit_tokens = context_limit_tokens
        """Above this many tokens (JSON characters / chars_per_token) a request gets the
        real API's 400 "prompt is too long"; None: no limit."""
        self.chars_per_token = chars_per_token
        self.max_image_bytes = max_image_bytes
        self.max_image_side = max_image_side
        self.models = tuple(models)
        self.requests: list[RecordedRequest] = []
        self.problems: list[str] = []
        """Requests answered 400 (harness bugs) or past the end of the script."""
        self._lock = threading.Lock()
        self._release = threading.Event()
        self.stalled = threading.Event()
        """Set while a reply is stalled part-way (tests wait on it)."""
        self._request_seen = threading.Condition(self._lock)
        self._httpd = _Server((host, 0), _Handler)
        self._httpd.fake = self
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else host
        return f"http://{name}:{port}"

    def start(self) -> FakeAnthropicServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
            name="fake-anthropic", daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> FakeAnthropicServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def add(self, *turns: Turn) -> None:
        """Append turns to the script."""
        with self._lock:
            self._turns.extend(turns)

    def release(self) -> None:
        """Let stalled replies finish (they close their connection)."""
        self._release.set()

    def wait_for_requests(self, n: int, timeout: float = 30.0) -> bool:
        """Block until at least `n` requests have arrived."""
        with self._request_seen:
            return self._request_seen.wait_for(lambda: len(self.requests) >= n, timeout)

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._turns)

    def _next_turn(self, body: Mapping[str, Any], headers: Mapping[str, str]) -> tuple[int, Any]:
        with self._request_seen:
            self.requests.append(RecordedRequest(body, headers))
            request_no = len(self.requests)
            self._request_seen.notify_all()
            turn: Turn | None = self._turns.popleft() if self._turns else self._responder
        if turn is None:
            self.problems.append(f"request {request_no}: the script has no more turns")
            return request_no, Failure(400, "invalid_request_error",
                                       "fake server: the script has no more turns", None)
        if callable(turn) and not isinstance(turn, Reply | Failure | Silence):
            turn = turn(body)
        return request_no, turn


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    """TCP_NODELAY, as a real server streams: with Nagle's algorithm each SSE event written
    after the first waited for the client's delayed ACK, 40 ms per streamed answer."""
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the recorded requests are the log."""

    def _key_refused(self, headers: Mapping[str, str]) -> bool:
        """The fake wants a key (`api_key`) and the request lacks it: answered 401, as the
        real API answers every route."""
        fake = self.server.fake
        if fake.api_key is None or fake.api_key in (
                headers.get("x-api-key"), headers.get("authorization", "").removeprefix("Bearer ")):
            return False
        self._error(401, "authentication_error", "invalid x-api-key", None)
        return True

    def do_GET(self) -> None:
        fake = self.server.fake
        path = self.path.split("?")[0]
        listing = [{"type": "model", "id": m, "display_name": m,
                    "created_at": "2025-01-01T00:00:00Z"} for m in fake.models]
        found = [m for m in listing if path == f"/v1/models/{m['id']}"]
        if path != "/v1/models" and not found:
            self._error(404, "not_found_error", f"no route {self.path}", None)
            return
        if self._key_refused({k.lower(): v for k, v in self.headers.items()}):
            return
        if found:
            self._send_json(200, found[0])
            return
        self._send_json(200, {"data": listing, "has_more": False,
                              "first_id": listing[0]["id"] if listing else None,
                              "last_id": listing[-1]["id"] if listing else None})

    def do_POST(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        headers = {k.lower(): v for k, v in self.headers.items()}
        if self.path.split("?")[0] != "/v1/messages":
            self._error(404, "not_found_error", f"no route {self.path}", None)
            return
        if self._key_refused(headers):
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._error(400, "invalid_request_error", "body is not JSON", None)
            return
        problem = request_problem(body) or limit_problem(
            body, context_limit_tokens=fake.context_limit_tokens,
            chars_per_token=fake.chars_per_token, max_image_bytes=fake.max_image_bytes,
            max_image_side=fake.max_image_side)
        if problem is not None:
            with fake._lock:
                fake.requests.append(RecordedRequest(body, headers))
            fake.problems.append(problem)
            self._error(400, "invalid_request_error", problem, None)
            return
        request_no, turn = fake._next_turn(body, headers)
        if isinstance(turn, Silence):
            fake.stalled.set()
            fake._release.wait()
            self.close_connection = True
            return
        if isinstance(turn, Failure):
            self._error(turn.status, turn.error_type, turn.message, turn.retry_after_ms,
                        turn.headers)
            return
        model = str(body.get("model", "fake-model"))
        if body.get("stream"):
            self._stream(turn, request_no, model)
        else:
            self._send_json(200, message_json(turn, request_no, model), request_no)

    def _send_json(self, status: int, payload: Any, request_no: int = 0,
                   extra: Mapping[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", f"req_fake_{request_no}")
        for key, value in (extra or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, kind: str, message: str, retry_after_ms: int | None,
               headers: Mapping[str, str] | None = None) -> None:
        extra = dict(headers or {})
        if retry_after_ms is not None:
            extra["retry-after-ms"] = str(retry_after_ms)
        payload = {"type": "error", "error": {"type": kind, "message": message}}
        self._send_json(status, payload, extra=extra)

    def _stream(self, turn: Reply, request_no: int, model: str) -> None:
        fake = self.server.fake
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", f"req_fake_{request_no}")
        self.end_headers()
        for sent, (name, data) in enumerate(sse_events(turn, request_no, model)):
            if turn.cut_after is not None and sent >= turn.cut_after:
                self.wfile.flush()
                self.close_connection = True
                return
            if turn.stall_after is not None and sent >= turn.stall_after:
                self.wfile.flush()
                fake.stalled.set()
                fake._release.wait()
                self.close_connection = True
                return
            if turn.error_after is not None and sent >= turn.error_after:
                name, data = "error", {"type": "error", "error": {
                    "type": turn.error_type, "message": "Overloaded"
                    if turn.error_type == "overloaded_error" else turn.error_type}}
            if turn.delay_s and sent:
                fake._release.wait(turn.delay_s)
            payload = f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()
            try:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(payload), payload))
                self.wfile.flush()
            except OSError:
                self.close_connection = True
                return
            if name == "error":
                break
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
