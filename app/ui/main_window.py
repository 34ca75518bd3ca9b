"""The main window: conversations on the left, the chat in the middle, the speculation
switch and settings in the tool bar, model loading in the status bar."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QMenu,
    QProgressBar,
    QPushButton,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.engine.errors import SpecChatError

from .chat_controller import ChatController, CompareOutcome
from .chat_view import ChatView
from .compare_view import CompareDialog
from .composer import Composer
from .conversation import Conversation
from .settings import AppSettings, ModelSettings, SettingsStore
from .settings_dialog import SettingsDialog
from .storage import ConversationStore
from .token_style import TokenLegend

if TYPE_CHECKING:
    from app.worker import EngineWorker

SHUTDOWN_TIMEOUT_S = 1.5


class MainWindow(QMainWindow):
    closed = Signal()

    def __init__(
        self, worker: EngineWorker, settings: SettingsStore, conversations: ConversationStore
    ) -> None:
        super().__init__()
        self.setWindowTitle(self.tr("SpecChat"))
        self._worker = worker
        self._settings_store = settings
        self._conversations = conversations
        self.settings = settings.load()
        self._loaded_models: ModelSettings | None = None
        self._requested_models: ModelSettings | None = None
        self.compare_dialog: CompareDialog | None = None
        self._known: dict[str, Conversation] = {}
        self.chat_view = ChatView(self)
        self.controller = ChatController(worker, self.chat_view, conversations, self)
        self._build()
        self._connect()
        self._restore()

    # ---- layout ------------------------------------------------------------------------
    def _build(self) -> None:
        toolbar = self.addToolBar(self.tr("Main"))
        toolbar.setObjectName("mainToolbar")
        self.new_chat_action = QAction(self.tr("New chat"), self)
        self.new_chat_action.setShortcut(QKeySequence.StandardKey.New)
        self.settings_action = QAction(self.tr("Settings…"), self)
        self.settings_action.setShortcut(QKeySequence.StandardKey.Preferences)
        self.speculation_switch = QCheckBox(self.tr("Speculation"), self)
        self.speculation_switch.setToolTip(self.tr("Draft tokens and verify them in one target pass"))
        self.show_rejected = QCheckBox(self.tr("Show rejected drafts"), self)
        toolbar.addAction(self.new_chat_action)
        toolbar.addSeparator()
        toolbar.addWidget(self.speculation_switch)
        toolbar.addWidget(self.show_rejected)
        toolbar.addSeparator()
        toolbar.addAction(self.settings_action)

        self.conversation_list = QListWidget(self)
        self.conversation_list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.conversation_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.conversation_list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.system_prompt = QLineEdit(self)
        self.system_prompt.setPlaceholderText(self.tr("System prompt (optional)"))
        self.banner = QFrame(self)
        self.banner.setStyleSheet("QFrame { background: #fdecea; color: #611a15; border-radius: 4px; }")
        self.banner_text = QLabel(self.banner)
        self.banner_text.setWordWrap(True)
        self.banner_text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        banner_close = QToolButton(self.banner)
        banner_close.setText("×")
        banner_close.setToolTip(self.tr("Dismiss"))
        banner_close.clicked.connect(self.banner.hide)
        banner_layout = QHBoxLayout(self.banner)
        banner_layout.addWidget(self.banner_text, 1)
        banner_layout.addWidget(banner_close)
        self.banner.hide()
        self.legend = TokenLegend(self)
        self.composer = Composer(self)
        self.send_button = QPushButton(self.tr("Send"), self)
        composer_row = QHBoxLayout()
        composer_row.addWidget(self.composer, 1)
        composer_row.addWidget(self.send_button, 0, Qt.AlignmentFlag.AlignBottom)

        chat = QWidget(self)
        column = QVBoxLayout(chat)
        column.addWidget(self.system_prompt)
        column.addWidget(self.banner)
        column.addWidget(self.chat_view, 1)
        column.addWidget(self.legend)
        column.addLayout(composer_row)
        self.splitter = QSplitter(Qt.Orientation.Horizontal, self)
        self.splitter.addWidget(self.conversation_list)
        self.splitter.addWidget(chat)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([200, 800])
        self.setCentralWidget(self.splitter)

        self.model_label = QLabel(self.tr("No model loaded"), self)
        self.progress = QProgressBar(self)
        self.progress.setMaximumWidth(220)
        self.progress.hide()
        self.statusBar().addWidget(self.model_label, 1)
        self.statusBar().addPermanentWidget(self.progress)
        self.resize(1100, 760)

    def _connect(self) -> None:
        w = self._worker
        w.load_started.connect(self._on_load_started)
        w.load_progress.connect(self._on_load_progress)
        w.loaded.connect(self._on_loaded)
        w.load_failed.connect(self._on_load_failed)
        c = self.controller
        c.busy_changed.connect(self._on_busy_changed)
        c.error.connect(self._on_error)
        c.comparison_ready.connect(self._on_comparison_ready)
        c.conversation_saved.connect(self._on_conversation_saved)
        self.new_chat_action.triggered.connect(self._on_new_chat)
        self.settings_action.triggered.connect(self._on_open_settings)
        self.speculation_switch.toggled.connect(self._on_speculation_toggled)
        self.show_rejected.toggled.connect(self._on_show_rejected_toggled)
        self.composer.submitted.connect(self._on_send)
        self.send_button.clicked.connect(self._on_send_or_stop)
        self.system_prompt.editingFinished.connect(self._on_system_prompt_edited)
        self.conversation_list.itemClicked.connect(self._on_conversation_clicked)
        self.conversation_list.customContextMenuRequested.connect(self._on_conversation_menu)
        QShortcut(QKeySequence(Qt.Key.Key_Escape), self, activated=self._on_stop)

    def _restore(self) -> None:
        for key, restore in (("main", self.restoreGeometry), ("main_state", self.restoreState)):
            value = self._settings_store.geometry(key)
            if value is not None:
                restore(value)
        splitter = self._settings_store.geometry("main_splitter")
        if splitter is not None:
            self.splitter.restoreState(splitter)
        self._mirror_settings()
        saved = self._conversations.load_all()
        self._fill_list(saved)
        if saved:
            self._open(saved[0])

    # ---- public API (also used by tests and tools) ------------------------------------
    @property
    def worker(self) -> EngineWorker:
        return self._worker

    def start(self) -> None:
        """Load the configured models in the background (call after ``show()``)."""
        self._request_load(self.settings.models)

    def apply_settings(self, settings: AppSettings) -> None:
        """Save ``settings``; they apply to the next message. Model changes reload now."""
        self.settings = settings
        self._settings_store.save(settings)
        self._mirror_settings()
        if settings.models != self._requested_models:
            self._request_load(settings.models)

    def send_message(self, text: str) -> bool:
        try:
            config = self.settings.generation_config()
        except SpecChatError as e:
            self._on_error(str(e))
            return False
        if self.system_prompt.text() != self.controller.conversation.system_prompt:
            self._on_system_prompt_edited()
        return self.controller.send(text, config)

    def show_error(self, text: str) -> None:
        self.banner_text.setText(text)
        self.banner.show()

    # ---- handlers ----------------------------------------------------------------------
    def _on_send(self) -> None:
        if self.send_message(self.composer.toPlainText()):
            self.composer.clear()

    def _on_send_or_stop(self) -> None:
        if self.controller.busy:
            self._on_stop()
        else:
            self._on_send()

    def _on_stop(self) -> None:
        self.controller.stop()

    def _on_busy_changed(self, busy: bool) -> None:
        self.send_button.setText(self.tr("Stop") if busy else self.tr("Send"))
        self.send_button.setToolTip(self.tr("Stop generating (Esc)") if busy else self.tr("Send (Enter)"))
        self.conversation_list.setEnabled(not busy)
        self.new_chat_action.setEnabled(not busy)

    def _on_error(self, text: str) -> None:
        self.show_error(text)

    def _on_speculation_toggled(self, checked: bool) -> None:
        if checked != self.settings.speculative:
            self.apply_settings(replace(self.settings, speculative=checked))

    def _on_show_rejected_toggled(self, checked: bool) -> None:
        self.chat_view.set_show_rejected(checked)
        self.legend.set_rejected_visible(checked)
        if checked != self.settings.show_rejected:
            self.apply_settings(replace(self.settings, show_rejected=checked))

    def _on_open_settings(self) -> None:
        dialog = SettingsDialog(self.settings, self)
        self._remember_geometry(dialog, "settings_dialog")
        dialog.accepted.connect(lambda: self.apply_settings(dialog.settings()))
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()

    def _on_load_started(self, target: str) -> None:
        name = self.tr("the bundled model") if target == "default" else target
        self.model_label.setText(self.tr("Loading {0}…").format(name))
        self.progress.setRange(0, 0)
        self.progress.show()
        self.controller.model_ready = self._loaded_models is not None

    def _on_load_progress(self, message: str, fraction: float) -> None:
        self.model_label.setText(message)
        if fraction < 0:
            self.progress.setRange(0, 0)
        else:
            self.progress.setRange(0, 100)
            self.progress.setValue(round(fraction * 100))

    def _on_loaded(self, target: str, drafter: str) -> None:
        self.progress.hide()
        self._loaded_models = self._requested_models
        self.controller.drafter_name = drafter
        self.controller.model_ready = True
        self.model_label.setText(self.tr("Target: {0} · Drafter: {1}").format(target, drafter))

    def _on_load_failed(self, message: str) -> None:
        self.progress.hide()
        text = self.tr("Could not load the models: {0}").format(message)
        if self._loaded_models is not None:
            text += " " + self.tr("Still using the models loaded before.")
            self._requested_models = self._loaded_models
            self.settings = replace(self.settings, models=self._loaded_models)
            self._settings_store.save(self.settings)
            self.controller.model_ready = True
        self.model_label.setText(self.tr("Model load failed"))
        self.show_error(text)

    def _on_comparison_ready(self, outcome: CompareOutcome) -> None:
        if self.compare_dialog is not None:
            self.compare_dialog.close()
        dialog = CompareDialog(
            outcome.speculative, outcome.speculative_records, outcome.baseline, outcome.comparison, self
        )
        self._remember_geometry(dialog, "compare_dialog")
        self.compare_dialog = dialog
        dialog.show()

    def _on_new_chat(self) -> None:
        if self.controller.busy:
            return
        if self.controller.conversation.messages:
            self._open(Conversation(system_prompt=self.system_prompt.text()))
        self.composer.setFocus()

    def _on_system_prompt_edited(self) -> None:
        self.controller.conversation.system_prompt = self.system_prompt.text()
        self.controller.save()

    def _on_conversation_saved(self, conversation: Conversation) -> None:
        self._known[conversation.id] = conversation
        self._fill_list(list(self._known.values()))

    def _on_conversation_clicked(self, item: QListWidgetItem) -> None:
        conversation = item.data(Qt.ItemDataRole.UserRole)
        if not self.controller.busy and conversation.id != self.controller.conversation.id:
            self._open(conversation)

    def _on_conversation_menu(self, pos: QPoint) -> None:
        item = self.conversation_list.itemAt(pos)
        if item is None or self.controller.busy:
            return
        menu = QMenu(self)
        delete = menu.addAction(self.tr("Delete conversation"))
        if menu.exec(self.conversation_list.mapToGlobal(pos)) is delete:
            conversation = item.data(Qt.ItemDataRole.UserRole)
            self._conversations.delete(conversation.id)
            self._known.pop(conversation.id, None)
            if conversation.id == self.controller.conversation.id:
                self._open(Conversation())
            self._fill_list(list(self._known.values()))

    # ---- helpers -----------------------------------------------------------------------
    def _request_load(self, models: ModelSettings) -> None:
        self._requested_models = models
        self._on_load_started(models.target_source)  # at once, not when the thread gets to it
        self._worker.request_load(
            models.target_source,
            models.draft_source,
            device=models.device,
            dtype=models.dtype,
            draft_dtype=models.draft_dtype_option,
            allow_pickle=models.allow_pickle,
            cpu_kernels=models.cpu_kernels,
            threads=models.threads_option,
        )

    def _mirror_settings(self) -> None:
        for box, value in (
            (self.speculation_switch, self.settings.speculative),
            (self.show_rejected, self.settings.show_rejected),
        ):
            box.blockSignals(True)
            box.setChecked(value)
            box.blockSignals(False)
        self.chat_view.set_show_rejected(self.settings.show_rejected)
        self.legend.set_rejected_visible(self.settings.show_rejected)

    def _open(self, conversation: Conversation) -> None:
        self.controller.show(conversation)
        self.system_prompt.setText(conversation.system_prompt)
        for row in range(self.conversation_list.count()):
            item = self.conversation_list.item(row)
            item.setSelected(item.data(Qt.ItemDataRole.UserRole).id == conversation.id)

    def _fill_list(self, conversations: list[Conversation]) -> None:
        self._known = {c.id: c for c in conversations}
        self.conversation_list.clear()
        current = self.controller.conversation.id
        for conversation in sorted(conversations, key=lambda c: c.updated, reverse=True):
            item = QListWidgetItem(conversation.title or self.tr("New chat"))
            item.setData(Qt.ItemDataRole.UserRole, conversation)
            item.setToolTip(conversation.title)
            self.conversation_list.addItem(item)
            item.setSelected(conversation.id == current)

    def _remember_geometry(self, dialog: QDialog, key: str) -> None:
        saved = self._settings_store.geometry(key)
        if saved is not None:
            dialog.restoreGeometry(saved)
        dialog.finished.connect(lambda _result: self._settings_store.set_geometry(key, dialog.saveGeometry()))

    def closeEvent(self, event: QCloseEvent) -> None:
        """Stop generating, keep the partial answer, free the engine thread (bounded wait)."""
        self.controller.stop()
        self._settings_store.set_geometry("main", self.saveGeometry())
        self._settings_store.set_geometry("main_state", self.saveState())
        self._settings_store.set_geometry("main_splitter", self.splitter.saveState())
        self._worker.shutdown(SHUTDOWN_TIMEOUT_S)
        self.controller.save()
        self.controller.flush()
        super().closeEvent(event)
        self.closed.emit()
