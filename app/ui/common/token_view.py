"""A read-only text view that paints an answer token by token, by provenance.

Each token is inserted with its own char format carrying ``TOKEN_INDEX`` and ``TOKEN_KIND``,
so every token is one fragment of the document: hovering maps back to the token, and the
tests read provenance straight from the document. Newlines inside tokens become line
separators (U+2028) so an answer stays one block and tokens never split across blocks.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from PySide6.QtCore import QEvent, QPoint, Qt
from PySide6.QtGui import QHelpEvent, QTextCursor
from PySide6.QtWidgets import QFrame, QSizePolicy, QTextEdit, QToolTip, QWidget

from app.ui.common.conversation import TokenRecord
from app.ui.common.token_style import TOKEN_INDEX, token_format

LINE_SEPARATOR = "\u2028"


class TokenTextView(QTextEdit):
    def __init__(self, parent: QWidget | None = None, *, auto_height: bool = False) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        self.setMouseTracking(True)
        self._records: list[TokenRecord] = []
        self._show_rejected = False
        if auto_height:
            self.setFrameShape(QFrame.Shape.NoFrame)
            self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
            self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
            self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
            self.document().documentLayout().documentSizeChanged.connect(self._on_size_changed)
            self._on_size_changed()

    @property
    def records(self) -> list[TokenRecord]:
        return list(self._records)

    def set_show_rejected(self, show: bool) -> None:
        if show != self._show_rejected:
            self._show_rejected = show
            self._render()

    def set_records(self, records: Iterable[TokenRecord]) -> None:
        self._records = list(records)
        self._render()

    def append_records(self, records: Iterable[TokenRecord]) -> None:
        start = len(self._records)
        self._records.extend(records)
        self._insert(start)

    def _render(self) -> None:
        self.document().clear()
        self._insert(0)

    def _insert(self, start: int) -> None:
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        palette = self.palette()
        formats = {kind: token_format(kind, palette) for kind in ("draft", "target", "rejected")}
        cursor.beginEditBlock()
        for index in range(start, len(self._records)):
            record = self._records[index]
            if (record.kind == "rejected" and not self._show_rejected) or not record.text:
                continue
            fmt = formats[record.kind]
            fmt.setProperty(TOKEN_INDEX, index)
            cursor.insertText(record.text.replace("\r\n", "\n").replace("\n", LINE_SEPARATOR), fmt)
        cursor.endEditBlock()

    def record_at(self, pos: QPoint) -> TokenRecord | None:
        """The token under a viewport position, if any."""
        offset = QPoint(self.horizontalScrollBar().value(), self.verticalScrollBar().value())
        layout = self.document().documentLayout()
        position = layout.hitTest((pos + offset).toPointF(), Qt.HitTestAccuracy.ExactHit)
        if position < 0:
            return None
        cursor = QTextCursor(self.document())
        cursor.setPosition(position + 1)  # charFormat() is the format of the char before
        index = cursor.charFormat().property(TOKEN_INDEX)
        if not isinstance(index, int) or not 0 <= index < len(self._records):
            return None
        return self._records[index]

    def tooltip_text(self, record: TokenRecord) -> str:
        if record.kind == "draft":
            head = self.tr("Draft token, accepted by the target in pass {0}").format(record.step)
        elif record.kind == "rejected":
            head = self.tr("Draft token proposed before pass {0}, rejected by the target").format(record.step)
        else:
            head = self.tr("Target token, from target pass {0}").format(record.step)
        lines = [head]
        if record.origin == "earlier":
            lines.append(self.tr("Guessed from an earlier conversation"))
        elif record.origin == "conversation":
            lines.append(self.tr("Guessed from this conversation"))
        lines.append(self.tr("Text: {0}").format(repr(record.text)))
        if record.p_target is not None:
            lines.append(self.tr("Target probability: {0:.3f}").format(record.p_target))
        if record.p_draft is not None:
            lines.append(self.tr("Draft probability: {0:.3f}").format(record.p_draft))
        if record.margin is not None:
            lines.append(self.tr("Target top-1 margin (logits): {0:.2f}").format(record.margin))
        return "\n".join(lines)

    def viewportEvent(self, event: QEvent) -> bool:
        if isinstance(event, QHelpEvent) and event.type() == QEvent.Type.ToolTip:
            record = self.record_at(event.pos())
            if record is None:
                QToolTip.hideText()
            else:
                QToolTip.showText(event.globalPos(), self.tooltip_text(record), self.viewport())
            return True
        return super().viewportEvent(event)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:
            self._render()

    def _on_size_changed(self) -> None:
        height = math.ceil(self.document().size().height())
        margins = self.contentsMargins()
        self.setFixedHeight(max(height, self.fontMetrics().height()) + margins.top() + margins.bottom() + 2)
