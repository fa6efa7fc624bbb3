"""The app's wiring: kernel messages → widgets, user actions → protocol commands.

One `SessionView` per session opened in this window keeps its chat model and its stored
events (for the timeline), so switching sessions is instant and a run in one session never
stops another from being used. After a kernel crash the open sessions are reloaded from the
store by the new kernel; what was shown stays, and an interrupted run can be retried.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QToolTip

from desktop.chat.attach import Chip, for_kernel, kept_chips
from desktop.chat.feed import apply_event
from desktop.chat.model import ChatModel, MessageItem, Role
from desktop.chat.prompt_menu import PromptMenu
from desktop.chat.thumbs import shared_thumbnails
from desktop.errors import RETRYABLE_CODES
from desktop.handlers import Handlers
from desktop.kernel_client import KernelClient, KernelFailure
from desktop.main_window import MainWindow, window_title
from desktop.mcp_notice import McpFailureNotice
from desktop.prompt_images import PictureRequests
from desktop.settings import keystore
from desktop.undo_link import UndoLink
from desktop.window_state import WindowState, load_state, save_state
from desktop.workspace_bar import workspace_note
from kernel import protocol as p
from kernel.events import (
    ApprovalDecision,
    ApprovalRequest,
    AssistantDelta,
    ErrorEvent,
    Event,
    GrantRevoked,
    GrantScope,
    RunFinished,
    SessionStarted,
    ToolCallStarted,
    ToolProgress,
    UserMessage,
    pending_requests,
)
from kernel.modes import Mode
from kernel.paths import AppPaths
from kernel.shared.demo import DEMO_MODEL, DEMO_TITLE, is_demo
from kernel.shared.workspace import broad_workspace_reason

if TYPE_CHECKING:
    from desktop.approval.dialog import ApprovalQueue
    from desktop.approval.notify import ApprovalNotifier
    from desktop.mcp_requests.queue import McpRequests
    from desktop.settings.dialog import SavedSettings, SettingsDialog
    from desktop.timeline.panel import TimelinePanel

log = logging.getLogger(__name__)
ESC_WHILE_ASKED = ("Esc does not stop a run while an approval waits: it stays in the "
                   "conversation for your answer. Stop stops the run.")
KERNEL_START_FALLBACK_MS = 300
DEMO_PROMPT = "Hello! What can you do?"
"""Put in the prompt box, selected, when a demo session starts: Enter sends it, typing
replaces it."""


@dataclass(eq=False)
class SessionView:
    info: p.SessionInfo
    chat: ChatModel
    events: list[Event] = field(default_factory=list)
    running: bool = False
    interrupted: bool = False
    retry_error: str = ""
    """The last run ended with an error that trying again may cure (RETRYABLE_CODES)."""
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    context: tuple[int, int] = (0, 0)
    """The last request's tokens and the model's context window."""
    progress_at: dict[str, int] = field(default_factory=dict)
    """Where in `events` each call's progress is (`keep`)."""

    def keep(self, event: Event) -> None:
        """Keep an event for the timeline; a call's progress (every 0.5 s of a command)
        replaces its previous one, as in the store: one live line per call."""
        if isinstance(event, ToolProgress):
            at = self.progress_at.get(event.call_id)
            if at is not None:
                self.events[at] = event
                return
            self.progress_at[event.call_id] = len(self.events)
        self.events.append(event)

    def note_error(self, event: Event) -> None:
        """Keep track of whether the last run ended with a retryable error."""
        if isinstance(event, ErrorEvent):
            self.retry_error = event.code if event.code in RETRYABLE_CODES else ""
        elif isinstance(event, UserMessage | SessionStarted):
            self.retry_error = ""

    def count(self, event: RunFinished) -> None:
        usage = event.usage
        self.input_tokens += int(usage.get("input_tokens", 0)) + int(
            usage.get("cache_read_input_tokens", 0)) + int(
            usage.get("cache_creation_input_tokens", 0))
        self.output_tokens += int(usage.get("output_tokens", 0))
        self.cost += float(event.cost_usd or 0.0)
        if event.context_window:
            self.context = (event.context_tokens, event.context_window)


