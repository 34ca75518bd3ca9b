"""The settings dialog: models, speculation, decoding. Produces a new ``AppSettings``;
settings apply to the next message, model changes reload in the background."""

from __future__ import annotations

from dataclasses import replace

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QRadioButton,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.engine.errors import InvalidSettingError

from .model_sources import cached_hub_models
from .settings import DEVICES, DRAFT_DTYPES, DTYPES, AppSettings, ModelSettings


class ModelSourcePicker(QWidget):
    """A source kind (bundled default, folder, .gguf file, HF cache...) and its path."""

    def __init__(self, draft: bool, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.kind = QComboBox(self)
        kinds = [
            ("default", self.tr("Bundled default (SmolLM2-135M-Instruct)")),
            ("folder", self.tr("Model folder…")),
            ("gguf", self.tr("GGUF file…")),
            ("hub", self.tr("Model in the local Hugging Face cache")),
        ]
        if draft:
            kinds = [("lookup", self.tr("Prompt lookup (no model)")), ("none", self.tr("None"))] + kinds
        for kind, label in kinds:
            self.kind.addItem(label, kind)
        self.path = QComboBox(self)
        self.path.setEditable(True)
        self.path.setMinimumContentsLength(32)
        self.browse = QPushButton(self.tr("Browse…"), self)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.kind)
        layout.addWidget(self.path, 1)
        layout.addWidget(self.browse)
        self.kind.currentIndexChanged.connect(self._on_kind_changed)
        self.browse.clicked.connect(self._on_browse)
        self._on_kind_changed()

    def value(self) -> tuple[str, str]:
        kind = str(self.kind.currentData())
        path = self.path.currentText().strip() if kind in ("folder", "gguf", "hub") else ""
        return kind, path

    def set_value(self, kind: str, path: str) -> None:
        index = self.kind.findData(kind)
        self.kind.setCurrentIndex(max(index, 0))
        self.path.setCurrentText(path)

    def _on_kind_changed(self) -> None:
        kind = self.kind.currentData()
        text = self.path.currentText()
        self.path.clear()
        if kind == "hub":
            models = cached_hub_models()
            self.path.addItems(models)
            self.path.setPlaceholderText(
                self.tr("ORG/NAME (no model found in the cache)") if not models else ""
            )
        self.path.setCurrentText(text if kind in ("folder", "gguf") else self.path.currentText())
        self.path.setVisible(kind in ("folder", "gguf", "hub"))
        self.browse.setVisible(kind in ("folder", "gguf"))

    def _on_browse(self) -> None:
        if self.kind.currentData() == "gguf":
            path, _ = QFileDialog.getOpenFileName(
                self, self.tr("Choose a GGUF file"), self.path.currentText(), self.tr("GGUF files (*.gguf)")
            )
        else:
            path = QFileDialog.getExistingDirectory(
                self, self.tr("Choose a model folder"), self.path.currentText()
            )
        if path:
            self.path.setCurrentText(path)


