"""The context window a local model server says it serves.

llama-server answers `GET /props` with the window each slot serves
(`default_generation_settings.n_ctx`) and `GET /v1/models` with each model's `meta`
(`n_ctx`, and `n_ctx_train`, what the model was trained with). A run against such a server
then knows its real window instead of guessing (kernel.model.catalog.served). `served_context`
reads the answers (pure, table-tested); `probe_context` asks the server (one short GET
each, only for a base URL the user set: the Anthropic API has no such endpoint).
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

PROBE_TIMEOUT_S = 1.5


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        else None


def served_context(props: Any, models: Any) -> int | None:
    """The window the server serves: `/props`' slot window, else a model's `meta.n_ctx`,
    else its `meta.n_ctx_train`; None when neither answer says."""
    if isinstance(props, Mapping):
        settings = props.get("default_generation_settings")
        if isinstance(settings, Mapping) and (n := _positive(settings.get("n_ctx"))):
            return n
        if n := _positive(props.get("n_ctx")):
            return n
    data = models.get("data") if isinstance(models, Mapping) else None
    for entry in data if isinstance(data, list) else ():
        meta = entry.get("meta") if isinstance(entry, Mapping) else None
        if isinstance(meta, Mapping):
            n = _positive(meta.get("n_ctx")) or _positive(meta.get("n_ctx_train"))
            if n:
                return n
    return None


def _get_json(url: str, timeout_s: float) -> Any:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=timeout_s) as response:
            return json.loads(response.read(1 << 20))
    except (OSError, ValueError, urllib.error.URLError):
        return None


def probe_context(base_url: str | None, timeout_s: float = PROBE_TIMEOUT_S) -> int | None:
    """Ask the server at `base_url` (the Messages API root, as ANTHROPIC_BASE_URL) for its
    window; None without a base URL or when it does not say (not a llama-server, down)."""
    if not base_url:
        return None
    root = base_url.rstrip("/")
    if root.endswith("/v1"):
        root = root[:-3]
    props = _get_json(f"{root}/props", timeout_s)
    found = served_context(props, None)
    if found is not None:
        return found
    return served_context(None, _get_json(f"{root}/v1/models", timeout_s))
