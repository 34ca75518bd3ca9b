"""The transcript: a scrolling column of message widgets that follows new text while the
person is at the bottom, and stays put when they scrolled up to read."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QScrollArea, QVBoxLayout, QWidget

from app.ui.chat.message_widgets import AnswerWidget, UserMessageWidget
from app.ui.common.conversation import Message


class ChatView(QScrollArea):
    compare_requested = Signal(object)  # the answer's Message
    sweep_requested = Signal(object)  # the answer's Message: "Try drafters…"
    regenerate_requested = Signal(object)  # the answer's Message
    continue_requested = Signal(object)  # the cut answer's Message
    edit_requested = Signal(object, str)  # the user's Message, its new text

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        container = QWidget(self)
        self._layout = QVBoxLayout(container)
        self._layout.addStretch(1)
        self.setWidget(container)
        self._placeholder = QLabel(
            self.tr(
                "Ask something. Tokens the drafter guessed right and the target accepted are "
                "highlighted and underlined; hover a token to see where it came from."
            ),
            container,
        )
        self._placeholder.setWordWrap(True)
        self._placeholder.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._layout.insertWidget(0, self._placeholder)
        self._answers: list[AnswerWidget] = []
        self._turns: list[AnswerWidget | UserMessageWidget] = []  # every message widget, in order
        self._show_rejected = False
        self._follow = True
        bar = self.verticalScrollBar()
        bar.valueChanged.connect(self._on_scrolled)
        bar.rangeChanged.connect(self._on_range_changed)

    @property
    def answers(self) -> list[AnswerWidget]:
        return list(self._answers)

    def clear(self) -> None:
        while self._layout.count() > 2:  # placeholder + stretch stay
            item = self._layout.takeAt(1)
            if item.widget() is not None:
                item.widget().deleteLater()
        self._answers.clear()
        self._turns.clear()
        self._placeholder.show()
        self._follow = True

    def add_message(self, message: Message) -> QWidget:
        self._placeholder.hide()
        widget: AnswerWidget | UserMessageWidget
        if message.role == "assistant":
            answer = AnswerWidget(message, self.widget())
            answer.set_show_rejected(self._show_rejected)
            answer.compare_requested.connect(self._on_compare_requested)
            answer.sweep_requested.connect(lambda a: self.sweep_requested.emit(a.message))
            answer.regenerate_requested.connect(lambda a: self.regenerate_requested.emit(a.message))
            answer.continue_requested.connect(lambda a: self.continue_requested.emit(a.message))
            self._answers.append(answer)
            widget = answer
        else:
            widget = UserMessageWidget(message, self.widget())
            widget.edit_submitted.connect(self.edit_requested)
        self._layout.insertWidget(self._layout.count() - 1, widget)
        self._turns.append(widget)
        self._mark_last()
        self._follow = True
        return widget

    def user_widget_for(self, message: Message) -> UserMessageWidget | None:
        users = (w for w in self._turns if isinstance(w, UserMessageWidget))
        return next((w for w in users if w.message is message), None)

    def remove_from(self, message: Message) -> None:
        """Take ``message`` and every later message off the transcript."""
        index = next((i for i, w in enumerate(self._turns) if w.message is message), None)
        if index is None:
            return
        for widget in self._turns[index:]:
            self._layout.removeWidget(widget)
            widget.hide()
            widget.deleteLater()
            if isinstance(widget, AnswerWidget):
                self._answers.remove(widget)
        del self._turns[index:]
        self._placeholder.setVisible(not self._turns)
        self._mark_last()

    def _mark_last(self) -> None:
        for answer in self._answers:
            answer.set_is_last(answer is self._turns[-1])

    def token_kinds(self) -> set[str]:
        """The kinds of token the answers on screen hold ("draft", "target", "rejected")."""
        return {record.kind for answer in self._answers for record in answer.message.records}

    def answer_for(self, message: Message) -> AnswerWidget | None:
        return next((a for a in self._answers if a.message is message), None)

    def set_show_rejected(self, show: bool) -> None:
        self._show_rejected = show
        for answer in self._answers:
            answer.set_show_rejected(show)

    def set_busy(self, busy: bool) -> None:
        for widget in self._turns:
            widget.set_busy(busy)

    def _on_compare_requested(self, answer: AnswerWidget) -> None:
        self.compare_requested.emit(answer.message)

    def _on_scrolled(self, value: int) -> None:
        self._follow = value >= self.verticalScrollBar().maximum() - 8

    def _on_range_changed(self, _minimum: int, maximum: int) -> None:
        if self._follow:
            self.verticalScrollBar().setValue(maximum)
