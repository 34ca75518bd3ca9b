"""The transcript: a scrolling column of message widgets that follows new text while the
person is at the bottom, and stays put when they scrolled up to read."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QLabel, QScrollArea, QVBoxLayout, QWidget

from .conversation import Message
from .message_widgets import AnswerWidget, UserMessageWidget


class ChatView(QScrollArea):
    compare_requested = Signal(object)  # the answer's Message

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
        self._placeholder.show()
        self._follow = True

    def add_message(self, message: Message) -> QWidget:
        self._placeholder.hide()
        widget: QWidget
        if message.role == "assistant":
            answer = AnswerWidget(message, self.widget())
            answer.view.set_show_rejected(self._show_rejected)
            answer.compare_requested.connect(self._on_compare_requested)
            self._answers.append(answer)
            widget = answer
        else:
            widget = UserMessageWidget(message, self.widget())
        self._layout.insertWidget(self._layout.count() - 1, widget)
        self._follow = True
        return widget

    def answer_for(self, message: Message) -> AnswerWidget | None:
        return next((a for a in self._answers if a.message is message), None)

    def set_show_rejected(self, show: bool) -> None:
        self._show_rejected = show
        for answer in self._answers:
            answer.view.set_show_rejected(show)

    def set_busy(self, busy: bool) -> None:
        for answer in self._answers:
            answer.set_busy(busy)

    def _on_compare_requested(self, answer: AnswerWidget) -> None:
        self.compare_requested.emit(answer.message)

    def _on_scrolled(self, value: int) -> None:
        self._follow = value >= self.verticalScrollBar().maximum() - 8

    def _on_range_changed(self, _minimum: int, maximum: int) -> None:
        if self._follow:
            self.verticalScrollBar().setValue(maximum)
