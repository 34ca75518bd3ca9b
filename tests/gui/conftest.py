"""GUI fixtures: settings and conversations isolated in tmp folders, tiny models from the
shared ``tiny_models`` fixture, and a factory for real windows over the real engine."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from gui_helpers import LOAD_TIMEOUT_MS
from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from app.ui.common.storage import DATA_DIR_ENV, ConversationStore
from app.ui.main_window import MainWindow
from app.ui.settings.store import AppSettings, SettingsStore, configure_application
from app.worker import EngineWorker


@pytest.fixture(autouse=True)
def _collect_between_tests() -> Iterator[None]:
    """Python's cycle collector runs between GUI tests, never inside a Qt event loop: a full
    run once crashed in a collection that fired inside ``waitSignal``'s nested loop (PySide6
    objects of a closed window torn down mid-event). Reference counting still frees the rest."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.collect()
        if enabled:
            gc.enable()


@pytest.fixture
def app_dirs(qapp: QApplication, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """QSettings (ini) and the conversations folder under tmp_path, for this test only."""
    configure_application(qapp)
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path / "settings"))
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "data"))
    return tmp_path


@pytest.fixture
def open_window(app_dirs: Path, qtbot, tiny_models) -> Iterator[Callable[..., MainWindow]]:  # type: ignore[no-untyped-def]
    """``open_window(settings=None)``: a shown window over a fresh worker, models loaded."""
    windows: list[MainWindow] = []

    def open_(settings: AppSettings | None = None, wait_loaded: bool = True) -> MainWindow:
        if settings is not None:
            SettingsStore().save(settings)
        worker = EngineWorker()
        window = MainWindow(worker, SettingsStore(), ConversationStore())
        qtbot.addWidget(window)
        window.show()
        windows.append(window)
        if wait_loaded:
            with qtbot.waitSignal(worker.loaded, timeout=LOAD_TIMEOUT_MS):
                window.start()
        return window

    yield open_
    for window in windows:
        window.close()
