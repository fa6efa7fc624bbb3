"""The main window: sessions sidebar, chat, timeline dock, status bar.

It is widgets only; `desktop.controller.AppController` feeds it kernel messages and turns
its signals into protocol commands.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QPalette, QResizeEvent
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from desktop.chat.model import ChatModel
from desktop.chat.prompt import PromptBox
from desktop.chat.view import ChatView
from desktop.help.menus import install_menus
from desktop.mode_picker import mode_picker
from desktop.model_picker import ModelPicker
from desktop.sessions.panel import SessionsPanel
from desktop.status_bar import FitButton, FitLabel, StatusFitter
from desktop.welcome import WelcomePanel
from desktop.words import MODE_ALLOWS, approvals_forms, sandbox_forms, usage_forms
from desktop.words import count as words_count
from desktop.workspace_bar import WorkspaceBar
from kernel.modes import MODE_NAMES, Mode

if TYPE_CHECKING:
    from desktop.timeline.panel import TimelinePanel

APP_NAME = "Reins"


def window_title(session_title: str | None) -> str:
    """"Fix the build — Reins": the app's name last, once. Qt appends the application's
    display name to a title that does not end with it, so every title of the app either
    ends with APP_NAME or leaves it out (tests/desktop/test_titles_and_mnemonics.py)."""
    return f"{session_title} — {APP_NAME}" if session_title else APP_NAME


SIDE_BY_SIDE_MIN = 1160
"""Below this width the sessions and the timeline are tabs of one dock on the right."""
FULL_PANELS_MIN = 1400
"""From this width both panels have their full widths."""
SESSIONS_WIDTH, TIMELINE_WIDTH = 260, 420
MODE_CHARS = 5
"""The mode box's width in the composer, in characters."""
COMPACT_TIP = ("Summarize the older turns of this conversation for the model's next "
               "requests (the full history is kept)")
USAGE_TIP = ("This session's tokens and cost; context: how full the model's context window "
             "was at the last request")


@dataclass(frozen=True)
class PanelLayout:
    tabbed: bool
    """The sessions and the timeline share one dock (tabs) instead of one on each side."""
    sessions: int
    timeline: int
    """Widths (the dock's, when tabbed)."""


def panel_layout(width: int) -> PanelLayout:
    """The side panels for a window `width` wide: the chat keeps at least half of it."""
    if width >= FULL_PANELS_MIN:
        return PanelLayout(False, SESSIONS_WIDTH, TIMELINE_WIDTH)
    if width >= SIDE_BY_SIDE_MIN:
        return PanelLayout(False, SESSIONS_WIDTH, width // 2 - SESSIONS_WIDTH - 20)
    dock = min(TIMELINE_WIDTH, int(width * 0.45))
    return PanelLayout(True, dock, dock)


class Banner(QFrame):
    """A one-line notice above the prompt with an optional action (e.g. Retry)."""

    action = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Notice")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.label = QLabel(self)
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.button = QPushButton(self)
        self.button.setAccessibleName("Notice action")
        self.button.clicked.connect(self.action)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 4, 8, 4)
        layout.addWidget(self.label, 1)
        layout.addWidget(self.button)
        self.hide()

    def show_notice(self, text: str, action: str = "") -> None:
        self.label.setText(text)
        self.button.setText(action)
        self.button.setAccessibleName(action.replace("&", ""))
        self.button.setVisible(bool(action))
        self.show()


