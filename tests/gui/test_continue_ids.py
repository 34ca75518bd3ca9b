"""Continue in the window goes on from the cut answer's exact token ids (saved with it), not
from its text tokenised again: a cut inside a character comes out whole."""

from __future__ import annotations

from gui_helpers import ANSWER_TIMEOUT_MS, send_and_wait, tiny_settings

from app.engine.config import GenerationConfig

PROMPT = "Hello world!"


def test_continue_sends_the_answers_own_ids_and_gives_the_uncut_answer(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models, max_new_tokens=5, draft="lookup"))
    cut = send_and_wait(qtbot, window, PROMPT)
    answer = window.chat_view.answers[-1]
    message = answer.message
    assert cut.stop_reason == "max_new_tokens" and message.token_ids() == tuple(cut.token_ids)
    sent: list[dict] = []
    request = window.worker.request_generate

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        sent.append(kwargs)
        return request(*args, **kwargs)

    window.worker.request_generate = spy
    with qtbot.waitSignal(window.worker.finished, timeout=ANSWER_TIMEOUT_MS):
        answer.continue_button.click()
    qtbot.waitUntil(lambda: not window.controller.busy)
    assert sent and sent[0]["answer_ids"] == tuple(cut.token_ids)
    whole = window.worker._engine.generate(PROMPT, GenerationConfig(max_new_tokens=10, k=4, auto_k=False))
    assert message.token_ids() == tuple(whole.token_ids)
    assert message.content == whole.text
