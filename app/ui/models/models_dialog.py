"""The model library: every model on this computer with its metadata; choose a target, see
which models can draft for it (and why the others cannot), use the pair in one click.

Scans and pairing checks run on the catalog worker's thread; this dialog only asks and
paints. Row selection is the target; the draft box offers prompt lookup, no drafter and the
compatible models, with the suggestion pre-selected.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QCoreApplication, Qt, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.engine.analysis.probe import PROBE_TOKENS, DraftProbe, best_probe
from app.engine.config import LOOKUP, SUFFIX
from app.engine.models.catalog import (
    DRAFT_MIN_RATIO,
    ModelEntry,
    PairCheck,
    suggest_draft,
)
from app.ui.common.engine_words import model_label
from app.ui.common.formatting import byte_size, decimal, integer, parameter_count, percent
from app.ui.settings.store import ModelPair, ModelSettings, SettingsStore

if TYPE_CHECKING:
    from app.worker.catalog_worker import CatalogWorker

NO_DRAFTER = "none"
COMPATIBLE_COLOUR = QColor("#1b5e20")
INCOMPATIBLE_COLOUR = QColor("#8a1c1c")
MUTED_COLOUR = QColor("#666666")
(NAME, ARCH, PARAMS, SIZE, DTYPE, CONTEXT, TOKENIZER, DRAFT) = range(8)


class ModelsDialog(QDialog):
    pair_chosen = Signal(object)  # ModelSettings with the chosen target and drafter

    def __init__(
        self,
        catalog: CatalogWorker,
        store: SettingsStore,
        models: ModelSettings,
        parent: QWidget | None = None,
        running: dict[str, str] | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle(self.tr("Models"))
        # source -> the weights form it runs in now (the loaded models)
        self._running = {_source_key(source): text for source, text in (running or {}).items()}
        self._catalog = catalog
        self._store = store
        self._models = models
        self.entries: list[ModelEntry] = []
        self.target: ModelEntry | None = None
        self.checks: dict[str, PairCheck] = {}  # draft source -> verdict for self.target
        self.suggestion: str | None = None  # draft source (or LOOKUP) once all are checked
        self.probes: dict[str, DraftProbe] = {}  # draft source (or LOOKUP) -> its measured run
        self._probing = False
        # (target, draft) to select once that target's drafts are checked: a recent pair;
        # otherwise the suggestion is selected
        self._pending: tuple[str, str] | None = None
        self._wanted_target = models.target_source
        self._scan_id = 0
        self._build()
        self._connect()
        self._fill_recent()
        self.rescan()

    # ---- layout ------------------------------------------------------------------------
    def _build(self) -> None:
        self.table = QTableWidget(0, 8, self)
        self.table.setHorizontalHeaderLabels(
            [
                self.tr("Name"),
                self.tr("Architecture"),
                self.tr("Parameters"),
                self.tr("Size"),
                self.tr("Data type"),
                self.tr("Context"),
                self.tr("Tokenizer"),
                self.tr("As a draft"),
            ]
        )
        header_tips = {
            PARAMS: self.tr("Number of weights, counted from the file headers"),
            DTYPE: self.tr("How the weights are stored: a float type or a quantisation"),
            CONTEXT: self.tr("The longest conversation the model was built for, in tokens"),
            TOKENIZER: self.tr("How text is cut into tokens, and how many tokens it knows"),
            DRAFT: self.tr("Whether the model can draft for the chosen target (same text → same token ids)"),
        }
        for index, tip in header_tips.items():
            header = self.table.horizontalHeaderItem(index)
            if header is not None:
                header.setToolTip(tip)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.status = QLabel(self)
        self.rescan_button = QPushButton(self.tr("Rescan"), self)
        self.add_folder_button = QPushButton(self.tr("Add folder…"), self)
        self.add_gguf_button = QPushButton(self.tr("Add GGUF file…"), self)
        top = QHBoxLayout()
        top.addWidget(self.status, 1)
        for button in (self.rescan_button, self.add_folder_button, self.add_gguf_button):
            top.addWidget(button)

        self.target_label = QLabel(self.tr("Choose a target model in the list."), self)
        self.draft_combo = QComboBox(self)
        self.draft_combo.setToolTip(
            self.tr("The model that guesses ahead for the target; it must split text into the same tokens")
        )
        self.explanation = QLabel(self)
        self.explanation.setWordWrap(True)
        self.details_button = QToolButton(self)
        self.details_button.setText(self.tr("Technical detail"))
        self.details_button.setCheckable(True)
        self.details_button.setToolTip(self.tr("Show why this draft can or cannot be used, in detail"))
        self.details = QLabel(self)
        self.details.setWordWrap(True)
        self.details.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.details.hide()
        self.recent_combo = QComboBox(self)
        self.recent_combo.setToolTip(
            self.tr("Target and draft pairs you used lately: pick one to choose both again")
        )
        form = QFormLayout()
        form.addRow(self.tr("Target:"), self.target_label)
        self.measure_button = QPushButton(self.tr("Measure drafts"), self)
        self.measure_button.setToolTip(
            self.tr(
                "Answer a short question ({0} tokens) with the target alone, then with prompt lookup "
                "and each compatible draft, on this computer, and rank them by the speed-up they "
                "predict. Loads each model once, in the background; takes seconds to minutes."
            ).format(PROBE_TOKENS)
        )
        self.measure_button.setEnabled(False)
        draft_row = QHBoxLayout()
        draft_row.addWidget(self.draft_combo, 1)
        draft_row.addWidget(self.measure_button)
        form.addRow(self.tr("Draft:"), draft_row)
        form.addRow(self.tr("Recent pairs:"), self.recent_combo)

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        self.use_button = buttons.addButton(self.tr("Use this pair"), QDialogButtonBox.ButtonRole.AcceptRole)
        self.use_button.setEnabled(False)
        buttons.rejected.connect(self.reject)
        column = QVBoxLayout(self)
        column.addLayout(top)
        column.addWidget(self.table, 1)
        column.addLayout(form)
        column.addWidget(self.explanation)
        column.addWidget(self.details_button, 0, Qt.AlignmentFlag.AlignLeft)
        column.addWidget(self.details)
        column.addWidget(buttons)
        self.resize(1000, 560)

    def _connect(self) -> None:
        c = self._catalog
        c.scanned.connect(self._on_scanned)
        c.pair_checked.connect(self._on_pair_checked)
        c.pairings_done.connect(self._on_pairings_done)
        c.probed.connect(self._on_probed)
        c.probes_done.connect(self._on_probes_done)
        self.measure_button.clicked.connect(self.measure_drafts)
        self.finished.connect(lambda _result: c.cancel_probe())  # nobody will read the answers
        c.failed.connect(self._on_failed)
        self.table.itemSelectionChanged.connect(self._on_selection_changed)
        self.draft_combo.currentIndexChanged.connect(self._explain_draft)
        self.details_button.toggled.connect(self.details.setVisible)
        self.recent_combo.activated.connect(self._on_recent_chosen)
        self.rescan_button.clicked.connect(self.rescan)
        self.add_folder_button.clicked.connect(self._on_add_folder)
        self.add_gguf_button.clicked.connect(self._on_add_gguf)
        self.use_button.clicked.connect(self.use_pair)

    # ---- public API (also used by tests) -----------------------------------------------
    def rescan(self) -> None:
        self.status.setText(self.tr("Looking for models…"))
        self._scan_id = self._catalog.request_scan(self._store.added_models())

    def add_source(self, source: str) -> None:
        """Remember a folder or .gguf file in the library and scan again."""
        self._store.add_model(source)
        self._wanted_target = self.target.source if self.target else self._wanted_target
        self.rescan()

    def choose_target(self, source: str) -> bool:
        """Select ``source`` as the target and check its drafts (again, if it was already)."""
        row = self._row_of(source)
        if row is None:
            return False
        if self.table.selectionModel().isRowSelected(row):
            self._choose(self.entries[row])
        else:
            self.table.selectRow(row)
        return True

    def choose_draft(self, source: str) -> bool:
        index = self.draft_combo.findData(source)
        if index >= 0:
            self.draft_combo.setCurrentIndex(index)
        return index >= 0

    def use_pair(self) -> None:
        """Remember the pair and hand it to the window (which reloads the models)."""
        pair = self.current_pair()
        if pair is None:
            return
        self._store.remember_pair(pair)
        self.pair_chosen.emit(pair.apply_to(self._models))
        self.accept()

    def current_pair(self) -> ModelPair | None:
        if self.target is None or not self.target.usable:
            return None
        draft = str(self.draft_combo.currentData() or LOOKUP)
        if draft in (LOOKUP, SUFFIX, NO_DRAFTER):
            draft_kind, draft_path = draft, ""
        else:
            draft_kind, draft_path = _kind_and_path(self._entry(draft))
        return ModelPair(*_kind_and_path(self.target), draft_kind, draft_path)

    def measure_drafts(self) -> bool:
        """Rank prompt lookup and the compatible drafts by a short measured run (on the
        library's thread); False when there is nothing to measure yet."""
        if self.target is None or self.suggestion is None or not self.target.usable:
            return False
        drafts = [LOOKUP] + [source for source, check in self.checks.items() if check.compatible]
        self.probes = {}
        self._probing = True
        self.measure_button.setEnabled(False)
        self.explanation.setText(
            self.tr("Measuring {0} drafter(s) on this computer: a short answer with each…").format(len(drafts))
        )
        self._catalog.request_probe(self.target, drafts)
        return True

    def draft_cell(self, source: str) -> QTableWidgetItem | None:
        row = self._row_of(source)
        return None if row is None else self.table.item(row, DRAFT)

    # ---- scanning ----------------------------------------------------------------------
    def _on_scanned(self, scan_id: int, entries: list[ModelEntry]) -> None:
        if scan_id != self._scan_id:
            return
        self.entries = list(entries)
        self.target = None
        self.table.blockSignals(True)
        self.table.clearSelection()
        self.table.setRowCount(len(entries))
        for row, entry in enumerate(entries):
            self._fill_row(row, entry)
        self.table.blockSignals(False)
        problems = sum(not e.usable for e in entries)
        text = self.tr("%n model(s) found", "", len(entries))
        if problems:
            text += " · " + self.tr("%n cannot be used", "", problems)
        self.status.setText(text)
        self._fill_recent()
        if not self.choose_target(self._wanted_target) and entries:
            self.table.selectRow(0)

    def _fill_row(self, row: int, entry: ModelEntry) -> None:
        context = integer(entry.context_length) if entry.context_length else "?"
        vocab = f", {integer(entry.vocab_size)}" if entry.vocab_size else ""
        cells = [
            model_label(entry.name),
            entry.architecture or "?",
            parameter_count(entry.parameters),
            byte_size(entry.size_bytes),
            self._dtype_text(entry),
            context,
            (entry.tokenizer or "?") + vocab,
            "",
        ]
        for column, text in enumerate(cells):
            item = QTableWidgetItem(text)
            item.setToolTip(entry.source if column == NAME else text)
            if column in (PARAMS, SIZE, CONTEXT):
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.table.setItem(row, column, item)
        if entry.problem:
            text = "⚠ " + self.tr("Cannot be used")
            problem = QCoreApplication.translate("catalog", entry.problem)  # i18n: noop
            self._set_draft_cell(entry.source, text, problem, MUTED_COLOUR)

    def _dtype_text(self, entry: ModelEntry) -> str:
        """The file's dtype, and for a loaded model the form it runs in: "Q4_1 → int4 (…) · 0.15 GB"."""
        running = self._running.get(_source_key(entry.source))
        if running is None:
            return entry.dtype or "?"
        return self.tr("{0}, running as {1}").format(entry.dtype or "?", running)

    def _on_failed(self, message: str) -> None:
        self.status.setText(message)

    # ---- choosing the target and the draft ---------------------------------------------
    def _on_selection_changed(self) -> None:
        rows = self.table.selectionModel().selectedRows()
        if rows:
            self._choose(self.entries[rows[0].row()])

    def _choose(self, target: ModelEntry) -> None:
        self.target, self.checks, self.suggestion, self.probes = target, {}, None, {}
        self._probing = False
        self.measure_button.setEnabled(False)
        self._wanted_target = target.source
        self.target_label.setText(f"{model_label(target.name)} · {parameter_count(target.parameters)}")
        self._reset_draft_combo()
        self.details.setText("")
        self.use_button.setEnabled(target.usable)
        if not target.usable:
            self.explanation.setText(QCoreApplication.translate("catalog", target.problem))  # i18n: noop
            return
        drafts = [e for e in self.entries if e.usable and e.source != target.source]
        for entry in self.entries:
            if entry.source == target.source:
                self._set_draft_cell(entry.source, "● " + self.tr("Target"), "", None)
            elif entry.usable:
                self._set_draft_cell(entry.source, "… " + self.tr("Checking"), "", MUTED_COLOUR)
        self.explanation.setText(self.tr("Checking which models can draft for {0}…").format(model_label(target.name)))
        self._catalog.request_pairings(target, drafts)
        if not drafts:
            self._on_pairings_done(target.source)

    def _on_pair_checked(self, check: PairCheck) -> None:
        if self.target is None or check.target != self.target.source:
            return  # a verdict for a target chosen before
        self.checks[check.draft] = check
        plain = QCoreApplication.translate("catalog", check.plain)  # i18n: noop
        if check.compatible:
            entry = self._entry(check.draft)
            self._paint_draft(entry.source)
            if self.draft_combo.findData(entry.source) < 0:  # a verdict can come twice (A, B, A)
                self.draft_combo.addItem(model_label(entry.name), entry.source)
        else:
            tip = plain + "\n\n" + self.tr("Technical detail: {0}").format(check.detail)
            short = QCoreApplication.translate("catalog", check.short)  # i18n: noop
            self._set_draft_cell(check.draft, "✗ " + short, tip, INCOMPATIBLE_COLOUR)

    def _on_pairings_done(self, target: str) -> None:
        if self.target is None or target != self.target.source:
            return
        pairs = [(self._entry(s), c) for s, c in self.checks.items()]
        self.suggestion = suggest_draft(self.target, pairs)
        self._mark_suggestion()
        self.measure_button.setEnabled(not self._probing)
        wanted = self._pending[1] if self._pending and self._pending[0] == target else self.suggestion
        if not self.choose_draft(wanted):
            self.choose_draft(self.suggestion)
        self._pending = None
        incompatible = [c for c in self.checks.values() if not c.compatible]
        self.details.setText("\n".join(f"{self._entry(c.draft).name}: {c.detail}" for c in incompatible))
        self._explain_draft()

    def _on_probed(self, probe: DraftProbe) -> None:
        if self.target is None or probe.target != self.target.source or not self._probing:
            return
        self.probes[probe.draft] = probe
        if probe.draft in self.checks:
            self._paint_draft(probe.draft)

    def _on_probes_done(self, target: str) -> None:
        if self.target is None or target != self.target.source or not self._probing:
            return
        self._probing = False
        self.measure_button.setEnabled(True)
        if not self.probes:
            self.explanation.setText(self.tr("The measurement was stopped."))
            return
        best = best_probe(list(self.probes.values()))
        self.suggestion = best.draft if best is not None else NO_DRAFTER
        self._mark_suggestion()
        self._rank_draft_combo()
        self.choose_draft(self.suggestion)
        ranked = sorted(self.probes.values(), key=lambda p: p.rank_key, reverse=True)
        lines = [self._probe_summary(p) for p in ranked]
        text = self.tr("Measured on this computer, {0} tokens each:").format(PROBE_TOKENS) + " " + "; ".join(lines)
        if best is None:
            text += " " + self.tr("None was faster than the target alone: no drafter is suggested.")
        self.explanation.setText(text)

    def _probe_summary(self, probe: DraftProbe) -> str:
        name = self._combo_label_base(probe.draft)
        if probe.error:
            return self.tr("{0}: could not be measured ({1})").format(name, probe.error)
        return f"{name} {self._probe_figures(probe)}"

    def _probe_figures(self, probe: DraftProbe) -> str:
        """ "1.8× (α 72%)": the predicted speed-up and the acceptance measured."""
        speedup = "?" if probe.rank_key < 0 else decimal(probe.rank_key, 1)
        alpha = "?" if probe.alpha is None else percent(probe.alpha)
        return self.tr("{0}× (α {1})").format(speedup, alpha)

    def _rank_draft_combo(self) -> None:
        """The measured drafters, fastest first, after the fixed choices."""
        current = self.draft_combo.currentData()
        sources = [str(self.draft_combo.itemData(i)) for i in range(self.draft_combo.count())]
        models = [s for s in sources if s not in (LOOKUP, SUFFIX, NO_DRAFTER)]
        models.sort(key=lambda s: self.probes[s].rank_key if s in self.probes else -2.0, reverse=True)
        self.draft_combo.blockSignals(True)
        self.draft_combo.clear()
        for source in [LOOKUP, SUFFIX, NO_DRAFTER] + models:
            self.draft_combo.addItem(self._combo_label(source), source)
        self.draft_combo.blockSignals(False)
        self.choose_draft(str(current))

    def _paint_draft(self, source: str) -> None:
        """A compatible draft's cell: compatible or suggested, a shorter context, its measurement."""
        check = self.checks.get(source)
        if check is None or not check.compatible:
            return
        entry = self._entry(source)
        plain = QCoreApplication.translate("catalog", check.plain)  # i18n: noop
        star = "★ " + self.tr("Suggested draft") if source == self.suggestion else "✓ " + self.tr("Compatible")
        parts, tips = [star], [plain]
        note = self._context_note(entry)
        if note:
            parts.append("⚠ " + self.tr("shorter context"))
            tips.append(note)
        probe = self.probes.get(source)
        if probe is not None:
            parts.append(self._probe_figures(probe) if not probe.error else self.tr("not measured"))
            tips.append(
                self.tr(
                    "Measured here: a predicted speed-up of {0}× at acceptance α {1} over {2} tokens."
                ).format(
                    "?" if probe.rank_key < 0 else decimal(probe.rank_key, 2),
                    "?" if probe.alpha is None else percent(probe.alpha),
                    integer(probe.new_tokens),
                )
                if not probe.error
                else probe.error
            )
        self._set_draft_cell(source, " · ".join(parts), "\n\n".join(tips), COMPATIBLE_COLOUR)

    def _mark_suggestion(self) -> None:
        """The suggested draft: starred in the table, "(suggested)" once in the draft box."""
        if self.suggestion is None:
            return
        for source in self.checks:
            self._paint_draft(source)
        for index in range(self.draft_combo.count()):
            self.draft_combo.setItemText(index, self._combo_label(str(self.draft_combo.itemData(index))))

    def _combo_label(self, source: str) -> str:
        label = self._combo_label_base(source)
        return label + " " + self.tr("(suggested)") if source == self.suggestion else label

    def _combo_label_base(self, source: str) -> str:
        if source == LOOKUP:
            label = self.tr("Prompt lookup (no draft model)")
        elif source == SUFFIX:
            label = self.tr("Earlier conversations + prompt lookup (no draft model)")
        elif source == NO_DRAFTER:
            label = self.tr("No drafter")
        else:
            label = model_label(self._entry(source).name)
        return label

    def _context_note(self, draft: ModelEntry) -> str:
        """Why a draft built for a shorter context than the target's is a worse fit ("" if not)."""
        target = self.target
        if target is None or not draft.context_length or not target.context_length:
            return ""
        if draft.context_length >= target.context_length:
            return ""
        return self.tr(
            "Its context is {0} tokens, shorter than the target's {1}: in longer conversations its "
            "guesses get poor, so speculation gains less (answers stay the same)."
        ).format(integer(draft.context_length), integer(target.context_length))

    def _reset_draft_combo(self) -> None:
        self.draft_combo.blockSignals(True)
        self.draft_combo.clear()
        self.draft_combo.addItem(self.tr("Prompt lookup (no draft model)"), LOOKUP)
        self.draft_combo.addItem(self.tr("Earlier conversations + prompt lookup (no draft model)"), SUFFIX)
        self.draft_combo.addItem(self.tr("No drafter"), NO_DRAFTER)
        self.draft_combo.blockSignals(False)

    def _explain_draft(self) -> None:
        if self.target is None or self.suggestion is None:
            return
        draft = self.draft_combo.currentData()
        compatible = sum(c.compatible for c in self.checks.values())
        counts = self.tr("{0} compatible, {1} not.").format(compatible, len(self.checks) - compatible)
        if draft == LOOKUP:
            text = self.tr("Prompt lookup drafts by copying from the conversation; it needs no second model.")
            if self.suggestion == LOOKUP:
                none_fits = self.tr("No compatible model is at least {0}× smaller than the target.")
                text += " " + none_fits.format(decimal(DRAFT_MIN_RATIO, 0))
        elif draft == SUFFIX:
            text = self.tr(
                "Drafts by copying from this conversation and from earlier ones (kept in memory on this "
                "computer only); it needs no second model."
            )
        elif draft == NO_DRAFTER:
            text = self.tr("Without a drafter the target writes every token itself.")
        else:
            entry = self._entry(str(draft))
            text = QCoreApplication.translate("catalog", self.checks[entry.source].plain)  # i18n: noop
            if entry.parameters and self.target.parameters:
                ratio = self.target.parameters / entry.parameters
                text += " " + self.tr("It has {0}× fewer parameters than the target.").format(decimal(ratio, 1))
            note = self._context_note(entry)
            if note:
                text += " " + note
        probe = self.probes.get(str(draft))
        if probe is not None and not probe.error:
            text += " " + self.tr("Measured here: {0}.").format(self._probe_figures(probe))
        self.explanation.setText(text + " " + counts)

    # ---- recent pairs and adding models -------------------------------------------------
    def _fill_recent(self) -> None:
        self.recent_combo.clear()
        pairs = self._store.recent_pairs()
        prompt = self.tr("Choose a recent pair…") if pairs else self.tr("(none yet)")
        self.recent_combo.addItem(prompt, None)
        for pair in pairs:
            label = f"{self._describe(pair.target_kind, pair.target_path)} + " + self._describe(
                pair.draft_kind, pair.draft_path
            )
            self.recent_combo.addItem(label, pair)

    def _on_recent_chosen(self, index: int) -> None:
        pair = self.recent_combo.itemData(index)
        if not isinstance(pair, ModelPair):
            return
        target = pair.target_path if pair.target_kind != "default" else "default"
        draft = pair.draft_path if pair.draft_kind not in ("default", LOOKUP, SUFFIX, NO_DRAFTER) else pair.draft_kind
        if self.target is not None and self.target.source == target and self.suggestion is not None:
            self.choose_draft(draft)
            return
        self._pending = (target, draft)
        if not self.choose_target(target):
            self.explanation.setText(self.tr("That model is no longer on this computer."))

    def _describe(self, kind: str, path: str) -> str:
        if kind == LOOKUP:
            return self.tr("prompt lookup")
        if kind == SUFFIX:
            return self.tr("earlier conversations + prompt lookup")
        if kind == NO_DRAFTER:
            return self.tr("no drafter")
        source = "default" if kind == "default" else path
        entry = next((e for e in self.entries if e.source == source), None)
        return model_label(entry.name) if entry else path.rstrip("/").rsplit("/", 1)[-1] or source

    def _on_add_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, self.tr("Add a model folder"))
        if folder:
            self.add_source(folder)

    def _on_add_gguf(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self, self.tr("Add a GGUF file"), "", self.tr("GGUF models (*.gguf)")
        )
        if path:
            self.add_source(path)

    # ---- helpers -----------------------------------------------------------------------
    def _row_of(self, source: str) -> int | None:
        return next((row for row, e in enumerate(self.entries) if e.source == source), None)

    def _entry(self, source: str) -> ModelEntry:
        return next(e for e in self.entries if e.source == source)

    def _set_draft_cell(self, source: str, text: str, tooltip: str, colour: QColor | None) -> None:
        item = self.draft_cell(source)
        if item is None:
            return
        item.setText(text)
        item.setToolTip(tooltip)
        item.setForeground(QBrush(colour) if colour is not None else QBrush())


def _kind_and_path(entry: ModelEntry) -> tuple[str, str]:
    """ModelSettings' (kind, path) for a library entry."""
    return (entry.kind, "") if entry.kind == "default" else (entry.kind, entry.source)


def _source_key(source: str) -> str:
    """A source as one string whatever way it was written (a folder, relative or not)."""
    path = Path(source).expanduser()
    return str(path.resolve()) if source != "default" and path.exists() else source
