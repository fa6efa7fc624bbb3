"""The versions of a turn: what an answer asked for again (Retry) or an edited prompt (Edit)
replaced, kept so a person can go back to it (‹ 1/2 › under the answer).

A group is the versions of everything from one row of the chat on: from the row after the
prompt for an answer asked for again, from the prompt's own row for an edited one. Each
version (`Branch`) holds its rows and the groups within them (a version can have versions
of its own: an answer retried, then its prompt edited). One version of a group is shown, in
the chat's rows; one is live: the conversation the model is sent continues from it.

Each superseded version is kept by one `messages_superseded` event; `ordinal` is that
event's place among the session's (the kernel's `RestoreVersion` names a version so).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from desktop.chat.model import ChatItem


@dataclass(eq=False)
class Branch:
    """One version of a group: its rows and the groups within them while it is not shown
    (the shown version's are the chat's own)."""

    items: list[ChatItem] = field(default_factory=list)
    groups: dict[int, VersionGroup] = field(default_factory=dict)
    ordinal: int = -1
    """The messages_superseded event keeping it (-1: none, it is the live version)."""


@dataclass(eq=False)
class VersionGroup:
    """The versions of what follows one row, oldest first."""

    branches: list[Branch]
    shown: int
    live: int

    @property
    def browsing(self) -> bool:
        """An older version is shown: the conversation goes on from another one."""
        return self.shown != self.live


def nested(groups: dict[int, VersionGroup], anchor: int) -> dict[int, VersionGroup]:
    """The groups inside the rows after `anchor`, taken out of `groups`."""
    inner = {row: group for row, group in groups.items() if row > anchor}
    for row in inner:
        del groups[row]
    return inner


def hidden_items(groups: dict[int, VersionGroup]) -> Iterator[ChatItem]:
    """Every row of the versions not shown, at any depth."""
    for group in groups.values():
        for index, branch in enumerate(group.branches):
            if index != group.shown:
                yield from branch.items
                yield from hidden_items(branch.groups)
