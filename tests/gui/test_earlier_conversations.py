"""The "earlier conversations" drafter in the app: it learns from the saved chats, forgets a
deleted one, stops learning when the setting is off, and the token view says where a guess
came from."""

from __future__ import annotations

from dataclasses import replace

from gui_helpers import send_and_wait, tiny_settings

from app.engine.events import RunResult, RunStats, StepEvent, TokenInfo
from app.ui.common.conversation import Conversation, Message, TokenRecord, records_from_step
from app.ui.common.storage import ConversationStore
from app.ui.common.token_view import TokenTextView
from app.ui.settings.settings_dialog import SettingsDialog

QUESTION = "The quick brown fox jumps over the lazy dog. The quick brown"


def _engine(window):  # type: ignore[no-untyped-def]
    return window.worker._engine


def _settled(qtbot, window) -> RunResult:  # type: ignore[no-untyped-def]
    """Jobs run in order on the engine thread: once an answer queued after them is back, they ran."""
    return send_and_wait(qtbot, window, "Hello world!")


def _saved(title: str, question: str, answer: str) -> Conversation:
    return Conversation(title=title, messages=[Message("user", question), Message("assistant", answer)])


def test_saved_conversations_are_learned_from_and_a_deleted_one_is_forgotten(open_window, qtbot, tiny_models):
    store = ConversationStore()
    kept, deleted = _saved("kept", "Say hello", "Hello there."), _saved("gone", QUESTION, "brown fox again")
    for conversation in (kept, deleted):
        store.save(conversation)
    store.flush()
    settings = tiny_settings(tiny_models, draft="lookup")
    window = open_window(replace(settings, models=replace(settings.models, draft_kind="suffix")))
    assert window.models_in_use is not None and window.models_in_use.drafter == "suffix index"
    engine = _engine(window)
    qtbot.waitUntil(lambda: window.conversations_read)  # then handed to the engine thread, in order:
    _settled(qtbot, window)  # the load may finish before the files are read (a loaded machine)
    assert {kept.id, deleted.id} <= engine.history.owners

    target = next(c for c in window.conversation_panel.conversations if c.id == deleted.id)
    window.conversation_panel.delete(target)
    _settled(qtbot, window)
    assert deleted.id not in engine.history.owners and kept.id in engine.history.owners

    window.conversation_panel.undo_delete()  # Undo brings it back: learned from again
    _settled(qtbot, window)
    assert deleted.id in engine.history.owners


def test_turning_learning_off_forgets_everything_and_records_nothing(open_window, qtbot, tiny_models):
    store = ConversationStore()
    kept = _saved("kept", "Say hello", "Hello there.")
    store.save(kept)
    store.flush()
    window = open_window(tiny_settings(tiny_models, draft="lookup"))
    engine = _engine(window)
    qtbot.waitUntil(lambda: window.conversations_read)
    _settled(qtbot, window)  # the files are read and handed on after the load, on a loaded machine
    assert kept.id in engine.history.owners and engine.history.size > 0

    dialog = SettingsDialog(window.settings, window)
    qtbot.addWidget(dialog)
    assert dialog.remember_conversations.isChecked()
    dialog.remember_conversations.setChecked(False)
    window.apply_settings(dialog.settings())
    _settled(qtbot, window)
    assert window.settings.remember_conversations is False
    assert engine.history.size == 0 and not engine.remembering


def test_an_answer_is_indexed_under_its_conversation(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models, draft="lookup"))
    result = send_and_wait(qtbot, window, QUESTION)
    documents = _engine(window).history.documents(window.controller.conversation.id)
    assert documents and documents[-1][-len(result.token_ids) :] == result.token_ids


def test_the_tooltip_says_where_a_guessed_token_came_from(qtbot):
    view = TokenTextView()
    qtbot.addWidget(view)
    earlier = TokenRecord("fox", "draft", 3, 7, 0.9, None, 1.0, "earlier")
    here = replace(earlier, origin="conversation")
    model = replace(earlier, origin=None)
    assert "earlier conversation" in view.tooltip_text(earlier)
    assert "this conversation" in view.tooltip_text(here)
    assert "conversation" not in view.tooltip_text(model)


def test_a_token_record_keeps_its_origin_on_disk_and_old_records_still_load():
    step = StepEvent(
        1, (TokenInfo(5, "a", "draft", origin="earlier"),), TokenInfo(6, "b", "target"), (), "bonus", 1, 0.0, 0.0,
        RunStats(),
    )
    records = records_from_step(step)
    assert [r.origin for r in records] == ["earlier", None]
    assert [TokenRecord.from_json(r.to_json()) for r in records] == records
    assert len(records[1].to_json()) == 7  # no origin: the old format, readable by older versions
    assert TokenRecord.from_json(records[0].to_json()[:7]).origin is None
