"""The model library's suggestion (issue 12 §5): one "(suggested)", a draft built for a shorter
context than the target's is flagged and not preferred, and "Measure drafts" ranks the
candidates by a short measured probe run on the library's thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence

from app.engine.analysis.probe import DraftProbe
from app.engine.config import LOOKUP
from app.engine.models.catalog import ModelEntry, PairCheck
from app.ui.models.models_dialog import ModelsDialog
from app.ui.settings.store import ModelSettings, SettingsStore
from app.worker.catalog_worker import CatalogWorker

TARGET = ModelEntry("target-135M", "default", "default", parameters=135_000_000, context_length=8192)
TINY = ModelEntry("random-5M", "/m/tiny", "folder", parameters=5_000_000, context_length=2048)
SMALL = ModelEntry("small-30M", "/m/small", "folder", parameters=30_000_000, context_length=8192)
TIMEOUT_MS = 20_000


def _dialog(qtbot, catalog: CatalogWorker) -> ModelsDialog:  # type: ignore[no-untyped-def]
    with qtbot.waitSignals([catalog.scanned, catalog.pairings_done], timeout=TIMEOUT_MS):
        dialog = ModelsDialog(catalog, SettingsStore(), ModelSettings())
    qtbot.addWidget(dialog)
    return dialog


def _catalog(**kwargs: object) -> CatalogWorker:
    return CatalogWorker(
        scanner=lambda _added: [TARGET, TINY, SMALL],
        checker=lambda target, draft: PairCheck(target.source, draft.source, True),
        **kwargs,  # type: ignore[arg-type]
    )


def _combo_texts(dialog: ModelsDialog) -> list[str]:
    return [dialog.draft_combo.itemText(i) for i in range(dialog.draft_combo.count())]


def test_the_suggestion_is_marked_once_and_a_shorter_context_is_flagged(app_dirs, qtbot):
    dialog = _dialog(qtbot, _catalog())
    assert dialog.target is not None and dialog.target.source == "default"
    assert dialog.suggestion == SMALL.source  # the tiny one is smaller, but built for 2,048 tokens
    tiny = dialog.draft_cell(TINY.source)
    assert tiny is not None and "shorter context" in tiny.text()
    assert "2,048" in tiny.toolTip() and "8,192" in tiny.toolTip()
    small = dialog.draft_cell(SMALL.source)
    assert small is not None and "shorter context" not in small.text()

    dialog._on_pair_checked(PairCheck("default", SMALL.source, True))  # a verdict twice (A, B, A)
    dialog._on_pairings_done("default")
    texts = _combo_texts(dialog)
    assert sum("(suggested)" in t for t in texts) == 1 and texts.count(SMALL.name + " (suggested)") == 1
    assert "(suggested) (suggested)" not in " ".join(texts)
    dialog.choose_draft(TINY.source)
    assert "2,048" in dialog.explanation.text()


def test_measure_drafts_ranks_the_candidates_by_a_probe_run_off_the_gui_thread(app_dirs, qtbot):
    threads: list[threading.Thread] = []
    asked: list[tuple[str, tuple[str, ...]]] = []
    # the suggestion by size (small-30M) measures slower than prompt lookup here
    measured = {LOOKUP: (2.1, 0.62), TINY.source: (0.6, 0.02), SMALL.source: (1.3, 0.45)}

    def prober(target: str, drafts: Sequence[str], _cancel: threading.Event) -> Iterator[DraftProbe]:
        threads.append(threading.current_thread())
        asked.append((target, tuple(drafts)))
        for draft in drafts:
            speedup, alpha = measured[draft]
            yield DraftProbe(target, draft, speedup, speedup, alpha, 48)

    catalog = _catalog(prober=prober)
    dialog = _dialog(qtbot, catalog)
    assert dialog.measure_button.isEnabled()
    with qtbot.waitSignal(catalog.probes_done, timeout=TIMEOUT_MS):
        assert dialog.measure_drafts()
        assert not dialog.measure_button.isEnabled()  # one measurement at a time

    assert threads and threading.main_thread() not in threads
    assert asked == [("default", (LOOKUP, TINY.source, SMALL.source))]
    assert dialog.suggestion == LOOKUP and dialog.draft_combo.currentData() == LOOKUP
    small, tiny = dialog.draft_cell(SMALL.source), dialog.draft_cell(TINY.source)
    assert small is not None and "Suggested" not in small.text() and "1.3×" in small.text()
    assert tiny is not None and "0.6×" in tiny.text() and "α 2%" in tiny.text()
    models = [dialog.draft_combo.itemData(i) for i in range(3, dialog.draft_combo.count())]  # after the fixed three
    assert models == [SMALL.source, TINY.source]  # fastest first
    text = dialog.explanation.text()
    assert text.index("Prompt lookup") < text.index(SMALL.name) < text.index(TINY.name)
    assert sum("(suggested)" in t for t in _combo_texts(dialog)) == 1


def test_when_nothing_measured_beats_the_target_no_drafter_is_suggested(app_dirs, qtbot):
    def prober(target: str, drafts: Sequence[str], _cancel: threading.Event) -> Iterator[DraftProbe]:
        for draft in drafts:
            yield DraftProbe(target, draft, 0.7, 0.7, 0.1, 48)

    catalog = _catalog(prober=prober)
    dialog = _dialog(qtbot, catalog)
    with qtbot.waitSignal(catalog.probes_done, timeout=TIMEOUT_MS):
        dialog.measure_drafts()
    assert dialog.suggestion == "none" and dialog.draft_combo.currentData() == "none"
    assert "None was faster" in dialog.explanation.text()


def _bundled_only(**kwargs: object) -> CatalogWorker:
    return CatalogWorker(
        scanner=lambda _added: [TARGET],
        checker=lambda t, d: PairCheck(t.source, d.source, True),
        **kwargs,  # type: ignore[arg-type]
    )


def test_the_dialog_shows_the_drafter_in_use_and_technical_detail_is_never_empty(app_dirs, qtbot):
    from dataclasses import replace

    from app.engine.config import SUFFIX

    catalog = _bundled_only()
    with qtbot.waitSignals([catalog.scanned, catalog.pairings_done], timeout=TIMEOUT_MS):
        dialog = ModelsDialog(catalog, SettingsStore(), replace(ModelSettings(), draft_kind=SUFFIX))
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.draft_combo.currentData() == SUFFIX  # not the suggestion (prompt lookup)
    assert dialog.draft_combo.currentText().startswith("Earlier conversations")
    dialog.details_button.click()
    assert dialog.details.isVisible() and "No other model" in dialog.details.text()


def test_measure_drafts_says_what_it_measured_and_what_it_means_with_only_the_bundled_model(app_dirs, qtbot):
    def prober(target: str, drafts: Sequence[str], _cancel: threading.Event) -> Iterator[DraftProbe]:
        for draft in drafts:
            yield DraftProbe(target, draft, 1.01, 1.0, 0.12, 48)

    catalog = _bundled_only(prober=prober)
    with qtbot.waitSignals([catalog.scanned, catalog.pairings_done], timeout=TIMEOUT_MS):
        dialog = ModelsDialog(catalog, SettingsStore(), ModelSettings())
    qtbot.addWidget(dialog)
    with qtbot.waitSignal(catalog.probes_done, timeout=TIMEOUT_MS):
        assert dialog.measure_drafts()
    text = dialog.explanation.text()
    assert "the target answered a short question (48 tokens) alone" in text  # what was measured
    assert "decode speed-up" in text and "about as fast as the target alone" in text  # what 1.0x means
    assert "No draft model on this computer fits this target" in text  # why nothing changes
