"""The models an endpoint offers: `GET /v1/models` (the Anthropic API, and the compatible
servers that implement it), for the app's per-session model picker. An endpoint that does
not answer, or answers with no list, gives a ModelListError saying why: the picker then
takes a typed name."""

from __future__ import annotations

MODEL_LIST_TIMEOUT_S = 5.0


class ModelListError(Exception):
    """The endpoint gave no list of models; the message says why."""


async def endpoint_models(api_key: str | None, base_url: str | None,
                          timeout_s: float = MODEL_LIST_TIMEOUT_S) -> tuple[str, ...]:
    """The ids the endpoint lists, in its order (first page, up to 1,000)."""
    import anthropic

    client = anthropic.AsyncAnthropic(api_key=api_key or "no-key", base_url=base_url,
                                      timeout=timeout_s, max_retries=0)
    try:
        page = await client.models.list(limit=1000)
    except anthropic.APIStatusError as exc:
        raise ModelListError(f"the endpoint answered HTTP {exc.status_code}") from exc
    except anthropic.APIError as exc:
        raise ModelListError(f"the endpoint did not answer ({type(exc).__name__})") from exc
    finally:
        await client.close()
    ids = tuple(dict.fromkeys(m.id for m in page.data if m.id))
    if not ids:
        raise ModelListError("the endpoint listed no models")
    return ids
