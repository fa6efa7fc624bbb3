"""The fingerprints behind grants of MCP tools, kept so a swapped tool suspends its grant.

When the user grants an MCP tool (for the session or always), the gate records the rule with
the fingerprint of the tool the user saw. Before a grant or an allow rule lets an MCP tool
run, the gate checks the tool's current fingerprint against the recorded one: a different
one suspends that grant for that tool and the user is asked again (a new answer records the
new fingerprint). A rule the user wrote by hand (`mcp__git__*` in settings.json) records
each tool's fingerprint the first time it allows it, and guards it from then on.

One small JSON file under the data folder: {rule text: {tool name: fingerprint}}.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from kernel.mcp.definitions import current_of
from kernel.mcp.fingerprint import GrantCheck, check_grant, spec_fingerprint
from kernel.paths import AppPaths

log = logging.getLogger(__name__)

FILE_NAME = "mcp-grant-fingerprints.json"


class GrantFingerprints:
    """Recorded fingerprints per grant rule; read once, written through on every change."""

    def __init__(self, path: Path) -> None:
        self.path = path
        loaded = _load(path)
        self._strict = loaded is None
        """The records could not be read: no first-use trust, every unrecorded tool asks."""
        self._records: dict[str, dict[str, str]] = loaded or {}

    @classmethod
    def for_paths(cls, paths: AppPaths) -> GrantFingerprints:
        return cls(paths.data / FILE_NAME)

    def recorded(self, rule_text: str) -> dict[str, str]:
        return dict(self._records.get(rule_text, {}))

    def record(self, rule_texts: Iterable[str], spec: Any) -> None:
        """The user granted `spec` through these rules: remember what they saw."""
        fingerprint = spec_fingerprint(spec)
        if fingerprint is None:
            return
        for text in rule_texts:
            self._records.setdefault(text, {})[spec.name] = fingerprint
        self._save()

    def check(self, rule_text: str, spec: Any) -> GrantCheck:
        """Whether the grant or rule `rule_text` still covers `spec` as its server lists it
        now (not as it was when the call was dispatched); none does while the server is
        re-listing its tools after announcing a change.

        A tool the rule has never allowed before is recorded now (first use) and allowed.
        """
        own = spec_fingerprint(spec)
        if own is None or not rule_text:
            return GrantCheck(True)
        current = current_of(spec, own)
        fingerprint = current.fingerprint
        if fingerprint is None:
            return GrantCheck(False, f"{current.why_unknown}: the grant {rule_text} is "
                                     f"suspended until it does, so this call asks")
        records = self._records.get(rule_text, {})
        if spec.name not in records and self._strict:
            return GrantCheck(False, f"the record of what was granted could not be read "
                                     f"({self.path}); approve {spec.name} again")
        if spec.name not in records:
            self._records.setdefault(rule_text, {})[spec.name] = fingerprint
            self._save()
            return GrantCheck(True)
        verdict = check_grant(spec, records, fingerprint)
        if not verdict.valid:
            return GrantCheck(False, f"{verdict.reason} ({rule_text}); approve it again to "
                                     f"grant the new definition")
        return verdict

    def _save(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(self._records, f, indent=1, sort_keys=True)
            os.replace(tmp, self.path)
        except OSError:
            log.exception("could not save %s; grants of changed tools are still checked in "
                          "this run", self.path)


def _load(path: Path) -> dict[str, dict[str, str]] | None:
    """The records; {} when there are none yet; None when the file cannot be used."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        log.exception("could not read %s; every MCP grant asks again", path)
        return None
    if not isinstance(data, dict):
        return None
    return {str(rule): {str(k): str(v) for k, v in tools.items()}
            for rule, tools in data.items() if isinstance(tools, dict)}
