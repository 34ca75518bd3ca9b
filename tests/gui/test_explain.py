"""The Why panel: opened from an answer or from a (speculative, baseline) pair, it shows the
engine's explanation — the same numbers and sentence — and its charts carry the engine's data.
The plotting library is loaded only when the panel opens."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from gui_helpers import ANSWER_TIMEOUT_MS, send_and_wait, tiny_settings
from test_explanation import _baseline, _speculative

from app.engine.analysis.explanation import explain, format_percent, format_ratio, format_tokens
from app.engine.events import RunResult, RunStats
from app.ui.compare.explain_view import ExplainDialog


def test_why_opens_from_an_answer_and_shows_the_engines_numbers(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models))
    result = send_and_wait(qtbot, window)
    answer = window.chat_view.answers[-1]
    assert answer.why_button.isEnabled()
    qtbot.mouseClick(answer.why_button, _left())
    dialog = answer.why_dialog
    assert dialog is not None and dialog.isVisible()
    expected = explain(result, None)
    assert dialog.summary.text() == expected.summary
    assert dialog.values["alpha"].text() == format_percent(expected.alpha)
    assert dialog.values["tokens_per_pass"].text() == format_tokens(result.stats.tokens_per_pass)
    predicted = "—" if expected.predicted_decode_speedup is None else format_ratio(expected.predicted_decode_speedup)
    assert dialog.values["predicted"].text() == predicted
    assert dialog.values["measured"].text() == "—"  # no baseline yet
    own = expected.plain_cost_source == "own_plain_steps"
    assert ("own passes" if own else "unknown") in dialog.values["plain_cost"].text()
    assert dialog.run_comparison.isVisible()


def test_run_comparison_in_the_panel_runs_the_answers_comparison(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models))
    send_and_wait(qtbot, window)
    answer = window.chat_view.answers[-1]
    qtbot.mouseClick(answer.why_button, _left())
    with qtbot.waitSignal(window.controller.comparison_ready, timeout=ANSWER_TIMEOUT_MS) as blocker:
        qtbot.mouseClick(answer.why_dialog.run_comparison, _left())
    assert not blocker.args[0].baseline.speculative
    qtbot.waitUntil(lambda: window.compare_dialog is not None and window.compare_dialog.isVisible())


def test_a_pair_shows_the_measured_speedup_and_every_chart_gets_the_engines_data(qtbot):
    spec, base = _speculative(), _baseline()
    dialog = ExplainDialog(spec, base)
    qtbot.addWidget(dialog)
    dialog.show()
    e = explain(spec, base)
    assert not dialog.run_comparison.isVisible()
    assert dialog.values["measured"].text() == format_ratio(e.decode_speedup) == "1.32×"
    assert dialog.values["whole_run"].text() == format_ratio(e.whole_run_speedup)
    assert dialog.values["predicted"].text() == format_ratio(e.predicted_decode_speedup) == "1.31×"
    assert dialog.values["verify_cost"].text() == "1.50×" and dialog.values["draft_cost"].text() == "0.10×"
    assert dialog.values["plain_cost"].text() == "100 ms: the mean of the plain run's passes"

    charts = dialog.acceptance_charts
    judged = [r.rate_of_reached for r in e.acceptance_by_position if r.rate_of_reached is not None]
    assert list(charts.reached_bars.opts["height"]) == judged
    assert list(charts.proposed_bars.opts["height"]) == [r.rate_of_proposed for r in e.acceptance_by_position]
    assert list(charts.histogram_bars.opts["height"]) == [n for _, n in e.tokens_per_pass_histogram]

    timeline = dialog.timeline_chart
    assert list(timeline.draft_bars.opts["x0"]) == [b.start_s for b in e.timeline]
    assert list(timeline.verify_bars.opts["width"]) == [b.verify_s for b in e.timeline]
    assert [label.toPlainText() for label in timeline.token_labels] == [str(b.tokens) for b in e.timeline]

    what_if = dialog.what_if_chart
    curve = next(c for c in e.what_if if c.k == e.k_used)  # every pass drafted k_used: the run's curve
    assert what_if.run_curve is what_if.curves[e.k_used]
    xs, ys = what_if.run_curve.getData()
    assert list(ys) == pytest.approx(list(curve.speedups)) and list(xs) == pytest.approx(list(curve.alphas))
    point = what_if.measured_point.data[0]
    assert (point["x"], point["y"]) == pytest.approx((e.alpha, e.decode_speedup))
    predicted = what_if.predicted_point.data[0]  # on the run's curve: the same quantity
    assert (predicted["x"], predicted["y"]) == pytest.approx((e.alpha, e.predicted_decode_speedup))


def test_an_answer_saved_without_its_passes_says_so_and_offers_a_comparison(qtbot):
    restored = RunResult("Hi there", (), (), RunStats(new_tokens=2), "eos", True, "prompt lookup")
    dialog = ExplainDialog(restored)
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.summary.text() == explain(restored).summary
    assert "saved without its passes" in dialog.summary.text()
    assert dialog.run_comparison.isVisible()
    with qtbot.waitSignal(dialog.comparison_requested, timeout=1000):
        qtbot.mouseClick(dialog.run_comparison, _left())


def test_starting_the_app_does_not_import_the_chart_library():
    code = (
        "import sys, app.gui, app.ui.main_window, app.ui.chat.message_widgets, app.ui.compare.explain_view;"
        "sys.exit('pyqtgraph imported' if 'pyqtgraph' in sys.modules else 0)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr + done.stdout


def _left():  # type: ignore[no-untyped-def]
    from PySide6.QtCore import Qt

    return Qt.MouseButton.LeftButton


def test_why_is_offered_only_for_a_finished_answer_while_nothing_runs(qtbot):
    from app.ui.chat.message_widgets import AnswerWidget
    from app.ui.common.conversation import Message

    message = Message("assistant", "Hi", stats={"new_tokens": 1}, speculative=True, drafter="prompt lookup")
    answer = AnswerWidget(message)
    qtbot.addWidget(answer)
    assert not answer.why_button.isEnabled()  # streaming: stats so far, no stop reason yet
    message.stop_reason = "eos"
    answer.update_labels()
    assert answer.why_button.isEnabled()
    answer.set_busy(True)
    assert not answer.why_button.isEnabled()
    answer.update_labels()  # a repaint while busy does not offer it again
    assert not answer.why_button.isEnabled()


def test_why_opens_from_compare_and_explains_the_two_runs_it_compared(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models))
    send_and_wait(qtbot, window)
    answer = window.chat_view.answers[-1]
    with qtbot.waitSignal(window.controller.comparison_ready, timeout=ANSWER_TIMEOUT_MS) as blocker:
        qtbot.mouseClick(answer.compare_button, _left())
    report = blocker.args[0].report
    qtbot.waitUntil(lambda: window.compare_dialog is not None and window.compare_dialog.isVisible())
    qtbot.mouseClick(window.compare_dialog.why_button, _left())
    dialog = window.compare_dialog.why_dialog
    assert dialog is not None and dialog.isVisible()
    expected = explain(report.speculative, report.baseline, report.comparison.measured)
    assert expected.decode_speedup is not None
    assert dialog.values["measured"].text().startswith(format_ratio(expected.decode_speedup))
    # one number per idea: the headline's speed-up is the Why panel's measured one (or, when
    # the load changed between the arms, both say it is not comparable)
    if report.comparison.outcome == "not_comparable":
        assert "not comparable" in window.compare_dialog.verdict.text()
        assert "not a result" in dialog.values["measured"].text()
    else:
        assert format_ratio(report.comparison.decode_speedup) in window.compare_dialog.verdict.text()
    assert report.comparison.decode_speedup == expected.decode_speedup
    assert dialog.summary.text() == expected.summary
    assert not dialog.run_comparison.isVisible()  # it has its baseline


def test_why_on_a_restored_answer_explains_it_from_its_saved_passes(qtbot):
    """An answer written to disk and read back keeps its passes: its Why panel shows the same
    numbers as before the restart, tokens per target pass as its stats line says."""
    from app.ui.common.conversation import Message

    run = _speculative()
    message = Message("assistant", "")
    for step in run.steps:
        message.add_step(step)
    message.finish(run)
    restored = Message.from_json(json.loads(json.dumps(message.to_json())))
    again = restored.run_result()
    assert len(again.steps) == len(run.steps)
    before, after = explain(run), explain(again)
    assert after.tokens_per_pass == restored.run_stats.tokens_per_pass == run.stats.tokens_per_pass > 1
    assert (after.alpha, after.drafts_accepted_share, after.k_used) == (
        before.alpha,
        before.drafts_accepted_share,
        before.k_used,
    )
    assert after.verify_cost_by_tokens == before.verify_cost_by_tokens
    assert after.summary == before.summary
    dialog = ExplainDialog(again)
    qtbot.addWidget(dialog)
    assert dialog.values["tokens_per_pass"].text() == format_tokens(run.stats.tokens_per_pass) != "0.00"


def test_why_on_an_answer_knows_the_comparison_already_run(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models))
    send_and_wait(qtbot, window)
    answer = window.chat_view.answers[-1]
    qtbot.mouseClick(answer.why_button, _left())
    assert "no comparison yet" in answer.why_dialog.values["plain_cost"].text() or (
        "unknown" in answer.why_dialog.values["plain_cost"].text()
    )
    with qtbot.waitSignal(window.controller.comparison_ready, timeout=ANSWER_TIMEOUT_MS) as blocker:
        qtbot.mouseClick(answer.why_dialog.run_comparison, _left())
    report = blocker.args[0].report
    dialog = answer.why_dialog  # the open panel was redrawn with the comparison
    assert dialog is not None and dialog.isVisible()
    # the comparison's figure (its fresh reruns), not this answer divided by the plain rerun
    expected = explain(answer.message.run_result(), report.baseline, report.comparison.measured, "reruns")
    assert expected.decode_speedup == report.comparison.decode_speedup
    shown = dialog.values["measured"].text()
    assert shown.startswith(format_ratio(report.comparison.decode_speedup))
    assert "no comparison yet" not in dialog.values["plain_cost"].text()
    assert not dialog.run_comparison.isVisible()
    dialog.close()
    qtbot.mouseClick(answer.why_button, _left())  # and opened again later, it still knows
    assert answer.why_dialog.values["measured"].text() == shown


def test_legends_sit_outside_the_data_and_no_label_covers_a_curve(qtbot):
    """Every chart's legend is laid out below its axis, not over the plotted area; the what-if
    chart names its lines in the legend instead of writing on them."""
    import pyqtgraph as pg

    from app.ui.compare import charts

    spec, base = _speculative(), _baseline()
    dialog = ExplainDialog(spec, base)
    qtbot.addWidget(dialog)
    dialog.resize(900, 700)
    dialog.show()
    sweep = charts.SweepChart(explain(spec, base))
    qtbot.addWidget(sweep)
    sweep.set_points([(0.7, 1.3, "prompt lookup, k = 2"), (0.9, 1.8, "draft model, k = 4")])
    sweep.resize(700, 500)
    sweep.show()
    qtbot.waitExposed(dialog)
    qtbot.waitExposed(sweep)
    for index in range(dialog.tabs.count()):
        dialog.tabs.setCurrentIndex(index)
        qtbot.wait(1)  # let the tab lay out (no timing is asserted)
    plots = [
        (dialog.acceptance_charts.by_position, dialog.acceptance_charts.legend),
        (dialog.timeline_chart, dialog.timeline_chart.legend),
        (dialog.what_if_chart, dialog.what_if_chart.legend),
        (sweep, sweep.legend),
    ]
    for plot, legend in plots:
        item = plot.getPlotItem()
        assert legend.items, type(plot).__name__  # something is named
        data_area = item.vb.sceneBoundingRect()
        assert not legend.sceneBoundingRect().intersects(data_area), type(plot).__name__
        texts = [child for child in item.vb.addedItems if isinstance(child, pg.TextItem)]
        lines = [child for child in item.vb.addedItems if isinstance(child, pg.InfiniteLine)]
        assert all(line.label is None for line in lines if hasattr(line, "label")), type(plot).__name__
        if isinstance(plot, charts.WhatIfChart):
            assert texts == [], type(plot).__name__  # names are in the legend
    names = [label.text for _, label in sweep.legend.items]
    assert "prompt lookup, k = 2" in names and "draft model, k = 4" in names


def test_the_stats_line_names_drafts_accepted_with_the_runs_own_number(qtbot):
    """One name per definition: accepted ÷ proposed is "drafts accepted" under an answer, as in
    Compare and Why; "acceptance" alone (α's word) is not used for it."""
    from app.ui.common.formatting import stats_line

    stats = RunStats(new_tokens=8, target_passes=4, proposed=8, accepted=6, prefill_s=0.1, decode_s=0.3)
    line = stats_line(stats, speculative=True)
    assert "drafts accepted 75%" in line
    assert "acceptance" not in line
    assert f"{format_tokens(stats.tokens_per_pass)} tokens per target pass" in line
