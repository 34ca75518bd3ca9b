"""Compare: both arms rerun by the engine's comparison service, shown side by side with the
speed ratio, the diff, a verdict that matches the numbers, and what became of the stored answer."""

from __future__ import annotations

import json
import re
import threading
from dataclasses import replace

import pytest
from gui_helpers import ANSWER_TIMEOUT_MS, document_tokens, send_and_wait, tiny_settings
from stand_in_backend import StandInBackend

from app.engine.analysis.compare import ComparisonReport, compare_runs, headline, verdict_reasons
from app.engine.analysis.explanation import explain, format_ratio
from app.engine.config import GenerationConfig
from app.engine.events import ArmConditions, RunProvenance, RunResult, RunStats, StepEvent, TokenInfo
from app.ui.common.conversation import Conversation, Message, TokenRecord
from app.ui.common.formatting import decimal
from app.ui.common.token_style import DIFF_OP
from app.ui.compare.compare_view import TONE_COLOURS, CompareDialog
from app.worker import EngineWorker


def _compare(qtbot, window, answer_index: int = -1):  # type: ignore[no-untyped-def]
    answer = window.chat_view.answers[answer_index]
    with qtbot.waitSignal(window.controller.comparison_ready, timeout=ANSWER_TIMEOUT_MS) as ready:
        answer.compare_button.click()
    return ready.args[0]


def _shown_ratio(text: str) -> float:
    """The decode speed-up as the headline states it: "2.00× faster decoding" → 2.0,
    "slower decoding: 0.50× the plain speed" → 0.5."""
    match = re.search(r"(\d+\.\d\d)× faster decoding|slower decoding: (\d+\.\d\d)×", text)
    assert match is not None, text
    return float(match.group(1) or match.group(2))


def test_compare_reruns_both_arms_and_states_the_tokens_per_second_ratio(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models))
    result = send_and_wait(qtbot, window)
    outcome = _compare(qtbot, window)

    spec, base = outcome.speculative, outcome.baseline
    assert spec is not result and spec.token_ids == result.token_ids  # rerun, not the stored run
    assert spec.speculative and not base.speculative
    assert outcome.report.stored is not None and outcome.report.stored.same_models
    assert outcome.report.stored.reproduced is True
    dialog = window.compare_dialog
    assert dialog is not None and dialog.isVisible()
    assert not dialog.stored_note.isVisible()
    text = dialog.verdict.text()
    assert text.startswith("Identical answer · ")
    # the stated ratio is the decode speed-up (decode tokens/s with over without), the Why
    # panel's measured one, in the right direction
    ratio = explain(spec, base).decode_speedup
    assert ratio is not None and ratio == outcome.comparison.decode_speedup
    measured = outcome.comparison.measured
    if measured is not None and measured.problem is not None:  # the load changed between the arms
        assert "speed not comparable" in text and "(not comparable)" in dialog.table.item(2, 0).text()
    elif abs(ratio - 1.0) >= 0.05:
        assert _shown_ratio(text) == pytest.approx(ratio, abs=0.006)  # shown to two decimals
        assert ("faster" in text) == (ratio > 1.0)
        assert (dialog.verdict.styleSheet() == f"color: {TONE_COLOURS['good']};") == (ratio > 1.0)
    else:
        assert "about as fast" in text
    assert dialog.table.item(2, 0).text().startswith(format_ratio(ratio))  # labelled: decode speed-up
    assert dialog.table.item(3, 0).text().startswith(format_ratio(outcome.comparison.whole_run_speedup))
    assert dialog.table.item(1, 0).text() == decimal(spec.stats.tokens_per_s, 1)  # the locale's digits: 1,235.8
    assert dialog.table.item(1, 1).text() == decimal(base.stats.tokens_per_s, 1)
    assert dialog.baseline_view.toPlainText() == dialog.speculative_view.toPlainText() == result.text
    assert "draft" in {kind for _, kind in document_tokens(dialog.speculative_view)}
    assert {kind for _, kind in document_tokens(dialog.baseline_view)} == {"target"}
    assert dialog.diff_view.toPlainText() == "No differences."
    assert dialog.table.item(5, 0).text() == str(spec.stats.target_passes)
    assert dialog.table.item(5, 1).text() == str(base.stats.target_passes)