class SettingsDialog(QDialog):
    def __init__(self, settings: AppSettings, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(self.tr("Settings"))
        self._initial = settings
        tabs = QTabWidget(self)
        tabs.addTab(self._models_tab(), self.tr("Models"))
        tabs.addTab(self._speculation_tab(), self.tr("Speculation"))
        tabs.addTab(self._decoding_tab(), self.tr("Decoding"))
        self.error = QLabel(self)
        self.error.setStyleSheet("color: #c0392b;")
        self.error.setWordWrap(True)
        self.error.hide()
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok
            | QDialogButtonBox.StandardButton.Cancel
            | QDialogButtonBox.StandardButton.RestoreDefaults,
            self,
        )
        buttons.accepted.connect(self._on_accept)
        buttons.rejected.connect(self.reject)
        restore = buttons.button(QDialogButtonBox.StandardButton.RestoreDefaults)
        restore.clicked.connect(self._on_restore_defaults)
        layout = QVBoxLayout(self)
        layout.addWidget(tabs)
        layout.addWidget(QLabel(self.tr("Settings apply to the next message."), self))
        layout.addWidget(self.error)
        layout.addWidget(buttons)
        self._show(settings)

    # ---- tabs --------------------------------------------------------------------------
    def _models_tab(self) -> QWidget:
        page = QWidget(self)
        form = QFormLayout(page)
        self.target = ModelSourcePicker(draft=False, parent=page)
        self.draft = ModelSourcePicker(draft=True, parent=page)
        self.device = QComboBox(page)
        self.device.addItems(list(DEVICES))
        self.dtype = QComboBox(page)
        self.dtype.addItems(list(DTYPES))
        self.draft_dtype = QComboBox(page)
        self.draft_dtype.addItem(self.tr("same as target"), DRAFT_DTYPES[0])
        for option in DRAFT_DTYPES[1:]:
            self.draft_dtype.addItem(option, option)
        self.allow_pickle = QCheckBox(self.tr("Allow pickle checkpoints (can run arbitrary code)"), page)
        form.addRow(self.tr("Target model:"), self.target)
        form.addRow(self.tr("Draft source:"), self.draft)
        form.addRow(self.tr("Device:"), self.device)
        form.addRow(self.tr("Data type:"), self.dtype)
        form.addRow(self.tr("Draft data type:"), self.draft_dtype)
        form.addRow("", self.allow_pickle)
        note = QLabel(self.tr("Changing a model reloads it in the background; the chat stays usable."), page)
        note.setWordWrap(True)
        form.addRow(note)
        return page

    def _speculation_tab(self) -> QWidget:
        page = QWidget(self)
        form = QFormLayout(page)
        self.speculative = QCheckBox(self.tr("Use speculative decoding"), page)
        self.k = _spin(page, 1, 64)
        self.auto_k = QCheckBox(self.tr("Choose k automatically (at most k; 0 when drafting does not pay)"), page)
        self.adaptive_k = QCheckBox(
            self.tr("Adapt the draft length (grow on success, shrink on rejection)"), page
        )
        self.k_max = _spin(page, 1, 64)
        self.confidence = _double(page, 0.0, 0.99, 0.05, 2)
        form.addRow("", self.speculative)
        form.addRow(self.tr("Draft length k:"), self.k)
        form.addRow("", self.auto_k)
        form.addRow("", self.adaptive_k)
        form.addRow(self.tr("Largest adaptive k:"), self.k_max)
        form.addRow(self.tr("Confidence threshold:"), self.confidence)
        note = QLabel(
            self.tr(
                "A draft model stops drafting when its own probability falls below the threshold (0: off)."
            ),
            page,
        )
        note.setWordWrap(True)
        form.addRow(note)
        return page

    def _decoding_tab(self) -> QWidget:
        page = QWidget(self)
        form = QFormLayout(page)
        self.greedy = QRadioButton(self.tr("Greedy (always the most likely token)"), page)
        self.sampling = QRadioButton(self.tr("Sampling"), page)
        self.temperature = _double(page, 0.01, 5.0, 0.05, 2)
        self.top_p = _double(page, 0.01, 1.0, 0.05, 2)
        self.top_k = _spin(page, 0, 100000)
        self.seed = _spin(page, 0, 2**31 - 1)
        self.sampling_mode = QComboBox(page)
        self.sampling_mode.addItem(self.tr("Standard (same distribution as the target)"), "standard")
        self.sampling_mode.addItem(
            self.tr("Seed-invariant (same text per seed, with or without speculation)"), "seed-invariant"
        )
        self.max_new_tokens = _spin(page, 1, 32768)
        form.addRow(self.greedy)
        form.addRow(self.sampling)
        form.addRow(self.tr("Temperature:"), self.temperature)
        form.addRow(self.tr("Top-p:"), self.top_p)
        form.addRow(self.tr("Top-k (0: off):"), self.top_k)
        form.addRow(self.tr("Seed:"), self.seed)
        form.addRow(self.tr("Sampling mode:"), self.sampling_mode)
        form.addRow(self.tr("Max new tokens:"), self.max_new_tokens)
        self.sampling.toggled.connect(self._on_sampling_toggled)
        return page

    # ---- values ------------------------------------------------------------------------
    def _show(self, s: AppSettings) -> None:
        m = s.models
        self.target.set_value(m.target_kind, m.target_path)
        self.draft.set_value(m.draft_kind, m.draft_path)
        self.device.setCurrentText(m.device)
        self.dtype.setCurrentText(m.dtype)
        self.draft_dtype.setCurrentIndex(max(self.draft_dtype.findData(m.draft_dtype), 0))
        self.allow_pickle.setChecked(m.allow_pickle)
        self.speculative.setChecked(s.speculative)
        self.k.setValue(s.k)
        self.auto_k.setChecked(s.auto_k)
        self.adaptive_k.setChecked(s.adaptive_k)
        self.k_max.setValue(s.k_max)
        self.confidence.setValue(s.confidence_threshold)
        (self.sampling if s.sampling else self.greedy).setChecked(True)
        self.temperature.setValue(s.temperature)
        self.top_p.setValue(s.top_p)
        self.top_k.setValue(s.top_k)
        self.seed.setValue(s.seed)
        self.sampling_mode.setCurrentIndex(max(self.sampling_mode.findData(s.sampling_mode), 0))
        self.max_new_tokens.setValue(s.max_new_tokens)
        self._on_sampling_toggled(s.sampling)

    def settings(self) -> AppSettings:
        target_kind, target_path = self.target.value()
        draft_kind, draft_path = self.draft.value()
        models = ModelSettings(
            target_kind=target_kind,  # type: ignore[arg-type]
            target_path=target_path,
            draft_kind=draft_kind,  # type: ignore[arg-type]
            draft_path=draft_path,
            device=self.device.currentText(),
            dtype=self.dtype.currentText(),
            draft_dtype=self.draft_dtype.currentData(),
            allow_pickle=self.allow_pickle.isChecked(),
        )
        return replace(
            self._initial,
            models=models,
            speculative=self.speculative.isChecked(),
            k=self.k.value(),
            auto_k=self.auto_k.isChecked(),
            adaptive_k=self.adaptive_k.isChecked(),
            k_max=self.k_max.value(),
            confidence_threshold=self.confidence.value(),
            sampling=self.sampling.isChecked(),
            temperature=self.temperature.value(),
            top_p=self.top_p.value(),
            top_k=self.top_k.value(),
            seed=self.seed.value(),
            sampling_mode=str(self.sampling_mode.currentData()),
            max_new_tokens=self.max_new_tokens.value(),
        )

    def _problem(self, s: AppSettings) -> str | None:
        for label, (kind, path) in (
            (self.tr("target model"), (s.models.target_kind, s.models.target_path)),
            (self.tr("draft source"), (s.models.draft_kind, s.models.draft_path)),
        ):
            if kind in ("folder", "gguf", "hub") and not path:
                return self.tr("Choose a path or model id for the {0}.").format(label)
        try:
            s.generation_config()
        except InvalidSettingError as e:
            return str(e)
        return None

    def _on_accept(self) -> None:
        problem = self._problem(self.settings())
        self.error.setText(problem or "")
        self.error.setVisible(problem is not None)
        if problem is None:
            self.accept()

    def _on_restore_defaults(self) -> None:
        self._show(replace(AppSettings(), show_rejected=self._initial.show_rejected))

    def _on_sampling_toggled(self, sampling: bool) -> None:
        for widget in (self.temperature, self.top_p, self.top_k, self.seed, self.sampling_mode):
            widget.setEnabled(sampling)


def _spin(parent: QWidget, low: int, high: int) -> QSpinBox:
    box = QSpinBox(parent)
    box.setRange(low, high)
    return box


def _double(parent: QWidget, low: float, high: float, step: float, decimals: int) -> QDoubleSpinBox:
    box = QDoubleSpinBox(parent)
    box.setRange(low, high)
    box.setSingleStep(step)
    box.setDecimals(decimals)
    return box
