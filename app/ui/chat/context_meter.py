"""How much of the target's context window the conversation fills, with a warning before
it is full (from ``CONTEXT_WARN_FRACTION`` on)."""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QWidget

from app.ui.common.formatting import context_line, context_warning


class ContextMeter(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.used = 0
        self.limit = 0  # the loaded target's context length; 0 until a model is loaded
        self.label = QLabel(self)
        self.bar = QProgressBar(self)
        self.bar.setMaximumWidth(160)
        self.bar.setTextVisible(False)
        self.bar.setMaximumHeight(10)
        self.warning = QLabel(self)
        self.warning.setWordWrap(True)
        self.warning.setStyleSheet("color: #b35900;")
        self.setToolTip(
            self.tr("Prompt and answer tokens of this conversation against what the target model can hold")
        )
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.label)
        layout.addWidget(self.bar)
        layout.addWidget(self.warning, 1)
        self._update()

    def set_limit(self, limit: int) -> None:
        self.limit = max(0, limit)
        self._update()

    def set_used(self, used: int) -> None:
        self.used = max(0, used)
        self._update()

    def _update(self) -> None:
        self.label.setText(context_line(self.used, self.limit))
        self.bar.setVisible(self.limit > 0)
        self.bar.setRange(0, max(1, self.limit))
        self.bar.setValue(min(self.used, self.limit))
        warning = context_warning(self.used, self.limit)
        self.warning.setText(warning)
        self.warning.setVisible(bool(warning))