def test_one_answer_shows_one_measured_speedup_in_compare_and_in_both_why_panels(open_window, qtbot, tiny_models):
    """Compare's figure divides its fresh reruns; Why opened from Compare and Why opened on the
    answer show that same figure, the answer's one labelled as Compare's reruns (main divided
    the answer's own run by the later plain rerun: 1.47× there against 1.33× in Compare)."""
    window = open_window(tiny_settings(tiny_models))
    send_and_wait(qtbot, window)
    outcome = _compare(qtbot, window)
    figure = format_ratio(outcome.comparison.decode_speedup)
    compare = window.compare_dialog
    assert compare.table.item(2, 0).text().startswith(figure)
    assert "fresh reruns" in compare.reruns_note.text()
    from_compare = compare.open_why()
    qtbot.addWidget(from_compare)
    answer = window.chat_view.answers[-1]
    qtbot.mouseClick(answer.why_button, _left())
    on_answer = answer.why_dialog
    assert from_compare.values["measured"].text().startswith(figure)
    assert on_answer.values["measured"].text().startswith(figure)
    assert on_answer.values["measured"].text() == from_compare.values["measured"].text()
    assert on_answer.explanation.measured_on == "reruns" and from_compare.explanation.measured_on == "these_runs"


def _left():  # type: ignore[no-untyped-def]
    from PySide6.QtCore import Qt

    return Qt.MouseButton.LeftButton


def test_compare_on_an_answer_from_other_models_says_so_and_reruns_both(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models))
    send_and_wait(qtbot, window)
    answer = window.controller.conversation.messages[-1]
    loaded = answer.made_by
    assert loaded is not None
    # as if saved by an earlier session with other models
    answer.made_by = replace(
        loaded, target="Qwen2.5-1.5B-Instruct", dtype="bfloat16", device="cuda:0", weights="bfloat16"
    )
    answer.result = None
    outcome = _compare(qtbot, window)

    stored = outcome.report.stored
    assert stored is not None and stored.differences == ("target", "dtype", "device")
    assert outcome.speculative.made_by == loaded and outcome.baseline.made_by.target == loaded.target
    assert outcome.comparison.verdict == "identical"  # the two fresh arms, not the old answer
    note = window.compare_dialog.stored_note
    assert note.isVisible()
    assert "Qwen2.5-1.5B-Instruct (bfloat16, cuda:0)" in note.text()
    assert f"{loaded.target} ({loaded.weights}, cpu)" in note.text() and loaded.weights.startswith("fp32 · ")
    assert "bug" not in window.compare_dialog.verdict_text.text()


def test_compare_on_an_answer_saved_without_provenance_says_so(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models))
    send_and_wait(qtbot, window)
    answer = window.controller.conversation.messages[-1]
    answer.made_by, answer.result = None, None
    outcome = _compare(qtbot, window)
    assert outcome.report.stored.made_by is None
    assert "without a record of the models" in window.compare_dialog.stored_note.text()


def test_compare_on_an_answer_made_without_speculation_reruns_it_with(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models, speculative=False))
    plain = send_and_wait(qtbot, window)
    outcome = _compare(qtbot, window)
    assert outcome.baseline.token_ids == plain.token_ids and outcome.speculative.speculative is True
    assert outcome.report.stored.reproduced is True
    assert outcome.comparison.identical
    assert "draft" in {kind for _, kind in document_tokens(window.compare_dialog.speculative_view)}


