"""The model library dialog: lists tiny model folders and a GGUF with their metadata, marks
which models can draft for the chosen target, loads a pair in one click, and scans and checks
off the GUI thread."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from stand_in_backend import StandInBackend
from tiny_gguf import write_tiny_gguf
from tiny_models import build_model, build_tokenizer, save

from app.engine.models.catalog import ModelEntry, scan_models
from app.engine.models.pairing import PairingChecker
from app.ui.common.storage import ConversationStore
from app.ui.main_window import MainWindow
from app.ui.models.models_dialog import DRAFT, ModelsDialog
from app.ui.settings.store import ModelPair, ModelSettings, SettingsStore
from app.worker import EngineWorker
from app.worker.catalog_worker import CatalogWorker

TIMEOUT_MS = 30_000


@pytest.fixture(scope="module")
def library_models(tmp_path_factory, tokenizer, tiny_models) -> dict[str, Path]:
    """Target, a 8x smaller draft with its tokenizer, a model with another vocabulary, a GGUF
    and a corrupt GGUF."""
    root = tmp_path_factory.mktemp("library")
    other = build_tokenizer(300)
    (root / "corrupt.gguf").write_bytes(b"GGUF\x03\x00\x00\x00 truncated")
    return {
        "target": tiny_models["llama"],
        "small": save(build_model("llama", tokenizer, seed=3, layers=1, hidden=16), tokenizer, root / "sm"),
        "other": save(build_model("llama", other, seed=4), other, root / "other-vocab"),
        "gguf": write_tiny_gguf(root / "tiny.gguf", context_length=1024),
        "corrupt": root / "corrupt.gguf",
    }


class Recorder:
    """A scanner and a pairing check that note the thread they ran on."""

    def __init__(self, hub: Path, cache: Path) -> None:
        self.threads: list[threading.Thread] = []
        self._hub = hub
        self._checker = PairingChecker(cache)

    def scan(self, added: Sequence[str]) -> list[ModelEntry]:
        self.threads.append(threading.current_thread())
        return scan_models(added, hub_cache=self._hub, include_bundled=False)

    def check(self, target: ModelEntry, draft: ModelEntry):  # type: ignore[no-untyped-def]
        self.threads.append(threading.current_thread())
        return self._checker.check(target, draft)


@pytest.fixture
def window_with_library(app_dirs, qtbot, library_models) -> Callable[[], tuple[MainWindow, list[dict]]]:  # type: ignore[no-untyped-def]
    """A window over a stub loader that records each load request, with the library's
    models added (target first)."""
    store = SettingsStore()
    for name in ("target", "small", "other", "gguf", "corrupt"):
        store.add_model(str(library_models[name]))
    recorder = Recorder(app_dirs / "hub", app_dirs / "pairings.json")
    windows = []

    def open_() -> tuple[MainWindow, list[dict], Recorder]:
        requests: list[dict] = []

        def load(**kwargs):  # type: ignore[no-untyped-def]
            requests.append(kwargs)
            return StandInBackend("stub", "stub draft")

        window = MainWindow(EngineWorker(loader=load), SettingsStore(), ConversationStore())
        window.catalog = CatalogWorker(scanner=recorder.scan, checker=recorder.check, parent=window)
        qtbot.addWidget(window)
        windows.append(window)
        return window, requests, recorder

    yield open_
    for window in windows:
        window.close()


def open_library(qtbot, window: MainWindow) -> ModelsDialog:  # type: ignore[no-untyped-def]
    """Open the dialog and wait for the scan and the first target's pairing checks."""
    assert window.catalog is not None
    with qtbot.waitSignals([window.catalog.scanned, window.catalog.pairings_done], timeout=TIMEOUT_MS):
        dialog = window._on_open_models()
    assert dialog is not None
    qtbot.addWidget(dialog)
    return dialog


def row_texts(dialog: ModelsDialog, source: Path) -> list[str]:
    row = next(i for i, e in enumerate(dialog.entries) if e.source == str(source))
    return [dialog.table.item(row, c).text() for c in range(dialog.table.columnCount())]


