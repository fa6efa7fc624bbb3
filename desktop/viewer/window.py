"""The output viewer: any externalized tool output, of any size, even while it is written.

    viewer = OutputViewer(parent=None)
    viewer.open(path)               # returns at once; False (with the reason shown) on error
    viewer.search_for(text, regex=False, case=False)
    viewer.find_next(), viewer.find_previous(), viewer.go_to_line(n)   # n is 1-based
    viewer.close_file()             # also done by closeEvent
    show_output(path, parent, follow=False)  # a top-level viewer window, wholly on screen,
                                    # closed by Esc / Ctrl+W, deleted on close

The file is indexed in a worker process (`LineIndex`, desktop/viewer/worker.py) and shown
by `LogView`, which reads only the rows on screen, so opening a 1 GB file costs the same as
a 1 KB one, memory does not grow with the file, and scanning never holds the UI's GIL. The
viewer follows the end of a growing file like `tail -f` when scrolled to the bottom
("Follow"); a search or Go to line that lands on the last rows does not turn Follow on.
Search (`SearchScan`, run by the same worker) starts as you type: the count fills
in as the scan proceeds, Enter / Next and Shift+Enter / Previous move between matches
(a Next pressed before the scan reached the next match jumps when it is found). Controls:
search text, Regex, Match case, Previous, Next, Go to line, Wrap, Colours (render or strip
ANSI), Follow, Copy, Open in default editor, Show in folder. A timer (50 ms) polls the
background work; nothing in the UI thread reads more than the rows on screen.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

from PySide6.QtCore import QSize, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QCloseEvent, QDesktopServices, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from desktop.placement import place_window
from desktop.viewer.index import LineIndex
from desktop.viewer.search import PatternError, SearchScan, compile_pattern
from desktop.viewer.view import LogView

POLL_MS = 50
SEARCH_DELAY_MS = 150


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


class OutputViewer(QWidget):
    file_opened = Signal(str)
    search_finished = Signal(int)
    """The scan caught up with the end of the file (match count)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Output viewer")
        self.index: LineIndex | None = None
        self._open: list[LineIndex] = []
        # Deleted with its parent (no closeEvent): still end the worker process.
        self.destroyed.connect(partial(_close_all, self._open))
        self.scan: SearchScan | None = None
        self._pending_move = 0
        self._current_offset: int | None = None
        self._reported_done = False

        self.path_label = QLabel()
        self.path_label.setTextFormat(Qt.TextFormat.PlainText)
        self.path_label.setAccessibleName("File shown")
        self.path_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.status = QLabel()
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        self.status.setAccessibleName("File status")

        self.search = QLineEdit()
        self.search.setPlaceholderText("Search (Enter: next, Shift+Enter: previous)")
        self.search.setClearButtonEnabled(True)
        self.search.setAccessibleName("Search text")
        self.regex = QCheckBox("Regex")
        self.regex.setAccessibleName("Search with a regular expression")
        self.case = QCheckBox("Match case")
        self.case.setAccessibleName("Match case")
        self.previous_button = QPushButton("◀ Previous")
        self.previous_button.setAccessibleName("Previous match")
        self.next_button = QPushButton("Next ▶")
        self.next_button.setAccessibleName("Next match")
        self.matches = QLabel()
        self.matches.setTextFormat(Qt.TextFormat.PlainText)
        self.matches.setAccessibleName("Match count")

        self.line_box = QSpinBox()
        self.line_box.setRange(1, 2**31 - 1)
        self.line_box.setAccessibleName("Line number to go to")
        self.go_button = QPushButton("Go to line")
        self.go_button.setAccessibleName("Go to line")
        self.wrap = QCheckBox("Wrap")
        self.wrap.setAccessibleName("Wrap long lines")
        self.colours = QCheckBox("Colours")
        self.colours.setChecked(True)
        self.colours.setAccessibleName("Show ANSI colours (off: strip them)")
        self.follow = QCheckBox("Follow")
        self.follow.setAccessibleName("Follow the end of the file")
        self.copy_button = QPushButton("Copy")
        self.copy_button.setAccessibleName("Copy selected lines")
        self.editor_button = QPushButton("Open in editor")
        self.editor_button.setAccessibleName("Open in default editor")
        self.folder_button = QPushButton("Show in folder")
        self.folder_button.setAccessibleName("Show in folder")

        self.view = LogView()

        top = QHBoxLayout()
        top.addWidget(self.path_label, 1)
        top.addWidget(self.status)
        search_bar = QHBoxLayout()
        for widget in (self.search, self.regex, self.case, self.previous_button,
                       self.next_button, self.matches):
            search_bar.addWidget(widget)
        search_bar.setStretch(0, 1)
        tools = QHBoxLayout()
        for tool in (self.line_box, self.go_button, self.wrap, self.colours, self.follow):
            tools.addWidget(tool)
        tools.addStretch(1)
        for widget in (self.copy_button, self.editor_button, self.folder_button):
            tools.addWidget(widget)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addLayout(search_bar)
        layout.addLayout(tools)
        layout.addWidget(self.view, 1)

        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(SEARCH_DELAY_MS)
        self._search_timer.timeout.connect(self._restart_search)
        self._poll = QTimer(self)
        self._poll.setInterval(POLL_MS)
        self._poll.timeout.connect(self._tick)

        self.search.textChanged.connect(lambda _t: self._search_timer.start())
        self.regex.toggled.connect(lambda _c: self._restart_search())
        self.case.toggled.connect(lambda _c: self._restart_search())
        self.search.returnPressed.connect(self.find_next)
        shortcuts = (
            (QKeySequence("Shift+Return"), self.search, self.find_previous),
            (QKeySequence(QKeySequence.StandardKey.Find), self, self.search.setFocus),
            (QKeySequence(QKeySequence.StandardKey.FindNext), self, self.find_next),
            (QKeySequence(QKeySequence.StandardKey.FindPrevious), self, self.find_previous),
        )
        for keys, owner, slot in shortcuts:  # within the viewer only, also when embedded
            shortcut = QShortcut(keys, owner, slot)
            shortcut.setContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.next_button.clicked.connect(self.find_next)
        self.previous_button.clicked.connect(self.find_previous)
        self.go_button.clicked.connect(lambda: self.go_to_line(self.line_box.value()))
        self.line_box.lineEdit().returnPressed.connect(
            lambda: self.go_to_line(self.line_box.value()))
        self.wrap.toggled.connect(self.view.set_wrap)
        self.colours.toggled.connect(self.view.set_ansi)
        self.follow.toggled.connect(self.view.set_follow)
        self.view.follow_changed.connect(self._follow_changed)
        self.view.copied.connect(self._copied)
        self.copy_button.clicked.connect(self.view.copy)
        self.editor_button.clicked.connect(self.open_in_editor)
        self.folder_button.clicked.connect(self.show_in_folder)
        self._set_enabled(False)

    # --- files ---------------------------------------------------------------------------

    def open(self, path: str | Path) -> bool:
        """Show `path`; returns at once, the index fills in in the background."""
        self.close_file()
        path = Path(path)
        self.path_label.setText(str(path))
        try:
            index = LineIndex(path)
        except OSError as exc:
            return self._cannot_open(exc)
        try:
            index.start()
        except OSError as exc:
            index.close()
            return self._cannot_open(exc)
        self.index = index
        self._open.append(index)
        self.setWindowTitle(f"Output — {path.name}")
        self.view.set_index(index)
        self._set_enabled(True)
        self._poll.start()
        self._tick()
        if self.search.text():
            self._restart_search()
        self.file_opened.emit(str(path))
        return True

    def _cannot_open(self, exc: OSError) -> bool:
        self.status.setText(f"Cannot open: {exc.strerror or exc}")
        self._set_enabled(False)
        return False

    def close_file(self) -> None:
        self._poll.stop()
        self._stop_search()
        if self.index is not None:
            self.view.set_index(None)
            self.index.close()
            self._open.remove(self.index)
            self.index = None
        self._set_enabled(False)

    def closeEvent(self, event: QCloseEvent) -> None:
        self.close_file()
        super().closeEvent(event)

    def _set_enabled(self, enabled: bool) -> None:
        for widget in (self.search, self.regex, self.case, self.previous_button,
                       self.next_button, self.line_box, self.go_button, self.wrap,
                       self.colours, self.follow, self.copy_button, self.editor_button,
                       self.folder_button):
            widget.setEnabled(enabled)

    def open_in_editor(self) -> bool:
        if self.index is None:
            return False
        return QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.index.path)))

    def show_in_folder(self) -> bool:
        if self.index is None:
            return False
        return QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.index.path.parent)))

    # --- search --------------------------------------------------------------------------

    def search_for(self, text: str, *, regex: bool = False, case: bool = False) -> None:
        for box, value in ((self.regex, regex), (self.case, case)):
            box.blockSignals(True)
            box.setChecked(value)
            box.blockSignals(False)
        self.search.blockSignals(True)
        self.search.setText(text)
        self.search.blockSignals(False)
        self._restart_search()

    def _stop_search(self) -> None:
        if self.scan is not None:
            self.scan.stop()
            self.scan = None
        self._pending_move = 0
        self._current_offset = None
        self.view.set_highlight(None)
        self.view.set_current_match(None)

    def _restart_search(self) -> None:
        self._search_timer.stop()
        self._stop_search()
        self.search.setStyleSheet("")
        text = self.search.text()
        if not text or self.index is None:
            self.matches.setText("")
            return
        try:
            pattern = compile_pattern(text, regex=self.regex.isChecked(),
                                      case=self.case.isChecked())
        except PatternError as exc:
            self.matches.setText(str(exc))
            self.search.setStyleSheet("QLineEdit { border: 1px solid #d23c3c; }")
            return
        self.scan = self.index.search(pattern)
        self._reported_done = False
        self.view.set_highlight(pattern.display)
        self._update_matches()

    def find_next(self) -> None:
        self._move(1)

    def find_previous(self) -> None:
        self._move(-1)

    def _move(self, step: int) -> None:
        if self._search_timer.isActive():
            self._restart_search()
        scan, index = self.scan, self.index
        if scan is None or index is None:
            return
        here = self._current_offset
        selection = self.view.selection()
        if here is not None and selection and index.row_at_offset(here) != selection[0]:
            here = None  # the user moved on: search from the selected row
        if here is None:
            start = selection[0] if selection else self.view.top_row()
            here = index.row(start).offset - 1 if self.view.row_count else -1
        target = scan.next_after(here) if step > 0 else scan.previous_before(here)
        if target is None and not scan.done:
            self._pending_move = step  # jump when the scan finds it
            self._update_matches()
            return
        self._pending_move = 0
        if target is None:
            ends = scan.first_last()  # wrap around
            target = None if ends is None else ends[0] if step > 0 else ends[1]
        if target is not None:
            self._jump_to(target)
        self._update_matches()

    def _jump_to(self, offset: int) -> None:
        assert self.index is not None
        self._current_offset = offset
        row = self.index.row_at_offset(offset)
        self.view.refresh()
        self.view.select_rows(row, row)
        self.view.set_current_match(row, offset)
        self.view.scroll_to_row(row, center=True)

    def current_match(self) -> int | None:
        """1-based number of the current match among those found, or None."""
        if self.scan is None or self._current_offset is None:
            return None
        return self.scan.rank(self._current_offset) + 1

    def _update_matches(self) -> None:
        scan = self.scan
        if scan is None:
            return
        count = f"{scan.count:,}"
        current = self.current_match()
        prefix = f"{current:,} of " if current is not None else ""
        if scan.done:
            stored = "" if scan.complete else " (first 1,000,000 reachable)"
            self.matches.setText(f"{prefix}{count} matches{stored}")
        else:
            size = self.index.size if self.index else 0
            percent = 100 * scan.scanned // size if size else 100
            waiting = ", finding next…" if self._pending_move else ""
            self.matches.setText(f"{prefix}{count} so far ({percent}%{waiting})")

    # --- navigation ----------------------------------------------------------------------

    def go_to_line(self, line: int) -> bool:
        """Show 1-based `line` (the last line when beyond the end); False if not indexed."""
        if self.index is None:
            return False
        self.view.refresh()
        last = self.index.line_count()
        if last == 0:
            return False
        if line > last and self.index.done:
            line = last
        row = self.index.row_of_line(line - 1)
        if row is None:
            self.status.setText(f"Line {line:,} is not indexed yet")
            return False
        self.view.select_rows(row, row)
        self.view.scroll_to_row(row, center=True)
        return True

    # --- polling -------------------------------------------------------------------------

    def _tick(self) -> None:
        index = self.index
        if index is None:
            return
        self.view.refresh()
        lines = index.line_count()
        if not index.worker_alive:
            state = (f"{lines:,} lines shown; the indexing process ended, so later lines "
                     "and search are unavailable — reopen the file")
        elif index.done:
            state = f"{lines:,} lines, {_size(index.size)}"
        else:
            percent = 100 * index.indexed_bytes // index.size if index.size else 100
            state = f"indexing {percent}%, {lines:,}+ lines of {_size(index.size)}"
        self.status.setText(state)
        scan = self.scan
        if scan is not None:
            if self._pending_move:
                self._move(self._pending_move)
            self._update_matches()
            if scan.done and not self._reported_done:
                self._reported_done = True
                self.search_finished.emit(scan.count)
            elif not scan.done:
                self._reported_done = False

    def _follow_changed(self, follow: bool) -> None:
        self.follow.blockSignals(True)
        self.follow.setChecked(follow)
        self.follow.blockSignals(False)

    def _copied(self, rows: int, cut: bool) -> None:
        note = " (cut at 16 MB)" if cut else ""
        self.status.setText(f"Copied {rows:,} rows{note}")


def _close_all(indexes: list[LineIndex]) -> None:
    while indexes:
        indexes.pop().close()


def show_output(path: str | Path, parent: QWidget | None = None, *,
                follow: bool = False) -> OutputViewer:
    """Open `path` in a new top-level viewer window that frees itself when closed, wholly
    on its parent's screen; Esc and Ctrl+W close it. `follow`: start at the end and stay
    there as the file grows (a command still running)."""
    viewer = OutputViewer(parent)
    viewer.setWindowFlag(Qt.WindowType.Window, True)
    viewer.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, True)
    for keys in (QKeySequence(Qt.Key.Key_Escape), QKeySequence("Ctrl+W")):
        QShortcut(keys, viewer, viewer.close).setContext(Qt.ShortcutContext.WindowShortcut)
    place_window(viewer, parent, QSize(1000, 700))
    viewer.open(path)
    if follow:
        viewer.follow.setChecked(True)
    viewer.show()
    return viewer