def test_an_answer_keeps_its_provenance_through_the_conversation_json(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models))
    result = send_and_wait(qtbot, window)
    conversation = window.controller.conversation
    answer = conversation.messages[-1]
    assert answer.made_by == result.made_by and answer.made_by.target.startswith("llama")
    assert answer.made_by.dtype == "float32" and answer.made_by.drafter == result.drafter

    restored = Conversation.from_json(json.loads(json.dumps(conversation.to_json())))
    assert restored.messages[-1].made_by == answer.made_by
    assert restored.messages[-1].run_result().made_by == answer.made_by
    old = conversation.to_json()
    del old["messages"][-1]["made_by"]  # a file from before provenance was recorded
    assert Conversation.from_json(old).messages[-1].made_by is None
    assert Message.from_json({**old["messages"][-1], "made_by": {"target": "x"}}).made_by is None


def _run(
    text: str, ids: list[int], margin: float, wall: float, temperature: float = 0.0, one_pass: bool = False
) -> RunResult:
    """An instant prompt pass, then ``wall`` seconds over the other tokens: one token per pass,
    or (``one_pass``, a run with speculation) all of them drafted and checked in one pass."""
    tokens = tuple(TokenInfo(i, ch, "target", 0.5, None, margin, 20.0) for i, ch in zip(ids, text))
    passes = 2 if one_pass else len(tokens)
    stats = RunStats(new_tokens=len(tokens), target_passes=passes, decode_s=wall)
    made_by = RunProvenance("tiny", "none", "float32", "cpu")
    if one_pass:  # physically able to beat a plain run: up to len - 1 tokens per pass
        drafted = tuple(replace(t, source="draft") for t in tokens[1:-1])
        steps = (
            StepEvent(0, (), tokens[0], (), "prefill", 0, 0.0, 0.0, stats),
            StepEvent(1, drafted, tokens[-1], (), "bonus", len(drafted), 0.0, wall, stats),
        )
        tokens = (tokens[0], *drafted, tokens[-1])
        config = {"temperature": temperature}
        return RunResult(text, tokens, steps, stats, "eos", True, "prompt lookup", config, made_by)
    each = wall / (len(tokens) - 1)
    steps = tuple(
        StepEvent(i, (), t, (), "prefill" if i == 0 else "plain", 0, 0.0, each if i else 0.0, stats)
        for i, t in enumerate(tokens)
    )
    return RunResult(
        text, tokens, steps, stats, "eos", True, "prompt lookup", {"temperature": temperature}, made_by
    )


def _report(speculative: RunResult, baseline: RunResult) -> ComparisonReport:
    return ComparisonReport(
        speculative, baseline, compare_runs(speculative, baseline), ("speculative", "baseline"), "fresh"
    )


def test_the_dialog_says_what_the_engine_report_says(qtbot):
    speculative = _run("abcX", [1, 2, 3, 9], margin=1e-5, wall=1.0, one_pass=True)
    baseline = _run("abcYZ", [1, 2, 3, 7, 8], margin=1e-5, wall=2.0)
    report = _report(speculative, baseline)
    records = [TokenRecord(t.text, "draft", 1, t.id) for t in speculative.tokens]
    dialog = CompareDialog(report, records)
    qtbot.addWidget(dialog)

    data = report.to_dict()  # what the CLI prints with --json
    assert dialog.verdict.text() == data["headline"] == headline(report.comparison).render()
    assert dialog.verdict_text.text() == data["verdict_text"]
    # decoding: 3 tokens in 1 s against 4 in 2 s, 1.5x (whole runs: 4 in 1 s against 5 in 2 s, 1.6x)
    assert dialog.verdict.text() == "Answers differ from token 3 · 1.50× faster decoding"
    assert report.comparison.whole_run_speedup == pytest.approx(1.6)
    assert data["decode_speedup"] == pytest.approx(1.5) and data["whole_run_speedup"] == pytest.approx(1.6)
    assert "near tie" in dialog.verdict_text.text() and "float32" in dialog.verdict_text.text()
    ops = {}
    block = dialog.diff_view.document().begin()
    it = block.begin()
    while not it.atEnd():
        fragment = it.fragment()
        ops[fragment.charFormat().property(DIFF_OP)] = fragment.text()
        it += 1
    assert ops["delete"] == "X" and ops["insert"] == "YZ"


