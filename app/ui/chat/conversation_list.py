"""The conversations at the left: a search box over titles and messages, each chat with its
date, and rename (edit in place), delete (with Undo), export to Markdown / JSON."""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import (
    QDateTime,
    QLocale,
    QModelIndex,
    QPersistentModelIndex,
    QPoint,
    QRect,
    QSize,
    Qt,
    Signal,
)
from PySide6.QtGui import QKeySequence, QPainter, QPalette, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.engine.errors import SpecChatError
from app.ui.chat.export import export_conversation, file_stem
from app.ui.common.conversation import Conversation
from app.ui.common.storage import ConversationHeader, ConversationStore

DATE_ROLE = Qt.ItemDataRole.UserRole + 1  # the "when" line under a title


def when_text(timestamp: float, now: float | None = None) -> str:
    """Today: the time; this year: day and month; else the short date (in the locale)."""
    moment = QDateTime.fromSecsSinceEpoch(int(timestamp))
    today = QDateTime.fromSecsSinceEpoch(int(now if now is not None else time.time())).date()
    locale = QLocale()
    if moment.date() == today:
        return locale.toString(moment.time(), QLocale.FormatType.ShortFormat)
    if moment.date().year() == today.year():
        return locale.toString(moment.date(), "d MMM")
    return locale.toString(moment.date(), QLocale.FormatType.ShortFormat)


