"""Making an earlier answer to the last prompt current again (the app's ‹ 1/2 ›): the plan
(`kernel.agent.branch.restore`) checked against the stored session, then stored in one
transaction, so the next run, a reload and a restart all continue from that answer.

Run in a thread (it reads and waits on the store); the caller makes sure no run of the
session is in progress.
"""

from __future__ import annotations

from kernel.agent.branch import NothingToChange, restore
from kernel.agent.store import SessionStore
from kernel.events import MessagesSuperseded, pending_requests


def restore_version(store: SessionStore, session_id: str, version: int) -> MessagesSuperseded:
    """Make the answer kept by the session's `version`-th messages_superseded event the
    current one; the stored event (it keeps the answer that was current). NothingToChange
    (said to the person) when that cannot be."""
    events = [e for _, e in store.events(session_id)]
    if pending_requests(events):
        raise NothingToChange("an approval waits in this session: answer it before another "
                              "version of the answer can be continued from")
    plan = restore(store.messages(session_id), events, version)
    event = MessagesSuperseded(session_id, reason="restore", first_index=plan.cut.first_index,
                               first_block=plan.cut.first_block,
                               messages=plan.cut.superseded, restores=version)
    store.submit_restore(event, plan.cut.first_index, plan.tail).result()
    return event
