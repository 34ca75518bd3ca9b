"""One widget per turn: the person's message, or an answer with its highlighting, its
statistics and its Copy / Compare / Why? buttons."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QDialog, QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from .conversation import Message
from .formatting import how_made, stats_line, stop_note
from .token_view import TokenTextView


class UserMessageWidget(QFrame):
    def __init__(self, message: Message, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("userMessage")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QVBoxLayout(self)
        who = QLabel(self.tr("You"), self)
        who.setStyleSheet("font-weight: bold;")
        self.text = QLabel(message.content, self)
        self.text.setWordWrap(True)
        self.text.setTextFormat(Qt.TextFormat.PlainText)
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(who)
        layout.addWidget(self.text)


class AnswerWidget(QFrame):
    compare_requested = Signal(object)  # self

    def __init__(self, message: Message, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.message = message
        self.setObjectName("answerMessage")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        layout = QVBoxLayout(self)
        self.header = QLabel(self)
        self.header.setStyleSheet("font-weight: bold;")
        self.view = TokenTextView(self, auto_height=True)
        self.status = QLabel(self)
        self.status.setWordWrap(True)
        self.stats = QLabel(self)
        self.stats.setWordWrap(True)
        self.stats.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.copy_button = QPushButton(self.tr("Copy"), self)
        self.copy_button.setToolTip(self.tr("Copy this answer to the clipboard"))
        self.compare_button = QPushButton(self.tr("Compare"), self)
        self.compare_button.setToolTip(
            self.tr("Run this answer again the other way (with / without speculation) and compare")
        )
        self.why_button = QPushButton(self.tr("Why?"), self)
        self.why_button.setToolTip(self.tr("Why was this answer faster or slower? Acceptance, costs, charts"))
        self.why_dialog: QDialog | None = None
        self._busy = False
        buttons = QHBoxLayout()
        buttons.addWidget(self.stats, 1)
        buttons.addWidget(self.copy_button)
        buttons.addWidget(self.compare_button)
        buttons.addWidget(self.why_button)
        layout.addWidget(self.header)
        layout.addWidget(self.view)
        layout.addWidget(self.status)
        layout.addLayout(buttons)
        self.copy_button.clicked.connect(self._on_copy)
        self.compare_button.clicked.connect(self._on_compare)
        self.why_button.clicked.connect(self._on_why)
        self.refresh()

    def refresh(self) -> None:
        """Redraw everything from the message (restored answers, finished answers)."""
        self.view.set_records(self.message.records)
        self.update_labels()

    def append_records(self, start: int) -> None:
        """The message grew while streaming: paint its records from ``start`` on."""
        self.view.append_records(self.message.records[start:])
        self.update_labels()

    def set_waiting(self, text: str) -> None:
        self.status.setText(text)
        self.status.setVisible(bool(text))

    def set_busy(self, busy: bool) -> None:
        self.compare_button.setEnabled(not busy and self.message.stats is not None)
        self._busy = busy
        self.why_button.setEnabled(self._finished())
        self.copy_button.setEnabled(not busy)

    def update_labels(self) -> None:
        m = self.message
        self.header.setText(self.tr("Assistant · {0}").format(how_made(m.speculative, m.drafter)))
        self.stats.setText(stats_line(m.run_stats, m.speculative) if m.stats else "")
        notes = [n for n in (stop_note(m.stop_reason), m.error) if n]
        self.status.setText("\n".join(notes))
        self.status.setStyleSheet("color: #c0392b;" if m.error else "")
        self.status.setVisible(bool(notes))
        self.compare_button.setEnabled(m.stats is not None)
        self.why_button.setEnabled(self._finished())

    def _on_copy(self) -> None:
        QGuiApplication.clipboard().setText(self.message.content)

    def _on_compare(self) -> None:
        self.compare_requested.emit(self)

    def _finished(self) -> bool:
        """Its run is over (explained from all its passes, not the ones streamed so far)."""
        return not self._busy and self.message.stats is not None and self.message.stop_reason is not None

    def _on_why(self) -> None:
        from .explain_view import ExplainDialog  # its charts load on first use, not at start-up

        if self.why_dialog is not None:  # one panel per answer: the newest
            self.why_dialog.close()
            self.why_dialog.deleteLater()
        self.why_dialog = ExplainDialog(self.message.run_result(), None, self.window())
        self.why_dialog.comparison_requested.connect(self._on_compare)  # the window's compare flow
        self.why_dialog.show()
