"""The window against real llama.cpp servers started by the tests (tests/servers.py): a chat
streams in from the server, Stop keeps the partial answer and Continue goes on from it, a
refused connection is a message and the conversation stays, and Compare against a plain
endpoint shows both answers, the server's own acceptance and the warnings. Skipped with the
reason when llama-server was never built (failed in CI)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from gui_helpers import ANSWER_TIMEOUT_MS, document_tokens, tiny_settings
from servers import free_port, llama_server, stop  # and the ``servers`` fixture, from tests/conftest.py

from app.ui.common.conversation import Message
from app.ui.common.storage import ConversationStore
from app.ui.compare.compare_view import CompareDialog
from app.ui.main_window import MainWindow
from app.ui.settings.store import AppSettings, ServerSettings, SettingsStore
from app.worker import EngineWorker

PROMPT = "List the days of the week, one per line, then list them again in the same order."
CONNECT_TIMEOUT_MS = 30_000
COMPARE_TIMEOUT_MS = 240_000
COUNT, LONG = "Count from 1 to 40, separated by commas.", 150  # long enough to stop in the middle


def on_server(url: str, plain_url: str = "", tokens: int = 48) -> AppSettings:
    server = ServerSettings(run_on="server", url=url, plain_url=plain_url)
    return replace(AppSettings(max_new_tokens=tokens), server=server)


def compare_and_wait(qtbot, window: MainWindow, answer: Message) -> CompareDialog:  # type: ignore[no-untyped-def]
    """Compare ``answer`` as a person would; the dialog, or the error the window showed."""
    errors: list[str] = []
    window.controller.error.connect(errors.append)
    window.compare_dialog = None
    assert window.controller.compare(answer)
    qtbot.waitUntil(lambda: window.compare_dialog is not None or bool(errors), timeout=COMPARE_TIMEOUT_MS)
    assert not errors
    assert window.compare_dialog is not None
    return window.compare_dialog


@pytest.fixture
def server_window(app_dirs: Path, qtbot) -> Iterator[Callable[..., MainWindow]]:  # type: ignore[no-untyped-def]
    """``server_window(settings, connected=True)``: a shown window over a fresh worker."""
    windows: list[MainWindow] = []

    def open_(settings: AppSettings, connected: bool = True) -> MainWindow:
        SettingsStore().save(settings)
        worker = EngineWorker()
        window = MainWindow(worker, SettingsStore(), ConversationStore())
        qtbot.addWidget(window)
        window.show()
        windows.append(window)
        signal = worker.loaded if connected else worker.load_failed
        with qtbot.waitSignal(signal, timeout=CONNECT_TIMEOUT_MS):
            window.start()
        return window

    yield open_
    for window in windows:
        window.close()


@pytest.mark.parametrize("name", ["llama-ngram", "vllm-ngram"])  # vLLM: only through ./test.sh --vllm
def test_a_chat_streams_from_the_server_and_names_it(servers, server_window, qtbot, name: str) -> None:  # type: ignore[no-untyped-def]
    server = servers.get(name)
    window = server_window(on_server(server.url))
    kind = "llama.cpp" if name.startswith("llama") else "vLLM"
    assert kind in window.model_label.text() and server.url in window.model_label.text()
    batches: list[int] = []
    window.worker.events_ready.connect(lambda _run, steps: batches.append(len(steps)))
    with qtbot.waitSignal(window.worker.finished, timeout=ANSWER_TIMEOUT_MS) as done:
        assert window.send_message(PROMPT)
        streaming = window.chat_view.answer_for(window.controller.conversation.messages[-1])
        assert streaming is not None and server.url in streaming.header.text()  # named while it streams
    qtbot.waitUntil(lambda: not window.controller.busy)
    result = done.args[1]
    if kind == "llama.cpp":  # streamed in pieces while the server answered, not one block
        assert len(batches) > 2  # (vLLM's steps are placed once its last chunk came: README)
    answer = window.controller.conversation.messages[-1]
    widget = window.chat_view.answer_for(answer)
    assert widget is not None
    assert answer.content == result.text and "Monday" in answer.content
    assert "on the server" in widget.header.text() and server.url in widget.header.text()
    assert "speculation" in widget.header.text()
    kinds = {kind for _text, kind in document_tokens(widget.view)}
    assert "draft" in kinds or "unknown" in kinds  # the server's drafts, attributed or not known
    assert "unknown" in window.legend.shown_kinds()
    widget.why_button.click()  # Why on the answer alone: the server's counts, no invented costs
    assert widget.why_dialog is not None
    assert "server" in widget.why_dialog.summary.text()  # type: ignore[attr-defined]
    assert "not reported" in widget.why_dialog.values["plain_cost"].text()  # type: ignore[attr-defined]
    widget.why_dialog.close()
    window.controller.flush()  # saved, then read back: the server's counts survive a restart
    saved = ConversationStore().load(window.controller.conversation.id).messages[-1]
    assert [r.kind for r in saved.records] == [r.kind for r in answer.records]
    restored = saved.run_result().steps[-1].stats  # rebuilt from the records and passes read back
    assert (restored.proposed, restored.accepted, restored.target_passes) == (
        result.stats.proposed, result.stats.accepted, result.stats.target_passes
    )
    # Regenerate against the server: the same greedy answer again, made there
    with qtbot.waitSignal(window.worker.finished, timeout=ANSWER_TIMEOUT_MS) as again:
        assert window.regenerate(answer)
    qtbot.waitUntil(lambda: not window.controller.busy)
    assert again.args[1].text == result.text
    assert len(window.controller.conversation.messages) == 2
    # Edit the question: answered again by the server, the old answer gone
    question = window.controller.conversation.messages[0]
    with qtbot.waitSignal(window.worker.finished, timeout=ANSWER_TIMEOUT_MS) as edited:
        assert window.edit_and_resend(question, "Name three colours.")
    qtbot.waitUntil(lambda: not window.controller.busy)
    messages = window.controller.conversation.messages
    assert [m.content for m in messages] == ["Name three colours.", edited.args[1].text] and messages[1].content


def test_stop_keeps_the_partial_answer_and_continue_goes_on(servers, server_window, qtbot) -> None:  # type: ignore[no-untyped-def]
    server = servers.get("llama-plain")
    window = server_window(on_server(server.url, tokens=LONG))
    with qtbot.waitSignal(window.worker.events_ready, timeout=ANSWER_TIMEOUT_MS):
        assert window.send_message(COUNT)
    with qtbot.waitSignal(window.worker.finished, timeout=ANSWER_TIMEOUT_MS) as stopped:
        window.controller.stop()  # mid-stream: the worker closes the HTTP stream
    qtbot.waitUntil(lambda: not window.controller.busy)
    partial = stopped.args[1]
    answer = window.controller.conversation.messages[-1]
    assert partial.stop_reason == "cancelled" and answer.stop_reason == "cancelled"
    assert 0 < partial.stats.new_tokens < LONG and answer.content == partial.text
    assert answer.can_continue
    continued = replace(window.settings, max_new_tokens=16)
    window.apply_settings(continued)  # Continue keeps the answer's own settings, not these
    with qtbot.waitSignal(window.worker.finished, timeout=ANSWER_TIMEOUT_MS):
        assert window.controller.continue_answer(answer)
    qtbot.waitUntil(lambda: not window.controller.busy)
    assert answer.content.startswith(partial.text) and len(answer.content) > len(partial.text)


def test_a_refused_connection_is_a_message_and_the_conversation_stays(  # type: ignore[no-untyped-def]
    servers, server_window, qtbot, tiny_models
) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    window = server_window(on_server(url), connected=False)
    assert not window.banner.isHidden()
    assert url in window.banner_text.text() and "connect" in window.banner_text.text().lower()
    with qtbot.waitSignal(window.worker.failed, timeout=ANSWER_TIMEOUT_MS):
        assert window.send_message("Are you there?")
    qtbot.waitUntil(lambda: not window.controller.busy)
    messages = window.controller.conversation.messages
    assert [m.role for m in messages] == ["user", "assistant"] and messages[0].content == "Are you there?"
    assert messages[1].error and url in messages[1].error
    window.controller.flush()
    saved = ConversationStore().load(window.controller.conversation.id)
    assert saved.messages[0].content == "Are you there?"
    # a server that answers, asked for a model it does not serve: said, and nothing is lost
    real = servers.get("llama-plain")
    wrong = replace(window.settings, server=replace(window.settings.server, url=real.url, model="no-such-model"))
    with qtbot.waitSignal(window.worker.load_failed, timeout=CONNECT_TIMEOUT_MS):
        window.apply_settings(wrong)
    assert "no-such-model" in window.banner_text.text() and not window.banner.isHidden()
    assert [m.content for m in window.controller.conversation.messages][0] == "Are you there?"
    # back to this computer: its models load, and the status bar and legend say so
    local = replace(tiny_settings(tiny_models), server=replace(wrong.server, run_on="computer"))
    with qtbot.waitSignal(window.worker.loaded, timeout=CONNECT_TIMEOUT_MS):
        window.apply_settings(local)
    assert window.model_label.text().startswith("Target:") and "unknown" not in window.legend.shown_kinds()
    assert not window.worker.on_server


@pytest.mark.parametrize("kind", ["llama", "vllm"])  # vLLM: only through ./test.sh --vllm
def test_compare_shows_both_answers_and_the_servers_acceptance(servers, server_window, qtbot, kind: str) -> None:  # type: ignore[no-untyped-def]
    spec, plain = servers.get(f"{kind}-ngram"), servers.get(f"{kind}-plain")
    window = server_window(on_server(spec.url, plain_url=plain.url))
    with qtbot.waitSignal(window.worker.finished, timeout=ANSWER_TIMEOUT_MS):
        assert window.send_message(PROMPT)
    qtbot.waitUntil(lambda: not window.controller.busy)
    dialog = compare_and_wait(qtbot, window, window.controller.conversation.messages[-1])
    assert dialog.server_box is not None
    report = dialog.report
    figures = report.figures[0]
    assert figures.drafted and figures.accepted is not None
    assert (report.speculative.stats.proposed, report.speculative.stats.accepted) == (figures.drafted, figures.accepted)
    box = dialog.server_box
    drafts = box.cell("Drafts accepted, of proposed (the server's count)", 0)
    assert drafts.startswith(f"{figures.accepted} of {figures.drafted}")
    assert box.cell("Drafts accepted, of proposed (the server's count)", 1) == "not reported"
    server_clock = box.cell("Decode tokens/s (the server's clock, predicted_ms)", 0)
    assert (server_clock != "not reported") == (kind == "llama")  # vLLM gives no clock per request
    assert spec.url in box.cell("Server", 0) and plain.url in box.cell("Server", 1)
    assert box.warnings.isHidden()  # the plain endpoint drafted nothing, the other did
    assert "Monday" in dialog.speculative_view.toPlainText() and "Monday" in dialog.baseline_view.toPlainText()
    assert dialog.verdict.text()
    why = dialog.open_why()
    assert "not reported" in why.values["plain_cost"].text()
    assert why.values["server_drafts"].text() == drafts
    assert str(figures.drafted) in why.summary.text() or "%" in why.summary.text()


def test_compare_warns_when_the_plain_endpoint_drafts(servers, server_window, qtbot) -> None:  # type: ignore[no-untyped-def]
    plain, spec = servers.get("llama-plain"), servers.get("llama-ngram")
    window = server_window(on_server(plain.url, plain_url=spec.url, tokens=48))  # the wrong way round
    with qtbot.waitSignal(window.worker.finished, timeout=ANSWER_TIMEOUT_MS):
        assert window.send_message(PROMPT)
    qtbot.waitUntil(lambda: not window.controller.busy)
    box = compare_and_wait(qtbot, window, window.controller.conversation.messages[-1]).server_box
    assert box is not None and not box.warnings.isHidden()
    assert "drafted too" in box.warnings.text() and "drafted nothing" in box.warnings.text()


def test_a_dropped_stream_keeps_the_partial_answer_and_says_why(server_logs, server_window, qtbot) -> None:  # type: ignore[no-untyped-def]
    server = llama_server("plain", server_logs)  # its own: this test ends it in the middle of an answer
    try:
        window = server_window(on_server(server.url, tokens=LONG))
        with qtbot.waitSignal(window.worker.events_ready, timeout=ANSWER_TIMEOUT_MS):
            assert window.send_message(COUNT)
        with qtbot.waitSignal(window.worker.failed, timeout=ANSWER_TIMEOUT_MS) as failed:
            stop(server)
    finally:
        stop(server)
    qtbot.waitUntil(lambda: not window.controller.busy)
    question, answer = window.controller.conversation.messages
    assert question.content == COUNT and answer.content  # what had come is kept
    assert server.url in failed.args[1] and answer.error == failed.args[1]
    assert not window.banner.isHidden() and failed.args[1] in window.banner_text.text()
