"""Chatting with the real engine over tiny models: streaming, provenance, the speculation
switch, rejected drafts, hover details, keys, Stop, and closing mid-answer."""

from __future__ import annotations

from dataclasses import replace

from gui_helpers import (
    ANSWER_TIMEOUT_MS,
    PROMPT,
    document_tokens,
    has_strikeout,
    send_and_wait,
    tiny_settings,
)
from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QTextCursor


def test_streamed_answer_is_highlighted_by_token_source(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models))
    batches: list[int] = []
    window.worker.events_ready.connect(lambda _run, steps: batches.append(len(steps)))
    result = send_and_wait(qtbot, window)

    answer = window.chat_view.answers[-1]
    expected = [(t.text, t.source) for t in result.tokens if t.text]
    assert document_tokens(answer.view) == expected
    assert {"draft", "target"} <= {source for _, source in expected}  # both kinds were painted
    assert answer.view.toPlainText() == result.text == answer.message.content
    assert sum(batches) == len(result.steps)  # every step reached the GUI, batched
    assert str(result.stats.new_tokens) in answer.stats.text()
    assert f"{result.stats.target_passes} target passes" in answer.stats.text()


def test_switching_speculation_off_gives_an_answer_without_draft_tokens(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models))
    first = send_and_wait(qtbot, window)
    assert any(t.source == "draft" for t in first.tokens)

    window.speculation_switch.click()
    assert window.settings.speculative is False
    second = send_and_wait(qtbot, window)

    assert second.speculative is False and second.stats.proposed == 0
    kinds = {kind for _, kind in document_tokens(window.chat_view.answers[-1].view)}
    assert kinds == {"target"}
    assert "no speculation" in window.chat_view.answers[-1].header.text()


def test_rejected_drafts_appear_struck_through_where_they_were_proposed(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models))
    result = send_and_wait(qtbot, window)
    view = window.chat_view.answers[-1].view
    rejected = [t.text for s in result.steps for t in s.rejected if t.text]
    assert rejected, "the tiny draft model should have had a rejection"
    assert "rejected" not in {kind for _, kind in document_tokens(view)}

    window.show_rejected.click()

    painted = document_tokens(view)
    assert [text for text, kind in painted if kind == "rejected"] == rejected
    assert has_strikeout(view, "rejected") and not has_strikeout(view, "draft")
    # in place: each step's rejected drafts sit right before that step's correction token
    expected = []
    for step in result.steps:
        expected += [(t.text, t.source) for t in step.accepted if t.text]
        expected += [(t.text, "rejected") for t in step.rejected if t.text]
        if step.target is not None and step.target.text:
            expected.append((step.target.text, step.target.source))
    assert painted == expected


def test_hovering_a_token_tells_its_source_pass_and_probabilities(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models))
    send_and_wait(qtbot, window)
    window.chat_view.answers[-1].tokens_button.click()  # the raw token view; rendered: test_rendered_provenance
    view = window.chat_view.answers[-1].view
    records = view.records
    index = next(i for i, r in enumerate(records) if r.kind == "draft" and r.text.strip())
    position = sum(len(r.text) for r in records[:index] if r.kind != "rejected")
    cursor = QTextCursor(view.document())
    cursor.setPosition(position)
    rect = view.cursorRect(cursor)
    record = view.record_at(QPoint(rect.x() + 2, rect.center().y()))

    assert record == records[index]
    tip = view.tooltip_text(record)
    assert f"pass {record.step}" in tip and "Draft token" in tip
    assert f"{record.p_target:.3f}" in tip and f"{record.p_draft:.3f}" in tip


def test_enter_sends_and_shift_enter_adds_a_line(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models, max_new_tokens=4))
    qtbot.keyClicks(window.composer, "Hello")
    qtbot.keyClick(window.composer, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(window.composer, "world!")
    assert window.composer.toPlainText() == "Hello\nworld!"
    with qtbot.waitSignal(window.worker.finished, timeout=ANSWER_TIMEOUT_MS):
        qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    assert window.controller.conversation.messages[0].content == "Hello\nworld!"
    assert window.composer.toPlainText() == ""


def test_stop_ends_the_answer_and_keeps_the_partial_text(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models, max_new_tokens=300))
    with qtbot.waitSignal(window.worker.finished, timeout=ANSWER_TIMEOUT_MS) as finished:
        with qtbot.waitSignal(window.worker.events_ready, timeout=ANSWER_TIMEOUT_MS):
            window.send_message(PROMPT)
        assert window.send_button.text() == "Stop"
        qtbot.keyClick(window.composer, Qt.Key.Key_Escape)
    result = finished.args[1]
    qtbot.waitUntil(lambda: not window.controller.busy)

    assert result.stop_reason == "cancelled"
    assert 0 < result.stats.new_tokens < 300
    answer = window.chat_view.answers[-1]
    assert answer.message.content == result.text and answer.view.toPlainText() == result.text
    assert "partial" in answer.status.text()
    assert window.send_button.text() == "Send"


def test_closing_the_window_mid_answer_stops_the_engine_thread_quickly(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models, max_new_tokens=300))
    with qtbot.waitSignal(window.worker.events_ready, timeout=ANSWER_TIMEOUT_MS):
        window.send_message(PROMPT)
    window.close()

    # close() joins the engine thread with a 1.5 s timeout: alive now means it missed it
    assert not window.worker._thread.is_alive()
    saved = window.controller.conversation.messages[-1]
    assert saved.role == "assistant" and saved.content  # the partial answer was kept


def test_settings_apply_to_the_next_message(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models, max_new_tokens=24))
    window.apply_settings(replace(window.settings, max_new_tokens=5))
    result = send_and_wait(qtbot, window)
    assert result.stats.new_tokens <= 5 and result.config["max_new_tokens"] == 5
