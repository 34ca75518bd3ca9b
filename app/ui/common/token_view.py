"""A read-only text view that paints an answer token by token, by provenance.

Each token is inserted with its own char format carrying ``TOKEN_INDEX`` and ``TOKEN_KIND``,
so every token is one fragment of the document: hovering maps back to the token, and the
tests read provenance straight from the document. Newlines inside tokens become line
separators (U+2028) so an answer stays one block and tokens never split across blocks.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from PySide6.QtCore import QCoreApplication, QEvent, QPoint, Qt
from PySide6.QtGui import QFontDatabase, QHelpEvent, QTextCursor
from PySide6.QtWidgets import QFrame, QSizePolicy, QTextEdit, QToolTip, QWidget

from app.ui.common.conversation import TokenRecord
from app.ui.common.formatting import decimal
from app.ui.common.token_style import RECORD_KINDS, TOKEN_INDEX, token_format

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
        # every token as generated, spaces included: a fixed-width font keeps code's indentation
        self.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
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
        formats = {kind: token_format(kind, palette) for kind in RECORD_KINDS}
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
        return record_at(self, pos, self._records)

    def tooltip_text(self, record: TokenRecord) -> str:
        return token_tooltip(record)

    def viewportEvent(self, event: QEvent) -> bool:
        if show_token_tooltip(self, event, self._records):
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


def record_at(view: QTextEdit, pos: QPoint, records: Sequence[TokenRecord]) -> TokenRecord | None:
    """The token under a viewport position of a view whose char formats carry TOKEN_INDEX."""
    offset = QPoint(view.horizontalScrollBar().value(), view.verticalScrollBar().value())
    layout = view.document().documentLayout()
    position = layout.hitTest((pos + offset).toPointF(), Qt.HitTestAccuracy.ExactHit)
    if position < 0:
        return None
    cursor = QTextCursor(view.document())
    cursor.setPosition(position + 1)  # charFormat() is the format of the char before
    index = cursor.charFormat().property(TOKEN_INDEX)
    if not isinstance(index, int) or not 0 <= index < len(records):
        return None
    return records[index]


def token_tooltip(record: TokenRecord) -> str:
    """A token's hover details: where it came from, its text, its probabilities."""
    if record.kind == "draft":
        head = QCoreApplication.translate("TokenTextView", "Draft token, accepted by the target in pass {0}")
    elif record.kind == "rejected":
        head = QCoreApplication.translate(
            "TokenTextView", "Draft token proposed before pass {0}, rejected by the target"
        )
    elif record.kind == "unknown":
        head = QCoreApplication.translate(
            "TokenTextView",
            "Token from the server: whether a draft guessed it is not known (the server did not say)",
        )
    else:
        head = QCoreApplication.translate("TokenTextView", "Target token, from target pass {0}")
    lines = [head.format(record.step)]
    if record.origin == "earlier":
        lines.append(QCoreApplication.translate("TokenTextView", "Guessed from an earlier conversation"))
    elif record.origin == "conversation":
        lines.append(QCoreApplication.translate("TokenTextView", "Guessed from this conversation"))
    lines.append(QCoreApplication.translate("TokenTextView", "Text: {0}").format(repr(record.text)))
    if record.p_target is not None:
        target = QCoreApplication.translate("TokenTextView", "Target probability: {0}")
        lines.append(target.format(decimal(record.p_target, 3)))
    if record.p_draft is not None:
        draft = QCoreApplication.translate("TokenTextView", "Draft probability: {0}")
        lines.append(draft.format(decimal(record.p_draft, 3)))
    if record.margin is not None:
        margin = QCoreApplication.translate("TokenTextView", "Target top-1 margin (logits): {0}")
        lines.append(margin.format(decimal(record.margin, 2)))
    return "\n".join(lines)


def show_token_tooltip(view: QTextEdit, event: QEvent, records: Sequence[TokenRecord]) -> bool:
    """For a view's viewportEvent: on a tooltip event, show the hovered token's details (or
    hide the tooltip off any token); True when the event was a tooltip event."""
    if not (isinstance(event, QHelpEvent) and event.type() == QEvent.Type.ToolTip):
        return False
    record = record_at(view, event.pos(), records)
    if record is None:
        QToolTip.hideText()
    else:
        QToolTip.showText(event.globalPos(), token_tooltip(record), view.viewport())
    return True
