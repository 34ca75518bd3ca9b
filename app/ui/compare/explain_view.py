"""The "Why?" panel: why an answer was faster or slower than plain decoding.

It only presents ``app.engine.analysis.explanation`` (the numbers, the sentence, the chart data); the
charts module, and with it the plotting library, is imported when the panel is built, so
starting the app does not pay for it. Open it from an answer (its run alone: the plain pass
cost then comes from the answer's own plain passes, if any) or from a comparison (both runs)::

    ExplainDialog(speculative, baseline, parent).show()
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, Qt, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.engine.analysis.explanation import (
    Explanation,
    explain,
    summary_sentence,
)
from app.engine.events import RunResult
from app.ui.common.formatting import decimal, localized_numbers, percent, ratio

NONE = "—"


def _percent(value: float | None) -> str:
    return NONE if value is None else percent(value)


def _ratio(value: float | None) -> str:
    return NONE if value is None else ratio(value)


class ExplainDialog(QDialog):
    comparison_requested = Signal()  # "Run comparison": the window reruns the answer without speculation

    def __init__(
        self, speculative: RunResult, baseline: RunResult | None = None, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(self.tr("Why was it faster or slower?"))
        self.explanation = explain(speculative, baseline)
        self.has_baseline = baseline is not None
        sentence = summary_sentence(
            self.explanation, lambda text: QCoreApplication.translate("Explanation", text)  # i18n: noop
        )
        self.summary = QLabel(localized_numbers(sentence), self)
        self.summary.setWordWrap(True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.summary.setStyleSheet("font-size: 110%;")
        self.values: dict[str, QLabel] = {}
        self.run_comparison = QPushButton(self.tr("Run comparison"), self)
        self.run_comparison.setToolTip(
            self.tr("Run this answer again without speculation, to measure the real speed-up")
        )
        self.run_comparison.clicked.connect(self.comparison_requested)
        self.tabs = QTabWidget(self)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        buttons.addButton(self.run_comparison, QDialogButtonBox.ButtonRole.ActionRole)
        self.run_comparison.setVisible(not self.has_baseline)  # after addButton, which shows it
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addLayout(self._numbers())
        layout.addWidget(self.tabs, 1)
        layout.addWidget(buttons)
        self._add_charts()
        self.resize(960, 720)

    def _numbers(self) -> QFormLayout:
        e = self.explanation
        k = e.k_used
        rows = [
            (
                "alpha",
                self.tr("Acceptance α (per position the target judged)"),
                _percent(e.alpha),
            ),
            (
                "accepted_share",
                self.tr("Drafts accepted, of all proposed"),
                _percent(e.drafts_accepted_share),
            ),
            ("tokens_per_pass", self.tr("Tokens per target pass"), decimal(e.tokens_per_pass, 2)),
            (
                "from_earlier",
                self.tr("Accepted drafts from an earlier conversation"),
                f"{e.accepted_from_earlier} / {e.accepted_drafts}",
            ),
            (
                "not_drafted",
                self.tr("Passes where auto k chose not to draft"),
                "—" if e.not_drafted is None else f"{e.not_drafted.passes} / {e.not_drafted.of}",
            ),
            (
                "draft_cost",
                self.tr("Cost of drafting one token, c (× a plain pass)"),
                _ratio(e.draft_cost_ratio),
            ),
            (
                "verify_cost",
                self.tr("Cost of a pass over {0} tokens, v({1}) (× a plain pass)").format(k + 1, k),
                _ratio(e.verify_cost_ratio),
            ),
            ("predicted", self.tr("Predicted decode speed-up"), _ratio(e.predicted_decode_speedup)),
            ("measured", self.tr("Decode speed-up, measured (prefill left out)"), _ratio(e.decode_speedup)),
            (
                "whole_run",
                self.tr("Whole-run speed-up, measured (prefill included)"),
                _ratio(e.whole_run_speedup),
            ),
            ("plain_cost", self.tr("Cost of a plain pass"), self._plain_cost_note()),
        ]
        form = QFormLayout()
        for key, label, value in rows:
            shown = QLabel(value, self)
            shown.setWordWrap(True)
            shown.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.values[key] = shown
            form.addRow(label, shown)
        return form

    def _plain_cost_note(self) -> str:
        e = self.explanation
        ms = NONE if e.plain_pass_s is None else f"{e.plain_pass_s * 1000:.0f}"
        if e.plain_cost_source == "baseline":
            return self.tr("{0} ms: the mean of the plain run's passes").format(ms)
        if e.plain_cost_source == "own_plain_steps" and self.has_baseline:
            return self.tr(
                "{0} ms: the mean of this run's own passes that checked no draft (timed under the same "
                "load as its other passes)"
            ).format(ms)
        if e.plain_cost_source == "own_plain_steps":
            return self.tr(
                "{0} ms, from this answer's own passes that checked no draft (no comparison yet)"
            ).format(ms)
        return self.tr("unknown: this answer has no plain pass; run a comparison to measure it")

    def _add_charts(self) -> None:
        from . import charts  # the plotting library loads here, when the panel opens

        e: Explanation = self.explanation
        self.acceptance_charts = charts.AcceptanceCharts(e, self)
        self.timeline_chart = charts.TimelineChart(e, self)
        self.what_if_chart = charts.WhatIfChart(e, self)
        self.tabs.addTab(self.acceptance_charts, self.tr("Acceptance"))
        self.tabs.addTab(self.timeline_chart, self.tr("Timeline"))
        self.tabs.addTab(self.what_if_chart, self.tr("What if"))
        if e.alpha is None:
            self.what_if_chart.setTitle(self.tr("What if: this run checked no drafts"))
        elif not e.what_if:
            self.what_if_chart.setTitle(self.tr("What if: needs the cost of a plain pass (run a comparison)"))