class _TitleAndDate(QStyledItemDelegate):
    """Two lines per chat: the title, and its date dimmed below."""

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:
        size = super().sizeHint(option, index)
        return QSize(size.width(), size.height() + option.fontMetrics.height())

    def paint(
        self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        line = option.fontMetrics.height()
        top = QStyleOptionViewItem(option)  # the whole row's background, the title on top
        top.displayAlignment = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop
        super().paint(painter, top, index)
        date = index.data(DATE_ROLE)
        if not date:
            return
        painter.save()
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        role = QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.PlaceholderText
        painter.setPen(option.palette.color(role))
        bottom = QRect(option.rect.x() + 4, option.rect.bottom() - line, option.rect.width() - 8, line)
        painter.drawText(bottom, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, str(date))
        painter.restore()


class ConversationPanel(QWidget):
    deleted = Signal(object)  # Conversation (its file is gone; Undo writes it back)
    restored = Signal(object)  # Conversation brought back by Undo
    error = Signal(str)
    notice = Signal(str)  # a short confirmation (where an export was written)

    def __init__(self, store: ConversationStore, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._store = store
        self._conversations: dict[str, Conversation | ConversationHeader] = {}  # header: not read yet
        self._current = ""
        self._filling = False
        self._last_deleted: Conversation | None = None
        self.search = QLineEdit(self)
        self.search.setPlaceholderText(self.tr("Search conversations"))
        self.search.setClearButtonEnabled(True)
        self.search.setToolTip(self.tr("Shows the chats whose title or messages contain every word"))
        self.list = QListWidget(self)
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.list.setEditTriggers(QAbstractItemView.EditTrigger.EditKeyPressed)  # F2, or Rename in the menu
        self.list.setItemDelegate(_TitleAndDate(self.list))
        self.undo_bar = QFrame(self)
        self.undo_text = QLabel(self.undo_bar)
        self.undo_text.setWordWrap(True)
        self.undo_button = QToolButton(self.undo_bar)
        self.undo_button.setText(self.tr("Undo"))
        bar = QHBoxLayout(self.undo_bar)
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(self.undo_text, 1)
        bar.addWidget(self.undo_button)
        self.undo_bar.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.search)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.undo_bar)
        self.search.textChanged.connect(self._apply_filter)
        self.list.itemChanged.connect(self._on_item_changed)
        self.list.customContextMenuRequested.connect(self._on_menu)
        self.undo_button.clicked.connect(self.undo_delete)
        delete_key = QShortcut(QKeySequence(QKeySequence.StandardKey.Delete), self.list, self._on_delete_key)
        delete_key.setContext(Qt.ShortcutContext.WidgetShortcut)  # only while the list has the focus

    # ---- contents ----------------------------------------------------------------------
    @property
    def conversations(self) -> list[Conversation]:
        """The listed conversations whose content has been read."""
        return [c for c in self._conversations.values() if isinstance(c, Conversation)]

    def set_conversations(
        self, conversations: list[Conversation] | list[ConversationHeader], current: str = ""
    ) -> None:
        """List conversations, or only their headers (their content arrives with ``upsert``)."""
        self._conversations = {c.id: c for c in conversations}
        self._current = current or self._current
        self._fill()

    def latest_id(self) -> str:
        """The most recently updated conversation listed ("" when none)."""
        listed = sorted(self._conversations.values(), key=lambda c: c.updated, reverse=True)
        return listed[0].id if listed else ""

    def is_read(self, conversation_id: str) -> bool:
        return isinstance(self._conversations.get(conversation_id), Conversation)

    def remove(self, conversation_id: str) -> None:
        """Unlist a conversation (its file could not be read; it stays on disk)."""
        if self._conversations.pop(conversation_id, None) is not None:
            self._fill()

    def upsert(self, conversation: Conversation) -> None:
        """A conversation was saved: (re)list it, newest first."""
        self._conversations[conversation.id] = conversation
        self._fill()

    def select(self, conversation_id: str) -> None:
        """Highlight the conversation shown (and only it), whatever was clicked last."""
        self._current = conversation_id
        for item in self._items():
            shown = item.data(Qt.ItemDataRole.UserRole).id == conversation_id
            if shown:
                self.list.setCurrentItem(item)  # the keyboard focus follows the one shown
            item.setSelected(shown)

    def visible_titles(self) -> list[str]:
        return [item.text() for item in self._items() if not item.isHidden()]

    # ---- actions -----------------------------------------------------------------------
    def rename(self, conversation: Conversation, title: str) -> bool:
        title = " ".join(title.split())
        if not title or title == conversation.title:
            self._fill()  # an empty title is refused: show the old one again
            return False
        conversation.title = title
        self._store.save(conversation)
        self._fill()
        return True

    def delete(self, conversation: Conversation) -> None:
        """Delete at once and offer Undo (the conversation stays in memory until the next delete)."""
        self._store.delete(conversation.id)
        self._conversations.pop(conversation.id, None)
        self._last_deleted = conversation
        self.undo_text.setText(self.tr("Deleted “{0}”.").format(conversation.title.strip() or self.tr("New chat")))
        self.undo_bar.show()
        self._fill()
        self.deleted.emit(conversation)

    def undo_delete(self) -> None:
        conversation, self._last_deleted = self._last_deleted, None
        self.undo_bar.hide()
        if conversation is None:
            return
        self._store.undelete(conversation.id)
        self._store.save(conversation)
        self.upsert(conversation)
        self.restored.emit(conversation)

    def export(self, conversation: Conversation) -> None:
        """Ask for a file (.md or .json) and write the conversation there."""
        stem = file_stem(conversation.title)
        path, _filter = QFileDialog.getSaveFileName(
            self,
            self.tr("Export conversation"),
            str(Path.home() / f"{stem}.md"),
            self.tr("Markdown (*.md);;JSON (*.json)"),
        )
        if not path:
            return
        if not Path(path).suffix:
            path += ".json" if "json" in _filter.lower() else ".md"
        try:
            written = export_conversation(conversation, path)
        except SpecChatError as e:
            self.error.emit(str(e))
        else:
            title = conversation.title.strip() or self.tr("New chat")
            self.notice.emit(self.tr("Exported “{0}” to {1}").format(title, written))
        finally:
            self.select(self._current)  # the dialog may have moved the highlight

    # ---- handlers ----------------------------------------------------------------------
    def _items(self) -> list[QListWidgetItem]:
        return [self.list.item(row) for row in range(self.list.count())]

    def _fill(self) -> None:
        self._filling = True
        self.list.clear()
        for conversation in sorted(self._conversations.values(), key=lambda c: c.updated, reverse=True):
            item = QListWidgetItem(conversation.title or self.tr("New chat"))
            item.setData(Qt.ItemDataRole.UserRole, conversation)
            item.setData(DATE_ROLE, when_text(conversation.updated))
            item.setToolTip(conversation.title)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsEditable)
            self.list.addItem(item)
            item.setSelected(conversation.id == self._current)
        self._filling = False
        self._apply_filter()

    def _apply_filter(self) -> None:
        query = self.search.text()
        for item in self._items():
            item.setHidden(not item.data(Qt.ItemDataRole.UserRole).matches(query))

    def _on_item_changed(self, item: QListWidgetItem) -> None:
        if self._filling:
            return
        conversation = item.data(Qt.ItemDataRole.UserRole)
        if isinstance(conversation, Conversation):
            self.rename(conversation, item.text())
        else:
            self._fill()  # not read yet: nothing to save the title into

    def _on_delete_key(self) -> None:
        item = self.list.currentItem()
        conversation = None if item is None else item.data(Qt.ItemDataRole.UserRole)
        if isinstance(conversation, Conversation) and self.list.isEnabled():
            self.delete(conversation)

    def _on_menu(self, pos: QPoint) -> None:
        item = self.list.itemAt(pos)
        if item is None or not self.list.isEnabled():
            return
        conversation = item.data(Qt.ItemDataRole.UserRole)
        read = isinstance(conversation, Conversation)
        menu = QMenu(self)
        actions = [
            menu.addAction(self.tr("Rename"), lambda: self.list.editItem(item)),
            menu.addAction(self.tr("Export…"), lambda: self.export(conversation)),
        ]
        menu.addSeparator()
        actions.append(menu.addAction(self.tr("Delete conversation"), lambda: self.delete(conversation)))
        for action in actions:
            action.setEnabled(read)
            if not read:
                action.setToolTip(self.tr("This conversation is still being read from disk"))
        self.select(self._current)  # right-clicking selected the item: the one shown stays highlighted
        menu.exec(self.list.mapToGlobal(pos))
        self.select(self._current)
