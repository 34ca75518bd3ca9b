"""The main window: conversations on the left, the chat in the middle, the speculation
switch and settings in the tool bar, model loading in the status bar."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QApplication,
    QCheckBox,
    QDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidgetItem,
    QMainWindow,
    QProgressBar,
    QPushButton,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.engine.config import DRAFT_MODEL, LOOKUP, SUFFIX, GenerationConfig
from app.engine.errors import SpecChatError
from app.ui.chat.chat_controller import ChatController, CompareOutcome
from app.ui.chat.chat_view import ChatView
from app.ui.chat.composer import Composer
from app.ui.chat.context_meter import ContextMeter
from app.ui.chat.conversation_list import ConversationPanel
from app.ui.chat.conversation_loader import ConversationLoader
from app.ui.common.conversation import Conversation, Message
from app.ui.common.engine_words import drafter_label, loading_message, model_label
from app.ui.common.formatting import byte_size, decimal
from app.ui.common.storage import ConversationStore, SkippedFile
from app.ui.common.token_style import TokenLegend
from app.ui.common.tooltips import install_tooltip_wrapping
from app.ui.compare.compare_view import CompareDialog
from app.ui.experiment.sweep_view import SweepDialog
from app.ui.models.models_dialog import ModelsDialog
from app.ui.settings.settings_dialog import SettingsDialog
from app.ui.settings.store import AppSettings, ModelSettings, SettingsStore

if TYPE_CHECKING:
    from app.engine.analysis.sweep import SweepRow
    from app.engine.runners.cpu_probe import CpuProbe
    from app.worker import EngineWorker
    from app.worker.catalog_worker import CatalogWorker
    from app.worker.engine_worker import ComputePath, WeightsWords

SHUTDOWN_TIMEOUT_S = 1.5
MAX_SKIPPED_SHOWN = 3  # unreadable conversation files named in the start-up notice
NOTICE_MS = 10_000  # how long a confirmation stays in the status bar
AUTO_OPEN_MAX_BYTES = 8_000_000  # a larger latest conversation is not opened by itself at start


@dataclass(frozen=True)
class ModelsInUse:
    """What the engine is actually serving with (not what was last asked for)."""

    models: ModelSettings
    target: str  # the engine's name for it
    drafter: str
    path: ComputePath | None = None  # the target's dtype and kernels, when the engine says


@dataclass(frozen=True)
class LoadFailure:
    """The latest load request failed: what was asked for and why (shown in Settings)."""

    models: ModelSettings
    message: str


class MainWindow(QMainWindow):
    closed = Signal()

    def __init__(
        self, worker: EngineWorker, settings: SettingsStore, conversations: ConversationStore
    ) -> None:
        super().__init__()
        app = QApplication.instance()
        if isinstance(app, QApplication):
            install_tooltip_wrapping(app)  # before any widget sets its tooltip
        self.setWindowTitle(self.tr("SpecChat"))
        self._worker = worker
        self._settings_store = settings
        self._conversations = conversations
        self.settings = settings.load()
        self.models_in_use: ModelsInUse | None = None
        self.load_failure: LoadFailure | None = None
        self._requested_models: ModelSettings | None = None
        self._loads: dict[int, ModelSettings] = {}  # load id -> models, until answered
        self._latest_load = 0  # only its answer changes what the window shows
        self._running_load = 0  # the load the engine thread is working on
        self.compare_dialog: CompareDialog | None = None
        self.sweep_dialog: SweepDialog | None = None
        self._sweep_run = -1  # the experiment the dialog shows; -1: none
        self.devices: list[str] | None = None  # what this machine can run on, once the worker knows
        self.cpu: CpuProbe | None = None  # what this CPU prepacks, once the worker knows
        self._next_path: ComputePath | None = None  # sent by the worker just before ``loaded``
        self._banner_is_load_error = False  # a successful load clears it
        self.catalog: CatalogWorker | None = None  # the model library's thread (app/gui.py sets it)
        self.chat_view = ChatView(self)
        self.controller = ChatController(worker, self.chat_view, conversations, self)
        self.loader = ConversationLoader(conversations, self)  # saved conversations, off this thread
        self._to_open = ""  # a listed conversation to show once it is read
        self._asked_to_open = False  # clicked (opens whatever is shown), or the latest at start
        self._open_latest_once_read = False  # the latest could not be read: the next latest then
        self._unreadable: list[SkippedFile] = []  # reported once everything listed is read
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
        self.models_action = QAction(self.tr("Models…"), self)
        self.models_action.setToolTip(self.tr("The models on this computer, and which can draft for which"))
        self.speculation_switch = QCheckBox(self.tr("Speculation"), self)
        self.speculation_switch.setToolTip(self.tr("Draft tokens and verify them in one target pass"))
        self.show_rejected = QCheckBox(self.tr("Show rejected drafts"), self)
        self.show_rejected.setToolTip(
            self.tr("Also show, struck through, the guessed tokens the target model did not keep")
        )
        toolbar.addAction(self.new_chat_action)
        toolbar.addSeparator()
        toolbar.addWidget(self.speculation_switch)
        toolbar.addWidget(self.show_rejected)
        toolbar.addSeparator()
        toolbar.addAction(self.models_action)
        toolbar.addAction(self.settings_action)

        self.conversation_panel = ConversationPanel(self._conversations, self)
        self.conversation_list = self.conversation_panel.list
        self.system_prompt = QLineEdit(self)
        self.system_prompt.setPlaceholderText(self.tr("System prompt (optional)"))
        self.system_prompt.setToolTip(
            self.tr("Instructions the model reads before the conversation, such as: Answer briefly.")
        )
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
        self.context_meter = ContextMeter(self)
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
        column.addWidget(self.context_meter)
        column.addLayout(composer_row)
        self.splitter = QSplitter(Qt.Orientation.Horizontal, self)
        self.splitter.addWidget(self.conversation_panel)
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
        w.context_length_known.connect(self.context_meter.set_limit)
        w.devices_found.connect(self._on_devices_found)
        w.cpu_probed.connect(self._on_cpu_probed)
        w.compute_path_known.connect(self._on_compute_path_known)
        c = self.controller
        c.busy_changed.connect(self._on_busy_changed)
        c.error.connect(self._on_error)
        c.comparison_ready.connect(self._on_comparison_ready)
        c.conversation_saved.connect(self._on_conversation_saved)
        c.context_changed.connect(self.context_meter.set_used)
        self.chat_view.regenerate_requested.connect(self.regenerate)
        self.chat_view.edit_requested.connect(self.edit_and_resend)
        self.chat_view.continue_requested.connect(self.controller.continue_answer)
        self.chat_view.sweep_requested.connect(self.open_sweep)
        w.sweep_row.connect(self._on_sweep_row)
        w.sweep_done.connect(self._on_sweep_done)
        self.conversation_panel.deleted.connect(self._on_conversation_deleted)
        self.conversation_panel.restored.connect(self._on_conversation_restored)
        self.conversation_panel.error.connect(self.show_error)
        self.conversation_panel.notice.connect(lambda text: self.statusBar().showMessage(text, NOTICE_MS))
        self.loader.loaded.connect(self._on_conversation_read)
        self.loader.failed.connect(self._on_conversation_unreadable)
        self.new_chat_action.triggered.connect(self._on_new_chat)
        self.settings_action.triggered.connect(self._on_open_settings)
        self.models_action.triggered.connect(self._on_open_models)
        self.speculation_switch.toggled.connect(self._on_speculation_toggled)
        self.show_rejected.toggled.connect(self._on_show_rejected_toggled)
        self.composer.submitted.connect(self._on_send)
        self.send_button.clicked.connect(self._on_send_or_stop)
        self.system_prompt.editingFinished.connect(self._on_system_prompt_edited)
        self.conversation_list.itemClicked.connect(self._on_conversation_clicked)
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
        listed = self._conversations.list_headers()  # file headers only: fast whatever the sizes
        self._unreadable = list(self._conversations.skipped)
        self.conversation_panel.set_conversations(listed)
        if listed and listed[0].size <= AUTO_OPEN_MAX_BYTES:
            self._to_open = listed[0].id  # the latest, shown once read
        elif listed:  # drawing a huge conversation takes a while: only when asked for
            self.statusBar().showMessage(
                self.tr("The latest conversation is large ({0}): click it in the list to open it.").format(
                    byte_size(listed[0].size)
                ),
                NOTICE_MS,
            )
        self.loader.read([h.id for h in listed])  # newest first; search then covers messages
        if not listed:
            self._hand_history()
            self._report_skipped_files()

    @property
    def conversations_read(self) -> bool:
        """Every listed conversation's content has been read (or found unreadable)."""
        return not self.loader.pending

    # ---- public API (also used by tests and tools) ------------------------------------
    @property
    def worker(self) -> EngineWorker:
        return self._worker

    def start(self) -> None:
        """Load the configured models in the background (call after ``show()``)."""
        self._request_load(self.settings.models)

    def apply_settings(self, settings: AppSettings) -> None:
        """Save ``settings``; they apply to the next message. Model changes reload now."""
        remembered = self.settings.remember_conversations
        self.settings = settings
        self._settings_store.save(settings)
        self._mirror_settings()
        if settings.remember_conversations != remembered:
            self._hand_history()
        if settings.models != self._requested_models:
            self._request_load(settings.models)

    def send_message(self, text: str) -> bool:
        config = self._generation_config()
        if config is None:
            return False
        if self.system_prompt.text() != self.controller.conversation.system_prompt:
            self._on_system_prompt_edited()
        return self.controller.send(text, config)

    def regenerate(self, answer: Message) -> bool:
        """Answer ``answer``'s question again with the current settings."""
        config = self._generation_config()
        return config is not None and self.controller.regenerate(answer, config)

    def edit_and_resend(self, message: Message, text: str) -> bool:
        """Replace the user's ``message`` with ``text`` and answer it (later messages go)."""
        config = self._generation_config()
        return config is not None and self.controller.edit_and_resend(message, text, config)

    def show_error(self, text: str) -> None:
        self.banner_text.setText(text)
        self.banner.show()
        self._banner_is_load_error = False

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
        self.legend.set_speculation_visible(self.settings.speculative, checked)
        if checked != self.settings.show_rejected:
            self.apply_settings(replace(self.settings, show_rejected=checked))

    def _on_open_settings(self) -> None:
        self.open_settings()

    def open_settings(self) -> SettingsDialog:
        """The settings dialog, showing the models that failed to load with the reason."""
        failure = self.load_failure
        model_error = (
            failure.message if failure is not None and failure.models == self.settings.models else None
        )
        dialog = SettingsDialog(self.settings, self, model_error=model_error, devices=self.devices, cpu=self.cpu)
        self._remember_geometry(dialog, "settings_dialog")
        dialog.accepted.connect(lambda: self.apply_settings(dialog.settings()))
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        return dialog

    def _on_open_models(self) -> ModelsDialog | None:
        if self.catalog is None:  # set by the app (app/gui.py), which owns the worker threads
            self.show_error(self.tr("The model library is not available in this window."))
            return None
        dialog = ModelsDialog(self.catalog, self._settings_store, self.settings.models, self, self._running_forms())
        self._remember_geometry(dialog, "models_dialog")
        dialog.pair_chosen.connect(lambda models: self.apply_settings(replace(self.settings, models=models)))
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        return dialog

    def _on_load_started(self, _target: str, load_id: int) -> None:
        self._running_load = load_id

    def _on_load_progress(self, message: str, fraction: float) -> None:
        if self._running_load != self._latest_load:
            return  # an older request the newer one will replace
        self.model_label.setText(loading_message(message))
        if fraction < 0:
            self.progress.setRange(0, 0)
        else:
            self.progress.setRange(0, 100)
            self.progress.setValue(round(fraction * 100))

    def _on_loaded(self, target: str, drafter: str, load_id: int) -> None:
        models = self._loads.pop(load_id, None)
        if models is None:
            return  # not a request of this window
        path, self._next_path = self._next_path, None
        self.models_in_use = ModelsInUse(models, target, drafter, path)  # the engine serves these now
        self.controller.drafter_name = drafter
        self.controller.model_ready = True
        if load_id == self._latest_load:
            self.load_failure = None
            self.progress.hide()
            self._show_models()
            if self._banner_is_load_error:  # the models it complained about load now
                self.banner.hide()
                self._banner_is_load_error = False

    def _on_load_failed(self, message: str, load_id: int) -> None:
        models = self._loads.pop(load_id, None)
        if models is None or load_id != self._latest_load:
            return  # superseded: a newer request is what the person wants now
        self.load_failure = LoadFailure(models, message)  # the settings keep what was typed
        self.progress.hide()
        self._show_models()
        text = self.tr("Could not load the models: {0}").format(message)
        if self.models_in_use is not None:
            text += " " + self.tr("Still using the models loaded before.")
        self.show_error(text + " " + self.tr("Fix them in Settings."))
        self._banner_is_load_error = True

    def open_sweep(self, answer: Message) -> SweepDialog:
        """"Try drafters…" on ``answer``: the experiment dialog; Run starts it on the worker."""
        if self.sweep_dialog is not None:
            self.sweep_dialog.close()
        in_use = self.models_in_use
        draft = in_use.drafter if in_use is not None and in_use.drafter.startswith("draft model") else None
        available = [LOOKUP, SUFFIX] + ([DRAFT_MODEL] if draft else [])
        dialog = SweepDialog(available, draft.removeprefix("draft model: ") if draft else None, self)
        self._remember_geometry(dialog, "sweep_dialog")
        dialog.run_requested.connect(lambda drafters, ks: self._start_sweep(dialog, answer, drafters, ks))
        dialog.cancel_requested.connect(lambda: self._worker.cancel(self._sweep_run))
        dialog.finished.connect(lambda _result: self._worker.cancel(self._sweep_run))
        self.sweep_dialog = dialog
        dialog.show()
        return dialog

    def _start_sweep(self, dialog: SweepDialog, answer: Message, drafters: list[str], ks: list[int | None]) -> None:
        run_id = self.controller.sweep(answer, drafters, ks)
        if run_id is None:
            dialog.finish(error=self.tr("SpecChat is busy: wait for the current answer, then try again."))
            return
        self._sweep_run = run_id

    def _on_sweep_row(self, run_id: int, row: SweepRow) -> None:
        if run_id == self._sweep_run and self.sweep_dialog is not None:
            self.sweep_dialog.add_row(row)

    def _on_sweep_done(self, run_id: int, error: str, cancelled: bool) -> None:
        if run_id != self._sweep_run:
            return
        self._sweep_run = -1
        if self.sweep_dialog is not None:
            self.sweep_dialog.finish(error=error, cancelled=cancelled)

    def _on_comparison_ready(self, outcome: CompareOutcome) -> None:
        if self.compare_dialog is not None:
            self.compare_dialog.close()
        dialog = CompareDialog(outcome.report, outcome.speculative_records, self)
        self._remember_geometry(dialog, "compare_dialog")
        self.compare_dialog = dialog
        dialog.show()

    def _on_new_chat(self) -> None:
        if self.controller.busy:
            return
        self._to_open = ""  # a new chat, not the latest one still being read
        if self.controller.conversation.messages:
            self._open(Conversation(system_prompt=self.system_prompt.text()))
        self.composer.setFocus()

    def _on_system_prompt_edited(self) -> None:
        self.controller.conversation.system_prompt = self.system_prompt.text()
        self.controller.save()

    def _on_conversation_saved(self, conversation: Conversation) -> None:
        self.conversation_panel.upsert(conversation)

    def _on_conversation_clicked(self, item: QListWidgetItem) -> None:
        conversation = item.data(Qt.ItemDataRole.UserRole)
        if self.controller.busy or conversation.id == self.controller.conversation.id:
            return
        if isinstance(conversation, Conversation):
            self._to_open = ""  # the person chose this one: a pending open is void
            self._open(conversation)
        else:  # only its header is listed so far: read it first, on the reading thread
            self._to_open, self._asked_to_open = conversation.id, True
            self.statusBar().showMessage(self.tr("Opening “{0}”…").format(conversation.title or self.tr("New chat")))
            self.loader.first(conversation.id)

    def _on_conversation_read(self, conversation: Conversation) -> None:
        self.conversation_panel.upsert(conversation)
        if conversation.id == self._to_open:
            self._to_open = ""
            self.statusBar().clearMessage()
            unasked_over_a_chat = not self._asked_to_open and bool(self.controller.conversation.messages)
            if not self.controller.busy and not unasked_over_a_chat:
                self._open(conversation)
            else:
                self.conversation_panel.select(self.controller.conversation.id)
        if not self.loader.pending:
            self._after_reading()

    def _on_conversation_unreadable(self, conversation_id: str, reason: str) -> None:
        self.conversation_panel.remove(conversation_id)
        self._unreadable.append(SkippedFile(self._conversations.folder / f"{conversation_id}.json", reason))
        if conversation_id == self._to_open:
            self._to_open = ""
            self.statusBar().clearMessage()
            self._open_latest_once_read = not self._asked_to_open
        if not self.loader.pending:
            self._after_reading()

    def _after_reading(self) -> None:
        """Everything listed is read: name the unreadable files; if the latest conversation
        was one of them, show the latest that could be read (unless a chat is on screen)."""
        if self._open_latest_once_read and not self.controller.conversation.messages and not self.controller.busy:
            latest = self.conversation_panel.latest_id()
            conversation = next((c for c in self.conversation_panel.conversations if c.id == latest), None)
            if conversation is not None:
                self._open(conversation)
        self._open_latest_once_read = False
        self._hand_history()  # every saved conversation is read: the suffix drafter may learn from them
        self._report_skipped_files()

    def _on_conversation_deleted(self, conversation: Conversation) -> None:
        self._worker.forget_conversation(conversation.id)  # its file is gone: so is what was learned from it
        if conversation.id == self.controller.conversation.id:
            self._open(Conversation())

    def _on_conversation_restored(self, conversation: Conversation) -> None:
        if self.settings.remember_conversations:
            self._worker.remember_conversation(conversation.id, conversation.prompt())

    def _hand_history(self) -> None:
        """What the "earlier conversations" drafter may learn from: every saved conversation,
        oldest first (so the cap drops the oldest), or nothing when the setting is off."""
        on = self.settings.remember_conversations
        read = [c for c in self.conversation_panel.conversations if isinstance(c, Conversation)]
        saved = sorted(read, key=lambda c: c.updated) if on else []
        self._worker.set_history(on, [(c.id, c.prompt()) for c in saved if c.messages])

    def _on_devices_found(self, devices: list[str]) -> None:
        self.devices = list(devices)

    def _on_cpu_probed(self, cpu: CpuProbe) -> None:
        self.cpu = cpu

    def _on_compute_path_known(self, path: ComputePath) -> None:
        self._next_path = path

    # ---- helpers -----------------------------------------------------------------------
    def _generation_config(self) -> GenerationConfig | None:
        try:
            return self.settings.generation_config()
        except SpecChatError as e:
            self._on_error(str(e))
            return None

    def _request_load(self, models: ModelSettings) -> None:
        self._requested_models = models
        target = models.target_source
        name = self.tr("the bundled model") if target == "default" else target
        self.model_label.setText(self.tr("Loading {0}…").format(name))  # at once, not when the thread starts
        self.progress.setRange(0, 0)
        self.progress.show()
        self.controller.model_ready = self.models_in_use is not None
        self._latest_load = self._worker.request_load(
            target,
            models.draft_source,
            device=models.device,
            dtype=models.dtype,
            draft_dtype=models.draft_dtype_option,
            allow_pickle=models.allow_pickle,
            cpu_kernels=models.cpu_kernels,
            threads=models.threads_option,
            weights=models.weights_option,
        )
        self._loads[self._latest_load] = models

    def _show_models(self) -> None:
        """The status bar: the models actually answering, unless the latest load is running."""
        if self._latest_load in self._loads:
            return  # "Loading …" stays until the latest request is answered
        in_use = self.models_in_use
        if in_use is None:
            text = self.tr("No model loaded")
        elif self.settings.speculative:
            text = self.tr("Target: {0} · Drafter: {1}").format(
                model_label(in_use.target), drafter_label(in_use.drafter)
            )
        else:
            text = self.tr("Target: {0} · Speculation off").format(model_label(in_use.target))
        if in_use is not None and in_use.path is not None:
            text += " · " + self._path_text(in_use.path)
        if self.load_failure is not None:
            text += " · " + self.tr("the requested models could not be loaded (see Settings)")
        self.model_label.setText(text)
        self.model_label.setToolTip(in_use.path.note if in_use is not None and in_use.path is not None else "")

    def _path_text(self, path: ComputePath) -> str:
        """ "bf16 · oneDNN kernels", "bf16 weights, fp32 compute", "fp32 · stock kernels",
        "int4 (quantized by SpecChat) from GGUF · 0.15 GB · weight-only kernels"."""
        short = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}
        dtype, compute = short.get(path.dtype, path.dtype), short.get(path.compute, path.compute)
        if path.kernels == "weight-only" and path.form is not None:
            text = self.tr("{0} · weight-only kernels").format(self._form_text(path.form))
        elif path.kernels == "oneDNN" and path.compute != path.dtype:
            text = self.tr("{0} weights, {1} compute").format(dtype, compute)
        elif path.kernels == "oneDNN":
            text = self.tr("{0} · oneDNN kernels").format(dtype)
        elif path.kernels == "stock":
            text = self.tr("{0} · stock kernels").format(dtype)
        else:
            text = dtype
        if path.form is not None and path.form.measured:
            text += " " + self.tr("(auto: the fastest exact form here)")
        if path.draft_dtype:
            draft = short.get(path.draft_dtype, path.draft_dtype)
            if path.draft_measured and path.draft_step_ratio is not None:
                text += " · " + self.tr("draft {0} (measured cheapest: a step {1}× the next form's)").format(
                    draft, decimal(path.draft_step_ratio, 2)
                )
            else:
                text += " · " + self.tr("draft {0}").format(draft)
        return text

    def _running_forms(self) -> dict[str, str]:
        """Model source -> the form the loaded target and draft model run in (for the library)."""
        in_use = self.models_in_use
        if in_use is None or in_use.path is None:
            return {}
        running = {}
        models, path = in_use.models, in_use.path
        if path.form is not None:
            running[models.target_source] = self._form_text(path.form)
        draft = models.draft_source
        if path.draft_form is not None and draft not in (None, "lookup", "suffix"):
            running[str(draft)] = self._form_text(path.draft_form)
        return running

    def _form_text(self, form: WeightsWords) -> str:
        """ "int4 (quantized by SpecChat) from bf16 · 0.90 GB", "int4 from Q4_K · 0.90 GB"."""
        text = self.tr("{0} (quantized by SpecChat)").format(form.form) if form.by_specchat else form.form
        if form.origin:
            text = self.tr("{0} from {1}").format(text, form.origin)
        if form.size_bytes:
            size = form.size_bytes / 1e9
            text += " · " + self.tr("{0} GB").format(decimal(size, 2 if size < 1 else 1))
        return text

    def _mirror_settings(self) -> None:
        for box, value in (
            (self.speculation_switch, self.settings.speculative),
            (self.show_rejected, self.settings.show_rejected),
        ):
            box.blockSignals(True)
            box.setChecked(value)
            box.blockSignals(False)
        self.chat_view.set_show_rejected(self.settings.show_rejected)
        self.legend.set_speculation_visible(self.settings.speculative, self.settings.show_rejected)
        self._show_models()

    def _open(self, conversation: Conversation) -> None:
        self.controller.show(conversation)
        self.system_prompt.setText(conversation.system_prompt)
        self.conversation_panel.select(conversation.id)

    def _report_skipped_files(self) -> None:
        """Which saved conversations could not be read (they stay on disk): once everything
        listed has been read, and again if one more is found unreadable later."""
        skipped, self._unreadable = self._unreadable, []
        if not skipped:
            return
        heading = self.tr("{0} saved conversation(s) could not be read and were skipped; the files are kept:")
        lines = [heading.format(len(skipped))]
        lines += [f"{item.path} ({item.reason})" for item in skipped[:MAX_SKIPPED_SHOWN]]
        if len(skipped) > MAX_SKIPPED_SHOWN:
            lines.append(self.tr("… and {0} more").format(len(skipped) - MAX_SKIPPED_SHOWN))
        self.show_error("\n".join(lines))

    def _remember_geometry(self, dialog: QDialog, key: str) -> None:
        saved = self._settings_store.geometry(key)
        if saved is not None:
            dialog.restoreGeometry(saved)
        dialog.finished.connect(lambda _result: self._settings_store.set_geometry(key, dialog.saveGeometry()))

    def closeEvent(self, event: QCloseEvent) -> None:
        """Stop generating, keep the partial answer, free the engine thread (bounded wait)."""
        self.controller.stop()
        self.loader.stop()
        self._settings_store.set_geometry("main", self.saveGeometry())
        self._settings_store.set_geometry("main_state", self.saveState())
        self._settings_store.set_geometry("main_splitter", self.splitter.saveState())
        self._worker.shutdown(SHUTDOWN_TIMEOUT_S)
        self.controller.save()
        self.controller.flush()
        super().closeEvent(event)
        self.closed.emit()
