"""The desktop app's entry point: ``python -m app`` (no subcommand) ends up here.

The window opens at once; torch and the models load on the engine thread afterwards, with
progress in the status bar. The event loop is qasync's, so the app can ``await`` the worker.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
from collections.abc import Callable, Sequence

import qasync
from PySide6.QtCore import QObject, QSocketNotifier, QTimer
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from app.paths import resource_path
from app.ui.common.i18n import install_translators
from app.ui.common.storage import ConversationStore
from app.ui.main_window import MainWindow
from app.ui.settings.store import SettingsStore, configure_application
from app.worker import EngineWorker
from app.worker.catalog_worker import CatalogWorker

SMOKE_TEST_TIMEOUT_S = 600


async def run_app(app: QApplication, smoke_prompt: str | None = None) -> int:
    worker = EngineWorker()
    window = MainWindow(worker, SettingsStore(), ConversationStore())
    window.catalog = CatalogWorker(parent=window)  # the model library's scans and pairing checks
    window.setWindowIcon(app_icon())
    closed = asyncio.get_running_loop().create_future()
    window.closed.connect(lambda: closed.done() or closed.set_result(None))
    window.show()
    window.start()
    restore_signals = close_on_signals(window.close, window)
    outcome: list[int] = []
    if smoke_prompt is not None:
        _smoke_test(window, worker, smoke_prompt, outcome)
    await closed
    restore_signals()
    if outcome and outcome[0] != 0:
        worker.shutdown(0.0)
        return outcome[0]
    # closeEvent already cancelled the run and joined the engine thread (bounded). A model
    # load cannot be interrupted: if one is still running, leave without waiting for it.
    return 0 if worker.shutdown(0.0) else -1


def close_on_signals(close: Callable[[], object], parent: QObject) -> Callable[[], None]:
    """SIGINT and SIGTERM close the window as its close button does (the answer under way is
    kept as a cut answer), instead of a KeyboardInterrupt inside a Qt slot (a traceback, then
    an abort). Python runs a signal handler only between bytecodes, and Qt's event loop may
    sleep in C++ for long: the signal's wake-up byte lands on a socket a ``QSocketNotifier``
    watches, which wakes the loop so the handler runs at once. Returns what undoes it."""
    reader, writer = socket.socketpair()
    for end in (reader, writer):
        end.setblocking(False)
    notifier = QSocketNotifier(reader.fileno(), QSocketNotifier.Type.Read, parent)

    def drain() -> None:
        try:
            reader.recv(64)
        except OSError:
            pass

    notifier.activated.connect(drain)
    closing: list[bool] = []

    def on_signal(_signum: int, _frame: object) -> None:
        if not closing:  # a second signal while closing changes nothing: the close is bounded
            closing.append(True)
            QTimer.singleShot(0, close)  # from the event loop, not from inside whatever was running

    previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    previous = {signum: signal.signal(signum, on_signal) for signum in (signal.SIGINT, signal.SIGTERM)}

    def restore() -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(previous_fd)
        notifier.setEnabled(False)
        reader.close()
        writer.close()

    return restore


def _smoke_test(window: MainWindow, worker: EngineWorker, prompt: str, outcome: list[int]) -> None:
    """Send one prompt as a person would; print the answer and close (exit 0), or exit 1 on a
    failure or after ``SMOKE_TEST_TIMEOUT_S``. Used to check a built bundle end to end."""

    def end(code: int, text: str) -> None:
        if outcome:
            return
        outcome.append(code)
        print(("answer: " if code == 0 else "smoke test failed: ") + text, flush=True)
        window.close()

    worker.finished.connect(lambda _run, result: end(0, result.text.strip()))
    worker.failed.connect(lambda _run, message: end(1, message))
    worker.load_failed.connect(lambda *args: end(1, str(args[-1])))
    QTimer.singleShot(SMOKE_TEST_TIMEOUT_S * 1000, lambda: end(1, "no answer in time"))
    window.send_message(prompt)


def app_icon() -> QIcon:
    path = resource_path("specchat.svg")
    return QIcon(str(path)) if path is not None else QIcon()


def _no_display() -> bool:
    """On Linux, Qt aborts the process when it finds no screen; say so in one line instead."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM"):
        return False
    return not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def _split_smoke_prompt(argv: list[str]) -> tuple[list[str], str | None]:
    """``--smoke-test PROMPT`` (for the packaged bundle's check) out of Qt's own arguments."""
    if "--smoke-test" not in argv:
        return argv, None
    at = argv.index("--smoke-test")
    prompt = argv[at + 1] if at + 1 < len(argv) else "What is the capital of France?"
    return argv[:at] + argv[at + 2 :], prompt


def without_feature_import_hook() -> bool:
    """Take PySide6's ``__feature__`` import hook out of ``builtins.__import__``; True if it was
    there. PySide6 puts it in front of every import of the process for its opt-in
    ``from __feature__ import snake_case, true_property`` (which SpecChat never uses): after
    each new module it reads the module's whole source (``inspect.getsource``) to look for the
    word "PySide6", and runs Python code for every import statement executed. The engine
    thread's ~2,000 modules of torch and transformers paid 0.6-0.9 s for it (of ~5-6 s, CPU time
    on one core) and left ~47 MB of their sources in ``linecache``. What it wraps
    (``__orig_import__``, PySide6's own lazy import) stays."""
    import builtins

    hook, original = builtins.__import__, getattr(builtins, "__orig_import__", None)
    if original is None or getattr(hook, "__name__", "") != "__feature_import__":
        return False
    builtins.__import__ = original
    return True


def main(argv: Sequence[str] | None = None) -> int:
    without_feature_import_hook()  # before the engine thread imports torch and transformers
    qt_args, smoke_prompt = _split_smoke_prompt(list(argv or []))
    if _no_display():
        from app.cli import COMMANDS

        sys.stderr.write(
            "specchat: error: no display found (DISPLAY and WAYLAND_DISPLAY are unset); the "
            f"commands {', '.join(COMMANDS[:-1])} and {COMMANDS[-1]} work without one\n"
        )
        return 1
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    app = QApplication.instance() or QApplication(["specchat", *qt_args])
    configure_application(app)  # type: ignore[arg-type]
    install_translators(app, SettingsStore().load().language)  # before any widget builds its text
    app.setQuitOnLastWindowClosed(False)  # the coroutine ends the loop, not Qt
    app.setWindowIcon(app_icon())
    code = qasync.run(run_app(app, smoke_prompt))  # type: ignore[arg-type]
    if code < 0:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
