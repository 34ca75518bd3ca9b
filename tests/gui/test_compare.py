"""Compare: rerun an answer the other way and show both, the speed-up, the diff, a verdict."""

from __future__ import annotations

from gui_helpers import ANSWER_TIMEOUT_MS, document_tokens, send_and_wait, tiny_settings

from app.engine.compare import Comparison, FirstDifference, compare_runs
from app.engine.events import RunResult, RunStats, TokenInfo
from app.ui.compare_view import CompareDialog, verdict_line, verdict_sentence
from app.ui.conversation import TokenRecord
from app.ui.token_style import DIFF_OP


def _compare(qtbot, window, answer_index: int = -1):  # type: ignore[no-untyped-def]
    answer = window.chat_view.answers[answer_index]
    with qtbot.waitSignal(window.controller.comparison_ready, timeout=ANSWER_TIMEOUT_MS) as ready:
        answer.compare_button.click()
    return ready.args[0]


def test_compare_on_a_greedy_answer_reports_identical(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models))
    result = send_and_wait(qtbot, window)
    outcome = _compare(qtbot, window)

    assert outcome.speculative is result and outcome.baseline.speculative is False
    assert outcome.comparison.identical and outcome.comparison.verdict == "identical"
    dialog = window.compare_dialog
    assert dialog is not None and dialog.isVisible()
    assert dialog.verdict.text().startswith("Identical answer · ")
    assert ("faster" in dialog.verdict.text()) or ("slower" in dialog.verdict.text())
    assert dialog.baseline_view.toPlainText() == dialog.speculative_view.toPlainText() == result.text
    assert "draft" in {kind for _, kind in document_tokens(dialog.speculative_view)}
    assert {kind for _, kind in document_tokens(dialog.baseline_view)} == {"target"}
    assert dialog.diff_view.toPlainText() == "No differences."
    assert dialog.table.item(3, 0).text() == str(result.stats.target_passes)
    assert dialog.table.item(3, 1).text() == str(outcome.baseline.stats.target_passes)


def test_compare_on_an_answer_made_without_speculation_reruns_it_with(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models, speculative=False))
    plain = send_and_wait(qtbot, window)
    outcome = _compare(qtbot, window)
    assert outcome.baseline is plain and outcome.speculative.speculative is True
    assert outcome.comparison.identical
    assert "draft" in {kind for _, kind in document_tokens(window.compare_dialog.speculative_view)}


def _run(text: str, ids: list[int], margin: float, wall: float, temperature: float = 0.0) -> RunResult:
    tokens = tuple(TokenInfo(i, ch, "target", 0.5, None, margin) for i, ch in zip(ids, text))
    stats = RunStats(new_tokens=len(tokens), target_passes=len(tokens), decode_s=wall)
    return RunResult(text, tokens, (), stats, "eos", True, "prompt lookup", {"temperature": temperature})


def test_a_difference_is_shown_as_insertions_and_deletions_with_a_verdict(qtbot):
    speculative = _run("abcX", [1, 2, 3, 9], margin=0.01, wall=1.0)
    baseline = _run("abcYZ", [1, 2, 3, 7, 8], margin=0.01, wall=2.0)
    comparison = compare_runs(speculative, baseline)
    records = [TokenRecord(t.text, "draft", 1, t.id) for t in speculative.tokens]
    dialog = CompareDialog(speculative, records, baseline, comparison)
    qtbot.addWidget(dialog)

    assert dialog.verdict.text() == "Answers differ from token 3 · 2.0× faster"
    assert "near-tie" in dialog.explanation.text() and "0.0100" in dialog.explanation.text()
    ops = {}
    block = dialog.diff_view.document().begin()
    it = block.begin()
    while not it.atEnd():
        fragment = it.fragment()
        ops[fragment.charFormat().property(DIFF_OP)] = fragment.text()
        it += 1
    assert ops["delete"] == "X" and ops["insert"] == "YZ"


def test_verdict_sentences_say_what_a_difference_means():
    first = FirstDifference(token_index=4, char_index=10, margin=3.5)
    divergence = Comparison(False, first, 0.5, (), "divergence")
    assert verdict_line(divergence) == "Answers differ from token 4 · 2.0× slower"
    assert "bug" in verdict_sentence(divergence) and "3.5000" in verdict_sentence(divergence)
    assert "slower" in verdict_sentence(divergence)
    sampling = Comparison(False, first, 1.5, (), "sampling")
    assert verdict_line(sampling) == "Different sample · 1.5× faster"
    assert "distribution is the same" in verdict_sentence(sampling)


def test_long_texts_scroll_together(qtbot):
    text = "\n".join(f"line {i}" for i in range(300))
    speculative = _run(text, list(range(len(text))), margin=5.0, wall=1.0)
    baseline = _run(text, list(range(len(text))), margin=5.0, wall=1.0)
    records = [TokenRecord(t.text, "target", 1, t.id) for t in speculative.tokens]
    dialog = CompareDialog(speculative, records, baseline, compare_runs(speculative, baseline))
    qtbot.addWidget(dialog)
    dialog.show()
    left, right = dialog.speculative_view.verticalScrollBar(), dialog.baseline_view.verticalScrollBar()
    assert left.maximum() > 0
    left.setValue(left.maximum())
    assert right.value() == right.maximum()
    right.setValue(0)
    assert left.value() == 0


def test_compare_on_a_stopped_answer_reruns_the_same_number_of_tokens(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models, max_new_tokens=300))
    with qtbot.waitSignal(window.worker.finished, timeout=ANSWER_TIMEOUT_MS) as finished:
        with qtbot.waitSignal(window.worker.events_ready, timeout=ANSWER_TIMEOUT_MS):
            window.send_message("Hello world!")
        window.controller.stop()
    qtbot.waitUntil(lambda: not window.controller.busy)
    partial = finished.args[1]
    assert partial.stop_reason == "cancelled"
    outcome = _compare(qtbot, window)
    assert outcome.baseline.stats.new_tokens == partial.stats.new_tokens
    assert outcome.comparison.identical
