"""Long tooltips wrap. Qt shows a plain-text tooltip on one line however long it is (~1,260 px
for the longest settings help); a rich-text one wraps at about 80 characters. One application
event filter turns every long plain tooltip into rich text: a widget's when it is set, an item
view's (list, table, tree rows) when it is about to show."""

from __future__ import annotations

import html

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QHelpEvent
from PySide6.QtGui import Qt as QtGuiNamespace
from PySide6.QtWidgets import QAbstractItemView, QApplication, QToolTip, QWidget

WRAP_AFTER_CHARS = 70  # a shorter tooltip stays plain: one line reads best
_INSTALLED = "specchat_tooltip_wrapper"


def wrapped_tooltip(text: str) -> str:
    """``text`` as rich text that wraps, when it is long plain text; else unchanged."""
    if len(text) <= WRAP_AFTER_CHARS or QtGuiNamespace.mightBeRichText(text):
        return text
    return f"<p style='white-space:pre-wrap'>{html.escape(text, quote=False)}</p>"


class _TooltipWrapper(QObject):
    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind == QEvent.Type.ToolTipChange and isinstance(watched, QWidget):
            text = watched.toolTip()
            wrapped = wrapped_tooltip(text)
            if wrapped != text:
                watched.setToolTip(wrapped)  # sends ToolTipChange again, now rich: no loop
        elif kind == QEvent.Type.ToolTip and isinstance(watched, QWidget):
            view = watched.parent()
            if isinstance(view, QAbstractItemView) and watched is view.viewport():
                assert isinstance(event, QHelpEvent)
                index = view.indexAt(event.pos())
                text = index.data(Qt.ItemDataRole.ToolTipRole) if index.isValid() else None
                if isinstance(text, str) and wrapped_tooltip(text) != text:
                    QToolTip.showText(event.globalPos(), wrapped_tooltip(text), watched, view.visualRect(index))
                    return True
        return False


def install_tooltip_wrapping(app: QApplication) -> None:
    """Once per application (later calls do nothing)."""
    if app.property(_INSTALLED):
        return
    wrapper = _TooltipWrapper(app)
    app.installEventFilter(wrapper)
    app.setProperty(_INSTALLED, True)
