"""The desktop app's entry point: ``python -m app`` (no subcommand) ends up here.

The window opens at once; torch and the models load on the engine thread afterwards, with
progress in the status bar. The event loop is qasync's, so the app can ``await`` the worker.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Sequence

import qasync
from PySide6.QtWidgets import QApplication

from app.ui.main_window import MainWindow
from app.ui.settings import SettingsStore, configure_application
from app.ui.storage import ConversationStore
from app.worker import EngineWorker


async def run_app(app: QApplication) -> int:
    worker = EngineWorker()
    window = MainWindow(worker, SettingsStore(), ConversationStore())
    closed = asyncio.get_running_loop().create_future()
    window.closed.connect(lambda: closed.done() or closed.set_result(None))
    window.show()
    window.start()
    await closed
    # closeEvent already cancelled the run and joined the engine thread (bounded). A model
    # load cannot be interrupted: if one is still running, leave without waiting for it.
    return 0 if worker.shutdown(0.0) else -1


def _no_display() -> bool:
    """On Linux, Qt aborts the process when it finds no screen; say so in one line instead."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return False
    return not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def main(argv: Sequence[str] | None = None) -> int:
    if _no_display():
        sys.stderr.write(
            "specchat: error: no display found (DISPLAY and WAYLAND_DISPLAY are unset); the "
            "commands generate, compare and bench work without one\n"
        )
        return 1
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    app = QApplication.instance() or QApplication(["specchat", *(argv or [])])
    configure_application(app)  # type: ignore[arg-type]
    app.setQuitOnLastWindowClosed(False)  # the coroutine ends the loop, not Qt
    code = qasync.run(run_app(app))  # type: ignore[arg-type]
    if code < 0:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