class MainWindow(QMainWindow):
    mode_changed = Signal(str)
    settings_requested = Signal()
    grants_requested = Signal()
    """The status bar's grants button: show what the current session is allowed."""
    compact_requested = Signal()
    """Compact conversation: summarize the current session's older turns now."""
    closing = Signal()
    first_painted = Signal()
    timeline_built = Signal(object)
    export_requested = Signal(str)
    """File → Export: "markdown" (the conversation) or "trace" (JSON lines)."""
    in_front = Signal()
    """The window became the active one (the user came back to it)."""

    def __init__(self) -> None:
        super().__init__()
        self.setWindowTitle(window_title(None))
        self.setAccessibleName("Reins main window")
        available = self.screen().availableGeometry()  # a first start on a small screen
        self.resize(min(1280, available.width()), min(800, available.height()))
        self.setDockOptions(QMainWindow.DockOption.AnimatedDocks
                            | QMainWindow.DockOption.AllowTabbedDocks)

        self.sessions = SessionsPanel(self, filter_locally=False)
        sessions_dock = QDockWidget("Sessions", self)
        sessions_dock.setObjectName("sessions-dock")
        sessions_dock.setAccessibleName("Sessions sidebar")
        sessions_dock.setWidget(self.sessions)
        sessions_dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable)
        self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, sessions_dock)
        self.sessions_dock = sessions_dock
        self.panels_tabbed = False

        self._timeline: TimelinePanel | None = None
        self.timeline_dock = QDockWidget("Timeline", self)
        self.timeline_dock.setObjectName("timeline-dock")
        self.timeline_dock.setAccessibleName("Tool-call timeline")
        self.timeline_dock.setWidget(QLabel("Loading the timeline…", self.timeline_dock))
        self.timeline_choice: bool | None = None
        """Whether the user chose to show the timeline (None: not yet; it follows the
        session's calls)."""
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.timeline_dock)
        self.resizeDocks([sessions_dock, self.timeline_dock], [SESSIONS_WIDTH, TIMELINE_WIDTH],
                         Qt.Orientation.Horizontal)

        self.welcome = WelcomePanel(self)
        self.chat = ChatView(self)
        self.chat.empty_state.suggestion.connect(self._suggest)
        self.empty_model = ChatModel(self)
        self.chat.setModel(self.empty_model)
        self.banner = Banner(self)
        self.prompt = PromptBox(self)
        chat_page = QWidget(self)
        chat_page.setAutoFillBackground(True)  # one page: the conversation's colour
        chat_page.setBackgroundRole(QPalette.ColorRole.Base)
        chat_layout = QVBoxLayout(chat_page)
        chat_layout.setContentsMargins(0, 0, 0, 0)
        chat_layout.setSpacing(0)
        self.workspace_bar = WorkspaceBar(self)  # a scratch folder, the demo model: said
        chat_layout.addWidget(self.workspace_bar)
        chat_layout.addWidget(self.chat, 1)
        chat_layout.addWidget(self.banner)
        chat_layout.addWidget(self.prompt)
        self.pages = QStackedWidget(self)
        self.pages.addWidget(self.welcome)
        self.pages.addWidget(chat_page)
        self.chat_page = chat_page
        self.setCentralWidget(self.pages)

        self._build_status_bar()
        self._build_menu()
        self.welcome.open_settings.connect(self.settings_requested)
        self.painted = False
        """The window has been painted at least once (`first_painted` follows)."""
        self.quit_question: Callable[[], str] = lambda: ""
        """What closing now would interrupt, in words ("" for nothing): asked first."""
        self.quit_box: QMessageBox | None = None
        self._quit_confirmed = False
        self.installEventFilter(self)

    def _build_status_bar(self) -> None:
        bar = self.statusBar()
        bar.setAccessibleName("Status bar")
        self.model_picker = ModelPicker(self)
        self.mode_combo = mode_picker(self)
        self.mode_combo.setToolTip("What this session may do without asking")
        self.mode_combo.setEnabled(False)
        self.mode_combo.textActivated.connect(self.mode_changed)
        self.sandbox_label = FitLabel("Sandbox state", self)
        self.sandbox_label.set_forms(["Sandbox: checking…"])
        self.usage_label = FitLabel("Tokens and cost of this session", self)
        self.approvals_button = FitButton("Show pending approvals", self)
        self.approvals_button.setStyleSheet(
            "QPushButton { background: #bf8700; color: white; font-weight: bold;"
            " border-radius: 4px; padding: 2px 10px; }")
        self.kernel_label = FitLabel("Kernel state", self)
        self.grants_button = FitButton("Show and revoke this session's grants", self)
        self.grants_button.setFlat(True)
        self.grants_button.clicked.connect(self.grants_requested)
        self.mcp_button = FitButton("MCP server failed: show the details", self)
        self.mcp_button.setFlat(True)
        self.mcp_button.setObjectName("mcpFailure")
        for widget in (self.kernel_label, self.approvals_button, self.grants_button,
                       self.mcp_button, self.sandbox_label):
            bar.addWidget(widget)
        self.mode_combo.setMinimumContentsLength(MODE_CHARS)
        self.mode_combo.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.prompt.add_controls(self.model_picker, self.mode_combo)
        self.compact_button = FitButton("Compact conversation", self)
        self.compact_button.setFlat(True)
        self.compact_button.clicked.connect(self.compact_requested)
        bar.addPermanentWidget(self.compact_button)
        bar.addPermanentWidget(self.usage_label)
        self.status_fitter = StatusFitter(bar, {
            "kernel": self.kernel_label, "approvals": self.approvals_button,
            "grants": self.grants_button, "mcp": self.mcp_button, "sandbox": self.sandbox_label,
            "compact": self.compact_button, "usage": self.usage_label}, fixed=[])
        self.status_fitter.refit()

    def _build_menu(self) -> None:
        menu = self.menuBar().addMenu("&File")
        self.new_action = QAction("&New session…", self)
        self.new_action.setShortcut(QKeySequence.StandardKey.New)
        self.new_action.triggered.connect(self.sessions.ask_new)
        self.settings_action = QAction("&Settings…", self)
        self.settings_action.setShortcut(QKeySequence("Ctrl+,"))
        self.settings_action.triggered.connect(self.settings_requested)
        self.quit_action = QAction("&Quit", self)
        self.quit_action.setShortcut(QKeySequence.StandardKey.Quit)
        self.quit_action.triggered.connect(self.close)
        for action in (self.new_action, self.settings_action, self.quit_action):
            menu.addAction(action)
        self.export_actions = {
            "markdown": QAction("&Export conversation as Markdown…", self),
            "trace": QAction("Export &trace (JSON lines)…", self),
        }
        for what, action in self.export_actions.items():
            action.setEnabled(False)
            action.triggered.connect(lambda _checked=False, w=what: self.export_requested.emit(w))
            menu.insertAction(self.quit_action, action)
        menu.insertSeparator(self.quit_action)
        self.compact_action = QAction("Co&mpact conversation", self)
        self.compact_action.setToolTip(COMPACT_TIP)
        self.compact_action.setEnabled(False)
        self.compact_action.triggered.connect(self.compact_requested)
        menu.insertAction(self.settings_action, self.compact_action)
        view = self.menuBar().addMenu("&View")
        toggle = self.timeline_dock.toggleViewAction()
        toggle.setText("&Timeline of tool calls")
        toggle.setShortcut(QKeySequence("Ctrl+Shift+T"))
        toggle.triggered.connect(self._timeline_chosen)
        view.addAction(toggle)
        from desktop.evaluations.action import evaluations_action

        view.addAction(evaluations_action(self))
        install_menus(self)

    def _timeline_chosen(self, shown: bool) -> None:
        self.timeline_choice = shown

    def show_timeline_for(self, calls: bool) -> None:
        """The timeline is out of the way until the session shown has a tool call, unless
        the user opened or closed it (View → Timeline, Ctrl+Shift+T): that choice holds."""
        wanted = self.timeline_choice if self.timeline_choice is not None else calls
        if wanted != self.timeline_dock.isVisibleTo(self):
            self.timeline_dock.setVisible(wanted)

    @property
    def timeline_created(self) -> bool:
        return self._timeline is not None

    @property
    def timeline(self) -> TimelinePanel:
        """The timeline panel, built on first use: the app builds it right after the
        window's first paint, so its import and construction never delay the window."""
        if self._timeline is None:
            from desktop.timeline.panel import TimelinePanel

            self._timeline = TimelinePanel(self.timeline_dock)
            self.timeline_dock.setWidget(self._timeline)
            self.timeline_built.emit(self._timeline)
        return self._timeline

    # ---- state shown ------------------------------------------------------------------------

    def show_session(self, title: str | None, model: ChatModel | None) -> None:
        self.setWindowTitle(window_title(title or ("Untitled session" if model else None)))
        self.chat.setModel(model or self.empty_model)
        for action in self.export_actions.values():
            action.setEnabled(model is not None)

    def _suggest(self, text: str) -> None:
        """A suggested prompt was clicked: in the composer, to send as is or change."""
        self.prompt.edit.setPlainText(text)
        self.prompt.edit.setFocus()
        self.prompt.edit.moveCursor(self.prompt.edit.textCursor().MoveOperation.End)

    def show_page(self, welcome: bool) -> None:
        self.pages.setCurrentWidget(self.welcome if welcome else self.chat_page)

    def show_readiness(self, *, can_run: bool, key_pending: bool, has_session: bool,
                       running: bool, interrupted: bool, failed: bool = False,
                       problem: str = "") -> None:
        """The page, the prompt and the banner for what the app can do now; `problem`: why
        nothing can run although a key may be there (settings.json cannot be used)."""
        self.show_page(welcome=not has_session and not can_run and not problem)
        self.prompt.set_running(running)
        self.compact_action.setEnabled(has_session and can_run and not running)
        self.compact_button.set_forms(["Compact", ""] if has_session else [], COMPACT_TIP)
        self.compact_button.setEnabled(self.compact_action.isEnabled())
        self.status_fitter.refit()
        if problem:
            self.prompt.set_enabled_for_input(False, "Fix settings.json to send prompts")
            self.banner.show_notice(problem, "Open &Settings")
        elif not can_run:
            self.prompt.set_enabled_for_input(False, "Add an API key in Settings to send prompts")
            self.banner.show_notice("Reins needs an Anthropic API key (or a compatible server's "
                                    "address) to run. Past sessions can be read without one.",
                                    "Open &Settings")
        elif key_pending:
            self.prompt.set_enabled_for_input(False, "Reading the API key from the keyring…")
            self.banner.hide()
        else:
            self.prompt.set_enabled_for_input(
                True, "Ask Reins… (Enter to send, Shift+Enter for a new line)")
            if failed and not interrupted:
                self.banner.show_notice("The model could not answer (see the error above). "
                                        "Retry sends the same turn again.", "&Retry")
            elif interrupted:
                self.banner.show_notice("The last run of this session was interrupted. Retry "
                                        "continues it from where it stopped.", "&Retry")
            else:
                self.banner.hide()

    def set_mode(self, mode: str | None) -> None:
        """The current session's mode; with none open, the mode a new session gets
        (shown, not editable here: the new-session dialog asks)."""
        self.mode_combo.setEnabled(mode is not None)
        self.mode_combo.setCurrentText(mode if mode is not None else self.sessions.default_mode)
        shown = self.mode_combo.currentText()
        self.mode_combo.setToolTip(f"{MODE_NAMES[Mode(shown)]} mode: {MODE_ALLOWS[shown]}"
                                   if mode else "The mode new sessions start in (Settings → "
                                   "Default mode)")

    def set_model(self, model: str, *, session: bool) -> None:
        """The model the current session sends to (`session`), else new sessions' model."""
        self.model_picker.show_model(model, session=session)
        self.status_fitter.refit()

    def set_sandbox(self, kind: str, reason: str) -> None:
        self.sandbox_label.set_forms(sandbox_forms(kind, reason))
        self.status_fitter.refit()

    def set_usage(self, input_tokens: int, output_tokens: int, cost: float,
                  context: tuple[int, int] = (0, 0)) -> None:
        """Tokens and cost of the session, and how full the context window was at the
        last request (`context`: its tokens and the window)."""
        self.usage_label.set_forms(usage_forms(input_tokens, output_tokens, cost, context),
                                   USAGE_TIP)
        self.status_fitter.refit()

    def set_pending_approvals(self, count: int) -> None:
        self.approvals_button.set_forms(approvals_forms(count) if count > 0 else (),
                                        "Calls wait for your answer; click to see the first")
        self.status_fitter.refit()

    def set_grants(self, count: int) -> None:
        """How many grants (session grants and always rules) the current session has."""
        self.grants_button.set_forms([words_count(count, "grant")] if count > 0 else [],
                                     "What this session may do without asking; click to "
                                     "review or revoke")
        self.status_fitter.refit()

    def set_kernel_state(self, text: str) -> None:
        self.kernel_label.set_forms([text] if text else [])
        self.status_fitter.refit()

    # ---- layout -----------------------------------------------------------------------------

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self.fit_panels()
        self.status_fitter.refit()

    def fit_panels(self) -> None:
        """Keep the chat at least half the window wide: below SIDE_BY_SIDE_MIN the side
        panels become tabs of one dock (the timeline's tab in front), above it they go
        back to both sides; their widths are set when the chat would get less than half
        (widths the user chose are kept otherwise)."""
        layout = panel_layout(self.width())
        if layout.tabbed != self.panels_tabbed:
            self.panels_tabbed = layout.tabbed
            if layout.tabbed:
                self.tabifyDockWidget(self.timeline_dock, self.sessions_dock)
                self.timeline_dock.raise_()
            else:
                self.addDockWidget(Qt.DockWidgetArea.LeftDockWidgetArea, self.sessions_dock)
        QTimer.singleShot(0, self._fit_widths)  # once the layout has the new width

    def _fit_widths(self) -> None:
        layout = panel_layout(self.width())
        central = self.centralWidget()
        assert central is not None  # set in __init__
        if central.width() * 2 >= self.width() or layout.tabbed != self.panels_tabbed:
            return
        docks = [self.timeline_dock] if layout.tabbed else [self.sessions_dock,
                                                             self.timeline_dock]
        widths = [layout.timeline] if layout.tabbed else [layout.sessions, layout.timeline]
        self.resizeDocks(docks, widths, Qt.Orientation.Horizontal)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.ActivationChange and self.isActiveWindow():
            self.in_front.emit()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        """Watches for the first paint only, then stops watching."""
        if watched is self and event.type() == QEvent.Type.Paint:
            self.removeEventFilter(self)
            self.painted = True
            QTimer.singleShot(0, self.first_painted.emit)
        return False

    def closeEvent(self, event: QCloseEvent) -> None:
        question = "" if self._quit_confirmed else self.quit_question()
        if question:
            event.ignore()
            self._ask_before_quitting(question)
            return
        self.closing.emit()
        super().closeEvent(event)

    def _ask_before_quitting(self, question: str) -> None:
        if self.quit_box is not None and self.quit_box.isVisible():
            return
        box = QMessageBox(QMessageBox.Icon.Question, f"Quit {APP_NAME}", question,
                          QMessageBox.StandardButton.Cancel, self)
        box.setAccessibleName("Confirm quit")
        quit_button = box.addButton("&Quit anyway", QMessageBox.ButtonRole.AcceptRole)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        def clicked(button: object) -> None:
            if button is quit_button:
                self._quit_now()

        box.buttonClicked.connect(clicked)
        self.quit_box = box
        box.open()

    def _quit_now(self) -> None:
        self._quit_confirmed = True
        self.close()