def choose_target(qtbot, dialog: ModelsDialog, source: Path) -> None:  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(dialog._catalog.pairings_done, timeout=TIMEOUT_MS):
        assert dialog.choose_target(str(source))


def test_the_library_lists_a_model_folder_and_a_gguf_with_their_metadata(
    window_with_library, qtbot, library_models
):
    window, _, _ = window_with_library()
    dialog = open_library(qtbot, window)
    name, arch, params, _size, dtype, context, tokenizer, _ = row_texts(dialog, library_models["target"])
    assert (name, arch, params, dtype, context) == ("llama", "LlamaForCausalLM", "123K", "float32", "512")
    assert tokenizer.startswith("BPE (byte-level)") and tokenizer.endswith("384")
    name, arch, params, size, dtype, context, tokenizer, _ = row_texts(dialog, library_models["gguf"])
    assert (name, arch, params, dtype, context) == ("tiny.gguf", "llama", "648", "F32", "1,024")
    assert size.endswith("KB") and tokenizer == "BPE (byte-level, tiny), 40"


def test_a_corrupt_file_is_listed_with_its_problem_and_cannot_be_used(
    window_with_library, qtbot, library_models
):
    window, _, _ = window_with_library()
    dialog = open_library(qtbot, window)
    cell = dialog.draft_cell(str(library_models["corrupt"]))
    assert cell is not None and cell.text().startswith("⚠")
    assert "corrupt" in cell.toolTip()
    dialog.choose_target(str(library_models["corrupt"]))
    assert not dialog.use_button.isEnabled() and "corrupt" in dialog.explanation.text()


def test_choosing_a_target_marks_compatible_drafts_and_suggests_the_small_one(
    window_with_library, qtbot, library_models
):
    window, _, _ = window_with_library()
    dialog = open_library(qtbot, window)
    choose_target(qtbot, dialog, library_models["gguf"])  # away and back: a fresh check
    choose_target(qtbot, dialog, library_models["target"])
    small = dialog.draft_cell(str(library_models["small"]))
    other = dialog.draft_cell(str(library_models["other"]))
    assert small is not None and small.text() == "★ Suggested draft"
    assert other is not None and other.text().startswith("✗")
    assert "vocabulary is smaller" in other.toolTip() and "vocabulary entries differ" in other.toolTip()
    assert dialog.draft_combo.currentData() == str(library_models["small"])  # pre-selected
    assert dialog.draft_combo.findData(str(library_models["other"])) == -1  # not offered


def test_without_a_much_smaller_compatible_model_prompt_lookup_is_suggested(
    window_with_library, qtbot, library_models
):
    window, _, _ = window_with_library()
    dialog = open_library(qtbot, window)
    choose_target(qtbot, dialog, library_models["small"])
    target = dialog.draft_cell(str(library_models["target"]))
    assert target is not None and target.text().startswith("✓")  # compatible, but larger
    assert dialog.draft_combo.currentData() == "lookup"
    assert "3× smaller" in dialog.explanation.text()


def test_use_this_pair_loads_it_in_one_click_and_remembers_it(window_with_library, qtbot, library_models):
    window, requests, _ = window_with_library()
    dialog = open_library(qtbot, window)
    choose_target(qtbot, dialog, library_models["target"])
    with qtbot.waitSignal(window.worker.loaded, timeout=TIMEOUT_MS):
        dialog.use_button.click()
    assert (requests[-1]["target"], requests[-1]["draft"]) == (
        str(library_models["target"]), str(library_models["small"])
    )
    pair = ModelPair("folder", str(library_models["target"]), "folder", str(library_models["small"]))
    assert SettingsStore().recent_pairs()[0] == pair
    assert ModelPair.of(window.settings.models) == pair

    again = open_library(qtbot, window)  # opens on the pair in use, and offers it as recent
    assert again.target is not None and again.target.source == str(library_models["target"])
    assert again.recent_combo.itemData(1) == pair


