"""The message box: Enter sends, Shift+Enter starts a new line."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QPlainTextEdit, QWidget


class Composer(QPlainTextEdit):
    submitted = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setPlaceholderText(self.tr("Type a message — Enter sends, Shift+Enter for a new line"))
        self.setTabChangesFocus(True)
        lines = self.fontMetrics().lineSpacing()
        self.setMinimumHeight(lines * 2 + 12)
        self.setMaximumHeight(lines * 4 + 12)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        enter = event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        if enter and not event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.submitted.emit()
            return
        if enter:  # Shift+Enter: a plain newline, not a paragraph-separator surprise
            self.insertPlainText("\n")
            return
        super().keyPressEvent(event)
