"""The "earlier conversations" drafter in the app: it learns from the saved chats, forgets a
deleted one, stops learning when the setting is off, and the token view says where a guess
came from."""

from __future__ import annotations

import threading
from dataclasses import replace

from gui_helpers import ANSWER_TIMEOUT_MS, LOAD_TIMEOUT_MS, send_and_wait, tiny_settings

from app.engine.events import RunResult, RunStats, StepEvent, TokenInfo
from app.ui.common.conversation import Conversation, Message, TokenRecord, records_from_step
from app.ui.common.storage import ConversationStore
from app.ui.common.token_view import TokenTextView
from app.ui.main_window import MainWindow
from app.ui.settings.settings_dialog import SettingsDialog
from app.ui.settings.store import SettingsStore
from app.worker import EngineWorker

QUESTION = "The quick brown fox jumps over the lazy dog. The quick brown"


def _engine(window):  # type: ignore[no-untyped-def]
    return window.worker._engine


def _settled(qtbot, window) -> RunResult:  # type: ignore[no-untyped-def]
    """Jobs run in order on the engine thread: once an answer queued after them is back, they ran."""
    return send_and_wait(qtbot, window, "Hello world!")


def _saved(title: str, question: str, answer: str) -> Conversation:
    return Conversation(title=title, messages=[Message("user", question), Message("assistant", answer)])


def _suffix_settings(tiny_models):  # type: ignore[no-untyped-def]
    settings = tiny_settings(tiny_models, draft="lookup")
    return replace(settings, models=replace(settings.models, draft_kind="suffix"))


def _open_with_history(qtbot, conversations: int) -> MainWindow:  # type: ignore[no-untyped-def]
    """A window whose engine has indexed ``conversations`` saved conversations: waits for the
    worker's signal saying so (they are read off the GUI thread after the window opens)."""
    worker = EngineWorker()
    indexed = worker.history_indexed
    with qtbot.waitSignal(indexed, timeout=LOAD_TIMEOUT_MS, check_params_cb=lambda n: n == conversations):
        window = MainWindow(worker, SettingsStore(), ConversationStore())
        qtbot.addWidget(window)
        window.show()
        window.start()
    return window


def _earlier(result: RunResult) -> int:
    return sum(t.origin == "earlier" for t in result.tokens if t.source == "draft")


def test_saved_conversations_are_learned_from_and_a_deleted_one_is_forgotten(qtbot, tiny_models, app_dirs):
    store = ConversationStore()
    kept, deleted = _saved("kept", "Say hello", "Hello there."), _saved("gone", QUESTION, "brown fox again")
    for conversation in (kept, deleted):
        store.save(conversation)
    store.flush()
    SettingsStore().save(_suffix_settings(tiny_models))
    window = _open_with_history(qtbot, 2)
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


def test_turning_learning_off_forgets_everything_and_records_nothing(qtbot, tiny_models, app_dirs):
    store = ConversationStore()
    kept = _saved("kept", "Say hello", "Hello there.")
    store.save(kept)
    store.flush()
    SettingsStore().save(tiny_settings(tiny_models, draft="lookup"))
    window = _open_with_history(qtbot, 1)
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


def test_switching_to_earlier_conversations_learns_the_chats_of_this_session_at_once(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models, draft="lookup"))
    first = send_and_wait(qtbot, window, QUESTION)  # a chat saved in this session, under prompt lookup
    window.controller.show(Conversation())  # a new chat
    with qtbot.waitSignal(window.worker.loaded, timeout=LOAD_TIMEOUT_MS):
        window.apply_settings(replace(window.settings, models=_suffix_settings(tiny_models).models))
    again = send_and_wait(qtbot, window, QUESTION)  # no restart
    assert again.token_ids == first.token_ids
    # drafted from the saved chat (re-read from its text, as after a restart), in fewer passes
    assert _earlier(again) > 0 and again.stats.target_passes < first.stats.target_passes, (first.stats, again.stats)
    records = window.controller.conversation.messages[-1].records
    assert any(r.origin == "earlier" for r in records)  # what the tooltips say


def test_an_answer_asked_while_the_saved_chats_are_read_waits_for_them(open_window, qtbot, tiny_models, monkeypatch):
    window = open_window(_suffix_settings(tiny_models))
    first = send_and_wait(qtbot, window, QUESTION)
    window.close()  # saved on disk: the next window reads it after it opens

    release = threading.Event()
    load = ConversationStore.load

    def slow_load(self, conversation_id):  # type: ignore[no-untyped-def]
        release.wait(ANSWER_TIMEOUT_MS / 1000)  # the reading thread: a slow disk
        return load(self, conversation_id)

    monkeypatch.setattr(ConversationStore, "load", slow_load)
    try:
        window = open_window(_suffix_settings(tiny_models))
        window.controller.show(Conversation())
        with qtbot.waitSignal(window.worker.finished, timeout=ANSWER_TIMEOUT_MS) as blocker:
            assert window.send_message(QUESTION)
            answer = window.controller.conversation.messages[-1]
            widget = window.chat_view.answer_for(answer)
            assert widget is not None and "saved conversations" in widget.status.text()
            assert not widget.status.isHidden()
            release.set()
        again = blocker.args[1]
    finally:
        release.set()
    assert again.token_ids == first.token_ids
    assert _earlier(again) > 0 and again.stats.target_passes < first.stats.target_passes, (first.stats, again.stats)
