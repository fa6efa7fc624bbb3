"""USD prices per million tokens, per model family, and the cost of a run's usage.

Prices are matched on the longest model-name prefix. A model with no known price costs
`None` (unknown), never a guess: a cost budget cannot be enforced for it, and the loop
refuses to start such a run rather than run it unbounded.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Price:
    input: float
    output: float
    cache_write: float
    cache_read: float


def _price(input_per_mtok: float, output_per_mtok: float) -> Price:
    """Cache writes (5 min) cost 1.25× input, cache reads 0.1× input."""
    return Price(input_per_mtok, output_per_mtok, input_per_mtok * 1.25, input_per_mtok * 0.1)


PRICES: Mapping[str, Price] = {
    "claude-opus-4-6": _price(5.0, 25.0),
    "claude-opus-4-5": _price(5.0, 25.0),
    "claude-opus-4-1": _price(15.0, 75.0),
    "claude-opus-4-0": _price(15.0, 75.0),
    "claude-opus-4-20250514": _price(15.0, 75.0),
    "claude-sonnet-4": _price(3.0, 15.0),
    "claude-3-7-sonnet": _price(3.0, 15.0),
    "claude-haiku-4-5": _price(1.0, 5.0),
    "claude-3-5-haiku": _price(0.8, 4.0),
}


def price_for(model: str, table: Mapping[str, Price] = PRICES) -> Price | None:
    matches = [prefix for prefix in table if model.startswith(prefix)]
    return table[max(matches, key=len)] if matches else None


def cost_usd(usage: Mapping[str, int], price: Price | None) -> float | None:
    if price is None:
        return None
    return (
        usage.get("input_tokens", 0) * price.input
        + usage.get("output_tokens", 0) * price.output
        + usage.get("cache_creation_input_tokens", 0) * price.cache_write
        + usage.get("cache_read_input_tokens", 0) * price.cache_read
    ) / 1_000_000
