"""The app's side of undo: the timeline's Undo this call, Rewind to here and Show diff go to
the kernel as protocol commands, and what comes back (the step list, an undo's outcome, a
diff) goes to the timeline of the session it is about.

The call lines in the conversation show the same state and offer Undo too (`chat`).
The step list of each session is kept, so a session shown again (its timeline rebuilt from
its events) shows which calls are undone at once; it is asked for again when a session is
shown and when a run ends. Nothing here reads a file: the kernel does, in a thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from desktop.handlers import Handlers
from kernel import protocol as p

if TYPE_CHECKING:
    from desktop.chat.model import ChatModel
    from desktop.kernel_client import KernelClient
    from desktop.timeline.panel import TimelinePanel


class UndoLink:
    def __init__(self, client: KernelClient, current: Callable[[], str | None],
                 timeline: Callable[[], TimelinePanel | None],
                 chat: Callable[[str], ChatModel | None] = lambda _s: None,
                 say: Callable[[str], None] = lambda _t: None) -> None:
        self.client = client
        self._current = current
        self._timeline = timeline
        self._chat = chat
        """A session's conversation, whose call lines show Undo too."""
        self._say = say
        """Where an undo asked from the conversation says what it did (the status bar)."""
        self.steps: dict[str, tuple[p.StepInfo, ...]] = {}

    def handlers(self, table: Handlers) -> Handlers:
        return (table.on(p.StepList, self._on_step_list)
                .on(p.UndoOutcome, self._on_undo_outcome)
                .on(p.StepDiff, self._on_step_diff))

    def connect(self, timeline: TimelinePanel) -> None:
        timeline.undo_requested.connect(self.undo)
        timeline.rewind_requested.connect(self.rewind)
        timeline.diff_requested.connect(self.diff)
        session_id = self._current()
        if session_id is not None:
            timeline.set_steps(self.steps.get(session_id, ()))

    def session_shown(self, session_id: str) -> None:
        """The session's timeline was (re)built: mark its steps, and ask for them anew."""
        timeline = self._timeline()
        if timeline is not None:
            timeline.set_steps(self.steps.get(session_id, ()))
        self.refresh(session_id)

    def refresh(self, session_id: str) -> None:
        self.client.send(p.ListSteps(session_id))

    def undo(self, call_id: str) -> None:
        session_id = self._current()
        if session_id is not None:
            self.client.send(p.UndoCall(session_id, call_id))

    def rewind(self, call_id: str) -> None:
        session_id = self._current()
        if session_id is not None:
            self.client.send(p.RewindTo(session_id, call_id))

    def diff(self, call_id: str) -> None:
        session_id = self._current()
        if session_id is not None:
            self.client.send(p.GetStepDiff(session_id, call_id))

    def _shown(self, session_id: str) -> TimelinePanel | None:
        return self._timeline() if session_id == self._current() else None

    def _on_step_list(self, message: p.StepList) -> None:
        self.steps[message.session_id] = message.steps
        chat = self._chat(message.session_id)
        if chat is not None:
            for step in message.steps:
                if not step.undoes:
                    chat.set_undo(step.call_id, "undone" if step.undone else
                                  "undoable" if step.undoable else "kept")
        timeline = self._shown(message.session_id)
        if timeline is not None:
            timeline.set_steps(message.steps)

    def _on_undo_outcome(self, message: p.UndoOutcome) -> None:
        if message.session_id == self._current():
            from desktop.timeline.undo import outcome_words

            self._say(outcome_words(message))
        timeline = self._shown(message.session_id)
        if timeline is not None:
            timeline.show_undo_outcome(message)

    def _on_step_diff(self, message: p.StepDiff) -> None:
        timeline = self._shown(message.session_id)
        if timeline is not None:
            timeline.show_diff(message.call_id, message.text or message.error)
