"""Side by side: the answer with speculation (highlighted) and without, their speed, a
character-level diff, and one big line that answers "is it faster, and is it the same?"."""

from __future__ import annotations

from collections.abc import Callable

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
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.engine.analysis.compare import (
    FRESH_RERUNS,
    Comparison,
    ComparisonReport,
    Phrase,
    headline,
    headline_tone,
    stored_notes,
    verdict_reasons,
)
from app.engine.analysis.explanation import alpha_of
from app.engine.events import RunResult
from app.ui.chat.markdown_view import MarkdownView
from app.ui.common.conversation import TokenRecord
from app.ui.common.engine_words import drafter_label
from app.ui.common.formatting import decimal, how_made, localized_numbers, percent, ratio
from app.ui.common.token_style import diff_format
from app.ui.common.token_view import LINE_SEPARATOR, TokenTextView
from app.ui.compare.server_figures import ServerFiguresBox, is_server_report

# The sentences are the engine's (app.engine.analysis.compare: one wording for the CLI and the GUI);
# translated here, in this context, before their values are filled in.
TONE_COLOURS = {"good": "#27ae60", "warning": "#d68910", "bad": "#c0392b", "neutral": "#2e86c1"}


def _say(phrase: Phrase) -> str:
    """The engine's phrase (marked with QT_TRANSLATE_NOOP there), translated in this context."""
    text = phrase.render(lambda text: QCoreApplication.translate("CompareDialog", text))  # i18n: noop
    return localized_numbers(text)  # "5,40×" in French


def verdict_line(comparison: Comparison) -> str:
    """The big line: "Identical answer · 1.80× faster decoding" (the decode speed-up)."""
    return _say(headline(comparison))


def verdict_sentence(comparison: Comparison) -> str:
    """What the verdict means, and why speculation was slower when it was."""
    return " ".join(_say(p) for p in verdict_reasons(comparison))


def verdict_color(comparison: Comparison) -> str:
    """By outcome: slower is never green."""
    return TONE_COLOURS[headline_tone(comparison)]


