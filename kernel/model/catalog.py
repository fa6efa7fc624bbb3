"""What each model can take and give: its context window and its output limit.

`model_limits(name, configured)` is the one answer: the settings' `"models": {NAME: {...}}`
entry for the model (an exact name first, then a glob such as `"qwen*"`), over the built-in
figures of Anthropic's models, over the defaults for a model nobody described (a local one:
give it an entry, or compaction only starts when its server says the prompt is too long).

    "models": {"qwen2.5-coder": {"context_window": 16384, "max_tokens": 2048}}

`config_problem` refuses, before anything is sent, the settings the API would answer with
an invalid request (a thinking budget not below max_tokens, thinking with a forced
tool_choice, an output limit over what the model can give), saying what to change.
Nothing here imports the SDK (the settings loader and the UI process read it).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT_MODEL = "claude-sonnet-4-6"
"""The model of a session when neither the settings nor the command line name one."""
DEFAULT_CONTEXT_WINDOW = 200_000
DEFAULT_MAX_TOKENS = 8192
MIN_THINKING_BUDGET = 1024
"""The API's smallest extended-thinking budget."""


@dataclass(frozen=True)
class ModelLimits:
    context_window: int = DEFAULT_CONTEXT_WINDOW
    """Input + output tokens the model can hold."""
    max_tokens: int = DEFAULT_MAX_TOKENS
    """Output tokens asked for per request (`max_tokens`)."""
    max_output: int | None = None
    """The most output the model can give, when known (a larger max_tokens is refused)."""
    source: str = "default"
    """Where the figures come from: "settings", "built-in" or "default"."""


BUILT_IN: tuple[tuple[str, ModelLimits], ...] = (
    ("claude-opus-4-5*", ModelLimits(200_000, 32_000, 64_000, "built-in")),
    ("claude-opus-4-1*", ModelLimits(200_000, 32_000, 32_000, "built-in")),
    ("claude-opus-4-0*", ModelLimits(200_000, 32_000, 32_000, "built-in")),
    ("claude-opus-4-2*", ModelLimits(200_000, 32_000, 32_000, "built-in")),
    ("claude-opus-4*", ModelLimits(200_000, 32_000, 64_000, "built-in")),
    ("claude-sonnet-4*", ModelLimits(200_000, 32_000, 64_000, "built-in")),
    ("claude-haiku-4*", ModelLimits(200_000, 32_000, 64_000, "built-in")),
    ("claude-3-7-sonnet*", ModelLimits(200_000, 32_000, 64_000, "built-in")),
    ("claude-3-5-haiku*", ModelLimits(200_000, 8192, 8192, "built-in")),
    ("claude-3-5-sonnet*", ModelLimits(200_000, 8192, 8192, "built-in")),
    ("claude-3-haiku*", ModelLimits(200_000, 4096, 4096, "built-in")),
    ("claude-3-opus*", ModelLimits(200_000, 4096, 4096, "built-in")),
)
"""Anthropic's models, most specific pattern first: window, default max_tokens, the most
they can give. max_tokens defaults below the maximum: a run pays only for what is written,
but a model that runs away is stopped sooner."""


def model_limits(name: str, configured: Mapping[str, Any] | None = None) -> ModelLimits:
    """The limits of model `name`: its settings entry (exact name, then the first glob that
    matches, in the file's order) over the built-in figures over the defaults."""
    base = next((limits for pattern, limits in BUILT_IN if fnmatch.fnmatchcase(name, pattern)),
                ModelLimits())
    entries = configured or {}
    entry = entries.get(name)
    if not isinstance(entry, Mapping):
        entry = next((v for k, v in entries.items()
                      if k != name and fnmatch.fnmatchcase(name, k) and isinstance(v, Mapping)),
                     None)
    if entry is None:
        return base
    window = int(entry.get("context_window", base.context_window))
    max_tokens = int(entry.get("max_tokens", min(base.max_tokens, window // 4)
                               if "context_window" in entry else base.max_tokens))
    return ModelLimits(window, max_tokens, base.max_output, "settings")


def config_problem(*, model: str, limits: ModelLimits, tool_choice: str,
                   thinking_budget: int | None) -> str | None:
    """Why the API would refuse requests made with these settings, said as what to change;
    None when they can work."""
    where = ("`--max-tokens N` on reins exec, or `\"models\": {\"" + model +
             "\": {\"max_tokens\": N}}` in settings.json")
    if limits.max_output is not None and limits.max_tokens > limits.max_output:
        return (f"max_tokens {limits.max_tokens} is more than {model} can write "
                f"({limits.max_output}); lower it ({where}).")
    if limits.max_tokens >= limits.context_window:
        return (f"max_tokens {limits.max_tokens} leaves no room for the conversation in "
                f"{model}'s context window of {limits.context_window} tokens; lower it "
                f"({where}) or set the model's context_window in settings.json.")
    if thinking_budget is None:
        return None
    if thinking_budget < MIN_THINKING_BUDGET:
        return (f"the thinking budget {thinking_budget} is below the API's minimum of "
                f"{MIN_THINKING_BUDGET} tokens; give --thinking-budget {MIN_THINKING_BUDGET} "
                f"or more.")
    if thinking_budget >= limits.max_tokens:
        return (f"the thinking budget ({thinking_budget}) must be below max_tokens "
                f"({limits.max_tokens}), which covers the thinking and the answer: lower "
                f"--thinking-budget, or raise max_tokens ({where}).")
    if tool_choice not in ("auto", "none"):
        return (f"extended thinking cannot be used with a forced tool choice "
                f"({tool_choice!r}): the API allows only auto or none with thinking. Drop "
                f"--thinking-budget or --tool-choice.")
    return None


def max_tokens_advice(model: str, limits: ModelLimits) -> str:
    """What a person can do about answers cut at the output limit, for this model."""
    if limits.max_output is not None and limits.max_tokens >= limits.max_output:
        return (f"{limits.max_tokens} tokens is the most {model} can write in one answer: ask "
                f"for a shorter answer, or for the work in smaller steps.")
    most = f" (this model can write up to {limits.max_output})" if limits.max_output else ""
    return (f"Ask for a shorter answer or smaller steps, or raise the limit{most} with "
            f"`reins exec --max-tokens N` or `\"models\": {{\"{model}\": {{\"max_tokens\": N}}}}` "
            f"in settings.json.")
