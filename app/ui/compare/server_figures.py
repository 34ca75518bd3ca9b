"""Compare against servers: what each endpoint said about its answer, beside what SpecChat's own
clock measured, and the warnings when the "plain" endpoint drafts or the "speculative" one
does not (``app.remote.comparison``'s checks, translated here)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtWidgets import (
    QGroupBox,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.engine.analysis.compare import Phrase
from app.engine.analysis.explanation import decode_tokens_per_s
from app.ui.common.engine_words import server_words
from app.ui.common.formatting import decimal, integer, percent

WARNING_COLOUR = "#d68910"


def is_server_report(report: Any) -> bool:
    """A comparison of two server endpoints (``ServerComparisonReport``), not of local runs."""
    return hasattr(report, "figures") and hasattr(report, "checks") and hasattr(report, "servers")


def check_lines(report: Any) -> list[str]:
    """The comparison's checks of which endpoint really drafted, in the interface's language."""
    return [_say(p) for p in report.checks]


def _say(phrase: Phrase) -> str:
    return phrase.render(lambda text: QCoreApplication.translate("CompareDialog", text))  # i18n: noop


class ServerFiguresBox(QGroupBox):
    """Per endpoint: the server, time to first token, decode speed on the client's clock and on
    the server's own, and the drafts the server counted; then the checks, as warnings."""

    def __init__(self, report: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTitle(self.tr("What the servers reported (the speculative endpoint, then the plain one)"))
        self.report = report
        runs = (report.speculative, report.baseline)
        figures = tuple(report.figures) + (None,) * (2 - len(report.figures))
        servers = [str(s.get("description", "")) for s in report.servers] + ["", ""]
        rows: list[tuple[str, Callable[[int], str]]] = [
            (self.tr("Server"), lambda i: server_words(servers[i]) or "—"),
            (
                self.tr("Time to first token (SpecChat's clock)"),
                lambda i: self.tr("{0} s").format(decimal(runs[i].stats.time_to_first_token_s, 2)),
            ),
            (self.tr("Decode tokens/s (SpecChat's clock)"), lambda i: _speed(decode_tokens_per_s(runs[i]))),
            (
                self.tr("Decode tokens/s (the server's clock, predicted_ms)"),
                lambda i: _speed(getattr(figures[i], "decode_tokens_per_s", None)),
            ),
            (self.tr("Drafts accepted, of proposed (the server's count)"), lambda i: self._drafts(figures[i])),
            (
                self.tr("Speculative passes (the server's count)"),
                lambda i: _count(getattr(figures[i], "spec_steps", None)),
            ),
            (self.tr("Requests timed (A B B A)"), lambda i: integer(self._rounds(i))),
        ]
        self.table = QTableWidget(len(rows), 2, self)
        self.table.setHorizontalHeaderLabels([self.tr("Speculative endpoint"), self.tr("Plain endpoint")])
        self.table.setVerticalHeaderLabels([name for name, _ in rows])
        for row, (_, value) in enumerate(rows):
            for column in (0, 1):
                item = QTableWidgetItem(value(column))
                item.setFlags(Qt.ItemFlag.ItemIsEnabled)
                self.table.setItem(row, column, item)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        rows_header = self.table.verticalHeader()
        rows_header.setDefaultSectionSize(self.fontMetrics().height() + 8)
        self.table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        height = rows_header.defaultSectionSize() * len(rows) + self.table.horizontalHeader().sizeHint().height()
        self.table.setFixedHeight(height + 2 * self.table.frameWidth() + 2)
        self.warnings = QLabel("\n".join(check_lines(report)), self)
        self.warnings.setWordWrap(True)
        self.warnings.setStyleSheet(f"color: {WARNING_COLOUR}; font-weight: bold;")
        self.warnings.setVisible(bool(self.warnings.text()))
        layout = QVBoxLayout(self)
        layout.addWidget(self.warnings)
        layout.addWidget(self.table)

    def cell(self, row_name: str, column: int) -> str:
        """The text a person reads in the row named ``row_name`` (for tests and tools)."""
        for row in range(self.table.rowCount()):
            header = self.table.verticalHeaderItem(row)
            if header is not None and header.text() == row_name:
                item = self.table.item(row, column)
                return item.text() if item is not None else ""
        raise KeyError(row_name)

    def _drafts(self, figures: Any) -> str:
        drafted, accepted = getattr(figures, "drafted", None), getattr(figures, "accepted", None)
        if drafted is None or accepted is None:
            return self.tr("not reported")
        if drafted == 0:
            return self.tr("none drafted")
        return self.tr("{0} of {1} ({2})").format(integer(accepted), integer(drafted), percent(accepted / drafted))

    def _rounds(self, column: int) -> int:
        arm = ("speculative", "baseline")[column]
        return sum(1 for r in self.report.rounds if r.arm == arm)


def _speed(value: float | None) -> str:
    return decimal(value, 1) if value else QCoreApplication.translate("ServerFiguresBox", "not reported")


def _count(value: int | None) -> str:
    return integer(value) if value is not None else QCoreApplication.translate("ServerFiguresBox", "not reported")
