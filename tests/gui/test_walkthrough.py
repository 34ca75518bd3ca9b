"""The rest of the new user's walkthrough (issue 12 §5, issue 13 §4): the conversation list
keeps highlighting the chat shown, Export says where it wrote, long tooltips wrap, the
experiment closes, the answer header and stats line tell the truth at any width."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QEvent, QLocale, QTimer
from PySide6.QtGui import QFontMetrics, QHelpEvent
from PySide6.QtWidgets import (
    QApplication,
    QDialogButtonBox,
    QFileDialog,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QToolTip,
)

from app.ui.common.conversation import Conversation, Message
from app.ui.common.i18n import install_translators, remove_translators
from app.ui.common.storage import ConversationStore
from app.ui.main_window import MainWindow
from app.ui.settings.store import SettingsStore
from app.worker import EngineWorker


def _saved(folder: Path, title: str, updated: float) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = Conversation(
        title=title, messages=[Message("user", title), Message("assistant", "ok")], updated=updated
    ).to_json()
    data["id"] = uuid.uuid4().hex
    (folder / f"{data['id']}.json").write_text(json.dumps(data), "utf-8")
    return str(data["id"])


def _window_with_chats(qtbot, titles: list[str]) -> MainWindow:  # type: ignore[no-untyped-def]
    store = ConversationStore()
    for n, title in enumerate(titles):
        _saved(store.folder, title, updated=1_000.0 + n)
    window = MainWindow(EngineWorker(loader=lambda **_kw: None), SettingsStore(), ConversationStore())
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.conversations_read and bool(window.controller.conversation.messages))
    return window


def _highlighted(window: MainWindow) -> list[str]:
    return [item.text() for item in window.conversation_list.selectedItems()]


def test_the_list_keeps_highlighting_the_chat_shown_after_a_context_menu_and_export(
    app_dirs, qtbot, monkeypatch, tmp_path
):
    window = _window_with_chats(qtbot, ["first", "second", "third"])
    assert window.controller.conversation.title == "third" and _highlighted(window) == ["third"]
    other = next(
        window.conversation_list.item(i) for i in range(3) if window.conversation_list.item(i).text() == "first"
    )
    rect = window.conversation_list.visualItemRect(other)

    def close_menu() -> None:
        popup = QApplication.activePopupWidget()
        if popup is not None:
            popup.close()

    QTimer.singleShot(50, close_menu)
    window.conversation_list.setCurrentItem(other)  # what a right click does to the selection
    window.conversation_panel._on_menu(rect.center())
    assert _highlighted(window) == ["third"]  # the chat still shown

    target = tmp_path / "exported.md"
    monkeypatch.setattr(QFileDialog, "getSaveFileName", lambda *_a, **_k: (str(target), "Markdown (*.md)"))
    window.conversation_list.setCurrentItem(other)
    with qtbot.waitSignal(window.conversation_panel.notice) as told:
        window.conversation_panel.export(other.data(0x0100))
    assert target.exists() and str(target) in told.args[0] and "first" in told.args[0]
    assert str(target) in window.statusBar().currentMessage()  # the confirmation is on screen
    assert _highlighted(window) == ["third"]
    window.close()


LONG_HELP = (
    "How many tokens the drafter proposes before the target checks them all in one pass; "
    "more drafts pay when they are usually accepted and cost a longer pass when they are not."
)


def _tip_width(qtbot) -> int:  # type: ignore[no-untyped-def]
    qtbot.waitUntil(lambda: QToolTip.isVisible())
    tips = [w for w in QApplication.topLevelWidgets() if w.objectName() == "qtooltip_label" and w.isVisible()]
    return max(w.width() for w in tips)


def test_long_tooltips_wrap_on_widgets_and_in_item_views(app_dirs, qtbot):
    window = _window_with_chats(qtbot, ["a chat"])  # installs the wrapping
    plain_width = QFontMetrics(QToolTip.font()).horizontalAdvance(LONG_HELP)
    button = QPushButton("k", window)
    button.setToolTip(LONG_HELP)
    assert button.toolTip() != LONG_HELP and "white-space:pre-wrap" in button.toolTip()
    short = QPushButton("s", window)
    short.setToolTip("Send (Enter)")
    assert short.toolTip() == "Send (Enter)"  # short ones stay plain

    QToolTip.showText(button.mapToGlobal(button.rect().center()), button.toolTip(), button)
    assert _tip_width(qtbot) < min(700, plain_width)
    QToolTip.hideText()

    rows = QListWidget(window)
    rows.show()
    item = QListWidgetItem("a row")
    item.setToolTip(LONG_HELP)
    rows.addItem(item)
    viewport = rows.viewport()
    at = rows.visualItemRect(item).center()
    QApplication.sendEvent(viewport, QHelpEvent(QEvent.Type.ToolTip, at, viewport.mapToGlobal(at)))
    assert "white-space:pre-wrap" in QToolTip.text()
    assert _tip_width(qtbot) < min(700, plain_width)
    QToolTip.hideText()
    window.close()


def test_the_drafter_experiment_has_a_close_button(qapp, qtbot):
    from app.engine.config import LOOKUP
    from app.ui.experiment.sweep_view import SweepDialog

    dialog = SweepDialog([LOOKUP], None)
    qtbot.addWidget(dialog)
    dialog.show()
    close = dialog.buttons.button(QDialogButtonBox.StandardButton.Close)
    assert close is not None and close.isVisible()
    with qtbot.waitSignal(dialog.finished):  # what stops a running experiment
        close.click()
    assert not dialog.isVisible()


def _answer() -> Message:
    from app.engine.events import RunStats

    stats = RunStats(new_tokens=120, target_passes=60, prefill_s=0.2, decode_s=2.0, proposed=90, accepted=60)
    answer = Message("assistant", "Some answer.", speculative=True, drafter="prompt lookup")
    answer.stats = {name: getattr(stats, name) for name in RunStats.__dataclass_fields__}
    answer.stop_reason = "eos"
    return answer


def test_the_stats_line_keeps_whole_lines_in_a_narrow_window(qapp, qtbot):
    from app.ui.chat.message_widgets import AnswerWidget

    widget = AnswerWidget(_answer())
    qtbot.addWidget(widget)
    widget.resize(560, 400)  # an 800 px window, less the conversation list
    widget.show()
    qtbot.waitExposed(widget)
    text = widget.stats.text()
    line = widget.stats.fontMetrics()
    words = len(text.split())
    lines = widget.stats.heightForWidth(widget.stats.width()) / line.lineSpacing()
    assert words > 15 and lines <= 3  # was a column of one word per line
    assert widget.stats.width() > 0.8 * widget.contentsRect().width()


def test_an_answer_asked_before_any_model_loaded_does_not_claim_no_speculation(app_dirs, qtbot):
    store = ConversationStore()
    window = MainWindow(EngineWorker(loader=lambda **_kw: None), SettingsStore(), store)
    qtbot.addWidget(window)
    window.show()
    assert window.speculation_switch.isChecked()
    window.send_message("Hello")  # no model: start() was never called
    header = window.chat_view.answers[-1].header.text()
    assert "no speculation" not in header and "no model loaded" in header
    window.controller.stop()
    window.close()


@pytest.fixture
def in_french(qapp: QApplication, app_dirs: Path) -> Iterator[None]:
    previous = QLocale()
    translators = install_translators(qapp, "fr")
    yield
    remove_translators(qapp, translators)
    QLocale.setDefault(previous)


def test_in_french_the_engines_words_and_the_numbers_are_french(in_french):
    from app.engine.events import RunStats
    from app.ui.common.engine_words import drafter_label, loading_message, model_label
    from app.ui.common.formatting import byte_size, context_line, parameter_count, stats_line

    assert loading_message("Loading tokenizer…") == "Chargement du tokenizer…"
    assert loading_message("Preparing the model on cpu…") == "Préparation du modèle sur cpu…"
    assert loading_message("Opening SmolLM2-135M-Instruct (bundled)…") == "Ouverture de SmolLM2-135M-Instruct (fourni)…"
    damaged = "The cached form of tiny (bundled) is damaged (a reason); converting it again…"
    french = "La forme en cache de tiny (fourni) est endommagée (a reason)\u00a0; nouvelle conversion…"
    assert loading_message(damaged) == french
    assert model_label("SmolLM2-135M-Instruct (bundled)") == "SmolLM2-135M-Instruct (fourni)"
    assert drafter_label("prompt lookup") == "recherche dans le prompt"
    assert drafter_label("draft model: tiny (bundled)") == "modèle brouillon\u00a0: tiny (fourni)"

    stats = RunStats(new_tokens=1234, target_passes=600, prefill_s=0.25, decode_s=10.0, proposed=900, accepted=634)
    line = stats_line(stats, speculative=True)
    assert "1\u202f234 nouveaux jetons" in line or "1\u00a0234 nouveaux jetons" in line
    assert "jetons/s" in line and "," in line.split("jetons/s")[0]  # a decimal comma
    assert "%" in line and "\u202f%" in line  # 70 % with a narrow no-break space
    assert "." not in line.replace("…", "")  # no English decimal point anywhere
    assert context_line(2048, 8192).endswith("(25\u202f%)") and "2\u202f048" in context_line(2048, 8192)
    assert parameter_count(1_543_714_304) == "1,5\u00a0Md" and byte_size(1_100_000) == "1,1\u00a0Mo"


def test_in_english_numbers_keep_english_formats(qapp):
    from app.ui.common.formatting import context_line, parameter_count

    assert context_line(2048, 8192) == "Context: 2,048 of 8,192 tokens (25%)"
    assert parameter_count(134_515_008) == "135M"


def test_a_huge_latest_conversation_is_listed_but_not_opened_by_itself(app_dirs, qtbot, monkeypatch):
    import app.ui.main_window as main_window

    store = ConversationStore()
    huge = _saved(store.folder, "huge", updated=2_000.0)
    monkeypatch.setattr(main_window, "AUTO_OPEN_MAX_BYTES", 100)  # the test files are ~300 bytes
    window = MainWindow(EngineWorker(loader=lambda **_kw: None), SettingsStore(), store)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.conversations_read)
    assert window.conversation_list.count() == 1 and window.controller.conversation.messages == []
    assert "click it" in window.statusBar().currentMessage()
    item = window.conversation_list.item(0)
    window._on_conversation_clicked(item)  # opening it is the person's choice
    assert window.controller.conversation.id == huge
    window.close()


def test_a_clicked_conversation_opens_once_read_even_over_another_chat(app_dirs, qtbot):
    window = _window_with_chats(qtbot, ["shown"])
    other = _saved(ConversationStore().folder, "clicked", updated=500.0)
    window.conversation_panel.set_conversations(window._conversations.list_headers())  # only headers
    assert not window.conversation_panel.is_read(other)
    item = next(
        window.conversation_list.item(i) for i in range(2) if window.conversation_list.item(i).text() == "clicked"
    )
    window._on_conversation_clicked(item)
    qtbot.waitUntil(lambda: window.controller.conversation.id == other)
    assert _highlighted(window) == ["clicked"]
    window.close()


def test_the_delete_notice_quotes_the_title_with_no_stray_space(app_dirs, qtbot):
    window = _window_with_chats(qtbot, ["Write a function that parses a duration such as 1h30m or 45s "])
    conversation = window.controller.conversation
    window.conversation_panel.delete(conversation)
    shown = window.conversation_panel.undo_text.text()
    assert shown == "Deleted “Write a function that parses a duration such as 1h30m or 45s”."
    window.close()


def test_a_title_cut_at_sixty_characters_ends_with_no_space(app_dirs, qtbot):
    from app.ui.chat.chat_controller import ChatController

    window = MainWindow(EngineWorker(loader=lambda **_kw: None), SettingsStore(), ConversationStore())
    qtbot.addWidget(window)
    controller: ChatController = window.controller
    text = "Write a Python function parse_duration(text) that turns the strings such as 1h30m"
    assert text[:60].endswith(" ")  # the cut falls on a space
    window.send_message(text)
    assert controller.conversation.title == text[:60].rstrip()
    window.close()


def test_the_export_file_name_keeps_dashes_and_has_no_double_space(app_dirs, qtbot, monkeypatch, tmp_path):
    from app.ui.chat.export import file_stem

    asked: list[str] = []

    def save_name(_parent, _caption, proposed, _filter):  # type: ignore[no-untyped-def]
        asked.append(proposed)
        return "", ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", save_name)
    window = _window_with_chats(qtbot, ["Parse durations – 1h30m, 45s: the what's-next list"])
    window.conversation_panel.export(window.controller.conversation)
    assert Path(asked[0]).name == "Parse durations - 1h30m 45s the whats-next list.md"
    assert file_stem("  ?!  ") == "conversation" and "  " not in file_stem("a — b / c")
    window.close()