def test_a_recent_pair_selects_its_target_and_draft(window_with_library, qtbot, library_models):
    store = SettingsStore()
    store.remember_pair(ModelPair("folder", str(library_models["small"]), "lookup", ""))
    store.remember_pair(ModelPair("folder", str(library_models["target"]), "none", ""))
    window, _, _ = window_with_library()
    dialog = open_library(qtbot, window)
    choose_target(qtbot, dialog, library_models["gguf"])
    with qtbot.waitSignal(dialog._catalog.pairings_done, timeout=TIMEOUT_MS):
        dialog.recent_combo.activated.emit(1)
    assert dialog.target is not None and dialog.target.source == str(library_models["target"])
    assert dialog.draft_combo.currentData() == "none"


def test_an_added_gguf_file_is_scanned_and_remembered(
    window_with_library, qtbot, library_models, tmp_path, monkeypatch
):
    window, _, _ = window_with_library()
    dialog = open_library(qtbot, window)
    added = write_tiny_gguf(tmp_path / "added.gguf", context_length=2048)
    monkeypatch.setattr(
        "app.ui.models.models_dialog.QFileDialog.getOpenFileName", lambda *_args, **_kw: (str(added), "")
    )
    with qtbot.waitSignal(window.catalog.scanned, timeout=TIMEOUT_MS):
        dialog.add_gguf_button.click()
    assert row_texts(dialog, added)[5] == "2,048"
    assert str(added) in SettingsStore().added_models()


def test_scanning_and_pair_checks_run_off_the_gui_thread(window_with_library, qtbot, library_models):
    window, _, recorder = window_with_library()
    open_library(qtbot, window)
    assert recorder.threads  # the scan and at least one pairing check
    assert all(t is not threading.main_thread() for t in recorder.threads)
    assert threading.current_thread() is threading.main_thread()


def test_the_models_action_is_in_the_tool_bar(window_with_library):
    window, _, _ = window_with_library()
    assert window.models_action.text() == "Models…"
    assert window.models_action in window.findChild(type(window.addToolBar("x")), "mainToolbar").actions()


def test_the_draft_column_says_in_text_not_colour_alone(window_with_library, qtbot, library_models):
    window, _, _ = window_with_library()
    dialog = open_library(qtbot, window)
    choose_target(qtbot, dialog, library_models["target"])
    texts = {dialog.table.item(r, DRAFT).text()[:1] for r in range(dialog.table.rowCount())}
    assert {"●", "★", "✗", "⚠"} <= texts


def test_a_failing_scan_is_reported_in_the_dialog_not_raised(app_dirs, qtbot):
    def broken_scan(_added: Sequence[str]) -> list[ModelEntry]:
        raise OSError("disk unplugged")

    dialog = ModelsDialog(CatalogWorker(scanner=broken_scan), SettingsStore(), ModelSettings())
    qtbot.addWidget(dialog)
    qtbot.waitUntil(lambda: "disk unplugged" in dialog.status.text(), timeout=TIMEOUT_MS)
    assert dialog.table.rowCount() == 0


def test_the_library_names_the_form_a_loaded_model_runs_in(window_with_library, qtbot, library_models):
    """Issue 18: the library says the file's dtype and, for the models loaded, the weights form
    they run in ("int4 (quantized by SpecChat) from fp32 · 0.15 GB")."""
    from app.ui.main_window import ModelsInUse
    from app.worker.engine_worker import ComputePath, WeightsWords

    window, _, _ = window_with_library()
    models = ModelSettings(
        target_kind="folder", target_path=str(library_models["target"]),
        draft_kind="folder", draft_path=str(library_models["small"]),
    )
    form = WeightsWords("int4", "fp32", True, 150_000_000, measured=True)
    path = ComputePath("int4", "bfloat16", "weight-only", "", "int8", form=form, draft_form=WeightsWords("int8"))
    window.models_in_use = ModelsInUse(models, "target", "draft model: small", path)
    dialog = open_library(qtbot, window)
    target_dtype = row_texts(dialog, library_models["target"])[4]
    assert target_dtype.endswith(", running as int4 (quantized by SpecChat) from fp32 · 0.15 GB")
    assert row_texts(dialog, library_models["small"])[4].endswith(", running as int8")
    assert "running as" not in row_texts(dialog, library_models["other"])[4]
