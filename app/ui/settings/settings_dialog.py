"""The settings dialog: models, speculation, decoding. Produces a new ``AppSettings``;
settings apply to the next message, model changes reload in the background."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
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

from app.engine.config import MAX_TEMPERATURE, available_cpus
from app.engine.errors import InvalidSettingError
from app.ui.models.model_sources import cached_hub_models
from app.ui.settings.server_settings import ServerSettingsPanel
from app.ui.settings.store import DEVICES, DRAFT_DTYPES, DTYPES, WEIGHTS, AppSettings, ModelSettings

if TYPE_CHECKING:
    from app.engine.runners.cpu_probe import CpuProbe
    from app.worker.server_probe import ServerProbe


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
            kinds = [
                ("lookup", self.tr("Prompt lookup (no model)")),
                ("suffix", self.tr("Earlier conversations + prompt lookup (no model)")),
                ("none", self.tr("None")),
            ] + kinds
        kind_tips = {
            "lookup": self.tr(
                "No second model: guesses the next words by copying what followed the same words "
                "earlier in the conversation. Costs nothing; best when the answer repeats text or code."
            ),
            "suffix": self.tr(
                "No second model: copies what followed the same words in this conversation or in an "
                "earlier one (every saved chat, the answers being regenerated or compared). Costs "
                "nothing; best when questions, answers or code come back."
            ),
            "none": self.tr("No drafting: the target model writes one token at a time."),
            "default": self.tr("The small model that comes with SpecChat."),
            "folder": self.tr("A folder holding a Hugging Face model (config.json and its weights)."),
            "gguf": self.tr("A single .gguf model file, as used by llama.cpp."),
            "hub": self.tr("A model already downloaded with Hugging Face tools; nothing is downloaded."),
        }
        for kind, label in kinds:
            self.kind.addItem(label, kind)
            self.kind.setItemData(self.kind.count() - 1, kind_tips[kind], Qt.ItemDataRole.ToolTipRole)
        self.kind.setToolTip(
            self.tr(
                "What guesses tokens ahead for the target model to check. Prompt lookup copies from the "
                "conversation; a small model of the same family guesses like the target. The answer is "
                "the same either way: only the speed changes."
            )
            if draft
            else self.tr("The model that writes the answers.")
        )
        self.path = QComboBox(self)
        self.path.setEditable(True)
        self.path.setMinimumContentsLength(32)
        self.path.setToolTip(self.tr("The model folder, the .gguf file, or the ORG/NAME id in the cache."))
        self.browse = QPushButton(self.tr("Browse…"), self)
        self.browse.setToolTip(self.tr("Pick the folder or file on this computer."))
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
    def __init__(
        self,
        settings: AppSettings,
        parent: QWidget | None = None,
        model_error: str | None = None,
        devices: list[str] | None = None,
        cpu: CpuProbe | None = None,
        server_probe: ServerProbe | None = None,
    ) -> None:
        """``model_error``: why ``settings.models`` could not be loaded, shown beside them;
        ``devices``: the worker's probe, only what this machine has; ``cpu``: the worker's CPU
        probe, which says what bfloat16 costs or gains here; ``server_probe``: lists a server's
        models off the GUI thread."""
        super().__init__(parent)
        self._devices = list(devices or DEVICES)  # the worker's probe: only what this machine has
        self._cpu = cpu
        self.setWindowTitle(self.tr("Settings"))
        self._initial = settings
        tabs = QTabWidget(self)
        tabs.addTab(self._models_tab(), self.tr("Models"))
        self.server = ServerSettingsPanel(server_probe, self)
        tabs.addTab(self.server, self.tr("Server"))
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
        layout.addLayout(self._language_row())
        layout.addWidget(self.error)
        layout.addWidget(buttons)
        self._show(settings)
        self._show_model_error(model_error)
        self._say_what_was_brought_into_range(settings)

    def _say_what_was_brought_into_range(self, saved: AppSettings) -> None:
        """A saved value outside what these fields allow (256 threads on a 2-CPU computer, a
        temperature of 5 from an older version) is shown brought into range, and said so."""
        shown = self.settings()
        pairs = [(self.tr("CPU threads"), saved.models.cpu_threads, shown.models.cpu_threads)]
        pairs += [
            (label, getattr(saved, name), getattr(shown, name))
            for label, name in (
                (self.tr("temperature"), "temperature"),
                (self.tr("max new tokens"), "max_new_tokens"),
                (self.tr("k"), "k"),
                (self.tr("largest adaptive k"), "k_max"),
                (self.tr("repetition penalty"), "repetition_penalty"),
            )
        ]
        changed = [f"{label} {before:g} → {after:g}" for label, before, after in pairs if abs(before - after) > 1e-9]
        if changed:
            self.error.setText(
                self.tr("Saved values outside what this computer or these settings allow were brought into range: {0}.")
                .format(", ".join(changed))
            )
            self.error.show()

    def _bf16_on_this_cpu(self) -> str:
        """What bfloat16 costs or gains on this CPU, from the worker's probe ("" before it)."""
        cpu = self._cpu
        if cpu is None:
            return ""
        if cpu.bf16_packed:
            return self.tr(
                "On this CPU ({0}) bfloat16 runs the fast kernels in bf16: half the memory of float32 "
                "and faster, with answers slightly different from float32's."
            ).format(cpu.capability)
        if cpu.can_pack("float32"):
            return self.tr(
                "On this CPU ({0}) bfloat16 gains nothing: it has no bf16 matrix instructions, so the "
                "weights are computed in fp32, as fast and about as large as float32."
            ).format(cpu.capability)
        return self.tr(
            "On this CPU ({0}) the fast kernels cannot run: bfloat16 halves the memory but runs on "
            "slow stock kernels."
        ).format(cpu.capability)

    # ---- tabs --------------------------------------------------------------------------
    def _models_tab(self) -> QWidget:
        page = QWidget(self)
        form = QFormLayout(page)
        self.target = ModelSourcePicker(draft=False, parent=page)
        self.draft = ModelSourcePicker(draft=True, parent=page)
        self.device = QComboBox(page)
        for device in self._devices:
            self.device.addItem(device, device)
        self.dtype = QComboBox(page)
        self.dtype.addItems(list(DTYPES))
        self.weights = QComboBox(page)
        self.weights.addItem(self.tr("auto (the fastest exact form, measured at load)"), WEIGHTS[0])
        self.weights.addItem(self.tr("int4 (weight-only, smallest)"), "int4")
        self.weights.addItem(self.tr("int8 (weight-only)"), "int8")
        self.weights.addItem("bf16", "bf16")
        self.weights.addItem("fp32", "fp32")
        self.weights.setToolTip(
            self.tr(
                "The form the target's weights are computed in. int4 and int8 keep the weights quantized "
                "(a float model is quantized by SpecChat at load) and compute the rest in bf16; bf16 and "
                "fp32 keep them as floats. Every form offered here is exact: a verified block gives the "
                "same logits as one-token decoding, so speculation never changes the answer. auto times "
                "the forms at load and keeps the fastest (the status bar says which). With auto, a data "
                "type other than auto decides instead."
            )
        )
        self.draft_dtype = QComboBox(page)
        self.draft_dtype.addItem(self.tr("auto (the cheapest draft step, measured at load)"), DRAFT_DTYPES[0])
        self.draft_dtype.addItem(self.tr("same as target"), DRAFT_DTYPES[1])
        for option in DRAFT_DTYPES[2:]:
            self.draft_dtype.addItem(option, option)
        self.allow_pickle = QCheckBox(self.tr("Allow pickle checkpoints (can run arbitrary code)"), page)
        self.device.setToolTip(
            self.tr(
                "Where the models run. Only what this computer has is listed; auto picks a GPU if "
                "there is one."
            )
        )
        dtype_help = self.tr(
            "How precisely the weights are held in memory. auto: the usual choice for the device; "
            "float16 and bfloat16 use half the memory of float32."
        )
        bf16_help = self._bf16_on_this_cpu()
        self.dtype.setToolTip(dtype_help + (" " + bf16_help if bf16_help else ""))
        if bf16_help:
            self.dtype.setItemData(self.dtype.findText("bfloat16"), bf16_help, Qt.ItemDataRole.ToolTipRole)
        self.draft_dtype.setToolTip(
            self.tr(
                "The draft model's weights form. auto: on the CPU, the draft is built in each exact form "
                "(int4, int8, bf16, fp32), a few draft steps of each are timed, and the cheapest is kept "
                "(the status bar says which). int4 and int8 make the draft smaller and usually faster; "
                "the answer does not change, because the target checks every drafted token."
            )
        )
        self.allow_pickle.setToolTip(
            self.tr(
                "Old .bin and .pt checkpoints are Python pickles, which can run code when opened. "
                "Only tick this for files you trust; .safetensors and .gguf files never need it."
            )
        )
        self.model_error = QLabel(page)  # why the models shown could not be loaded
        self.model_error.setStyleSheet("color: #c0392b;")
        self.model_error.setWordWrap(True)
        self.model_error.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        form.addRow(self.model_error)
        form.addRow(self.tr("Target model:"), self.target)
        form.addRow(self.tr("Draft source:"), self.draft)
        form.addRow(
            "",
            _help_line(
                self.tr(
                    "The drafter guesses a few tokens ahead and the target model checks them all at once. "
                    "Prompt lookup needs no second model: it copies words from the conversation."
                ),
                page,
            ),
        )
        form.addRow(self.tr("Device:"), self.device)
        form.addRow(self.tr("Data type:"), self.dtype)
        form.addRow(self.tr("Weights form:"), self.weights)
        form.addRow(self.tr("Draft data type:"), self.draft_dtype)
        form.addRow("", self.allow_pickle)
        self.cpu_kernels = QCheckBox(self.tr(
            "Fast exact CPU kernels (prepacked linears, row-wise attention)"
        ), page)
        self.cpu_threads = _spin(page, 0, available_cpus())  # more only take turns on the CPUs
        self.cpu_threads.setSpecialValueText(self.tr("auto"))
        self.cpu_kernels.setToolTip(
            self.tr(
                "Faster ways to run the models on the CPU (weights packed ahead of time, attention "
                "computed row by row). The results are exactly the same, only sooner."
            )
        )
        self.cpu_threads.setToolTip(
            self.tr(
                "How many CPU cores the models use. auto: starts at the physical cores minus one, so "
                "the window stays responsive, then, between answers, takes the cores other programs "
                "leave idle, and only as many as measured faster. At most the {0} CPUs of this "
                "computer: more threads only take turns on them, far slower. A draft model shares "
                "them with the target: it drafts ahead on one of its own, or in turn on all of them, "
                "whichever measured faster."
            ).format(available_cpus())
        )
        form.addRow("", self.cpu_kernels)
        form.addRow(self.tr("CPU threads:"), self.cpu_threads)
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
        self.auto_k.setToolTip(
            self.tr(
                "SpecChat measures what checking 1, 2, 3… guessed tokens costs on your computer and how "
                "often the guesses are right, and each step guesses as many tokens as pay off, none when "
                "drafting would only slow the answer down. k above is then the most it guesses."
            )
        )
        self.adaptive_k = QCheckBox(
            self.tr("Adapt the draft length (grow on success, shrink on rejection)"), page
        )
        self.k_max = _spin(page, 1, 64)
        self.confidence = _double(page, 0.0, 0.99, 0.05, 2)
        self.remember_conversations = QCheckBox(self.tr("Learn from earlier conversations"), page)
        self.remember_conversations.setToolTip(
            self.tr(
                "The “earlier conversations” drafter indexes the saved chats in memory, on this computer "
                "only; a deleted chat is forgotten with it. Off: it learns from none and forgets what "
                "it held."
            )
        )
        self.speculative.setToolTip(
            self.tr(
                "A fast drafter guesses the next few tokens and the target model checks them all in one "
                "step, keeping those it would have written itself. Same answer, usually sooner."
            )
        )
        self.k.setToolTip(
            self.tr(
                "k: how many tokens the drafter guesses before the target checks them. A larger k pays "
                "off when the guesses are usually right, and wastes work when they are not."
            )
        )
        self.adaptive_k.setToolTip(
            self.tr("Change k as the answer goes: longer after a fully accepted guess, shorter after a miss.")
        )
        self.k_max.setToolTip(self.tr("The longest guess the adaptive k may grow to."))
        self.confidence.setToolTip(
            self.tr(
                "The draft model stops drafting when its most likely next token has a probability below "
                "this, so the target is not asked to check weak guesses. 0: off. It changes the speed, "
                "never the answer."
            )
        )
        form.addRow("", self.speculative)
        form.addRow(
            "",
            _help_line(
                self.tr(
                    "Speculation changes only the speed: the answer is the one the target model alone"
                    " would give."
                ),
                page,
            ),
        )
        form.addRow(self.tr("Draft length k:"), self.k)
        form.addRow("", self.auto_k)
        form.addRow("", self.adaptive_k)
        form.addRow(self.tr("Largest adaptive k:"), self.k_max)
        form.addRow(self.tr("Confidence threshold:"), self.confidence)
        form.addRow(
            _help_line(
                self.tr(
                    "A draft model stops drafting when its most likely next token is less probable than "
                    "the threshold (0: off)."
                ),
                page,
            )
        )
        form.addRow("", self.remember_conversations)
        return page

    def _decoding_tab(self) -> QWidget:
        page = QWidget(self)
        form = QFormLayout(page)
        self.greedy = QRadioButton(self.tr("Greedy (always the most likely token)"), page)
        self.sampling = QRadioButton(self.tr("Sampling"), page)
        self.temperature = _double(page, 0.01, MAX_TEMPERATURE, 0.05, 2)
        self.top_p = _double(page, 0.01, 1.0, 0.05, 2)
        self.top_k = _spin(page, 0, 100000)
        self.seed = _spin(page, 0, 2**31 - 1)
        self.sampling_mode = QComboBox(page)
        self.sampling_mode.addItem(self.tr("Standard (same distribution as the target)"), "standard")
        self.sampling_mode.addItem(
            self.tr("Seed-invariant (same text per seed, with or without speculation)"), "seed-invariant"
        )
        self.max_new_tokens = _spin(page, 1, 32768)
        self.repetition_penalty = _double(page, 1.0, 2.0, 0.05, 2)
        self.greedy.setToolTip(self.tr(
            "Always take the most likely next token: the same question gets the same answer."
        ))
        self.sampling.setToolTip(
            self.tr(
                "Pick each next token at random, weighted by the model's probabilities: more varied "
                "answers."
            )
        )
        self.temperature.setToolTip(
            self.tr(
                "How adventurous sampling is: below 1 sticks to likely words, above 1 takes more "
                "chances."
            )
        )
        self.top_p.setToolTip(
            self.tr(
                "Sample only among the most likely tokens whose probabilities add up to this (1: no "
                "limit)."
            )
        )
        self.top_k.setToolTip(self.tr("Sample only among this many most likely tokens (0: no limit)."))
        self.seed.setToolTip(self.tr(
            "The random seed: the same seed and settings give the same sampled answer again."
        ))
        self.sampling_mode.setItemData(
            0,
            self.tr(
                "Answers follow exactly the target model's probabilities; with speculation a seed may"
                " give another text."
            ),
            Qt.ItemDataRole.ToolTipRole,
        )
        self.sampling_mode.setItemData(
            1,
            self.tr(
                "A seed gives the same text with or without speculation and for any k: handy to "
                "compare speeds."
            ),
            Qt.ItemDataRole.ToolTipRole,
        )
        self.sampling_mode.setToolTip(
            self.tr(
                "Seed-invariant sampling: the same seed gives the same answer whether speculation is on or "
                "off, so you can compare speeds on the very same text. Standard: the same kind of answers, "
                "but a seed may give a different text with speculation."
            )
        )
        self.max_new_tokens.setToolTip(
            self.tr("The longest answer, in tokens (a token is a word or a piece of a word).")
        )
        self.repetition_penalty.setToolTip(
            self.tr(
                "Makes the model less likely to repeat words already in the conversation (1.00: off; "
                "around 1.1 to 1.3 is typical). It is applied identically to the target and the draft, so "
                "speculation still gives exactly the same answer."
            )
        )
        form.addRow(self.greedy)
        form.addRow(self.sampling)
        form.addRow(self.tr("Temperature:"), self.temperature)
        form.addRow(self.tr("Top-p:"), self.top_p)
        form.addRow(self.tr("Top-k (0: off):"), self.top_k)
        form.addRow(self.tr("Seed:"), self.seed)
        form.addRow(self.tr("Sampling mode:"), self.sampling_mode)
        form.addRow(self.tr("Max new tokens:"), self.max_new_tokens)
        form.addRow(self.tr("Repetition penalty:"), self.repetition_penalty)
        form.addRow(
            "",
            _help_line(self.tr("1.00: off. Above 1, words already used become less likely."), page),
        )
        self.sampling.toggled.connect(self._on_sampling_toggled)
        return page

    def _language_row(self) -> QHBoxLayout:
        self.language = QComboBox(self)
        self.language.addItem(self.tr("Automatic (system)"), "auto")
        self.language.addItem("English", "en")  # each language in its own words: never translated
        self.language.addItem("Français", "fr")
        self.language.setToolTip(self.tr(
            "The language of the window. It changes the next time SpecChat starts."
        ))
        row = QHBoxLayout()
        row.addWidget(QLabel(self.tr("Language:"), self))
        row.addWidget(self.language)
        row.addWidget(QLabel(self.tr("(applies at the next start)"), self), 1)
        return row

    # ---- values ------------------------------------------------------------------------
    def _show(self, s: AppSettings) -> None:
        m = s.models
        self.target.set_value(m.target_kind, m.target_path)
        self.draft.set_value(m.draft_kind, m.draft_path)
        if self.device.findData(m.device) < 0:  # chosen elsewhere; kept, but said to be absent
            self.device.addItem(self.tr("{0} (not available here)").format(m.device), m.device)
        self.device.setCurrentIndex(self.device.findData(m.device))
        self.dtype.setCurrentText(m.dtype)
        self.weights.setCurrentIndex(max(self.weights.findData(m.weights), 0))
        self.draft_dtype.setCurrentIndex(max(self.draft_dtype.findData(m.draft_dtype), 0))
        self.allow_pickle.setChecked(m.allow_pickle)
        self.cpu_kernels.setChecked(m.cpu_kernels)
        self.cpu_threads.setValue(m.cpu_threads)
        self.server.set_value(s.server)
        self.speculative.setChecked(s.speculative)
        self.k.setValue(s.k)
        self.auto_k.setChecked(s.auto_k)
        self.adaptive_k.setChecked(s.adaptive_k)
        self.k_max.setValue(s.k_max)
        self.confidence.setValue(s.confidence_threshold)
        self.remember_conversations.setChecked(s.remember_conversations)
        (self.sampling if s.sampling else self.greedy).setChecked(True)
        self.temperature.setValue(s.temperature)
        self.top_p.setValue(s.top_p)
        self.top_k.setValue(s.top_k)
        self.seed.setValue(s.seed)
        self.sampling_mode.setCurrentIndex(max(self.sampling_mode.findData(s.sampling_mode), 0))
        self.max_new_tokens.setValue(s.max_new_tokens)
        self.repetition_penalty.setValue(s.repetition_penalty)
        self.language.setCurrentIndex(max(self.language.findData(s.language), 0))
        self._on_sampling_toggled(s.sampling)

    def settings(self) -> AppSettings:
        target_kind, target_path = self.target.value()
        draft_kind, draft_path = self.draft.value()
        models = ModelSettings(
            target_kind=target_kind,  # type: ignore[arg-type]
            target_path=target_path,
            draft_kind=draft_kind,  # type: ignore[arg-type]
            draft_path=draft_path,
            device=str(self.device.currentData()),
            dtype=self.dtype.currentText(),
            weights=str(self.weights.currentData()),
            draft_dtype=self.draft_dtype.currentData(),
            allow_pickle=self.allow_pickle.isChecked(),
            cpu_kernels=self.cpu_kernels.isChecked(),
            cpu_threads=self.cpu_threads.value(),
        )
        return replace(
            self._initial,
            models=models,
            server=self.server.value(),
            speculative=self.speculative.isChecked(),
            k=self.k.value(),
            auto_k=self.auto_k.isChecked(),
            adaptive_k=self.adaptive_k.isChecked(),
            k_max=self.k_max.value(),
            confidence_threshold=self.confidence.value(),
            remember_conversations=self.remember_conversations.isChecked(),
            sampling=self.sampling.isChecked(),
            temperature=self.temperature.value(),
            top_p=self.top_p.value(),
            top_k=self.top_k.value(),
            seed=self.seed.value(),
            sampling_mode=str(self.sampling_mode.currentData()),
            max_new_tokens=self.max_new_tokens.value(),
            repetition_penalty=self.repetition_penalty.value(),
            language=str(self.language.currentData()),
        )

    def _problem(self, s: AppSettings) -> str | None:
        for label, (kind, path) in (
            (self.tr("target model"), (s.models.target_kind, s.models.target_path)),
            (self.tr("draft source"), (s.models.draft_kind, s.models.draft_path)),
        ):
            if kind in ("folder", "gguf", "hub") and not path:
                return self.tr("Choose a path or model id for the {0}.").format(label)
        if (server := self.server.problem()) is not None:
            return server
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

    def _show_model_error(self, error: str | None) -> None:
        """Beside the models that failed, until the person edits them."""
        if error:
            self.model_error.setText(self.tr("These models could not be loaded: {0}").format(error))
        self.model_error.setVisible(bool(error))
        for picker in (self.target, self.draft):
            picker.kind.currentIndexChanged.connect(self.model_error.hide)
            picker.path.editTextChanged.connect(self.model_error.hide)

    def _on_restore_defaults(self) -> None:
        self._show(
            replace(AppSettings(), show_rejected=self._initial.show_rejected, language=self._initial.language)
        )

    def _on_sampling_toggled(self, sampling: bool) -> None:
        for widget in (self.temperature, self.top_p, self.top_k, self.seed, self.sampling_mode):
            widget.setEnabled(sampling)


def _help_line(text: str, parent: QWidget) -> QLabel:
    """A short grey explanation under a setting."""
    label = QLabel(text, parent)
    label.setWordWrap(True)
    label.setStyleSheet("color: gray;")
    return label


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
