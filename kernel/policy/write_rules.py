"""The user's write rules as a command's change set meets them: the deny rule, else the ask
rule, of `write_file` or `edit_file` naming a path, so that what a command changed is
refused or held as the file tools' write to it would be (one judge for every write)."""

from __future__ import annotations

from kernel.policy.ruleset import Target, relative_paths
from kernel.policy.settings import Permissions
from kernel.tools.spec import WriteRule

WRITING_TOOLS = ("write_file", "edit_file")
"""The tools whose path rules also judge what a command changed."""


def write_rule(permissions: Permissions, path: str, workspace: str, home: str
               ) -> WriteRule | None:
    """The rule of `permissions` that judges writing `path` (absolute, normalised): a deny
    rule first, then an ask rule; None when neither names it."""
    rels = relative_paths(path, workspace, home)
    for verdict, rules in (("deny", permissions.deny), ("ask", permissions.ask)):
        for tool in WRITING_TOOLS:
            rule = rules.first_match(Target(tool, paths=(rels,)))
            if rule is not None:
                return WriteRule(verdict, rule.text)
    return None
