"""What survives a restart: settings (one typed QSettings wrapper) and conversations (JSON,
written atomically after every message)."""

from __future__ import annotations

from dataclasses import replace

from gui_helpers import ANSWER_TIMEOUT_MS, PROMPT, document_tokens, send_and_wait, tiny_settings

from app.ui.common.conversation import Conversation, Message
from app.ui.common.storage import ConversationStore
from app.ui.settings.settings_dialog import SettingsDialog
from app.ui.settings.store import ModelSettings


def test_settings_survive_a_restart(open_window, qtbot, tiny_models):
    first = open_window(tiny_settings(tiny_models))
    changed = replace(
        first.settings,
        models=replace(
            first.settings.models, draft_kind="lookup", draft_path="", allow_pickle=True, draft_dtype="int8"
        ),
        k=7,
        adaptive_k=True,
        k_max=12,
        confidence_threshold=0.25,
        sampling=True,
        temperature=0.5,
        top_p=0.9,
        top_k=40,
        seed=1234,
        sampling_mode="seed-invariant",
        max_new_tokens=77,
    )
    first.apply_settings(changed)
    first.speculation_switch.click()
    first.show_rejected.click()
    first.close()

    second = open_window()
    assert second.settings == replace(changed, speculative=False, show_rejected=True)
    assert not second.speculation_switch.isChecked() and second.show_rejected.isChecked()


def test_settings_dialog_round_trips_every_field_and_applies_edits(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models, sampling=True, temperature=0.3, seed=9, k=6))
    dialog = SettingsDialog(window.settings, window)
    qtbot.addWidget(dialog)
    assert dialog.settings() == window.settings

    dialog.k.setValue(3)
    dialog.speculative.setChecked(False)
    dialog.greedy.setChecked(True)
    dialog.accepted.connect(lambda: window.apply_settings(dialog.settings()))
    dialog._on_accept()

    assert (window.settings.k, window.settings.speculative, window.settings.sampling) == (3, False, False)
    assert not window.speculation_switch.isChecked()  # the switch mirrors the setting


def test_settings_dialog_refuses_absurd_values_with_a_message(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models))
    dialog = SettingsDialog(window.settings, window)
    qtbot.addWidget(dialog)
    dialog.target.set_value("folder", "")
    dialog._on_accept()
    assert dialog.result() == 0 and "path" in dialog.error.text()


def test_a_saved_conversation_comes_back_after_a_restart(open_window, qtbot, tiny_models):
    first = open_window(tiny_settings(tiny_models))
    first.system_prompt.setText("Be brief.")
    result = send_and_wait(qtbot, first)
    painted = document_tokens(first.chat_view.answers[-1].view)
    first.controller.flush()  # the write was queued when the answer finished
    assert ConversationStore().load_all()[0].messages[1].content == result.text
    first.close()

    second = open_window()
    conversation = second.controller.conversation
    assert [m.role for m in conversation.messages] == ["user", "assistant"]
    assert conversation.messages[1].content == result.text
    assert conversation.system_prompt == "Be brief." == second.system_prompt.text()
    second.chat_view.answers[-1].show_tokens(True)  # the token view is drawn when it is shown
    assert document_tokens(second.chat_view.answers[-1].view) == painted  # highlighting kept
    assert second.conversation_list.count() == 1
    assert not list(ConversationStore().folder.glob("*.tmp"))


def test_the_question_is_on_disk_while_its_answer_is_generated(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models, max_new_tokens=300))
    with qtbot.waitSignal(window.worker.finished, timeout=ANSWER_TIMEOUT_MS):
        window.send_message(PROMPT)
        window.controller.flush()  # the write queued by sending (milliseconds)
        on_disk = ConversationStore().load_all()  # as a crash now would leave it
        window.controller.stop()
    assert [m.content for m in on_disk[0].messages] == [PROMPT]