def test_a_confident_difference_is_called_a_bug_and_a_sampled_one_is_not(qtbot):
    divergence = _report(_run("abcX", [1, 2, 3, 9], 3.5, 2.0, one_pass=True), _run("abcY", [1, 2, 3, 7], 3.5, 1.0))
    dialog = CompareDialog(divergence, [])
    qtbot.addWidget(dialog)
    assert dialog.verdict.text() == "Answers differ from token 3 · slower decoding: 0.50× the plain speed"
    assert "bug" in dialog.verdict_text.text() and "3.5 logits" in dialog.verdict_text.text()
    assert dialog.verdict.styleSheet() == f"color: {TONE_COLOURS['bad']};"
    sampled = _report(_run("abX", [1, 2, 9], 3.5, 1.0, 0.7, one_pass=True), _run("abY", [1, 2, 7], 3.5, 1.5, 0.7))
    assert verdict_reasons(sampled.comparison)[0].render().endswith("the distribution is the same.")
    assert headline(sampled.comparison).render() == "Different sample · 1.50× faster decoding"


@pytest.mark.parametrize("cause", ["acceptance", "draft_cost", "verify_cost"])
def test_the_dialog_and_its_why_panel_show_the_cause_the_run_was_built_with(qtbot, cause):
    """What a person reads: the Compare dialog's sentence and the Why panel it opens blame the
    factor the slower run was constructed to suffer from (tests/test_compare_verdicts.py)."""
    from test_compare_verdicts import KNOWN_CAUSES, WHY_CAUSE, compare_shows, known_cause_report, why_shows

    from app.engine.analysis.compare import CAUSES, cause_phrase

    report = known_cause_report(KNOWN_CAUSES[cause][-1])
    dialog = CompareDialog(report, [])
    qtbot.addWidget(dialog)
    assert compare_shows(verdict_reasons(report.comparison)) == [cause]
    assert report.comparison.cause is not None
    shown = {
        kind: cause_phrase(replace(report.comparison.cause, kind=kind)).render() in dialog.verdict_text.text()
        for kind in CAUSES
    }
    assert [kind for kind, present in shown.items() if present] == [cause]
    why = dialog.open_why()
    assert why_shows(why.summary.text()) == [WHY_CAUSE[cause]]


def test_long_texts_scroll_together(qtbot):
    text = "\n".join(f"line {i}" for i in range(300))
    speculative = _run(text, list(range(len(text))), margin=5.0, wall=1.0)
    baseline = _run(text, list(range(len(text))), margin=5.0, wall=1.0)
    records = [TokenRecord(t.text, "target", 1, t.id) for t in speculative.tokens]
    dialog = CompareDialog(_report(speculative, baseline), records)
    qtbot.addWidget(dialog)
    dialog.show()
    assert not dialog.showing_tokens  # rendered first, as the chat shows an answer
    left, right = dialog.speculative_rendered.verticalScrollBar(), dialog.baseline_rendered.verticalScrollBar()
    assert left.maximum() > 0
    left.setValue(left.maximum())
    assert right.value() == right.maximum()
    dialog.tokens_button.click()
    qtbot.waitUntil(lambda: dialog.speculative_view.verticalScrollBar().maximum() > 0)
    left, right = dialog.speculative_view.verticalScrollBar(), dialog.baseline_view.verticalScrollBar()
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
    assert (
        outcome.baseline.stats.new_tokens == outcome.speculative.stats.new_tokens == partial.stats.new_tokens
    )
    assert outcome.comparison.identical and outcome.report.stored.reproduced is True