class CompareDialog(QDialog):
    def __init__(
        self,
        report: ComparisonReport,
        speculative_records: list[TokenRecord],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(self.tr("Compare: with and without speculation"))
        self.report = report
        speculative, baseline = report.speculative, report.baseline
        self.comparison = comparison = report.comparison
        self.verdict = QLabel(verdict_line(comparison), self)
        font = self.verdict.font()
        font.setPointSizeF(font.pointSizeF() * 1.7)
        font.setBold(True)
        self.verdict.setFont(font)
        self.verdict.setStyleSheet(f"color: {verdict_color(comparison)};")
        self.verdict_text = QLabel(verdict_sentence(comparison), self)
        self.verdict_text.setWordWrap(True)
        # about the stored answer: other models made it, or the rerun did not reproduce it
        self.stored_note = QLabel(" ".join(_say(p) for p in stored_notes(report)), self)
        self.stored_note.setWordWrap(True)
        self.stored_note.setVisible(bool(self.stored_note.text()))

        # each answer as the chat shows it: rendered Markdown carrying the tokens' provenance, or
        # (Tokens) every token as generated, where the first difference is marked
        baseline_records = [
            TokenRecord(t.text, "target", -1, t.id, t.p_target, None, t.margin) for t in baseline.tokens
        ]
        self.speculative_view = TokenTextView(self)
        self.speculative_view.set_records(speculative_records)
        self.baseline_view = TokenTextView(self)
        self.baseline_view.set_records(baseline_records)
        self.speculative_rendered = MarkdownView(self, auto_height=False)
        self.speculative_rendered.set_markdown(speculative.text, speculative_records)
        self.baseline_rendered = MarkdownView(self, auto_height=False)
        self.baseline_rendered.set_markdown(baseline.text, baseline_records)
        self.tokens_button = QToolButton(self)
        self.tokens_button.setText(self.tr("Tokens"))
        self.tokens_button.setCheckable(True)
        self.tokens_button.setToolTip(
            self.tr(
                "Show both answers token by token (where they first differ is marked) instead of "
                "rendered as Markdown"
            )
        )
        self.tokens_button.toggled.connect(self.show_tokens)
        texts = QSplitter(Qt.Orientation.Horizontal, self)
        texts.addWidget(
            _boxed(
                self.tr("With speculation — {0}").format(drafter_label(speculative.drafter)),
                self.speculative_rendered,
                self.speculative_view,
            )
        )
        plain_title = (
            self.tr("Without speculation — the plain endpoint")
            if is_server_report(report)
            else self.tr("Without speculation — target only")
        )
        texts.addWidget(_boxed(plain_title, self.baseline_rendered, self.baseline_view))
        self.show_tokens(False)
        self._sync_scrolling()
        self._mark_first_difference()

        self.table = self._stats_table(speculative, baseline)
        self.server_box = ServerFiguresBox(report, self) if is_server_report(report) else None
        # the stats line under the answer is the answer's own run; these are new runs of it
        self.reruns_note = QLabel(_say(Phrase(FRESH_RERUNS)), self)
        self.reruns_note.setWordWrap(True)
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
        self.why_button = buttons.addButton(self.tr("Why?"), QDialogButtonBox.ButtonRole.ActionRole)
        self.why_button.setToolTip(self.tr("Why was speculation faster or slower here? Acceptance, costs, charts"))
        self.why_button.clicked.connect(self.open_why)
        self.why_dialog: QDialog | None = None
        buttons.button(QDialogButtonBox.StandardButton.Close).setFocus()  # no caret in the texts

        layout = QVBoxLayout(self)
        layout.addWidget(self.verdict)
        layout.addWidget(self.verdict_text)
        layout.addWidget(self.stored_note)
        layout.addWidget(self.tokens_button, 0, Qt.AlignmentFlag.AlignRight)
        layout.addWidget(texts, 3)
        layout.addWidget(self.table)
        if self.server_box is not None:
            layout.addWidget(self.server_box)
        layout.addWidget(self.reruns_note)
        layout.addWidget(diff_box, 1)
        layout.addWidget(buttons)
        self.resize(1000, 720)

    def show_tokens(self, tokens: bool) -> None:
        """Both panes as tokens (True) or rendered Markdown (False), as the chat's switch does."""
        self.tokens_button.setChecked(tokens)
        for rendered, view in (
            (self.speculative_rendered, self.speculative_view),
            (self.baseline_rendered, self.baseline_view),
        ):
            rendered.setVisible(not tokens)
            view.setVisible(tokens)

    @property
    def showing_tokens(self) -> bool:
        return not self.speculative_view.isHidden()

    def open_why(self) -> QDialog:
        """The Why panel for this comparison's two runs (the speculative one explained)."""
        from app.ui.compare.explain_view import ExplainDialog  # its charts load on first use

        if self.why_dialog is not None:
            self.why_dialog.close()
        report = self.report
        figures = getattr(report, "figures", ())  # a comparison against servers: theirs
        self.why_dialog = ExplainDialog(
            report.speculative,
            report.baseline,
            self,
            report.comparison.measured,
            server_figures=figures[0] if figures else None,
        )
        self.why_dialog.show()
        return self.why_dialog

    def _stats_table(self, speculative: RunResult, baseline: RunResult) -> QTableWidget:
        comparison = self.comparison
        alpha = alpha_of(speculative)

        measured = comparison.measured
        unlike = measured is not None and measured.problem is not None

        def speedup(value: float) -> Callable[[RunResult], str]:
            def shown(r: RunResult) -> str:
                if r is not speculative:
                    return ratio(1.0)
                if value <= 0:
                    return "—"
                return self.tr("{0} (not comparable)").format(ratio(value)) if unlike else ratio(value)

            return shown

        rows = [
            (self.tr("Wall time"), lambda r: self.tr("{0} s").format(decimal(r.stats.wall_s, 2))),
            (self.tr("Tokens/s"), lambda r: decimal(r.stats.tokens_per_s, 1)),
            (self.tr("Decode speed-up (prefill left out)"), speedup(comparison.decode_speedup)),
            (self.tr("Whole-run speed-up (prefill included)"), speedup(comparison.whole_run_speedup)),
            (self.tr("New tokens"), lambda r: str(r.stats.new_tokens)),
            (self.tr("Target passes"), lambda r: str(r.stats.target_passes)),
            (self.tr("Tokens per target pass"), lambda r: decimal(r.stats.tokens_per_pass, 2)),
            (
                self.tr("Acceptance α (per position the target judged)"),
                lambda r: percent(alpha) if r is speculative and alpha is not None else "—",
            ),
            (
                self.tr("Drafts accepted, of all proposed"),
                lambda r: percent(r.stats.drafts_accepted_share) if r.speculative else "—",
            ),
        ]
        table = QTableWidget(len(rows), 2, self)
        table.setHorizontalHeaderLabels(
            [how_made(speculative.speculative, speculative.drafter), how_made(False, "none")]
            # (the servers are named in their own table below, in full)
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
        """Scrolling one text scrolls the other to the same relative place (in both views)."""
        self._sync_pair(self.speculative_view, self.baseline_view)
        self._sync_pair(self.speculative_rendered, self.baseline_rendered)

    @staticmethod
    def _sync_pair(a: QTextEdit, b: QTextEdit) -> None:
        bars = (a.verticalScrollBar(), b.verticalScrollBar())
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


def _boxed(title: str, *widgets: QWidget) -> QGroupBox:
    box = QGroupBox(title)
    layout = QVBoxLayout(box)
    for widget in widgets:
        layout.addWidget(widget)
    return box
