"""The demo model's endpoint: the loopback fake Messages API (kernel.fakemodel) answering
with the demo script, started by the kernel the first time a demo session runs and stopped
with it. The kernel's real provider (the anthropic SDK) talks to it as to any endpoint, so
the demo runs the same loop, tools, approvals and timeline as a real model."""

from __future__ import annotations

import threading

from kernel.demo.script import demo_turn
from kernel.fakemodel.server import FakeAnthropicServer
from kernel.shared.demo import DEMO_MODEL

DEMO_KEY = "reins-demo-key"
"""Not a secret: the demo server takes only requests that carry it, so nothing else on the
machine that finds its port is answered."""


class DemoEndpoint:
    """The demo server, started on first use (`base_url`), stopped by `stop`."""

    def __init__(self) -> None:
        self._server: FakeAnthropicServer | None = None
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        with self._lock:
            if self._server is None:
                self._server = FakeAnthropicServer(
                    responder=demo_turn, api_key=DEMO_KEY, models=(DEMO_MODEL,)).start()
            return self._server.base_url

    @property
    def running(self) -> bool:
        return self._server is not None

    def stop(self) -> None:
        with self._lock:
            server, self._server = self._server, None
        if server is not None:
            server.stop()
