"""Side by side: the answer with speculation (highlighted) and without, their speed, a
character-level diff, and one big line that answers "is it faster, and is it the same?"."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtGui import QColor, QTextCharFormat, QTextCursor
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QGroupBox,
    QHeaderView,
    QLabel,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from app.engine.compare import Comparison
from app.engine.events import RunResult

from .conversation import TokenRecord
from .formatting import how_made, wall_seconds
from .token_style import diff_format
from .token_view import LINE_SEPARATOR, TokenTextView


def speed_phrase(speedup: float) -> str:
    if speedup <= 0:
        return QCoreApplication.translate("CompareDialog", "speed unknown")
    if speedup >= 1.0:
        return QCoreApplication.translate("CompareDialog", "{0:.1f}× faster").format(speedup)
    return QCoreApplication.translate("CompareDialog", "{0:.1f}× slower").format(1.0 / speedup)


def verdict_line(comparison: Comparison) -> str:
    """The big line: "Identical answer · 1.8× faster"."""
    speed = speed_phrase(comparison.speedup)
    first = comparison.first_difference
    if comparison.identical or first is None:
        return QCoreApplication.translate("CompareDialog", "Identical answer · {0}").format(speed)
    if comparison.verdict == "sampling":
        return QCoreApplication.translate("CompareDialog", "Different sample · {0}").format(speed)
    return QCoreApplication.translate("CompareDialog", "Answers differ from token {0} · {1}").format(
        first.token_index, speed
    )


def verdict_sentence(comparison: Comparison) -> str:
    """What the verdict means, in plain words."""
    first = comparison.first_difference
    if comparison.identical or first is None:
        text = QCoreApplication.translate(
            "CompareDialog",
            "Both runs produced exactly the same tokens: speculation changed the speed, not the answer.",
        )
    else:
        where = QCoreApplication.translate(
            "CompareDialog", "They first differ at token {0} (character {1})"
        ).format(first.token_index, first.char_index)
        margin = (
            QCoreApplication.translate("CompareDialog", "unknown")
            if first.margin is None
            else f"{first.margin:.4f}"
        )
        if comparison.verdict == "near_tie":
            text = QCoreApplication.translate(
                "CompareDialog",
                "{0}, where the target's two best tokens were only {1} logits apart: a near-tie "
                "resolved differently by batched arithmetic — numerics, not a bug.",
            ).format(where, margin)
        elif comparison.verdict == "sampling":
            text = QCoreApplication.translate(
                "CompareDialog",
                "{0}. These answers were sampled without seed-invariant mode, so different text is "
                "expected; the distribution is the same.",
            ).format(where)
        else:
            text = QCoreApplication.translate(
                "CompareDialog",
                "{0}, where the target was confident (margin {1} logits). Greedy decoding should "
                "never diverge like this: this is a bug, please report it.",
            ).format(where, margin)
    if 0 < comparison.speedup < 1.0:
        text += " " + QCoreApplication.translate(
            "CompareDialog",
            "Speculation was slower here: the drafter's guesses were accepted too rarely to pay "
            "for drafting and verifying them.",
        )
    return text


def verdict_color(comparison: Comparison) -> str:
    return {"identical": "#27ae60", "near_tie": "#d68910", "sampling": "#2e86c1"}.get(
        comparison.verdict, "#c0392b"
    )


class CompareDialog(QDialog):
    def __init__(
        self,
        speculative: RunResult,
        speculative_records: list[TokenRecord],
        baseline: RunResult,
        comparison: Comparison,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(self.tr("Compare: with and without speculation"))
        self.comparison = comparison
        self.verdict = QLabel(verdict_line(comparison), self)
        font = self.verdict.font()
        font.setPointSizeF(font.pointSizeF() * 1.7)
        font.setBold(True)
        self.verdict.setFont(font)
        self.verdict.setStyleSheet(f"color: {verdict_color(comparison)};")
        self.explanation = QLabel(verdict_sentence(comparison), self)
        self.explanation.setWordWrap(True)

        self.speculative_view = TokenTextView(self)
        self.speculative_view.set_records(speculative_records)
        self.baseline_view = TokenTextView(self)
        self.baseline_view.set_records(
            TokenRecord(t.text, "target", -1, t.id, t.p_target, None, t.margin) for t in baseline.tokens
        )
        texts = QSplitter(Qt.Orientation.Horizontal, self)
        texts.addWidget(
            _boxed(self.tr("With speculation — {0}").format(speculative.drafter), self.speculative_view)
        )
        texts.addWidget(_boxed(self.tr("Without speculation — target only"), self.baseline_view))
        self._sync_scrolling()
        self._mark_first_difference()

        self.table = self._stats_table(speculative, baseline)
        self.diff_view = QTextEdit(self)
        self.diff_view.setReadOnly(True)
        self._render_diff(speculative.text, baseline.text)
        diff_box = _boxed(
            self.tr(
                "Character-level differences (struck through: only with speculation; underlined: only without)"
            ),
            self.diff_view,
        )
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        buttons.button(QDialogButtonBox.StandardButton.Close).setFocus()  # no caret in the texts

        layout = QVBoxLayout(self)
        layout.addWidget(self.verdict)
        layout.addWidget(self.explanation)
        layout.addWidget(texts, 3)
        layout.addWidget(self.table)
        layout.addWidget(diff_box, 1)
        layout.addWidget(buttons)
        self.resize(1000, 720)

    def _stats_table(self, speculative: RunResult, baseline: RunResult) -> QTableWidget:
        rows = [
            (self.tr("Wall time"), lambda r: self.tr("{0:.2f} s").format(wall_seconds(r.stats))),
            (self.tr("Tokens/s"), lambda r: f"{r.stats.tokens_per_s:.1f}"),
            (self.tr("New tokens"), lambda r: str(r.stats.new_tokens)),
            (self.tr("Target passes"), lambda r: str(r.stats.target_passes)),
            (self.tr("Tokens per target pass"), lambda r: f"{r.stats.tokens_per_pass:.2f}"),
            (
                self.tr("Draft acceptance"),
                lambda r: f"{r.stats.acceptance_rate:.0%}" if r.speculative else "—",
            ),
        ]
        table = QTableWidget(len(rows), 2, self)
        table.setHorizontalHeaderLabels(
            [how_made(speculative.speculative, speculative.drafter), how_made(False, "none")]
        )
        table.setVerticalHeaderLabels([name for name, _ in rows])
        for row, (_, value) in enumerate(rows):
            for column, run in enumerate((speculative, baseline)):
                item = QTableWidgetItem(value(run))
                item.setFlags(Qt.ItemFlag.ItemIsEnabled)
                table.setItem(row, column, item)
        header = table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        rows_header = table.verticalHeader()
        rows_header.setDefaultSectionSize(self.fontMetrics().height() + 8)
        table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        height = rows_header.defaultSectionSize() * len(rows) + header.sizeHint().height()
        table.setFixedHeight(height + 2 * table.frameWidth() + 2)
        return table

    def _render_diff(self, a: str, b: str) -> None:
        document = self.diff_view.document()
        document.clear()
        cursor = QTextCursor(document)
        palette = self.palette()
        if self.comparison.identical:
            cursor.insertText(self.tr("No differences."))
            return
        plain = QTextCharFormat()
        for op in self.comparison.diff:
            pieces = {
                "equal": [(a[op.a_start : op.a_end], plain)],
                "delete": [(a[op.a_start : op.a_end], diff_format("delete", palette))],
                "insert": [(b[op.b_start : op.b_end], diff_format("insert", palette))],
                "replace": [
                    (a[op.a_start : op.a_end], diff_format("delete", palette)),
                    (b[op.b_start : op.b_end], diff_format("insert", palette)),
                ],
            }[op.op]
            for text, fmt in pieces:
                cursor.insertText(text.replace("\n", LINE_SEPARATOR), fmt)

    def _sync_scrolling(self) -> None:
        """Scrolling one text scrolls the other to the same relative place."""
        bars = (self.speculative_view.verticalScrollBar(), self.baseline_view.verticalScrollBar())
        syncing = [False]

        def follow(source: int) -> None:
            if syncing[0]:
                return
            syncing[0] = True
            src, dst = bars[source], bars[1 - source]
            fraction = src.value() / src.maximum() if src.maximum() else 0.0
            dst.setValue(round(fraction * dst.maximum()))
            syncing[0] = False

        bars[0].valueChanged.connect(lambda _v: follow(0))
        bars[1].valueChanged.connect(lambda _v: follow(1))

    def _mark_first_difference(self) -> None:
        first = self.comparison.first_difference
        if first is None:
            return
        for view in (self.speculative_view, self.baseline_view):
            selection = QTextEdit.ExtraSelection()
            cursor = QTextCursor(view.document())
            end = view.document().characterCount() - 1
            cursor.setPosition(min(first.char_index, end))
            cursor.setPosition(min(first.char_index + 1, end), QTextCursor.MoveMode.KeepAnchor)
            selection.cursor = cursor  # type: ignore[attr-defined]
            selection.format.setBackground(QColor("#f5b041"))  # type: ignore[attr-defined]
            view.setExtraSelections([selection])
            view.setTextCursor(cursor)
            view.ensureCursorVisible()


def _boxed(title: str, widget: QWidget) -> QGroupBox:
    box = QGroupBox(title)
    layout = QVBoxLayout(box)
    layout.addWidget(widget)
    return box