class _ThreadRecordingEngine(StandInBackend):
    """Answers every run with one token and notes the thread each call ran on."""

    target_name, drafter_name = "scripted", "prompt lookup"

    def __init__(self) -> None:
        self.threads: list[str] = []

    def warm_up(self) -> None:
        self.threads.append(threading.current_thread().name)

    def reset(self) -> None:
        self.threads.append(threading.current_thread().name)

    def start_arm(self):  # type: ignore[no-untyped-def]
        self.threads.append(threading.current_thread().name)
        return ArmConditions

    def generate(self, conversation, config, cancel=None, on_step=None, **options):  # type: ignore[no-untyped-def]
        self.threads.append(threading.current_thread().name)
        stats = RunStats(new_tokens=1, target_passes=1, prefill_s=0.01)
        step = StepEvent(
            0, (), TokenInfo(1, "x", "target"), (), "prefill", 0, 0.0, 0.01, stats, stop_reason="eos"
        )
        drafter = "prompt lookup" if config.speculative else "none"
        return RunResult.from_steps([step], config.speculative, drafter, config.to_dict())


def test_the_worker_runs_the_comparison_service_on_the_engine_thread(qtbot):
    engine = _ThreadRecordingEngine()
    worker = EngineWorker(loader=lambda **_kwargs: engine)
    try:
        with qtbot.waitSignal(worker.loaded, timeout=ANSWER_TIMEOUT_MS):
            worker.request_load("scripted", "lookup")
        with qtbot.waitSignal(worker.compared, timeout=ANSWER_TIMEOUT_MS) as compared:
            run_id = worker.request_compare([{"role": "user", "content": "hi"}], GenerationConfig())
        run, report = compared.args
        assert run == run_id and isinstance(report, ComparisonReport)
        assert report.comparison.identical and report.order == ("speculative", "baseline")
        assert len(engine.threads) == 8 and set(engine.threads) == {"specchat-engine"}
    finally:
        worker.shutdown()


def test_a_comparison_without_a_model_fails_with_one_message(qtbot):
    worker = EngineWorker(loader=lambda **_kwargs: _ThreadRecordingEngine())
    try:
        with qtbot.waitSignal(worker.failed, timeout=ANSWER_TIMEOUT_MS) as failed:
            run_id = worker.request_compare([{"role": "user", "content": "hi"}], GenerationConfig())
        assert failed.args[0] == run_id and failed.args[1].startswith("No model is loaded")
    finally:
        worker.shutdown()


CODE_ANSWER = "Here it is:\n\n```python\ndef add(a, b):\n    return a + b\n```\n"


def test_the_panes_render_the_answer_as_the_chat_does_and_tokens_keep_code_indented(qtbot):
    from PySide6.QtGui import QFontInfo

    from app.ui.chat.markdown_view import MarkdownView
    from app.ui.common.token_style import TOKEN_KIND

    ids = list(range(len(CODE_ANSWER)))
    speculative = _run(CODE_ANSWER, ids, margin=5.0, wall=1.0)
    baseline = _run(CODE_ANSWER, ids, margin=5.0, wall=2.0)
    records = [TokenRecord(t.text, "draft" if i % 2 else "target", 1, t.id) for i, t in enumerate(speculative.tokens)]
    dialog = CompareDialog(_report(speculative, baseline), records)
    qtbot.addWidget(dialog)
    dialog.show()
    chat = MarkdownView()
    qtbot.addWidget(chat)
    chat.set_markdown(CODE_ANSWER, records)
    for pane in (dialog.speculative_rendered, dialog.baseline_rendered):
        assert pane.isVisible() and "```" not in pane.toPlainText()
        assert pane.toPlainText() == chat.toPlainText()  # the chat's renderer, its highlighting
        assert pane.code_blocks == ("def add(a, b):\n    return a + b\n",)
    kinds = set()
    block = dialog.speculative_rendered.document().begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            kinds.add(it.fragment().charFormat().property(TOKEN_KIND))
            it += 1
        block = block.next()
    assert "draft" in kinds  # the guessed characters stay marked once rendered

    dialog.tokens_button.click()
    assert dialog.showing_tokens and dialog.speculative_view.isVisible() and not dialog.speculative_rendered.isVisible()
    assert "    return a + b" in dialog.speculative_view.toPlainText().replace("\u2028", "\n")
    assert QFontInfo(dialog.speculative_view.font()).fixedPitch()  # code keeps its indentation
