"""The chat comforts: regenerate, edit and resend, continue a cut answer, copy (code blocks,
answers as Markdown), time to first token, context use, and the conversation list (dates,
rename, delete with Undo, search, export); only available devices are offered."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from gui_helpers import ANSWER_TIMEOUT_MS, document_tokens, send_and_wait, tiny_settings
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QGuiApplication, QTextCursor

from app.engine.config import GenerationConfig
from app.engine.errors import SpecChatError
from app.engine.events import RunStats
from app.ui.chat.context_meter import ContextMeter
from app.ui.chat.export import export_conversation
from app.ui.chat.message_widgets import AnswerWidget
from app.ui.common.conversation import Conversation, Message
from app.ui.common.formatting import stats_line
from app.ui.common.storage import ConversationStore
from app.ui.settings.settings_dialog import SettingsDialog

CODE_ANSWER = "Like this:\n\n```python\nprint('hi')\n```\n\nor\n\n```\nls -l\n```\n"
PROMPT = "def add(a, b):"  # a cut answer to it tokenizes back to the same ids (see test_continue)


def _click_and_wait(qtbot, window, button) -> None:  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(window.worker.finished, timeout=ANSWER_TIMEOUT_MS):
        button.click()
    qtbot.waitUntil(lambda: not window.controller.busy)


def _saved(window) -> Conversation:  # type: ignore[no-untyped-def]
    window.controller.flush()
    return next(c for c in ConversationStore().load_all() if c.id == window.controller.conversation.id)


# ---- regenerate, edit and resend, continue ----------------------------------------------
def test_regenerate_replaces_the_answer_with_one_made_by_the_current_settings(
    open_window, qtbot, tiny_models
):
    window = open_window(tiny_settings(tiny_models))
    first = send_and_wait(qtbot, window)
    old = window.chat_view.answers[-1]
    assert first.speculative
    window.speculation_switch.click()  # the regenerated answer follows the settings of now

    _click_and_wait(qtbot, window, old.regenerate_button)

    messages = window.controller.conversation.messages
    assert [m.role for m in messages] == ["user", "assistant"] and messages[1] is not old.message
    assert messages[1].speculative is False and messages[1].content == first.text  # greedy: same text
    assert window.chat_view.answers == [window.chat_view.answer_for(messages[1])]
    assert [m.content for m in _saved(window).messages] == [m.content for m in messages]


def test_editing_a_message_resends_it_and_replaces_what_followed(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models, max_new_tokens=6))
    send_and_wait(qtbot, window, "First question")
    send_and_wait(qtbot, window, "Second question")
    first = window.controller.conversation.messages[0]
    widget = window.chat_view.user_widget_for(first)
    widget.edit_button.click()
    assert widget.editing and widget.editor.toPlainText() == "First question"
    widget.editor.setPlainText("Edited question")

    _click_and_wait(qtbot, window, widget.resend_button)

    messages = window.controller.conversation.messages
    assert (messages[0].role, messages[0].content) == ("user", "Edited question")
    assert len(messages) == 2 and messages[1].content  # the second turn is gone, a new answer came
    assert len(window.chat_view.answers) == 1
    assert [m.content for m in _saved(window).messages] == [m.content for m in messages]


def test_continue_goes_on_with_a_cut_answer_as_if_it_had_not_been_cut(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models, max_new_tokens=6))
    cut = send_and_wait(qtbot, window, PROMPT)
    answer = window.chat_view.answers[-1]
    assert cut.stop_reason == "max_new_tokens" and answer.continue_button.isVisible()

    _click_and_wait(qtbot, window, answer.continue_button)

    whole = window.worker._engine.generate(PROMPT, GenerationConfig(max_new_tokens=12, k=4))  # engine is idle
    message = answer.message
    assert message.content == whole.text and message.content.startswith(cut.text)
    assert message.run_stats.new_tokens == 12
    assert "".join(t for t, _ in document_tokens(answer.view)) == whole.text
    assert [m.role for m in window.controller.conversation.messages] == ["user", "assistant"]
    assert str(12) in answer.stats.text()


def test_only_a_cut_last_answer_offers_continue(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models, max_new_tokens=6))
    send_and_wait(qtbot, window, PROMPT)
    first = window.chat_view.answers[-1]
    send_and_wait(qtbot, window, "Another")
    assert not first.continue_button.isVisible()  # no longer the last answer
    assert window.controller.continue_answer(first.message) is False


# ---- copying ---------------------------------------------------------------------------
def _code_answer(qtbot) -> AnswerWidget:  # type: ignore[no-untyped-def]
    message = Message("assistant", CODE_ANSWER, stats={"new_tokens": 9}, stop_reason="eos")
    widget = AnswerWidget(message)
    qtbot.addWidget(widget)
    widget.resize(600, 500)
    widget.show()
    qtbot.waitExposed(widget)
    return widget


def _anchor_point(view, href: str) -> QPoint:  # type: ignore[no-untyped-def]
    block = view.document().begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            if fragment.charFormat().anchorHref() == href:
                cursor = QTextCursor(view.document())
                cursor.setPosition(fragment.position() + 1)
                return view.cursorRect(cursor).center()
            it += 1
        block = block.next()
    raise AssertionError(f"no link {href}")


def test_clicking_copy_code_puts_that_code_block_on_the_clipboard(qtbot):
    answer = _code_answer(qtbot)
    view = answer.rendered
    with qtbot.waitSignal(view.code_copied):
        qtbot.mouseClick(
            view.viewport(), Qt.MouseButton.LeftButton, pos=_anchor_point(view, "specchat-copy:1")
        )
    assert QGuiApplication.clipboard().text() == "ls -l\n"

    with qtbot.waitSignal(view.code_copied):
        qtbot.mouseClick(
            view.viewport(), Qt.MouseButton.LeftButton, pos=_anchor_point(view, "specchat-copy:0")
        )
    assert QGuiApplication.clipboard().text() == "print('hi')\n"


def test_the_code_block_under_the_mouse_is_found_for_the_context_menu(qtbot):
    answer = _code_answer(qtbot)
    view = answer.rendered
    document = view.document()
    found = document.find("ls -l")
    assert view.code_block_at(view.cursorRect(found).center()) == 1
    assert view.code_block_at(view.cursorRect(document.find("Like this")).center()) is None


def test_copy_puts_the_answer_on_the_clipboard_as_markdown(qtbot):
    answer = _code_answer(qtbot)
    answer.copy_button.click()
    assert QGuiApplication.clipboard().text() == CODE_ANSWER  # the source, fences and all


# ---- stats: time to first token, context window ---------------------------------------------
def test_the_stats_line_shows_the_time_to_the_first_token(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models))
    result = send_and_wait(qtbot, window)
    assert result.stats.time_to_first_token_s == result.steps[0].stats.prefill_s > 0
    expected = f"first token after {result.stats.time_to_first_token_s:.2f} s"
    assert expected in window.chat_view.answers[-1].stats.text()
    assert "first token" not in stats_line(RunStats(), speculative=False)  # nothing came


def test_the_window_shows_how_much_of_the_context_the_conversation_uses(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models))
    meter = window.context_meter
    assert meter.limit == 512  # the tiny target's max_position_embeddings, told by the worker
    result = send_and_wait(qtbot, window)
    used = result.stats.prompt_tokens + result.stats.new_tokens
    assert meter.used == used and f"{used} of 512 tokens" in meter.label.text()
    assert not meter.warning.isVisible()

    window.new_chat_action.trigger()
    assert meter.used == 0


def test_the_context_meter_warns_from_80_percent_and_when_full(qtbot):
    meter = ContextMeter()
    qtbot.addWidget(meter)
    meter.show()
    meter.set_limit(1000)
    meter.set_used(799)
    assert not meter.warning.isVisible()
    meter.set_used(800)
    assert meter.warning.isVisible() and "80%" in meter.warning.text()
    meter.set_used(1000)
    assert "full" in meter.warning.text()


# ---- the conversation list ---------------------------------------------------------------
def _three_chats(open_window, qtbot, tiny_models):  # type: ignore[no-untyped-def]
    window = open_window(tiny_settings(tiny_models, max_new_tokens=4))
    for text in ("Name the planets", "Write a poem", "Fix my code"):
        window.new_chat_action.trigger()
        send_and_wait(qtbot, window, text)
    window.controller.flush()
    return window


def test_the_list_shows_each_conversations_date(open_window, qtbot, tiny_models):
    from app.ui.chat.conversation_list import DATE_ROLE, when_text

    window = _three_chats(open_window, qtbot, tiny_models)
    item = window.conversation_list.item(0)
    conversation = item.data(Qt.ItemDataRole.UserRole)
    assert item.data(DATE_ROLE) == when_text(conversation.updated) and item.data(DATE_ROLE)
    assert ":" in when_text(conversation.updated)  # today: the time
    assert ":" not in when_text(conversation.updated - 400 * 86400, now=conversation.updated)


def test_renaming_a_conversation_in_place_saves_the_new_title(open_window, qtbot, tiny_models):
    window = _three_chats(open_window, qtbot, tiny_models)
    item = next(
        window.conversation_list.item(i)
        for i in range(3)
        if window.conversation_list.item(i).text() == "Write a poem"
    )
    conversation = item.data(Qt.ItemDataRole.UserRole)
    item.setText("  Poems   about cats ")  # what the in-place editor does on Enter

    assert conversation.title == "Poems about cats"
    window.controller.flush()
    assert {c.title for c in ConversationStore().load_all()} == {
        "Name the planets",
        "Poems about cats",
        "Fix my code",
    }
    assert "Poems about cats" in window.conversation_panel.visible_titles()


def test_deleting_a_conversation_can_be_undone(open_window, qtbot, tiny_models):
    window = _three_chats(open_window, qtbot, tiny_models)
    panel = window.conversation_panel
    current = window.controller.conversation
    panel.delete(current)

    assert "Fix my code" not in panel.visible_titles() and panel.undo_bar.isVisible()
    assert current.id not in {c.id for c in ConversationStore().load_all()}
    assert window.controller.conversation is not current and window.controller.conversation.messages == []

    panel.undo_button.click()
    window.controller.flush()
    assert "Fix my code" in panel.visible_titles() and not panel.undo_bar.isVisible()
    restored = next(c for c in ConversationStore().load_all() if c.id == current.id)
    assert [m.content for m in restored.messages] == [m.content for m in current.messages]


def test_search_filters_the_list_by_title_and_by_message_text(open_window, qtbot, tiny_models):
    window = _three_chats(open_window, qtbot, tiny_models)
    panel = window.conversation_panel
    poem = next(c for c in panel.conversations if c.title == "Write a poem")

    qtbot.keyClicks(panel.search, "PLANETS")
    assert panel.visible_titles() == ["Name the planets"]
    panel.search.clear()
    assert len(panel.visible_titles()) == 3
    poem.messages[1].content = "Roses are red, zebras are striped."
    qtbot.keyClicks(panel.search, "zebras red")  # every word, anywhere in the messages
    assert panel.visible_titles() == ["Write a poem"]
    panel.search.setText("zebras planets")
    assert panel.visible_titles() == []


def test_export_writes_markdown_and_json(tmp_path, open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models, max_new_tokens=6))
    window.system_prompt.setText("Be brief.")
    result = send_and_wait(qtbot, window, "Say hello")
    conversation = window.controller.conversation

    markdown = export_conversation(conversation, tmp_path / "chat.md").read_text("utf-8")
    assert markdown.startswith("# Say hello\n")
    assert "Be brief." in markdown and "## You\n\nSay hello\n" in markdown
    assert f"\n\n{result.text}\n" in markdown and "first token after" in markdown
    assert markdown.index("## You") < markdown.index("## Assistant")

    data = json.loads(export_conversation(conversation, tmp_path / "chat.json").read_text("utf-8"))
    assert data == json.loads(json.dumps(conversation.to_json()))
    assert data["messages"][1]["content"] == result.text and data["messages"][1]["records"]

    with pytest.raises(SpecChatError, match=r"\.md or \.json"):
        export_conversation(conversation, tmp_path / "chat.txt")


# ---- devices -----------------------------------------------------------------------------
def test_settings_offer_only_the_devices_this_machine_has(open_window, qtbot, tiny_models):
    from app.engine.runners.devices import available_devices

    window = open_window(tiny_settings(tiny_models))
    assert window.devices == available_devices()  # told by the worker thread
    dialog = SettingsDialog(window.settings, window, devices=window.devices)
    qtbot.addWidget(dialog)
    offered = [dialog.device.itemData(i) for i in range(dialog.device.count())]
    assert offered == window.devices and "auto" in offered and "cpu" in offered

    # a device chosen on another machine is kept (nothing the person set is lost), marked absent
    elsewhere = replace(window.settings, models=replace(window.settings.models, device="cuda:99"))
    dialog = SettingsDialog(elsewhere, window, devices=window.devices)
    qtbot.addWidget(dialog)
    assert "not available" in dialog.device.currentText() and dialog.settings() == elsewhere
