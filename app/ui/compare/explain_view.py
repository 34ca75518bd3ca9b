"""The "Why?" panel: why an answer was faster or slower than plain decoding.

It only presents ``app.engine.analysis.explanation`` (the numbers, the sentence, the chart data); the
charts module, and with it the plotting library, is imported when the panel is built, so
starting the app does not pay for it. Open it from an answer (its run alone: the plain pass
cost then comes from the answer's own plain passes, if any) or from a comparison (both runs)::

    ExplainDialog(speculative, baseline, parent).show()
"""

from __future__ import annotations

from typing import Any

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
    MeasuredOn,
    MeasuredSpeedup,
    explain,
    summary_sentence,
)
from app.engine.events import RunResult
from app.ui.common.engine_words import server_words
from app.ui.common.formatting import decimal, integer, localized_numbers, percent, ratio

NONE = "—"


def _percent(value: float | None) -> str:
    return NONE if value is None else percent(value)


def _ratio(value: float | None) -> str:
    return NONE if value is None else ratio(value)


class ExplainDialog(QDialog):
    comparison_requested = Signal()  # "Run comparison": the window reruns the answer without speculation

    def __init__(
        self,
        speculative: RunResult,
        baseline: RunResult | None = None,
        parent: QWidget | None = None,
        measured: MeasuredSpeedup | None = None,
        measured_on: MeasuredOn = "these_runs",
        server_figures: Any = None,
    ) -> None:
        """``measured``: the comparison's measured speed-up (``Comparison.measured``), so this
        panel shows Compare's figure; ``measured_on`` "reruns" when that comparison reran the
        answer explained here (opened on the answer) rather than being it (opened from Compare).
        ``server_figures``: what the server said of ``speculative`` (``ServerFigures``, from a
        comparison against servers), shown beside the figures read from its stream."""
        super().__init__(parent)
        self.setWindowTitle(self.tr("Why was it faster or slower?"))
        self.explanation = explain(speculative, baseline, measured, measured_on)
        self.has_baseline = baseline is not None
        made_by = speculative.made_by
        self.server = made_by.server if made_by is not None else None  # the server that made it
        self.server_figures = server_figures
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
                "draft_pass",
                self.tr("Cost of a draft model's pass (× a plain pass; lookup's drafts cost none)"),
                _ratio(e.draft_pass_ratio),
            ),
            (
                "verify_cost",
                self.tr("Cost of a pass over {0} tokens, v({1}) (× a plain pass)").format(k + 1, k),
                _ratio(e.verify_cost_ratio),
            ),
            ("predicted", self.tr("Predicted decode speed-up"), _ratio(e.predicted_decode_speedup)),
            (
                "chooser_predicted",
                self.tr("Decode speed-up auto k predicted when it chose (its α, its measured costs)"),
                _ratio(e.chooser_predicted),
            ),
            ("measured", self._measured_label(), self._measured_value(e.decode_speedup)),
            (
                "whole_run",
                self.tr("Whole-run speed-up, measured (prefill included)"),
                self._measured_value(e.whole_run_speedup),
            ),
            (
                "ceiling",
                self.tr("Most a decode speed-up of these passes can be (tokens per pass)"),
                _ratio(e.measured.ceiling if e.measured is not None else None),
            ),
            ("plain_cost", self.tr("Cost of a plain pass"), self._plain_cost_note()),
        ]
        if self.server:
            rows += self._server_rows()
        form = QFormLayout()
        for key, label, value in rows:
            shown = QLabel(value, self)
            shown.setWordWrap(True)
            shown.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            self.values[key] = shown
            form.addRow(label, shown)
        return form

    def _server_rows(self) -> list[tuple[str, str, str]]:
        """Where the figures come from on a server, and which it does not give."""
        rows = [
            ("server", self.tr("Made on the server"), server_words(self.server or "")),
            (
                "server_not_given",
                self.tr("Not reported by the server"),
                self.tr(
                    "what each pass cost (drafting and verifying): so no c, v, predicted speed-up or "
                    "what-if curves are shown. Acceptance and tokens per pass are the server's counts."
                ),
            ),
        ]
        figures = self.server_figures
        if figures is not None:
            drafted, accepted = figures.drafted, figures.accepted
            drafts = (
                self.tr("not reported")
                if drafted is None or accepted is None
                else self.tr("{0} of {1} ({2})").format(
                    integer(accepted), integer(drafted), percent(accepted / drafted) if drafted else "—"
                )
            )
            speed = figures.decode_tokens_per_s
            rows += [
                ("server_drafts", self.tr("Drafts accepted, of proposed (the server's count)"), drafts),
                (
                    "server_speed",
                    self.tr("Decode tokens/s on the server's own clock"),
                    decimal(speed, 1) if speed else self.tr("not reported"),
                ),
            ]
        return rows
    def _measured_label(self) -> str:
        if self.explanation.measured_on == "reruns":
            return self.tr(
                "Decode speed-up, measured by Compare (its fresh reruns of this answer: with ÷ without "
                "speculation; prefill left out)"
            )
        return self.tr("Decode speed-up, measured (this run ÷ the run without speculation; prefill left out)")

    def _measured_value(self, value: float | None) -> str:
        """The measured figure, or why it is not a result (the load changed, above the ceiling)."""
        m = self.explanation.measured
        if m is None or m.problem is None or value is None:
            return _ratio(value)
        if m.problem == "load_changed":
            return self.tr("{0}: not a result, the machine's load changed between the runs").format(_ratio(value))
        return self.tr("{0}: not a result, above the {1} these passes allow").format(
            _ratio(value), _ratio(m.ceiling)
        )

    def _plain_cost_note(self) -> str:
        e = self.explanation
        if e.plain_cost_source == "server":
            return self.tr("not reported: a server does not say what its passes cost")
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
        if self.server:
            self.what_if_chart.setTitle(self.tr("What if: needs pass costs, which the server does not report"))
            self.timeline_chart.setTitle(
                self.tr("Timeline: SpecChat's clock between the server's stream events (not its passes)")
            )
        elif e.alpha is None:
            self.what_if_chart.setTitle(self.tr("What if: this run checked no drafts"))
        elif not e.what_if:
            self.what_if_chart.setTitle(self.tr("What if: needs the cost of a plain pass (run a comparison)"))
