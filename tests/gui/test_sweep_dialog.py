"""The drafter experiment in the window: "Try drafters…" on an answer runs the plain
reference and each drafter at each k through the worker, fills the table as arms finish,
draws each arm over the what-if curves, and can be cancelled, leaving the chat usable."""

from __future__ import annotations

import time

from gui_helpers import ANSWER_TIMEOUT_MS, send_and_wait, tiny_settings

from app.engine.analysis.explanation import explain, format_percent, format_ratio
from app.engine.config import DRAFT_MODEL, LOOKUP


def test_the_experiment_runs_two_drafters_and_fills_its_table(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models, max_new_tokens=12))
    send_and_wait(qtbot, window)
    answer = window.chat_view.answers[-1]
    assert answer.sweep_button.isEnabled()
    qtbot.mouseClick(answer.sweep_button, qtbot_button())
    dialog = window.sweep_dialog
    assert dialog is not None and dialog.model_box.isEnabled() and dialog.lookup_box.isChecked()
    dialog.ks_edit.setText("1,3")
    rows: list[object] = []
    window.worker.sweep_row.connect(lambda _run, row: rows.append(row))
    with qtbot.waitSignal(window.worker.sweep_done, timeout=ANSWER_TIMEOUT_MS * 2) as done:
        qtbot.mouseClick(dialog.run_button, qtbot_button())
        assert window.controller.busy and not window.send_button.text() == ""
    assert done.args[1:] == ["", False]
    qtbot.waitUntil(lambda: dialog.table.rowCount() == 5)
    labels = [dialog.table.item(r, 0).text() for r in range(5)]
    assert labels == [
        "no speculation",
        "prompt lookup, k = 1",
        "prompt lookup, k = 3",
        "draft model, k = 1",
        "draft model, k = 3",
    ]
    assert [(row.arm.drafter, row.arm.k) for row in rows] == [
        ("none", None), (LOOKUP, 1), (LOOKUP, 3), (DRAFT_MODEL, 1), (DRAFT_MODEL, 3)
    ]
    for r, row in enumerate(rows):  # what the table shows is the engine's row
        assert dialog.table.item(r, 2).text() == format_ratio(row.decode_speedup)
        assert dialog.table.item(r, 3).text() == format_ratio(row.whole_run_speedup)
        assert ("same" in dialog.table.item(r, 7).text()) == row.identical
        if r:  # the table's α is the explanation's, the chart's x
            alpha = explain(row.run, rows[0].run).alpha
            assert dialog.table.item(r, 4).text() == ("—" if alpha is None else format_percent(alpha))
    assert all(row.identical for row in rows)  # greedy: every arm gives the plain answer
    assert dialog.chart is not None and len(dialog.chart.arms.data) == 4  # the four drafting arms
    # the points on the what-if curves are the table's decode speed-up (the curves' quantity)
    ys = sorted(round(float(y), 9) for y in dialog.chart.arms.data["y"])
    assert ys == sorted(round(row.decode_speedup, 9) for row in rows[1:])
    assert not window.controller.busy and dialog.run_button.isEnabled()


def test_a_cancelled_experiment_leaves_the_app_usable(open_window, qtbot, tiny_models, monkeypatch):
    import app.engine.session as session

    decode = session.decode

    def paced(*args, **kwargs):  # each step takes 5 ms at least: the cancel lands mid-experiment
        for step in decode(*args, **kwargs):
            time.sleep(0.005)
            yield step

    monkeypatch.setattr(session, "decode", paced)
    window = open_window(tiny_settings(tiny_models, max_new_tokens=40))
    send_and_wait(qtbot, window)
    dialog = window.open_sweep(window.chat_view.answers[-1].message)
    dialog.ks_edit.setText("1,2,3,4")
    with qtbot.waitSignal(window.worker.sweep_done, timeout=ANSWER_TIMEOUT_MS * 2) as done:
        with qtbot.waitSignal(window.worker.sweep_row, timeout=ANSWER_TIMEOUT_MS):
            qtbot.mouseClick(dialog.run_button, qtbot_button())
        qtbot.mouseClick(dialog.cancel_button, qtbot_button())
    assert done.args[2] is True  # cancelled
    assert dialog.table.rowCount() < 9 and "Cancelled" in dialog.status.text()
    qtbot.waitUntil(lambda: not window.controller.busy)
    result = send_and_wait(qtbot, window, "And again?")  # the chat still answers
    assert result.stop_reason != "cancelled" and result.stats.new_tokens > 0


def test_bad_k_values_are_refused_in_the_dialog_without_running(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models, draft="lookup", max_new_tokens=8))
    send_and_wait(qtbot, window)
    dialog = window.open_sweep(window.chat_view.answers[-1].message)
    assert not dialog.model_box.isEnabled()  # no draft model loaded: only prompt lookup
    dialog.ks_edit.setText("0, two")
    qtbot.mouseClick(dialog.run_button, qtbot_button())
    assert not window.controller.busy and "1 to 64" in dialog.status.text()


def qtbot_button():  # type: ignore[no-untyped-def]
    from PySide6.QtCore import Qt

    return Qt.MouseButton.LeftButton


def test_the_result_is_readable_at_the_default_size(open_window, qtbot, tiny_models):
    """At the dialog's first size, after a full experiment: the chart has room under the table,
    its legend beside the data, its y title uncut, Close below everything, the Answer column on
    screen and the k field wide enough for its list."""
    import os

    from app.ui.experiment.sweep_view import DEFAULT_SIZE

    window = open_window(tiny_settings(tiny_models, max_new_tokens=12))
    send_and_wait(qtbot, window)
    dialog = window.open_sweep(window.chat_view.answers[-1].message)
    qtbot.waitExposed(dialog)
    assert (dialog.width(), dialog.height()) == DEFAULT_SIZE
    assert dialog.ks_edit.width() >= dialog.ks_edit.fontMetrics().horizontalAdvance("1,2,4,8") + 8
    with qtbot.waitSignal(window.worker.sweep_done, timeout=ANSWER_TIMEOUT_MS * 4):
        qtbot.mouseClick(dialog.run_button, qtbot_button())
    qtbot.waitUntil(lambda: dialog.table.rowCount() == 9 and dialog.chart is not None)
    qtbot.wait(50)  # a paint for the grab below (layout is already done: waitUntil ran the loop)
    if os.environ.get("SPECCHAT_SHOTS"):
        dialog.grab().save(os.path.join(os.environ["SPECCHAT_SHOTS"], "sweep_default.png"))
    chart = dialog.chart
    assert chart is not None
    view = chart.getPlotItem().vb
    data_area = view.sceneBoundingRect()
    assert data_area.height() >= 250, data_area  # not squeezed under the legend
    assert not chart.legend.sceneBoundingRect().intersects(data_area.adjusted(1, 1, -1, -1))
    left = chart.getAxis("left")
    assert left.label.sceneBoundingRect().height() <= left.sceneBoundingRect().height()  # the title fits
    close = dialog.buttons.mapTo(dialog, dialog.buttons.rect().topLeft()).y()
    chart_bottom = chart.mapTo(dialog, chart.rect().bottomLeft()).y()
    table_bottom = dialog.table.mapTo(dialog, dialog.table.rect().bottomLeft()).y()
    assert close > chart_bottom > table_bottom  # Close at the bottom, the chart under the table
    header = dialog.table.horizontalHeader()
    answer_end = header.sectionViewportPosition(7) + header.sectionSize(7)
    assert answer_end <= dialog.table.viewport().width()  # the Answer column is on screen
