"""Drive the real app from a script: isolated settings and data folders, a real window over
the real engine, and blocking waits on signals (for tools, not for the app itself)."""

from __future__ import annotations

import os
import tempfile
from dataclasses import replace
from pathlib import Path

from PySide6.QtCore import QEventLoop, QSettings, QTimer, SignalInstance
from PySide6.QtWidgets import QApplication

from app.engine.events import RunResult
from app.ui.common.storage import DATA_DIR_ENV, ConversationStore
from app.ui.main_window import MainWindow
from app.ui.settings.store import AppSettings, ModelSettings, SettingsStore, configure_application
from app.worker import EngineWorker

# A prompt that shows prompt lookup at its best: the answer quotes the question.
PROMPT = (
    "Fix the spelling mistakes in this paragraph and write it out again:\n\n"
    "Speculative decoding lets a smal draft model propose several tokens, and the large "
    "target model checks all of them in a single forward pass. When the guesses are rigth, "
    "several tokens come out of one pass, so the answer arrives faster but stays exactly the "
    "same as the target model would have writen alone."
)


def start_app() -> QApplication:
    """A QApplication whose settings and conversations live in a fresh temporary folder."""
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    app = QApplication.instance() or QApplication(["specchat-tool"])
    configure_application(app)  # type: ignore[arg-type]
    root = Path(tempfile.mkdtemp(prefix="specchat-tool-"))
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(root / "settings"))
    os.environ[DATA_DIR_ENV] = str(root / "data")
    return app  # type: ignore[return-value]


def model_settings(target: str | None, draft: str | None) -> ModelSettings:
    """None: the bundled default target / prompt lookup; else a folder, .gguf or hub id."""

    def kind(source: str) -> str:
        return "gguf" if source.endswith(".gguf") else "folder" if Path(source).is_dir() else "hub"

    models = ModelSettings()
    if target:
        models = replace(models, target_kind=kind(target), target_path=target)  # type: ignore[arg-type]
    if draft and draft not in ("lookup", "none"):
        models = replace(models, draft_kind=kind(draft), draft_path=draft)  # type: ignore[arg-type]
    elif draft == "none":
        models = replace(models, draft_kind="none")
    return models


def wait_for(signal: SignalInstance, timeout_s: float) -> tuple:
    """Run the event loop until ``signal`` fires; its arguments. TimeoutError otherwise."""
    loop = QEventLoop()
    received: list[tuple] = []

    def on_signal(*args: object) -> None:
        received.append(args)
        loop.quit()

    signal.connect(on_signal)
    QTimer.singleShot(int(timeout_s * 1000), loop.quit)
    loop.exec()
    signal.disconnect(on_signal)
    if not received:
        raise TimeoutError(f"no signal within {timeout_s:.0f} s")
    return received[0]


def open_window(settings: AppSettings, load_timeout_s: float = 600) -> MainWindow:
    SettingsStore().save(settings)
    worker = EngineWorker()
    window = MainWindow(worker, SettingsStore(), ConversationStore())
    window.show()
    window.start()
    loop = QEventLoop()
    failed: list[str] = []
    worker.loaded.connect(loop.quit)
    worker.load_failed.connect(lambda message: (failed.append(message), loop.quit()))
    QTimer.singleShot(int(load_timeout_s * 1000), loop.quit)
    loop.exec()
    if failed:
        raise SystemExit(f"could not load the models: {failed[0]}")
    return window


def send_and_wait(window: MainWindow, prompt: str, timeout_s: float = 600) -> RunResult:
    loop = QEventLoop()
    results: list[RunResult] = []
    window.worker.finished.connect(lambda _run, result: (results.append(result), loop.quit()))
    window.worker.failed.connect(lambda _run, message: (print("failed:", message), loop.quit()))
    if not window.send_message(prompt):
        raise SystemExit("the window refused the message")
    QTimer.singleShot(int(timeout_s * 1000), loop.quit)
    loop.exec()
    if not results:
        raise SystemExit("no answer")
    while window.controller.busy:
        QApplication.processEvents()
    return results[0]
