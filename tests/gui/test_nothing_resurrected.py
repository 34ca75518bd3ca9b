"""Nothing lost, nothing resurrected (issue 20, sections 1 and 2), in the real window: a
conversation deleted while the reading thread is on it stays deleted (from the list, the disk
and the drafter's index); opening a conversation and closing the window leaves its file as it
was; a change keeps the fields this version does not understand and never lowers its version;
a malformed saved answer is a message, never an answer glued onto another."""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path
from typing import Any

from gui_helpers import ANSWER_TIMEOUT_MS, send_and_wait, tiny_settings
from PySide6.QtWidgets import QApplication

from app.engine.backend import AnswerOptions
from app.engine.config import GenerationConfig
from app.ui.common.conversation import Conversation, Message
from app.ui.common.storage import ConversationStore
from app.ui.main_window import MainWindow
from app.ui.settings.store import SettingsStore
from app.worker import EngineWorker


def _file(folder: Path, data: dict[str, Any]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{data['id']}.json"
    path.write_text(json.dumps(data, indent=1), "utf-8")
    return path


def _foreign(**changes: Any) -> dict[str, Any]:
    """A conversation as a newer version (or a person's editor) may write it."""
    messages = [Message("user", "hi"), Message("assistant", "hello")]
    data = Conversation(title="from the future", messages=messages).to_json()
    data["version"] = 2
    data["tags"] = ["work", "keep me"]
    data["messages"][1]["future_field"] = {"rating": 5}
    data["messages"][0]["lang"] = "en"
    data.update(changes)
    return data


def _window_without_models(qtbot) -> MainWindow:  # type: ignore[no-untyped-def]
    window = MainWindow(EngineWorker(loader=lambda **_kw: None), SettingsStore(), ConversationStore())
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.conversations_read)
    return window


def test_a_conversation_deleted_while_it_is_read_again_stays_deleted(app_dirs, qtbot, monkeypatch):
    store = ConversationStore()
    gone = Conversation(title="gone", messages=[Message("user", "secret question"), Message("assistant", "a")])
    store.save(gone)
    store.flush()
    release, second_read = threading.Event(), threading.Event()
    reads: list[str] = []
    real_load = ConversationStore.load

    def slow_second_read(self: ConversationStore, conversation_id: str) -> Conversation:
        reads.append(conversation_id)
        conversation = real_load(self, conversation_id)
        if len(reads) == 2:  # the read the click queued: a huge file, still being parsed
            second_read.set()
            release.wait(10)
        return conversation

    monkeypatch.setattr(ConversationStore, "load", slow_second_read)
    window = MainWindow(EngineWorker(loader=lambda **_kw: None), SettingsStore(), ConversationStore())
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(lambda: window.controller.conversation.id == gone.id)
    histories: list[list[str]] = []
    monkeypatch.setattr(window.worker, "set_history", lambda _on, convs: histories.append([c for c, _m in convs]))
    window.loader.first(gone.id)  # read again (a click while the reader was on it)
    assert second_read.wait(10)
    shown = next(c for c in window.conversation_panel.conversations if c.id == gone.id)
    window.conversation_panel.delete(shown)
    release.set()
    qtbot.waitUntil(lambda: not window.loader.busy)
    qtbot.wait(200)  # the hand-on timer's ticks after the read (POLL_MS = 30)
    QApplication.processEvents()

    assert gone.id not in [c.id for c in window.conversation_panel.conversations]
    assert window.conversation_list.count() == 0
    assert not (store.folder / f"{gone.id}.json").exists()
    assert all(gone.id not in listed for listed in histories)  # never handed to the drafter again
    assert window.controller.conversation.id != gone.id
    assert not window.banner.isVisible()  # nothing reported unreadable either
    window.controller.conversation.messages.append(Message("user", "a new chat"))
    window.controller.save()
    window.controller.flush()
    assert not (store.folder / f"{gone.id}.json").exists()
    window.close()


def test_a_save_queued_for_a_deleted_conversation_never_brings_its_file_back(tmp_path):
    store = ConversationStore(tmp_path)
    conversation = Conversation(title="x", messages=[Message("user", "hi")])
    store.save(conversation)
    store.delete(conversation.id)
    store.save(conversation)  # a late save (an answer finishing) after the person deleted it
    store.flush()
    assert not (store.folder / f"{conversation.id}.json").exists()
    store.undelete(conversation.id)  # Undo
    store.save(conversation).result(5)
    assert (store.folder / f"{conversation.id}.json").exists()


def test_opening_a_conversation_and_closing_the_window_leaves_its_file_untouched(app_dirs, qtbot):
    path = _file(ConversationStore().folder, _foreign())
    before = path.read_bytes(), path.stat().st_mtime_ns
    window = _window_without_models(qtbot)
    assert window.controller.conversation.id == path.stem  # opened
    window.system_prompt.editingFinished.emit()  # focus leaving the field as the window closes
    window.close()
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


