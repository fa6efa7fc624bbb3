"""The real widgets show model and tool text escaped and never as rich text: the approval
dialog, the timeline (rows, tooltips, details), the chat (Markdown, plain messages, tool
cards) and the output viewer (pytest-qt, offscreen)."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QWidget
from pytestqt.qtbot import QtBot

from desktop.approval.dialog import ApprovalQueue
from desktop.chat.feed import apply_event
from desktop.chat.model import ChatModel, MessageItem, ToolCardItem, item_text
from desktop.chat.view import ChatView
from desktop.timeline import TimelinePanel
from desktop.timeline.model import Column
from desktop.viewer.window import OutputViewer
from kernel import events as ev
from kernel.policy.preview import command_preview

ATTACK = "rm -f precious.txt important.db '…' #\x1b[2K\r$ ls -la"
ATTACK_SHOWN = "rm -f precious.txt important.db '…' #\\x1b[2K\\x0d$ ls -la"
HTML = "<img src=x><b>bold</b>"
HIDING = "\x1b\r\b\x7f\x85\x9b\u202e\u2066\u200b\u2028\u2029\ufeff\ud800"
S = "s1"


def _clean(text: str) -> bool:
    """No character that could hide, move or reorder text (tabs and newlines aside)."""
    return all(ch.isprintable() or ch in "\n\t" for ch in text)


def _texts(widget: QWidget) -> list[str]:
    labels = [w.text() for w in widget.findChildren(QLabel) if w.isVisibleTo(widget)]
    boxes = [w.toPlainText() for w in widget.findChildren(QPlainTextEdit)]
    return labels + boxes


def _plain_labels(widget: QWidget) -> None:
    """Every label that shows data (they are the ones with an accessible name; a form's
    captions are not) shows plain text."""
    labels = [label for label in widget.findChildren(QLabel) if label.accessibleName()]
    assert len(labels) >= 4
    for label in labels:
        assert label.textFormat() == Qt.TextFormat.PlainText, label.accessibleName()


def _request(**kw: object) -> ev.ApprovalRequest:
    base: dict[str, object] = dict(
        session_id=S, call_id="call_rm", name="run_command", input={"command": ATTACK},
        risk="execute", reason="execute tools ask in ask mode",
        preview=command_preview(ATTACK, cwd=Path("/w"), sandbox="bubblewrap", network=False),
        always_rules=[{"rule": f"run_command({ATTACK})", "words": "the command"}])
    base.update(kw)
    return ev.ApprovalRequest(**base)  # type: ignore[arg-type]


def test_the_approval_dialog_shows_the_whole_command_escaped(qtbot: QtBot) -> None:
    window = QWidget()
    qtbot.addWidget(window)
    queue = ApprovalQueue(window, session_title=lambda _s: HTML + HIDING)
    queue.submit(_request())
    dialog = queue.dialog
    assert dialog.preview.toPlainText().startswith(f"$ {ATTACK_SHOWN}\ncwd: /w\n")
    assert dialog.session_label.text() == f"Session: {HTML}" + (
        "\\x1b\\x0d\\x08\\x7f\\x85\\x9b\\u202e\\u2066\\u200b\\u2028\\u2029\\ufeff\\ud800")
    assert ATTACK_SHOWN in dialog.always_rule.text()
    _plain_labels(dialog)
    assert all(_clean(t) for t in _texts(dialog)), _texts(dialog)


@pytest.mark.parametrize("field", ["name", "reason", "risk", "preview", "always"])
def test_every_part_of_a_request_is_shown_escaped_and_as_text(qtbot: QtBot, field: str) -> None:
    evil = HTML + HIDING
    changes: dict[str, object] = {
        "name": {"name": evil}, "reason": {"reason": evil}, "risk": {"risk": evil},
        "preview": {"preview": evil, "input": {"x": evil}},
        "always": {"always_rules": [{"rule": evil, "words": evil}]}}[field]
    window = QWidget()
    qtbot.addWidget(window)
    queue = ApprovalQueue(window)
    queue.submit(_request(**changes))
    texts = _texts(queue.dialog)
    assert any(HTML in t or HTML.upper() in t for t in texts), texts
    assert all(_clean(t) for t in texts), texts
    _plain_labels(queue.dialog)


def test_the_arguments_fallback_preview_is_escaped(qtbot: QtBot) -> None:
    window = QWidget()
    qtbot.addWidget(window)
    queue = ApprovalQueue(window)
    queue.submit(_request(preview="", input={"command": ATTACK + "\u202e"}))
    shown = queue.dialog.preview.toPlainText()
    assert "\\u001b[2K\\r$ ls -la\\u202e" in shown
    assert _clean(shown)


def _timeline_events() -> list[ev.Event]:
    return [
        ev.ToolCallStarted(S, "call_rm", "run_command", {"command": ATTACK}, summary=ATTACK,
                           risk="execute"),
        ev.ApprovalRequest(S, "call_rm", "run_command", {"command": ATTACK}, "execute",
                           f"asks {HIDING}", preview=f"$ {ATTACK}"),
        ev.ApprovalDecision(S, "call_rm", "deny", "terminal", message=f"no {HTML}{HIDING}"),
        ev.ToolResultEvent(S, "call_rm", "run_command", True, "approval_denied", 1.0, 10,
                           None, f"denied {HTML} {HIDING}"),
        ev.ToolCallStarted(S, "call_html", HTML + HIDING, {"a": HTML}, summary=HTML + HIDING),
    ]


def test_timeline_rows_tooltips_and_details_show_the_command_escaped(qtbot: QtBot) -> None:
    panel = TimelinePanel(batch_ms=0)
    qtbot.addWidget(panel)
    panel.resize(1000, 500)
    panel.show()
    panel.apply_many(_timeline_events())
    panel.model.flush()
    model = panel.model
    assert model.rowCount() == 2
    args = model.data(model.index(0, Column.ARGUMENTS))
    assert args == ATTACK_SHOWN
    name = model.data(model.index(1, Column.TOOL))
    assert isinstance(name, str) and name.startswith(HTML) and _clean(name)
    tooltip = model.data(model.index(1, Column.TOOL), Qt.ItemDataRole.ToolTipRole)
    assert isinstance(tooltip, str) and "&lt;img src=x&gt;" in tooltip and _clean(tooltip)
    for row in range(model.rowCount()):
        for column in Column:
            text = model.data(model.index(row, column))
            assert _clean(str(text or "")), (row, column, text)
    panel.view.viewport().grab()  # the delegate paints every cell
    assert panel.select_call("call_rm")
    details = panel.details
    _plain_labels(details)
    assert ATTACK_SHOWN.replace("\\x1b", "\\u001b").replace("\\x0d", "\\r") in (
        details.arguments.toPlainText())
    assert f"denied {HTML}" in details.model_text.toPlainText()
    assert all(_clean(t) for t in _texts(details)), _texts(details)
    assert panel.select_call("call_html")
    assert details.title.text().startswith(HTML)
    assert all(_clean(t) for t in _texts(details))


def test_chat_messages_and_cards_show_model_text_escaped_and_never_as_html(
        qtbot: QtBot) -> None:
    view = ChatView()
    view.open_links_in_browser = False
    model = ChatModel(view)
    view.setModel(model)
    view.resize(700, 500)
    qtbot.addWidget(view)
    view.show()
    qtbot.waitExposed(view)
    text = (f"I ran `{ATTACK}` for you.\n\n{HTML}\n\nand &#x202e;&#27;[2K entities "
            f"{HIDING}\n\n```sh\n{ATTACK}\n```")
    events: list[ev.Event] = [
        ev.UserMessage(S, f"user {HIDING} {HTML}"),
        ev.AssistantDelta(S, text[:40]), ev.AssistantDelta(S, text[40:]),
        ev.AssistantText(S, text),
        *_timeline_events(),
        ev.ErrorEvent(S, "internal_error", f"failed {HIDING} {HTML}"),
    ]
    for event in events:
        apply_event(model, event)
    view.viewport().grab()
    messages = [model.item(r) for r in range(model.rowCount())]
    shown = []
    for item in messages:
        if isinstance(item, MessageItem):
            item.layout(600)
            shown.extend(doc.toPlainText() for doc in item.documents())
        else:
            assert isinstance(item, ToolCardItem)
        shown.append(item_text(item))
    assert any(ATTACK_SHOWN in t for t in shown), shown
    assert any(HTML in t for t in shown), shown
    assert any("\\u202e\\x1b[2K entities" in t for t in shown), shown
    assert all(_clean(t) for t in shown), [t for t in shown if not _clean(t)]


def test_the_output_viewer_shows_tool_output_escaped(qtbot: QtBot, tmp_path: Path) -> None:
    output = tmp_path / "out.txt"
    output.write_bytes(f"{ATTACK}\n{HTML}\u202e\u2028end\n".encode())
    viewer = OutputViewer()
    qtbot.addWidget(viewer)
    viewer.resize(900, 500)
    viewer.show()
    assert viewer.open(output)
    qtbot.waitUntil(lambda: viewer.index is not None and viewer.index.done, timeout=10_000)
    viewer.view.refresh()
    try:
        viewer.view.viewport().grab()
        assert viewer.view.display_line(0).text == ATTACK_SHOWN
        assert viewer.view.display_line(1).text == f"{HTML}\\u202e\\u2028end"
    finally:
        viewer.close_file()
