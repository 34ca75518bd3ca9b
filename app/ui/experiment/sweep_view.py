"""The drafter experiment ("Try drafters…"): one answer's conversation rerun with no
speculation, prompt lookup and the draft model at a few k, in a table and on the what-if chart.

The runs go through the worker (the engine thread); this dialog only asks and presents. The
chart (pyqtgraph) is imported when the first row arrives, so opening the app stays light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.engine.analysis.explanation import Explanation, explain
from app.engine.config import DRAFT_MODEL, LOOKUP, SUFFIX
from app.ui.common.formatting import decimal, percent

if TYPE_CHECKING:  # pyqtgraph loads with the first chart, not with the dialog
    from app.ui.compare.charts import SweepChart
from app.engine.analysis.sweep import NONE, SweepRow

DEFAULT_KS = "1,2,4,8"
DEFAULT_SIZE = (1000, 760)  # the dialog's first size: the table's columns and a readable chart


def parse_ks(text: str) -> list[int | None] | None:
    """``"1, 2, auto"`` → [1, 2, None]; None when the text is not such a list of k in 1..64."""
    values: list[int | None] = []
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        if item == "auto":
            values.append(None)
        elif item.isdigit() and 1 <= int(item) <= 64:
            values.append(int(item))
        else:
            return None
    return values or None


class SweepDialog(QDialog):
    """Asks for drafters and k values, shows one table row per finished arm and each arm's
    point (acceptance, speed-up) over the what-if curves of the first drafting arm."""

    run_requested = Signal(list, list)  # drafter choices (LOOKUP / SUFFIX / DRAFT_MODEL), k values (None: auto)
    cancel_requested = Signal()

    COLUMNS = (
        "drafter",
        "tokens/s",
        "decode_speedup",
        "whole_run_speedup",
        "alpha",
        "drafts_accepted_share",
        "tokens_per_pass",
        "answer",
    )

    def __init__(self, available: list[str], draft_name: str | None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(self.tr("Try drafters"))
        self.rows: list[SweepRow] = []
        self.explanations: list[Explanation | None] = []
        self.chart: SweepChart | None = None
        self._chart_base: Explanation | None = None
        intro = QLabel(
            self.tr(
                "Answers the same conversation again without speculation, then with each drafter at "
                "each k, every run from fresh caches. The plain run is the reference for speed and "
                "for “same answer”."
            )
        )
        intro.setWordWrap(True)
        self.lookup_box = QCheckBox(self.tr("Prompt lookup"))
        self.lookup_box.setChecked(LOOKUP in available)
        self.lookup_box.setEnabled(LOOKUP in available)
        self.suffix_box = QCheckBox(self.tr("Earlier conversations"))
        self.suffix_box.setToolTip(
            self.tr("Prompt lookup plus what followed the same words in earlier conversations")
        )
        self.suffix_box.setChecked(False)
        self.suffix_box.setEnabled(SUFFIX in available)
        label = (
            self.tr("Draft model: {0}").format(draft_name)
            if draft_name
            else self.tr("Draft model (none loaded)")
        )
        self.model_box = QCheckBox(label)
        self.model_box.setChecked(DRAFT_MODEL in available)
        self.model_box.setEnabled(DRAFT_MODEL in available)
        self.ks_edit = QLineEdit(DEFAULT_KS)
        # wide enough for "1,2,4,8,auto" with room to spare, in any font
        room = self.ks_edit.fontMetrics().horizontalAdvance("1,2,4,8,auto") + 24
        self.ks_edit.setMinimumWidth(room)
        self.ks_edit.setMaximumWidth(2 * room)
        self.ks_edit.setToolTip(
            self.tr("Draft lengths to try, separated by commas; “auto” lets SpecChat choose k each step.")
        )
        self.run_button = QPushButton(self.tr("Run"))
        self.cancel_button = QPushButton(self.tr("Cancel"))
        self.cancel_button.setEnabled(False)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.table = QTableWidget(0, len(self.COLUMNS))
        self.table.setHorizontalHeaderLabels(
            [
                self.tr("Drafter"),
                self.tr("Tokens/s"),
                self.tr("Decode speed-up"),
                self.tr("Whole-run speed-up"),
                self.tr("Acceptance α"),
                self.tr("Drafts accepted"),
                self.tr("Tokens per target pass"),
                self.tr("Answer"),
            ]
        )
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)

        controls = QHBoxLayout()
        for widget in (
            self.lookup_box,
            self.suffix_box,
            self.model_box,
            QLabel(self.tr("k:")),
            self.ks_edit,
            self.run_button,
            self.cancel_button,
        ):
            controls.addWidget(widget)
        controls.addStretch(1)  # the k field stays by its label
        # the table above, the chart below it (most of the height); Close always at the bottom
        self.results = QSplitter(Qt.Orientation.Vertical)
        self.results.addWidget(self.table)
        self.chart_placeholder = QLabel(self.tr("The chart appears when the first drafting run ends."))
        self.chart_placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.results.addWidget(self.chart_placeholder)
        self.results.setStretchFactor(0, 2)
        self.results.setStretchFactor(1, 5)
        self._layout = QVBoxLayout(self)
        self._layout.addWidget(intro)
        self._layout.addLayout(controls)
        self._layout.addWidget(self.status)
        self._layout.addWidget(self.results, 1)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.buttons.setToolTip(self.tr("Close the experiment (a run in progress stops)"))
        self.buttons.rejected.connect(self.reject)  # finished: the window cancels a running sweep
        self._layout.addWidget(self.buttons)
        self.run_button.clicked.connect(self._on_run)
        self.cancel_button.clicked.connect(self._on_cancel)
        self.resize(*DEFAULT_SIZE)

    # ---- what the window calls ----------------------------------------------------------
    def add_row(self, row: SweepRow) -> None:
        """A finished arm: a table row, and its point on the chart."""
        reference = self.rows[0].run if self.rows else None
        self.rows.append(row)
        explanation = explain(row.run, reference) if row.arm.drafter != NONE and reference else None
        self.explanations.append(explanation)
        r = self.table.rowCount()
        self.table.insertRow(r)
        stats = row.run.stats
        same = self.tr("same") if row.identical else self.tr("differs from token {0}").format(row.first_difference)
        alpha = explanation.alpha if explanation is not None else None
        accepted = "—" if row.arm.drafter == NONE else percent(stats.drafts_accepted_share)
        cells = (
            self._arm_label(row),
            decimal(stats.tokens_per_s, 1),
            decimal(row.decode_speedup, 2) + "×",  # the chart's y, the Why panel's measured speed-up
            decimal(row.whole_run_speedup, 2) + "×",
            "—" if alpha is None else percent(alpha),  # the Why panel's α, the chart's x
            accepted,
            decimal(stats.tokens_per_pass, 2),
            same,
        )
        for c, text in enumerate(cells):
            item = QTableWidgetItem(text)
            if 0 < c < len(cells) - 1:
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.table.setItem(r, c, item)
        self.status.setText(self.tr("{0} of {1} runs done").format(len(self.rows), self._planned))
        self._plot()

    def set_running(self, running: bool, planned: int = 0) -> None:
        if running:
            self.rows, self.explanations = [], []
            self.table.setRowCount(0)
            self._planned = planned
            self.status.setText(self.tr("Running the plain reference…"))
        self.run_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)

    def finish(self, error: str = "", cancelled: bool = False) -> None:
        self.set_running(False)
        if error:
            self.status.setText(self.tr("The experiment stopped: {0}").format(error))
        elif cancelled:
            self.status.setText(
                self.tr("Cancelled after {0} of {1} runs.").format(len(self.rows), self._planned)
            )
        else:
            best = max(self.rows, key=lambda row: row.decode_speedup, default=None)
            if best is not None:
                self.status.setText(
                    self.tr("Done. Fastest: {0} (decode speed-up {1}).").format(
                        self._arm_label(best), decimal(best.decode_speedup, 2) + "×"
                    )
                )

    # ---- private --------------------------------------------------------------------------
    _planned = 0

    def _arm_label(self, row: SweepRow) -> str:
        names = {
            NONE: self.tr("no speculation"),
            LOOKUP: self.tr("prompt lookup"),
            SUFFIX: self.tr("earlier conversations"),
            DRAFT_MODEL: self.tr("draft model"),
        }
        name = names.get(row.arm.drafter, row.arm.drafter)
        if row.arm.drafter == NONE:
            return name
        k = self.tr("auto") if row.arm.k is None else str(row.arm.k)
        return self.tr("{0}, k = {1}").format(name, k)

    def selected(self) -> tuple[list[str], list[int | None]] | None:
        drafters = [
            name
            for name, box in ((LOOKUP, self.lookup_box), (SUFFIX, self.suffix_box), (DRAFT_MODEL, self.model_box))
            if box.isChecked() and box.isEnabled()
        ]
        ks = parse_ks(self.ks_edit.text())
        if not drafters:
            self.status.setText(self.tr("Choose at least one drafter."))
            return None
        if ks is None:
            self.status.setText(
                self.tr("k values: whole numbers from 1 to 64 or “auto”, separated by commas.")
            )
            return None
        return drafters, ks

    def _on_run(self) -> None:
        choice = self.selected()
        if choice is not None:
            drafters, ks = choice
            self.set_running(True, 1 + len(drafters) * len(dict.fromkeys(ks)))
            self.run_requested.emit(drafters, ks)

    def _on_cancel(self) -> None:
        self.cancel_button.setEnabled(False)
        self.status.setText(self.tr("Cancelling…"))
        self.cancel_requested.emit()

    def _plot(self) -> None:
        """Every drafting arm's measured point, over the what-if curves of the arm whose costs
        cover the most draft lengths (a k = 1 run alone measures no longer pass)."""
        measured = [(e, row) for e, row in zip(self.explanations, self.rows) if e is not None]
        if not measured:
            return
        from app.ui.compare.charts import SweepChart  # pyqtgraph: only once there is something to draw

        base = max((e for e, _ in measured), key=lambda e: len(e.what_if))
        if self.chart is None or base is not self._chart_base:
            old = self.chart or self.chart_placeholder
            self.chart = SweepChart(base)
            self._chart_base = base
            self.results.replaceWidget(1, self.chart)  # under the table, above Close
            old.hide()
            old.deleteLater()
            total = sum(self.results.sizes())
            self.results.setSizes([total * 2 // 7, total - total * 2 // 7])
        self.chart.set_points(
            [
                (e.alpha, row.decode_speedup, self._arm_label(row))
                for e, row in measured
                if e.alpha is not None
            ]
        )