def test_a_changed_conversation_keeps_unknown_fields_and_its_newer_version(app_dirs, qtbot):
    path = _file(ConversationStore().folder, _foreign())
    window = _window_without_models(qtbot)
    assert window.conversation_panel.rename(window.controller.conversation, "renamed")
    window.controller.flush()
    window.close()
    saved = json.loads(path.read_text("utf-8"))
    assert saved["title"] == "renamed"
    assert saved["version"] == 2 and saved["tags"] == ["work", "keep me"]
    assert saved["messages"][1]["future_field"] == {"rating": 5} and saved["messages"][0]["lang"] == "en"


def _cut_answer_file(folder: Path, **answer: Any) -> Path:
    message = {
        "role": "assistant",
        "content": "The capital of France is Paris",
        "records": [],
        "config": GenerationConfig(max_new_tokens=6).to_dict(),
        "stop_reason": "cancelled",
    }
    message.update(answer)
    data = {
        "version": 1,
        "id": uuid.uuid4().hex,
        "title": "cut",
        "messages": [{"role": "user", "content": "What is the capital of France?"}, message],
    }
    return _file(folder, data)


def test_a_malformed_saved_config_is_a_message_and_never_glues_answers(open_window, qtbot, tiny_models):
    path = _cut_answer_file(ConversationStore().folder, config={"stop_strings": 5, "k": "5"})
    window = open_window(tiny_settings(tiny_models, max_new_tokens=4))
    qtbot.waitUntil(lambda: window.controller.conversation.id == path.stem)
    answer = window.controller.conversation.messages[-1]
    assert not window.controller.continue_answer(answer)
    assert window.banner.isVisible() and "settings" in window.banner_text.text()
    assert not window.controller.compare(answer)
    assert not window.controller.busy and answer.can_continue  # still cut, Continue still offered
    result = send_and_wait(qtbot, window, "And Italy?")
    window.controller.flush()
    saved = json.loads(path.read_text("utf-8"))["messages"]
    assert saved[1]["stop_reason"] == "cancelled"
    assert saved[-1]["content"] == result.text  # the new answer alone, nothing glued before it
    assert not saved[-1]["content"].startswith("The capital of France is Paris") or result.text.startswith(
        "The capital of France is Paris"
    )


def test_ids_made_by_another_model_are_not_continued_from_and_the_window_says_so(open_window, qtbot, tiny_models):
    records = [[t, "target", i, 40 + i, None, None, None] for i, t in enumerate(["The", " capital"])]
    made_by = {"target": "Qwen2.5-0.5B-Instruct", "drafter": "none", "dtype": "float32", "device": "cpu",
               "draft_dtype": None, "config": {}}  # fmt: skip
    path = _cut_answer_file(ConversationStore().folder, content="The capital", records=records, made_by=made_by)
    window = open_window(tiny_settings(tiny_models, max_new_tokens=4, draft="lookup"))
    qtbot.waitUntil(lambda: window.controller.conversation.id == path.stem)
    answer = window.controller.conversation.messages[-1]
    with qtbot.waitSignal(window.worker.finished, timeout=ANSWER_TIMEOUT_MS):
        assert window.controller.continue_answer(answer)
    qtbot.waitUntil(lambda: not window.controller.busy)
    assert "Qwen2.5-0.5B-Instruct" in window.statusBar().currentMessage()
    engine = window.worker._engine
    chat = [
        {"role": "user", "content": "What is the capital of France?"},
        {"role": "assistant", "content": "The capital"},
    ]
    go_on = AnswerOptions(continue_answer=True)
    from_text = engine.generate(chat, GenerationConfig(max_new_tokens=6), options=go_on)
    assert answer.content == "The capital" + from_text.text


def test_why_opens_on_an_answer_whose_saved_pass_timings_are_absurd(qtbot):
    from app.engine.analysis.explanation import explain
    from app.ui.compare.explain_view import ExplainDialog

    records = [[t, "target", i, 40 + i, 0.5, None, None] for i, t in enumerate(["a", "b", "c", "d"])]
    passes = [[0, "prefill", 0, 0, 0.0, 0.01, None]] + [[i, "plain", 0, 0, 0.0, 1e308, None] for i in (1, 2, 3)]
    data = {"role": "assistant", "content": "abcd", "records": records, "passes": passes, "stop_reason": "eos",
            "stats": {"new_tokens": 4, "target_passes": 4, "prefill_s": 0.01, "decode_s": 1e308}}  # fmt: skip
    message = Message.from_json(data)
    run = message.run_result()
    explain(run)  # raised OverflowError (math.fsum) on the saved timings
    dialog = ExplainDialog(run)
    qtbot.addWidget(dialog)
    assert dialog.summary.text()
