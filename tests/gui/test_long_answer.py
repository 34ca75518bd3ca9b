"""Opening a conversation with a huge answer keeps the window responsive (issue 20, section 6):
only the view shown is drawn, and a finished answer of more than ``LONG_ANSWER_TOKENS`` tokens
shows its start, with its provenance, until "Show all" (1.5M tokens froze the window ~10 s)."""

from __future__ import annotations

import time

from app.ui.chat.chat_view import ChatView
from app.ui.chat.message_widgets import LONG_ANSWER_TOKENS
from app.ui.common.conversation import Message, TokenRecord

WORDS = ["The", " quick", " brown", " fox", " jumps", "\n", " over", " the", " lazy", " dog", "."]


def _huge_answer(tokens: int) -> Message:
    records = [
        TokenRecord(WORDS[i % len(WORDS)], "draft" if i % 3 else "target", i // 2, i % 400) for i in range(tokens)
    ]
    stats = {"new_tokens": tokens, "target_passes": tokens // 2}
    return Message("assistant", "".join(r.text for r in records), records=records, stats=stats, stop_reason="eos")


def test_a_huge_answer_opens_at_once_showing_its_start_until_show_all(qtbot):
    view = ChatView()
    qtbot.addWidget(view)
    message = _huge_answer(300_000)
    started = time.perf_counter()
    view.add_message(Message("user", "a long story, please"))
    view.add_message(message)
    opened_s = time.perf_counter() - started
    answer = view.answer_for(message)
    assert answer is not None
    assert opened_s < 5.0, f"opening took {opened_s:.1f} s"  # main: 12 s here (2 loaded cores)
    start = "".join(r.text for r in message.records[:LONG_ANSWER_TOKENS])
    assert answer.rendered.toPlainText().startswith("The quick brown fox")  # its start
    assert len(answer.rendered.toPlainText()) < len(message.content) / 10
    assert not answer.long_note.isHidden() and "300,000" in answer.long_note.text()
    assert answer.view.document().isEmpty()  # the token view is drawn when it is shown
    answer.show_tokens(True)
    assert len(answer.view.toPlainText()) == len(start)
    answer.show_all_button.click()
    assert len(answer.view.toPlainText()) == len(message.content) and answer.long_note.isHidden()


def test_an_ordinary_answer_is_drawn_whole_with_no_note(qtbot):
    view = ChatView()
    qtbot.addWidget(view)
    message = _huge_answer(200)
    view.add_message(message)
    answer = view.answer_for(message)
    assert answer is not None and answer.long_note.isHidden() and answer.show_all_button.isHidden()
    answer.show_tokens(True)
    assert answer.view.toPlainText() == message.content