class AppController(QObject):
    _key_loaded = Signal(object)

    def __init__(self, paths: AppPaths, client: KernelClient | None = None,
                 api_key: str | None = None, read_keyring: bool = False,
                 window: MainWindow | None = None) -> None:
        """`api_key`: a key already known (from the environment); `read_keyring`: look the
        stored key up on a thread after the window is shown (backends can be slow to load
        or wait for the user to unlock them) — it takes precedence when found. `window`: a
        main window already shown (the app paints it before loading the rest)."""
        super().__init__()
        self.paths = paths
        self.window = window or MainWindow()
        self.client = client or KernelClient(self)
        self._approvals: ApprovalQueue | None = None
        self._mcp_requests: McpRequests | None = None
        self.notifier: ApprovalNotifier | None = None
        self.views: dict[str, SessionView] = {}
        self.current: str | None = None
        self.undo = UndoLink(self.client, lambda: self.current,
                             lambda: self.window.timeline if self.window.timeline_created
                             else None, self._chat_of,
                             lambda text: self.window.statusBar().showMessage(text, 15_000))
        self.api_key = api_key
        self.key_pending = read_keyring
        self.keyring_available = True
        """Whether a system keyring can hold the key (known once it has been looked up)."""
        self.settings = p.SettingsSnapshot("")
        """settings.json as the kernel last reported it (the kernel owns the file)."""
        self.default_model = ""
        """The model new sessions get, as the kernel says (KernelReady, ModelList)."""
        self.sandbox = ("none", "")
        self._opening: str | None = None
        self._pending_prompt: str | None = None
        self._exports: dict[str, list[tuple[str, str]]] = {}
        """Per session, the exports asked for and not yet written: (what, path)."""
        self.ask_export_path: Callable[[str, str], str] = self._ask_export_path
        self.ask_folder: Callable[[], str] = self._ask_folder
        """*Choose folder…*'s folder, "" for none (a folder dialog; tests answer it)."""
        """Where to write an export ("markdown" or "trace", the session's title): the path
        chosen, "" for none (a save dialog; tests answer it themselves)."""
        self._restore_session = ""
        """The session open when the app last closed, opened once the kernel lists it."""
        self._closed = False
        self._kernel_started = False
        self.settings_dialog: SettingsDialog | None = None
        self.grants: dict[str, tuple[p.GrantInfo, ...]] = {}
        """Each session's grants as the kernel last reported them (GrantList)."""
        self.mcp_states = p.McpServerStates()
        """The MCP servers' states as the kernel last reported them."""
        self.mcp_notice = McpFailureNotice(self.window.mcp_button,
                                           self.window.status_fitter.refit, self)
        """A server's failure, said once in the status bar."""
        self.prompt_images = PictureRequests(shared_thumbnails())
        """The pictures of sent prompts' images, asked of the kernel."""
        self._connect()

    # ---- setup ------------------------------------------------------------------------------

    def _connect(self) -> None:
        w = self.window
        self.handlers = self.undo.handlers(self._handlers())
        self.client.batch.connect(self.on_batch)
        self.client.ready.connect(self.on_ready)
        self.client.died.connect(self.on_died)
        self.client.failed.connect(self.on_kernel_failed)
        w.sessions.session_activated.connect(self.open_session)
        w.sessions.new_requested.connect(self._new_session)
        w.sessions.new_cancelled.connect(self._forget_pending_prompt)
        w.sessions.rename_requested.connect(
            lambda sid, title: self.client.send(p.RenameSession(sid, title)))
        w.sessions.delete_requested.connect(
            lambda sid: self.client.send(p.DeleteSession(sid)))
        w.sessions.search.textChanged.connect(self._search)
        w.prompt.send.connect(self.send_prompt)
        w.prompt.edit_submitted.connect(self.send_edit)
        w.prompt.edit_last_requested.connect(self.begin_edit)
        w.chat.edit_requested.connect(self.begin_edit)
        w.chat.regenerate_requested.connect(self.regenerate)
        w.chat.restore_requested.connect(self.restore_version)
        w.chat.files_dropped.connect(w.prompt.attach_files)
        w.chat.image_dropped.connect(w.prompt.tray.add_image)
        w.prompt.stop.connect(self.cancel_run)
        w.prompt.escaped.connect(self.escape_in_prompt)
        w.banner.action.connect(self._banner_action)
        w.mode_changed.connect(self._set_mode)
        w.model_picker.chosen.connect(self._choose_model)
        w.settings_requested.connect(self.open_settings)
        w.welcome.try_demo.connect(self.start_demo)
        w.workspace_bar.choose_folder.connect(self.choose_folder)
        w.workspace_bar.add_key.connect(self.open_settings)
        w.grants_requested.connect(self.open_grants)
        w.compact_requested.connect(self.compact_session)
        self.mcp_notice.settings_requested.connect(self.open_mcp_settings)
        self.prompt_images.thumbs.changed.connect(w.chat.viewport().update)
        self.prompt_menu = PromptMenu(w.prompt.edit)
        self.prompt_menu.wanted.connect(lambda: self.client.send(p.ListMcpPrompts()))
        self.prompt_menu.fetch.connect(lambda server, name, arguments: self.client.send(
            p.GetMcpPrompt(server, name, arguments)))
        w.export_requested.connect(self.export_session)
        w.closing.connect(self.shutdown)
        w.quit_question = self._quit_question
        w.approvals_button.clicked.connect(lambda: self.approvals.show_current(activate=True))
        w.chat.tool_card_activated.connect(self._show_call)
        w.chat.open_output.connect(self._open_output)
        w.chat.undo_requested.connect(self.undo.undo)
        w.timeline_built.connect(self._connect_timeline)
        self._key_loaded.connect(self._on_key_loaded, Qt.ConnectionType.QueuedConnection)

    @property
    def approvals(self) -> ApprovalQueue:
        """The approval dialog's queue, built once the window is on screen."""
        if self._approvals is None:
            from desktop.approval.dialog import ApprovalQueue

            queue = self._approvals = ApprovalQueue(self.window, session_title=self._title_of)
            queue.answered.connect(self.client.send)
            queue.count_changed.connect(self.window.set_pending_approvals)
            queue.inline = self._approval_in_front
            queue.reveal = self._reveal_approval
            queue.withdrawn.connect(self._approval_withdrawn)
            cards = self.window.chat.approval_cards
            queue.dialog.visibility.connect(cards.set_dialog_showing)
            cards.decided.connect(lambda request, choice, message, confirmed: queue.answer(
                request.session_id, request.call_id, choice, message, confirmed))
            self.window.in_front.connect(queue.in_front)
            self.window.in_front.connect(cards.rearm)  # seen only now: a new question
            from desktop.approval.notify import ApprovalNotifier

            self.notifier = ApprovalNotifier(self.window, self._approvals)
        return self._approvals

    def _approval_in_front(self, request: ApprovalRequest) -> bool:
        """A request is a card in front of the user: its session shown in the active
        window (the dialog is for the rest)."""
        return (request.session_id == self.current and self.window.isActiveWindow()
                and self.window.pages.currentWidget() is self.window.chat_page)

    def _reveal_approval(self, request: ApprovalRequest) -> bool:
        """The pending button (or the tray) asks to see a request: its card, scrolled into
        view, when its session is the one shown."""
        if request.session_id != self.current or not self.window.isVisible():
            return False
        self.window.chat.executeDelayedItemsLayout()
        return self.window.chat.approval_cards.reveal(request)

    def _approval_withdrawn(self, session_id: str, call_id: str) -> None:
        view = self.views.get(session_id)
        if view is not None:
            view.chat.set_approval(call_id, None)
        if session_id == self.current:
            self.window.chat.approval_cards.rearm()

    @property
    def mcp_requests(self) -> McpRequests:
        """Servers' forms and sampling requests waiting for the user, built on first use."""
        if self._mcp_requests is None:
            from desktop.mcp_requests.queue import McpRequests

            self._mcp_requests = McpRequests(self.window, session_title=self._title_of)
            self._mcp_requests.answer.connect(self.client.send)
            self._mcp_requests.note.connect(self._note)
        return self._mcp_requests

    def _note(self, text: str) -> None:
        """A notice in the conversation shown (the status bar's message when none is)."""
        view = self._view()
        if view is not None:
            view.chat.add_message(Role.NOTICE, text)
        else:
            self.window.statusBar().showMessage(text, 15_000)

    def _connect_timeline(self, timeline: TimelinePanel) -> None:
        timeline.call_selected.connect(self.window.chat.scroll_to_card)
        timeline.call_activated.connect(self._open_approval_of)
        splitter = load_state(self.paths).timeline_splitter
        if not splitter.isEmpty():
            timeline.splitter.restoreState(splitter)
        timeline.open_output.connect(self._open_output)
        timeline.follow_output.connect(partial(self._open_output, follow=True))
        timeline.stop_requested.connect(self.cancel_call)
        self.undo.connect(timeline)
        view = self._view()
        if view is not None:
            timeline.apply_many(view.events)

    def start(self) -> None:
        """Show the window; the kernel is started once it has been painted (or after
        KERNEL_START_FALLBACK_MS if no paint comes), so the window appears first."""
        self.window.set_kernel_state("Starting the kernel…")
        self.window.welcome.set_kernel_ready(False)
        self._restore_window_state()
        self.window.show_timeline_for(False)
        self._refresh_page()
        self.window.first_painted.connect(self._start_kernel)
        QTimer.singleShot(0 if self.window.painted else KERNEL_START_FALLBACK_MS,
                          self._start_kernel)
        self.window.show()
        if self.key_pending:
            threading.Thread(target=self._look_up_key, name="keyring-lookup",
                             daemon=True).start()

    def _look_up_key(self) -> None:
        """(On a thread.) The stored key and whether a keyring exists; a keyring that fails
        in any way counts as none, so the app never waits for it forever."""
        try:
            state = keystore.keyring_state()
            found = (keystore.stored_key() if state.available else None, state.available)
        except Exception:
            log.exception("the keyring lookup failed")
            found = (None, False)
        self._key_loaded.emit(found)

    def _on_key_loaded(self, found: tuple[str | None, bool]) -> None:
        key, self.keyring_available = found
        self.key_pending = False
        self.window.welcome.set_keyring(self.keyring_available)
        if key:
            self.api_key = key
            if self.client.running:
                self.client.send(p.SetApiKey(key))
        self._refresh_page()

    def _start_kernel(self) -> None:
        if self._closed or self._kernel_started:
            return
        self._kernel_started = True
        _ = self.window.timeline  # built now that the window is on screen
        _ = self.approvals
        self._refresh_page()
        self.client.start()

    def shutdown(self) -> None:
        """Cancel runs, end tool processes, stop the kernel (within 2 s)."""
        if self._closed:
            return
        self._closed = True
        self._save_window_state()
        for session_id, view in self.views.items():
            if view.running and not self.approvals.waiting_in(session_id):
                self.client.send(p.CancelRun(session_id))  # (one waiting is suspended)
        if self._approvals is not None:
            self._approvals.dialog.hide()
        if self._mcp_requests is not None:
            self._mcp_requests.clear()
        self.client.stop(2.0)

    def _quit_question(self) -> str:
        """What quitting now would interrupt, for the window's confirmation ("" if nothing)."""
        running = [v for v in self.views.values() if v.running
                   and not self.approvals.waiting_in(v.info.session_id)]
        waiting = len(self.approvals)
        parts = []
        if running:
            titles = ", ".join(f"“{v.info.title or 'Untitled session'}”" for v in running)
            parts.append(f"A run is still going in {titles}: quitting stops it.")
        if waiting:
            parts.append(f"{waiting} call{'s' if waiting != 1 else ''} wait"
                         f"{'' if waiting != 1 else 's'} for your approval: "
                         f"{'they' if waiting != 1 else 'it'} will be asked again when "
                         "Reins starts next, and nothing runs until you answer.")
        return " ".join(parts)

    def _restore_window_state(self) -> None:
        state = load_state(self.paths)
        if not state.geometry.isEmpty():
            self.window.restoreGeometry(state.geometry)
        if not state.docks.isEmpty():
            self.window.restoreState(state.docks)
        self._restore_session = state.session_id
        if state.workspace:
            self.window.sessions.default_workspace = state.workspace

    def _save_window_state(self) -> None:
        w = self.window
        splitter = w.timeline.splitter.saveState() if w.timeline_created else QByteArray()
        save_state(self.paths, WindowState(
            w.saveGeometry(), w.saveState(), splitter, self.current or "",
            w.sessions.default_workspace))

    # ---- key and settings ------------------------------------------------------------------

    @property
    def can_run(self) -> bool:
        """Whether the prompt is unlocked: the kernel says a run can start (a key, a base URL
        in settings.json or ANTHROPIC_BASE_URL), or a key is here or still being looked up, or
        the session shown talks to the demo model (which needs no key); never while the
        kernel says settings.json cannot be used (nothing would run)."""
        if self.settings.error:
            return False
        view = self._view()
        demo = view is not None and is_demo(view.info.model)
        return bool(self.settings.can_run or self.api_key or self.key_pending or demo)

    def open_settings(self) -> SettingsDialog:
        from desktop.settings.dialog import SettingsDialog

        dialog = SettingsDialog(self.paths, self.window, memory_key=None
                                if self.keyring_available else self.api_key,
                                settings=self.settings)
        dialog.saved.connect(self._settings_saved)
        dialog.command.connect(self._settings_command)
        dialog.grants_panel.revoke_requested.connect(self._revoke_grant)
        dialog.mcp_panel.action_requested.connect(
            lambda name, action: self.client.send(p.McpServerAction(name, action)))
        dialog.mcp_panel.set_states(self.mcp_states.servers, self.mcp_states.error)
        self.settings_dialog = dialog
        for message in (p.GetSettings(), p.GetDiagnostics(), p.ListAllGrants(),
                        p.ListMcpServers()):
            self.client.send(message)
        dialog.open()
        return dialog

    def open_mcp_settings(self) -> SettingsDialog:
        dialog = self.open_settings()
        dialog.tabs.setCurrentWidget(dialog.mcp_panel)
        return dialog

    def _settings_command(self, message: p.Message) -> None:
        """The settings dialog's commands; one the kernel cannot get now is said there."""
        if not self.client.send(message) and self.settings_dialog is not None:
            why = "The kernel is restarting: nothing was sent. Try again in a moment."
            if isinstance(message, p.UpdateSettings) and message.request_id.startswith("mcp"):
                self.settings_dialog.mcp_panel.not_sent(why)
            else:
                self.settings_dialog.not_sent(why)

    def open_grants(self) -> None:
        """The status bar's grants button: settings, on the current session's grants."""
        dialog = self.open_settings()
        dialog.show_tab(dialog.grants_panel)

    def _revoke_grant(self, session_id: str, rule: str, scope: GrantScope) -> None:
        """Revoke now (the Grants page says it acts at once), then list them all again."""
        self.client.send(p.RevokeGrant(session_id, rule, scope))
        if session_id:
            self.client.send(p.ListAllGrants())

    def _request_grants(self, session_id: str) -> None:
        self.client.send(p.ListGrants(session_id))
        if self.settings_dialog is not None and self.settings_dialog.isVisible():
            self.client.send(p.ListAllGrants())

    def _settings_saved(self, saved: SavedSettings) -> None:
        if saved.api_key:
            self.api_key = saved.api_key
        if saved.key_in_memory:
            self._note("This system has no keyring: the API key is kept in memory for this run "
                       "of Reins only.")
        elif saved.key_in_file:
            self._note(f"The API key is kept in {self.paths.api_key_file}, readable only by "
                       "you (mode 0600).")
        self._send_key()
        self.window.banner.hide()
        self._refresh_page()

    def _send_key(self) -> None:
        """The key to the kernel, then the endpoint's models (they depend on key and URL)."""
        if self.api_key:
            self.client.send(p.SetApiKey(self.api_key))
        self.client.send(p.ListModels())

    def _on_settings(self, message: p.SettingsSnapshot) -> None:
        """settings.json as the kernel reads it: the default mode, the model new sessions
        get, whether a run can start, and the settings dialog's contents."""
        self.settings = message
        self.window.sessions.default_mode = message.default_mode
        if self.settings_dialog is not None:
            self.settings_dialog.show_settings(message)
        self._refresh_page()

    # ---- kernel lifecycle ------------------------------------------------------------------

    def on_ready(self, ready: p.KernelReady) -> None:
        self.sandbox = (ready.sandbox, ready.sandbox_reason)
        self.window.set_sandbox(ready.sandbox, ready.sandbox_reason)
        self.default_model = ready.model
        self.window.set_kernel_state("")
        self.window.welcome.set_kernel_ready(True)
        self._send_key()
        self.client.send(p.ListSessions(self.window.sessions.search.text()))
        if self.current is not None:
            self.client.send(p.OpenSession(self.current))

    def on_died(self, reason: str, restarting: bool = True) -> None:
        self.prompt_images.forget()
        self.window.set_kernel_state("Kernel restarting…" if restarting else "Kernel stopped")
        self.window.welcome.set_kernel_ready(False)
        for session_id, view in self.views.items():
            view.chat.finish_streaming()
            if view.running:
                view.running = False
                view.interrupted = True
            self.approvals.discard(session_id)
        if self._mcp_requests is not None:
            self._mcp_requests.clear()
        shown = self._view()
        if shown is not None:
            shown.chat.add_message(Role.ERROR, f"{reason} A new kernel is starting; this "
                                  "session is being reloaded from the store." if restarting
                                  else f"{reason} No new kernel was started: see the "
                                  "window that says why.")
        self._refresh_page()

    def on_kernel_failed(self, failure: KernelFailure) -> None:
        """The kernel stays down: say why and offer to move the database aside."""
        from desktop.kernel_failure import KernelFailureDialog

        self.on_died(failure.reason, restarting=False)
        self.failure_dialog = KernelFailureDialog(failure, self.paths.database,
                                                  self.client.restart_now, self.window)
        self.failure_dialog.moved.connect(
            lambda path: self.window.set_kernel_state(f"Database moved to {path}; restarting…"))
        self.failure_dialog.open()

    # ---- messages from the kernel ----------------------------------------------------------

    def on_batch(self, messages: list[p.Message]) -> None:
        for message in messages:
            self.handlers.handle(message)

    def _handlers(self) -> Handlers:
        """What each message from the kernel does (KernelReady: the client's `ready`)."""
        return (Handlers()
                .on(p.EventMessage, self._on_event)
                .on(p.SettingsSnapshot, self._on_settings)
                .on(p.ModelList, self._on_model_list)
                .on(p.GrantList, self._on_grant_list)
                .on(p.Diagnostics, self._on_diagnostics)
                .on(p.ConnectionChecked, self._on_connection_checked)
                .on(p.PromptImages, self._on_prompt_images)
                .on(p.McpImportPlan, self._on_mcp_import_plan)
                .on(p.McpServerStates, self._on_mcp_server_states)
                .on(p.McpFormRequest, self._on_mcp_form_request)
                .on(p.McpSamplingRequest, self._on_mcp_sampling_request)
                .on(p.McpPromptList, lambda m: self.prompt_menu.set_prompts(m.prompts))
                .on(p.McpPromptText, lambda m: self.prompt_menu.fill(m.text))
                .on(p.SessionList, self._on_session_list)
                .on(p.SessionLoaded, self._on_session_loaded)
                .on(p.SessionDeleted, self._on_session_deleted)
                .on(p.SessionExport, self._on_session_export)
                .on(p.RunStatus, self._on_run_status)
                .on(p.CommandFailed, self._on_command_failed))

    def _on_event(self, message: p.EventMessage) -> None:
        event = message.event
        view = self.views.get(event.session_id)
        if view is None:
            return
        apply_event(view.chat, event, at=time.time())
        if isinstance(event, AssistantDelta):
            return
        self._ask_pictures(event)
        view.keep(event)
        view.note_error(event)
        if event.session_id == self.current and self.window.timeline_created:
            self.window.timeline.apply(event)
        if event.session_id == self.current and isinstance(event, ToolCallStarted):
            self.window.show_timeline_for(True)
        if isinstance(event, ApprovalRequest):
            view.chat.set_approval(event.call_id, event)
            self.approvals.submit(event)
        elif isinstance(event, ApprovalDecision):
            self.approvals.discard(event.session_id, event.call_id)
            if event.scope in ("session", "always"):
                self._request_grants(event.session_id)
        elif isinstance(event, GrantRevoked):
            self._request_grants(event.session_id)
        elif isinstance(event, RunFinished):
            view.count(event)
            self._refresh_status()
        elif isinstance(event, SessionStarted) and event.model:
            view.info = replace(view.info, model=event.model)
            self._refresh_status()

    def _on_model_list(self, message: p.ModelList) -> None:
        self.default_model = message.default or self.default_model
        self.window.model_picker.set_models(message.models, message.error)
        self._refresh_status()

    def _choose_model(self, model: str) -> None:
        if self.current is not None:
            self.client.send(p.SetSessionModel(self.current, model))

    def _on_grant_list(self, message: p.GrantList) -> None:
        if not message.session_id:  # every session's (ListAllGrants)
            if self.settings_dialog is not None:
                self.settings_dialog.grants_panel.show_all(message.grants, self.current)
            return
        self.grants[message.session_id] = message.grants
        if message.session_id == self.current:
            self.window.set_grants(len(message.grants))

    def _on_diagnostics(self, message: p.Diagnostics) -> None:
        if self.settings_dialog is not None:
            self.settings_dialog.show_diagnostics(message.text)

    def _on_connection_checked(self, message: p.ConnectionChecked) -> None:
        if self.settings_dialog is not None:
            self.settings_dialog.show_connection(message)

    def _on_mcp_import_plan(self, message: p.McpImportPlan) -> None:
        if self.settings_dialog is not None:
            self.settings_dialog.mcp_panel.show_plan(message)

    def _on_mcp_server_states(self, message: p.McpServerStates) -> None:
        self.mcp_states = message
        self.mcp_notice.update(message.servers)
        if self.settings_dialog is not None:
            self.settings_dialog.mcp_panel.set_states(message.servers, message.error)

    def _on_mcp_form_request(self, message: p.McpFormRequest) -> None:
        self.mcp_requests.submit_form(message)

    def _on_mcp_sampling_request(self, message: p.McpSamplingRequest) -> None:
        self.mcp_requests.submit_sampling(message)

    def _on_session_list(self, message: p.SessionList) -> None:
        self.window.sessions.model.set_sessions(list(message.sessions))
        for info in message.sessions:
            view = self.views.get(info.session_id)
            if view is not None:
                if view.info.workspace != info.workspace:
                    view.chat.add_message(Role.NOTICE, self._moved_words(view.info.workspace,
                                                                         info.workspace))
                view.info = info
        restore, self._restore_session = self._restore_session, ""
        if self.current is None and any(s.session_id == restore for s in message.sessions):
            self.open_session(restore)
        if self.current is not None:
            self.window.sessions.select(self.current)
        self._refresh_page()  # (its folder or model may have changed)

    def _on_session_loaded(self, message: p.SessionLoaded) -> None:
        info = message.info
        self.window.sessions.model.upsert(info)
        old = self.views.get(info.session_id)
        chat = ChatModel(self)
        view = SessionView(info, chat, interrupted=message.interrupted)
        for event in message.events:
            apply_event(chat, event, at=event.at)
            self._ask_pictures(event)
            view.keep(event)
            view.note_error(event)
            if isinstance(event, RunFinished):
                view.count(event)
        chat.finish_streaming()
        if old is not None and old.running:
            view.running = True
        self.views[info.session_id] = view
        if (message.created or self._opening == info.session_id
                or self.current in (None, info.session_id)):
            self._opening = None
            self._make_current(info.session_id)
        for request in pending_requests(view.events):
            chat.set_approval(request.call_id, request)
            self.approvals.submit(request)
        if (message.created and self._pending_prompt is not None
                and self.current == info.session_id):
            prompt, self._pending_prompt = self._pending_prompt, None
            self.window.prompt.edit.clear()
            self.send_prompt(prompt)
        elif message.created and is_demo(info.model) and self.current == info.session_id:
            edit = self.window.prompt.edit
            edit.setPlainText(DEMO_PROMPT)
            edit.selectAll()
            edit.setFocus()

    def _ask_pictures(self, event: Event) -> None:
        request = self.prompt_images.request_for(event)
        if request is not None and not self.client.send(request):
            self.prompt_images.forget()

    def _on_prompt_images(self, message: p.PromptImages) -> None:
        self.prompt_images.received(message, self.window.devicePixelRatioF())

    def _on_session_deleted(self, message: p.SessionDeleted) -> None:
        self.window.sessions.model.remove(message.session_id)
        self.views.pop(message.session_id, None)
        self.approvals.discard(message.session_id)
        self.grants.pop(message.session_id, None)
        if self.current == message.session_id:
            self.current = None
            self.window.set_grants(0)
            if self.window.timeline_created:
                self.window.timeline.clear()
            self.window.show_session(None, None)
            self._refresh_page()

    def _on_run_status(self, message: p.RunStatus) -> None:
        view = self.views.get(message.session_id)
        if view is None:
            return
        view.running = message.state == "running"
        view.interrupted = message.state == "interrupted"
        if not view.running:
            view.chat.finish_streaming()
            self.approvals.discard(message.session_id)
            if self._mcp_requests is not None:
                self._mcp_requests.forget_session(message.session_id)
            self.client.send(p.ListSessions(self.window.sessions.search.text()))
            self.undo.refresh(message.session_id)
        self._refresh_page()

    def _on_command_failed(self, message: p.CommandFailed) -> None:
        view = self.views.get(message.session_id) or self._view()
        if view is not None:
            view.chat.add_message(Role.ERROR, message.message)
        else:
            self.window.statusBar().showMessage(message.message, 10_000)

    # ---- user actions ----------------------------------------------------------------------------

    def open_session(self, session_id: str) -> None:
        if session_id in self.views:
            self._make_current(session_id)
            return
        self._opening = session_id
        self.client.send(p.OpenSession(session_id))

    def send_prompt(self, text: str) -> None:
        """Start a run of the current session. With none open, the prompt stays in the box
        and the new-session dialog asks for the workspace; the prompt is sent once the
        session exists (nothing ever picks a workspace for the user)."""
        view = self._view()
        if view is None:
            self._pending_prompt = text
            self.window.prompt.edit.setPlainText(text)
            self.window.sessions.ask_new()
            return
        if view.running:
            return
        chips = self.window.prompt.take_attachments()
        files, _ = for_kernel(chips)
        self._start(view, p.StartRun(view.info.session_id, text, files), text, chips)
        self.window.chat.scrollToBottom()  # to the message being sent, whatever was read

    def _start(self, view: SessionView, command: p.Message, text: str = "",
               chips: list[Chip] | None = None) -> None:
        """Send a command that starts a run; if the kernel cannot take it, the prompt and
        its attachments go back in the box."""
        if not self.client.send(command):
            view.chat.add_message(Role.ERROR, "The kernel is restarting, so the prompt was not "
                                  "sent. Send it again in a moment.")
            self.window.prompt.edit.setPlainText(text)
            for chip in chips or []:
                self.window.prompt.tray.restore(chip)
            return
        view.running = True
        view.interrupted = False
        self._refresh_page()

    def begin_edit(self) -> None:
        """"Edit message": the last message the user sent, in the prompt box to change."""
        view = self._view()
        row = view.chat.last_user_row() if view is not None else None
        if view is None or row is None:
            return
        if view.running:
            self.window.statusBar().showMessage(
                "Stop the run before editing the last message.", 10_000)
            return
        item = view.chat.item(row)
        assert isinstance(item, MessageItem)
        self.window.prompt.begin_edit(item.text, kept_chips(item.attachments, item.pictures))

    def send_edit(self, text: str) -> None:
        view = self._view()
        if view is None or view.running:
            return
        chips = self.window.prompt.take_attachments()
        files, keep = for_kernel(chips)
        self._start(view, p.EditLastMessage(view.info.session_id, text, files, keep), text,
                    chips)

    def regenerate(self) -> None:
        """"Regenerate answer": the last message's answer asked for again."""
        view = self._view()
        if view is None:
            return
        if view.running:
            self.window.statusBar().showMessage(
                "Stop the run before asking for the answer again.", 10_000)
            return
        self._start(view, p.RegenerateAnswer(view.info.session_id))

    def restore_version(self, version: int) -> None:
        """An earlier answer to the last message chosen in the chat: the conversation goes
        on from it (the kernel records it; a refusal comes back in words)."""
        view = self._view()
        if view is None:
            return
        if view.running:
            view.chat.show_live()
            self.window.statusBar().showMessage(
                "Stop the run before going back to an earlier answer.", 10_000)
            return
        self.client.send(p.RestoreVersion(view.info.session_id, version))

    def _new_session(self, workspace: str, mode: str, confirm_broad: bool) -> None:
        """A new session in `workspace`; "" for a scratch folder the kernel makes."""
        self.client.send(p.NewSession(workspace, Mode(mode), scratch=not workspace,
                                      confirm_broad_workspace=confirm_broad))

    def start_demo(self) -> None:
        """The welcome page's *Try the demo*: a session with the demo model, in ask mode (so
        its write asks), in a scratch folder."""
        self.client.send(p.NewSession("", Mode.ASK, title=DEMO_TITLE, scratch=True,
                                      model=DEMO_MODEL))

    def choose_folder(self) -> None:
        """*Choose folder…*: the current session's later runs work in a folder the user
        picks (a broad one only once they confirm what it exposes)."""
        from PySide6.QtWidgets import QMessageBox

        view = self._view()
        if view is None:
            return
        if view.running:
            self.window.statusBar().showMessage(
                "Stop the run before choosing another folder.", 10_000)
            return
        folder = self.ask_folder()
        if not folder:
            return
        broad = broad_workspace_reason(folder)
        if broad is not None and QMessageBox.question(
                self.window, "Use this folder?", f"{broad}. Every file in it can be read "
                "without asking in ask mode, and changed in auto modes. Use it anyway?",
                QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                QMessageBox.StandardButton.No) != QMessageBox.StandardButton.Yes:
            return
        self.client.send(p.SetWorkspace(view.info.session_id, folder,
                                        confirm_broad_workspace=broad is not None))

    def _ask_folder(self) -> str:
        from PySide6.QtWidgets import QFileDialog

        return QFileDialog.getExistingDirectory(self.window, "Choose the folder for this "
                                                "session", str(Path.home()))

    def _moved_words(self, old: str, new: str) -> str:
        kept = (f" What it wrote before stays in the scratch folder {old}."
                if self.paths.is_scratch(old) else "")
        return f"From the next message on, this session works in {new}.{kept}"

    def _forget_pending_prompt(self) -> None:
        self._pending_prompt = None

    def compact_session(self) -> None:
        """Compact conversation: the kernel summarizes the current session's older turns
        for its next requests (a `context_compacted` notice, or an error saying why not)."""
        view = self._view()
        if view is None or view.running:
            return
        if self.client.send(p.CompactSession(view.info.session_id)):
            view.running = True
            self._refresh_page()

    def export_session(self, what: str) -> None:
        """File → Export: ask where (a save dialog), then ask the kernel for the session's
        trace and conversation; the file is written when they come (`_on_session_export`)."""
        view = self._view()
        if view is None:
            return
        path = self.ask_export_path(what, view.info.title or view.info.session_id)
        if path and self.client.send(p.ExportSession(view.info.session_id)):
            self._exports.setdefault(view.info.session_id, []).append((what, path))

    def _ask_export_path(self, what: str, title: str) -> str:
        from PySide6.QtWidgets import QFileDialog

        markdown = what == "markdown"
        name = re.sub(r"[^\w.-]+", "-", title).strip("-")[:60] or "session"
        path, _filter = QFileDialog.getSaveFileName(
            self.window, "Export conversation" if markdown else "Export trace",
            str(Path.home() / f"{name}{'.md' if markdown else '.jsonl'}"),
            "Markdown (*.md)" if markdown else "JSON lines (*.jsonl)")
        return path

    def _on_session_export(self, message: p.SessionExport) -> None:
        for what, path in self._exports.pop(message.session_id, []):
            text = message.markdown if what == "markdown" else message.trace
            try:
                Path(path).write_text(text, encoding="utf-8")
            except OSError as exc:
                self.window.statusBar().showMessage(
                    f"Could not export to {path}: {exc.strerror or exc}", 15_000)
            else:
                self.window.statusBar().showMessage(f"Exported to {path}", 10_000)

    def cancel_run(self) -> None:
        view = self._view()
        if view is not None and view.running:
            self.client.send(p.CancelRun(view.info.session_id))

    def escape_in_prompt(self) -> None:
        """Esc in the prompt during a run stops it, except while one of its calls waits for
        an approval: then Esc means what the approval dialog says, "decide later" (the
        request stays pending, the run waits), and the status bar says how to stop."""
        view = self._view()
        if view is None or not view.running:
            return
        if self._approvals is None or not self._approvals.waiting_in(view.info.session_id):
            self.cancel_run()
            return
        self._approvals.postpone()
        # A tooltip, not a status message: that would hide the pending button it points to.
        edit = self.window.prompt.edit
        QToolTip.showText(edit.mapToGlobal(edit.rect().topLeft()), ESC_WHILE_ASKED, edit)

    def cancel_call(self, call_id: str) -> None:
        """Stop one tool call of the current session's run (its timeline row's Stop); the
        run goes on and the model is told the call was stopped."""
        view = self._view()
        if view is not None and view.running:
            self.client.send(p.CancelCall(view.info.session_id, call_id))

    def _banner_action(self) -> None:
        view = self._view()
        if not self.can_run or view is None:
            self.open_settings()
        elif view.interrupted or view.retry_error:
            view.interrupted = False
            view.retry_error = ""
            view.running = True
            self.client.send(p.ResumeRun(view.info.session_id))
            self._refresh_page()

    def _set_mode(self, mode: str) -> None:
        if self.current is not None:
            self.client.send(p.SetMode(self.current, Mode(mode)))

    def _search(self, text: str) -> None:
        self.client.send(p.ListSessions(text))

    def _show_call(self, call_id: str) -> None:
        """A call's card in the chat was activated: its pending approval if it waits for
        one, and its row in the timeline."""
        self.window.timeline_dock.show()
        self.window.timeline.select_call(call_id)
        self._open_approval_of(call_id)

    def _open_approval_of(self, call_id: str) -> None:
        if self.current is not None:
            self.approvals.show_call(self.current, call_id)

    def _open_output(self, path: str, follow: bool = False) -> None:
        from desktop.viewer.window import show_output

        if Path(path).is_file():
            show_output(path, self.window, follow=follow)
        else:
            self.window.statusBar().showMessage(f"The output file {path} is gone.", 10_000)

    # ---- what is shown ------------------------------------------------------------------

    def _view(self) -> SessionView | None:
        return self.views.get(self.current) if self.current else None

    def _chat_of(self, session_id: str) -> ChatModel | None:
        view = self.views.get(session_id)
        return view.chat if view is not None else None

    def _title_of(self, session_id: str) -> str:
        view = self.views.get(session_id)
        return view.info.title if view is not None else ""

    def _make_current(self, session_id: str) -> None:
        view = self.views[session_id]
        self.current = session_id
        self.window.show_session(view.info.title, view.chat)
        if self.window.timeline_created:
            self.window.timeline.clear()
            self.window.timeline.apply_many(view.events)
        self.undo.session_shown(session_id)
        self.window.show_timeline_for(any(isinstance(e, ToolCallStarted) for e in view.events))
        self.window.sessions.select(session_id)
        self.window.chat.scrollToBottom()
        self.window.set_grants(len(self.grants.get(session_id, ())))
        self._request_grants(session_id)
        self._refresh_page()

    def _refresh_status(self) -> None:
        view = self._view()
        w = self.window
        w.set_mode(view.info.mode if view else None)
        w.setWindowTitle(window_title((view.info.title or "Untitled session") if view
                                      else None))
        w.chat.empty_state.set_context(view.info.workspace if view else "",
                                       view.info.mode if view else "")
        w.prompt.set_workspace(view.info.workspace if view else "")
        if view is not None:
            w.set_usage(view.input_tokens, view.output_tokens, view.cost, view.context)
            w.set_model(view.info.model or self.default_model, session=True)
        else:
            w.set_usage(0, 0, 0.0)
            w.set_model(self.settings.model or self.default_model, session=False)

    def _refresh_page(self) -> None:
        view = self._view()
        self.window.show_readiness(
            can_run=self.can_run, key_pending=self.key_pending, has_session=view is not None,
            running=view is not None and view.running,
            interrupted=view is not None and view.interrupted,
            failed=view is not None and bool(view.retry_error) and not view.running,
            problem=f"settings.json cannot be used, so nothing runs until it is fixed: "
                    f"{self.settings.error}" if self.settings.error else "")
        self.window.workspace_bar.show_note(None if view is None else workspace_note(
            view.info.workspace, scratch=self.paths.is_scratch(view.info.workspace),
            demo=is_demo(view.info.model), keyed=bool(self.settings.can_run or self.api_key)))
        self._refresh_status()
