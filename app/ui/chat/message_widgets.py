"""One widget per turn: the person's message (with Edit and resend), or an answer with its
rendered Markdown or its raw tokens (both highlighted by provenance), its statistics and its
buttons (Copy as Markdown, Regenerate, Continue, Compare, Why?).

An answer streams straight into its rendered Markdown, which carries the tokens' provenance
(accepted drafts tinted and underlined, hover details), so it looks the same before and after
it ends; "Tokens" switches that answer to the raw token view, every token as generated.

Opening a conversation stays quick whatever its size: only the view shown is drawn (the other
when it is asked for), and a finished answer of more than ``LONG_ANSWER_TOKENS`` tokens shows
its start until "Show all" (drawing 1.5M tokens with their provenance froze the window ~10 s)."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.engine.analysis.explanation import drafting_notes
from app.ui.chat.markdown_view import MarkdownView
from app.ui.common.conversation import Message, TokenRecord
from app.ui.common.formatting import how_made, localized_numbers, stats_line, stop_note
from app.ui.common.token_view import TokenTextView

LONG_ANSWER_TOKENS = 8_000  # a finished answer longer than this shows its start until "Show all"
LONG_ANSWER_CHARS = 60_000  # the same for an answer saved without its tokens


class UserMessageWidget(QFrame):
    edit_submitted = Signal(object, str)  # the Message, its new text

    def __init__(self, message: Message, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.message = message
        self.setObjectName("userMessage")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QVBoxLayout(self)
        who = QLabel(self.tr("You"), self)
        who.setStyleSheet("font-weight: bold;")
        self.edit_button = QToolButton(self)
        self.edit_button.setText(self.tr("Edit"))
        self.edit_button.setToolTip(
            self.tr("Change this message and send it again (later messages are replaced)")
        )
        head = QHBoxLayout()
        head.addWidget(who, 1)
        head.addWidget(self.edit_button)
        self.text = QLabel(message.content, self)
        self.text.setWordWrap(True)
        self.text.setTextFormat(Qt.TextFormat.PlainText)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.editor = QPlainTextEdit(self)
        self.resend_button = QPushButton(self.tr("Send"), self)
        self.cancel_button = QPushButton(self.tr("Cancel"), self)
        edit_row = QHBoxLayout()
        edit_row.addStretch(1)
        edit_row.addWidget(self.cancel_button)
        edit_row.addWidget(self.resend_button)
        self._edit_row = QWidget(self)
        self._edit_row.setLayout(edit_row)
        layout.addLayout(head)
        layout.addWidget(self.text)
        layout.addWidget(self.editor)
        layout.addWidget(self._edit_row)
        self.edit_button.clicked.connect(self.start_editing)
        self.cancel_button.clicked.connect(self.stop_editing)
        self.resend_button.clicked.connect(self._on_resend)
        self.stop_editing()

    @property
    def editing(self) -> bool:
        return not self.editor.isHidden()

    def start_editing(self) -> None:
        self.editor.setPlainText(self.message.content)
        for widget in (self.editor, self._edit_row):
            widget.show()
        self.text.hide()
        self.edit_button.setEnabled(False)
        self.editor.setFocus()

    def stop_editing(self) -> None:
        for widget in (self.editor, self._edit_row):
            widget.hide()
        self.text.show()
        self.edit_button.setEnabled(True)

    def set_busy(self, busy: bool) -> None:
        self.edit_button.setEnabled(not busy and not self.editing)
        self.resend_button.setEnabled(not busy)

    def _on_resend(self) -> None:
        text = self.editor.toPlainText()
        if text.strip():
            self.edit_submitted.emit(self.message, text)


class AnswerWidget(QFrame):
    compare_requested = Signal(object)  # self
    sweep_requested = Signal(object)  # self: the drafter experiment on this answer's conversation
    regenerate_requested = Signal(object)  # self
    continue_requested = Signal(object)  # self

    def __init__(self, message: Message, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.message = message
        self.setObjectName("answerMessage")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self._streaming = False
        self._tokens_chosen: bool | None = None  # the person's choice for this answer, if any
        self._is_last = True
        self._busy = False
        self._whole = False  # "Show all" on a long answer
        self._stale = {"tokens", "rendered"}  # views not drawn from the message yet (drawn when shown)
        layout = QVBoxLayout(self)
        self.header = QLabel(self)
        self.header.setStyleSheet("font-weight: bold;")
        self.tokens_button = QToolButton(self)
        self.tokens_button.setText(self.tr("Tokens"))
        self.tokens_button.setCheckable(True)
        self.tokens_button.setToolTip(
            self.tr(
                "Show the answer token by token, highlighted by where each token came from, "
                "instead of rendered as Markdown"
            )
        )
        head = QHBoxLayout()
        head.addWidget(self.header, 1)
        head.addWidget(self.tokens_button)
        self.view = TokenTextView(self, auto_height=True)
        self.rendered = MarkdownView(self)
        self.long_note = QLabel(self)  # "Showing the first … tokens"
        self.long_note.setWordWrap(True)
        self.show_all_button = QPushButton(self.tr("Show all"), self)
        self.show_all_button.setToolTip(self.tr("Draw the whole answer (a very long one takes a while)"))
        long_row = QHBoxLayout()
        long_row.addWidget(self.long_note, 1)
        long_row.addWidget(self.show_all_button)
        self.status = QLabel(self)
        self.status.setWordWrap(True)
        self.stats = QLabel(self)
        self.stats.setWordWrap(True)
        self.stats.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.copy_button = QPushButton(self.tr("Copy"), self)
        self.copy_button.setToolTip(self.tr("Copy this answer as Markdown"))
        self.regenerate_button = QPushButton(self.tr("Regenerate"), self)
        self.regenerate_button.setToolTip(
            self.tr(
                "Answer the same question again with the current settings (replaces this answer "
                "and the messages after it)"
            )
        )
        self.continue_button = QPushButton(self.tr("Continue"), self)
        self.continue_button.setToolTip(self.tr("Go on generating this cut answer from where it stopped"))
        self.compare_button = QPushButton(self.tr("Compare"), self)
        self.compare_button.setToolTip(
            self.tr("Run this answer again the other way (with / without speculation) and compare")
        )
        self.why_button = QPushButton(self.tr("Why?"), self)
        self.why_button.setToolTip(self.tr("Why was this answer faster or slower? Acceptance, costs, charts"))
        self.why_dialog: QDialog | None = None
        self.sweep_button = QPushButton(self.tr("Try drafters…"), self)
        self.sweep_button.setToolTip(
            self.tr("Answer this again with no speculation, prompt lookup and the draft model at a few k, side by side")
        )
        self._busy = False
        buttons = QHBoxLayout()  # under the stats line, which has the answer's whole width
        buttons.addStretch(1)
        for button in (
            self.copy_button,
            self.regenerate_button,
            self.continue_button,
            self.compare_button,
            self.why_button,
            self.sweep_button,
        ):
            buttons.addWidget(button)
        layout.addLayout(head)
        layout.addWidget(self.view)
        layout.addWidget(self.rendered)
        layout.addLayout(long_row)
        layout.addWidget(self.status)
        layout.addWidget(self.stats)  # its own row: beside the buttons it wrapped one word a line
        layout.addLayout(buttons)
        self.tokens_button.toggled.connect(self._on_tokens_toggled)
        self.copy_button.clicked.connect(self.copy_markdown)
        self.regenerate_button.clicked.connect(lambda: self.regenerate_requested.emit(self))
        self.continue_button.clicked.connect(lambda: self.continue_requested.emit(self))
        self.compare_button.clicked.connect(self._on_compare)
        self.why_button.clicked.connect(self._on_why)
        self.sweep_button.clicked.connect(lambda: self.sweep_requested.emit(self))
        self.show_all_button.clicked.connect(self.show_whole)
        self.refresh()

    @property
    def showing_tokens(self) -> bool:
        return not self.view.isHidden()

    def refresh(self) -> None:
        """Redraw everything from the message (restored answers, finished answers)."""
        self._stale.add("tokens")
        self.set_streaming(False)

    def append_records(self, start: int) -> None:
        """The message grew while streaming: paint its records from ``start`` on, and render
        the Markdown again soon (at most once per interval, see MarkdownView.stream_markdown)."""
        if not self._streaming:
            self._stale.discard("tokens")
            self.view.set_records(self.message.records[:start])  # it may show a long answer's start only
        self.set_streaming(True)
        self.view.append_records(self.message.records[start:])
        self.rendered.stream_markdown(self.message.content, self.message.records)
        self.update_labels()

    def set_streaming(self, streaming: bool) -> None:
        """While streaming the rendered view follows the answer batch by batch; at the end it
        is rendered at once, from the final text (if it is the view shown; else when shown)."""
        self._streaming = streaming
        if not streaming:
            self._stale.add("rendered")
        self._show_view()
        self.update_labels()

    def show_whole(self) -> None:
        """Draw the whole of a long answer (its start was shown)."""
        self._whole = True
        self._stale.update(("tokens", "rendered"))
        self._show_view()

    def _shown(self) -> tuple[str, list[TokenRecord], int]:
        """What is drawn: the answer's text and tokens, or the start of a long finished one;
        and how many tokens it has in all (0 when it is drawn whole)."""
        m = self.message
        if self._whole or self._streaming:
            return m.content, m.records, 0
        cut = _index_of_token(m.records, LONG_ANSWER_TOKENS)  # stops there: never a walk over 1.5M
        if cut is not None:
            records = m.records[:cut]
            total = m.run_stats.new_tokens or sum(r.kind != "rejected" for r in m.records)
            return "".join(r.text for r in records if r.kind != "rejected"), records, total
        if len(m.content) > LONG_ANSWER_CHARS and not m.records:  # saved without its tokens
            return m.content[:LONG_ANSWER_CHARS], [], -1
        return m.content, m.records, 0

    def _draw_stale(self, tokens: bool) -> None:
        """Draw the view shown from the message, if it changed since it was last drawn."""
        view = "tokens" if tokens else "rendered"
        if view not in self._stale:
            return
        self._stale.discard(view)
        text, records, total = self._shown()
        if tokens:
            self.view.set_records(records)
        else:
            self.rendered.set_markdown(text, records)
        cut = total != 0
        if total > 0:
            shown = sum(r.kind != "rejected" for r in records)
            self.long_note.setText(
                self.tr("A long answer: showing its first {0} of {1} tokens.").format(f"{shown:,}", f"{total:,}")
            )
        elif cut:
            self.long_note.setText(self.tr("A long answer: showing its first {0} characters.").format(f"{len(text):,}"))
        self.long_note.setVisible(cut)
        self.show_all_button.setVisible(cut)

    def set_show_rejected(self, show: bool) -> None:
        """Rejected drafts struck through where they were proposed, in both views."""
        self.view.set_show_rejected(show)
        self.rendered.set_show_rejected(show)

    def show_tokens(self, tokens: bool) -> None:
        """The per-answer switch: token view (provenance) or rendered Markdown."""
        self.tokens_button.setChecked(tokens)

    def set_waiting(self, text: str) -> None:
        self.status.setText(text)
        self.status.setVisible(bool(text))

    def set_is_last(self, last: bool) -> None:
        self._is_last = last
        self._update_buttons()

    def set_busy(self, busy: bool) -> None:
        self._busy = busy
        self._update_buttons()

    def update_labels(self) -> None:
        m = self.message
        server = m.made_by.server if m.made_by is not None else m.asked_server
        self.header.setText(self.tr("Assistant · {0}").format(how_made(m.speculative, m.drafter, server)))
        self.stats.setText(stats_line(m.run_stats, m.speculative) if m.stats else "")
        notes = [n for n in (stop_note(m.stop_reason), self._drafting_note(), m.error) if n]
        self.status.setText("\n".join(notes))
        self.status.setStyleSheet("color: #c0392b;" if m.error else "")
        self.status.setVisible(bool(notes))
        self._update_buttons()

    def _drafting_note(self) -> str:
        """ "No drafts used: plain steps only, because …" for an answer of this session that was
        asked to speculate and verified no draft, and "The draft model sat this answer out: …" for
        one its draft model left to lookup (a saved answer does not keep why)."""
        result = self.message.result
        if result is None:
            return ""
        def translate(text: str) -> str:
            return QCoreApplication.translate("Explanation", text)  # i18n: noop

        return localized_numbers("\n".join(drafting_notes(result, translate)))

    def copy_markdown(self) -> None:
        """The answer's Markdown source, as plain text. (Not a QMimeData with an HTML flavour as
        well: PySide6 then crashes when the application exits — a clipboard-owned QMimeData is
        destroyed twice at teardown.)"""
        QGuiApplication.clipboard().setText(self.message.content)

    def _update_buttons(self) -> None:
        m = self.message
        idle = not self._busy and not self._streaming
        self.copy_button.setEnabled(idle)
        self.compare_button.setEnabled(idle and m.stats is not None)
        self.sweep_button.setEnabled(idle and m.config is not None)
        self.regenerate_button.setEnabled(idle)
        self.continue_button.setVisible(m.can_continue and self._is_last)
        self.continue_button.setEnabled(idle and m.config is not None)
        self.why_button.setEnabled(self._finished())

    def _show_view(self) -> None:
        tokens = bool(self._tokens_chosen)
        if not self._streaming:
            self._draw_stale(tokens)
        self.view.setVisible(tokens)
        self.rendered.setVisible(not tokens)
        self.tokens_button.blockSignals(True)
        self.tokens_button.setChecked(tokens)
        self.tokens_button.blockSignals(False)

    def _on_tokens_toggled(self, checked: bool) -> None:
        self._tokens_chosen = checked
        self._show_view()

    def _on_compare(self) -> None:
        self.compare_requested.emit(self)

    def _finished(self) -> bool:
        """Its run is over (explained from all its passes, not the ones streamed so far)."""
        return not self._busy and self.message.stats is not None and self.message.stop_reason is not None

    def _on_why(self) -> None:
        from app.ui.compare.explain_view import ExplainDialog  # its charts load on first use, not at start-up

        if self.why_dialog is not None:  # one panel per answer: the newest
            self.why_dialog.close()
            self.why_dialog.deleteLater()
        # the plain run of this answer's comparison, if one ran: the plain pass and the measured
        # speed-ups come from it
        compared = self.message.comparison
        baseline = compared.baseline if compared is not None else None
        figures = getattr(compared, "figures", ())  # compared against servers: what they said
        # its measured speed-up is the comparison's (its fresh reruns, as Compare shows it), never
        # this answer divided by a plain run made later under other load
        measured = compared.comparison.measured if compared is not None else None
        self.why_dialog = ExplainDialog(
            self.message.run_result(),
            baseline,
            self.window(),
            measured=measured,
            measured_on="reruns",
            server_figures=figures[0] if figures else None,
        )
        self.why_dialog.comparison_requested.connect(self._on_compare)  # the window's compare flow
        self.why_dialog.show()

    def comparison_arrived(self) -> None:
        """A comparison of this answer finished: an open Why panel is redrawn with it."""
        if self.why_dialog is not None and self.why_dialog.isVisible():
            self._on_why()


def _index_of_token(records: list[TokenRecord], n: int) -> int | None:
    """The index in ``records`` of the token after the first ``n`` (rejected drafts are not
    tokens of the answer), or None when there are no more than ``n``."""
    count = 0
    for i, record in enumerate(records):
        if record.kind != "rejected":
            if count == n:
                return i
            count += 1
    return None
