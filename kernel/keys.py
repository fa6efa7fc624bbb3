"""Where the Anthropic API key is looked up: one keyring entry and one environment variable.

The UI (desktop.settings.keystore, which stores the key) and the kernel's provider (which
reads it) both use these names. This module imports nothing, so the UI process can use it
without loading the anthropic SDK.
"""

from __future__ import annotations

ENV_VAR = "ANTHROPIC_API_KEY"
KEYRING_SERVICE = "reins"
KEYRING_USER = "anthropic_api_key"