def test_new_chat_starts_empty_and_the_old_one_can_be_reopened(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models, max_new_tokens=6))
    send_and_wait(qtbot, window, "First chat")
    old_id = window.controller.conversation.id
    window.new_chat_action.trigger()
    assert window.controller.conversation.messages == [] and window.chat_view.answers == []
    send_and_wait(qtbot, window, "Second chat")
    assert window.conversation_list.count() == 2

    old_item = next(
        window.conversation_list.item(i)
        for i in range(2)
        if window.conversation_list.item(i).text() == "First chat"
    )
    window._on_conversation_clicked(old_item)
    assert window.controller.conversation.id == old_id
    assert window.controller.conversation.messages[0].content == "First chat"


def test_model_settings_map_to_engine_sources():
    assert ModelSettings().target_source == "default" and ModelSettings().draft_source == "lookup"
    assert ModelSettings(draft_kind="none").draft_source is None
    assert ModelSettings(target_kind="gguf", target_path="/m/x.gguf").target_source == "/m/x.gguf"


def test_window_geometry_is_restored(open_window, qtbot, tiny_models):
    first = open_window(tiny_settings(tiny_models))
    first.resize(780, 560)  # inside the offscreen screen (800x600)
    size = (first.width(), first.height())
    first.close()
    second = open_window()
    assert size == (780, 560) and (second.width(), second.height()) == size


def test_models_in_the_hf_cache_are_listed_from_the_filesystem(tmp_path):
    from app.ui.models.model_sources import cached_hub_models

    (tmp_path / "models--HuggingFaceTB--SmolLM2-135M" / "snapshots" / "abc").mkdir(parents=True)
    (tmp_path / "models--org--no-snapshot" / "snapshots").mkdir(parents=True)
    (tmp_path / "datasets--x--y" / "snapshots" / "abc").mkdir(parents=True)
    assert cached_hub_models(tmp_path) == ["HuggingFaceTB/SmolLM2-135M"]


def test_the_draft_data_type_setting_loads_an_int8_draft(open_window, qtbot, tiny_models):
    settings = tiny_settings(tiny_models)
    window = open_window(replace(settings, models=replace(settings.models, draft_dtype="int8")))
    dialog = SettingsDialog(window.settings, window)
    qtbot.addWidget(dialog)
    assert dialog.draft_dtype.currentData() == "int8" and dialog.settings() == window.settings
    assert window.worker._engine.draft.dtype == "int8" and window.worker._engine.target.dtype == "float32"
    result = send_and_wait(qtbot, window)
    assert result.speculative and result.stats.proposed > 0


def test_opening_an_old_chat_and_quitting_keeps_its_place_in_the_list(open_window, qtbot, app_dirs):
    store = ConversationStore(app_dirs / "data")
    old = Conversation(title="Old chat", messages=[Message("user", "old question")], updated=1_000.0)
    new = Conversation(title="New chat", messages=[Message("user", "new question")], updated=2_000.0)
    for conversation in (old, new):
        store.save(conversation)
    store.flush()

    first = open_window(wait_loaded=False)
    old_item = next(
        first.conversation_list.item(i)
        for i in range(2)
        if first.conversation_list.item(i).text() == "Old chat"
    )
    first._on_conversation_clicked(old_item)
    first.system_prompt.editingFinished.emit()  # focus leaving the field while closing
    first.close()

    assert [(c.title, c.updated) for c in ConversationStore().load_all()] == [
        ("New chat", 2_000.0),
        ("Old chat", 1_000.0),
    ]
    second = open_window(wait_loaded=False)
    assert [second.conversation_list.item(i).text() for i in range(2)] == ["New chat", "Old chat"]


def test_a_new_message_moves_its_chat_to_the_top(open_window, qtbot, tiny_models, app_dirs):
    store = ConversationStore(app_dirs / "data")
    old = Conversation(title="Old chat", messages=[Message("user", "old question")], updated=1_000.0)
    store.save(old)
    store.save(Conversation(title="New chat", messages=[Message("user", "new question")], updated=2_000.0))
    store.flush()
    window = open_window(tiny_settings(tiny_models, max_new_tokens=4))
    window._on_conversation_clicked(window.conversation_list.item(1))
    assert window.controller.conversation.title == "Old chat"
    send_and_wait(qtbot, window, "one more")
    assert window.conversation_list.item(0).text() == "Old chat"
    assert window.controller.conversation.updated > 2_000.0
