"""`reins doctor`: the sandbox, the model connection and the data folders (also the app's
Sandbox page, through the kernel). It loads neither SDK nor the session store."""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from kernel.cli.errors import EXIT_ERROR, EXIT_OK
from kernel.model.catalog import DEFAULT_MODEL, model_limits
from kernel.model.provider_config import (
    KeySource,
    ProviderConfig,
    keyring_key,
    resolve_api_key,
    resolve_base_url,
)
from kernel.paths import AppPaths
from kernel.policy.settings import Settings, SettingsError, load_settings
from kernel.sandbox.settings import ExecSettings

Loaded = tuple[Settings, str]
"""The settings, and why the file cannot be used ("": it loads; then the defaults)."""


def read_settings(paths: AppPaths) -> Loaded:
    try:
        return load_settings(paths), ""
    except SettingsError as exc:
        return Settings(), str(exc)


def sandbox_report(exec_settings: ExecSettings) -> str:
    """The sandbox's lines for what `exec_settings` gives commands (kernel.sandbox.doctor)."""
    from kernel.sandbox.doctor import report

    return report(exec_settings)


def doctor_command(out: TextIO, keyring_lookup: Callable[[], str | None] = keyring_key,
                   loaded: Loaded | None = None,
                   sandbox_text: Callable[[], str] | None = None) -> int:
    """The sandbox report, then the model connection and the data folders; exit 0 when a
    sandbox and an API key are there and the settings load. `keyring_lookup` reads the key
    stored in the keyring, `loaded` is what read_settings read and `sandbox_text` makes the
    sandbox's lines for it (kernel.cli.main passes the lookup and the lines already started,
    kernel.runtime.ahead)."""
    text, healthy = doctor_report(AppPaths.from_env(),
                                  lambda: resolve_api_key(keyring_lookup=keyring_lookup),
                                  loaded, sandbox_text)
    out.write(text)
    return EXIT_OK if healthy else EXIT_ERROR


def doctor_report(paths: AppPaths, resolve_key: Callable[[], KeySource],
                  loaded: Loaded | None = None,
                  sandbox_text: Callable[[], str] | None = None) -> tuple[str, bool]:
    """`reins doctor`'s text (also the app's Sandbox page, from the kernel) and whether a
    sandbox and an API key are there and the settings load. The sandbox is the one the
    settings' `exec` gives commands (its bubblewrap, pasta, limits and network); the
    sandbox's lines and the key are asked for last, so that probes and a keyring lookup
    already under way go on meanwhile."""
    from kernel.sandbox.detect import detect_sandbox

    settings, settings_problem = loaded if loaded is not None else read_settings(paths)
    base_url = resolve_base_url(ProviderConfig(base_url=settings.base_url))
    sandbox = sandbox_text() if sandbox_text is not None else sandbox_report(settings.exec)
    status = detect_sandbox(settings.exec.bwrap)  # the report's own probe, cached
    served = None
    if base_url:  # a local server says the window it serves (urllib loaded only to ask it)
        from kernel.model.server_limits import probe_context

        served = probe_context(base_url)
    key = resolve_key()
    lines = [
        sandbox,
        f"API key: {'found in the ' + _key_place(key.source, paths) if key.key else 'missing'}"
        + ("" if key.key else " — store it in Settings (keyring) or set ANTHROPIC_API_KEY"),
        f"base URL: {base_url or 'https://api.anthropic.com (default)'}",
        f"model: {model_line(settings.model or DEFAULT_MODEL, settings, served)}",
        f"data: {paths.data}",
        f"database: {paths.database}",
        f"settings: {paths.settings_file}"
        + (f" — INVALID: {settings_problem}" if settings_problem else ""),
    ]
    return "\n".join(lines) + "\n", bool(status.available and key.key and not settings_problem)


def model_line(model: str, settings: Settings, served: int | None = None) -> str:
    """The model with the limits its requests get: under the window its server says it
    serves (`served`, kernel.model.server_limits), as `reins exec` and the app send them."""
    limits = model_limits(model, settings.models, served_context=served)
    return (f"{model} (context window {limits.context_window}, max_tokens {limits.max_tokens}"
            f": {limits.source})")


def _key_place(source: str, paths: AppPaths) -> str:
    """Where the key was found, in words (the key file by its path)."""
    return f"key file {paths.api_key_file}" if source == "file" else source
