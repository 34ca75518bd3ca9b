"""Launch: the window is usable at once, the model loads behind it with progress, and the
UI layer never imports torch."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace

import pytest
from gui_helpers import (
    ANSWER_TIMEOUT_MS,
    LOAD_TIMEOUT_MS,
    PROMPT,
    document_tokens,
    send_and_wait,
    tiny_settings,
)


def test_a_message_sent_while_the_model_loads_is_answered_after_it(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models), wait_loaded=False)
    progress: list[str] = []
    window.worker.load_progress.connect(lambda message, _fraction: progress.append(message))
    with qtbot.waitSignal(window.worker.loaded, timeout=LOAD_TIMEOUT_MS):
        window.start()
        assert window.progress.isVisible()
        qtbot.keyClicks(window.composer, PROMPT)  # typing works while loading
        with qtbot.waitSignal(window.worker.finished, timeout=ANSWER_TIMEOUT_MS):
            assert window.send_message(window.composer.toPlainText())
            assert "Waiting for the model" in window.chat_view.answers[-1].status.text()
    assert progress and not window.progress.isVisible()
    assert "llama" in window.model_label.text()


def test_the_ui_and_the_worker_never_import_torch():
    code = (
        "import sys, app.gui, app.ui.main_window, app.worker, app.ui.models.models_dialog,"
        " app.ui.experiment.sweep_view, app.ui.compare.explain_view, app.worker.catalog_worker,"
        " app.engine.models.catalog, app.engine.analysis.explanation;"
        "bad = [m for m in ('torch', 'transformers') if m in sys.modules];"
        "sys.exit(f'imported {bad}' if bad else 0)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr + done.stdout


@pytest.mark.slow
def test_with_nothing_configured_the_bundled_model_and_prompt_lookup_answer(open_window, qtbot):
    window = open_window()  # no settings saved: the defaults
    assert "prompt lookup" in window.model_label.text()
    window.apply_settings(replace(window.settings, max_new_tokens=24))
    result = send_and_wait(qtbot, window, "Repeat exactly: the cat sat on the mat, the cat sat on the mat.")
    assert result.drafter == "prompt lookup"
    assert "draft" in {kind for _, kind in document_tokens(window.chat_view.answers[-1].view)}


def test_the_qt_binding_keeps_its_references_to_none(qapp):
    """PySide6 6.12.0 on Python 3.11 drops one reference to None per call of a C++ method that
    returns void; None's count reaches zero within minutes of use and the app aborts
    ("none_dealloc"). pyproject excludes that release; this catches any binding that does it."""
    from PySide6.QtWidgets import QLabel

    label = QLabel("x")
    before = sys.getrefcount(None)
    for _ in range(2000):
        label.update()
    assert sys.getrefcount(None) - before > -200


def test_the_app_takes_pyside_feature_import_hook_out_of_every_import():
    """PySide6's ``__feature__`` hook reads the source of every module imported after it (the
    engine thread's torch and transformers: ~2,000 files into ``linecache``); ``app.gui.main``
    takes it out first, and Qt still imports and works."""
    code = (
        "import builtins, linecache, sys\n"
        "import PySide6.QtCore\n"
        "from app.gui import without_feature_import_hook\n"
        "import colorsys\n"  # a module new to the process, imported through the hook: read
        "assert colorsys.__file__ in linecache.cache, 'the hook no longer reads sources: drop the workaround?'\n"
        "assert without_feature_import_hook() is True\n"
        "assert builtins.__import__ is builtins.__orig_import__\n"
        "import wave\n"  # after: not read
        "assert wave.__file__ not in linecache.cache\n"
        "assert without_feature_import_hook() is False\n"  # once
        "from PySide6.QtCore import QObject, QTimer\n"
        "from PySide6.QtWidgets import QWidget\n"
        "timer = QTimer()\n"
        "timer.setInterval(5)\n"
        "assert timer.interval() == 5 and QObject(objectName='x').objectName() == 'x'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr + done.stdout


def test_no_module_of_the_app_uses_pyside_features():
    """What ``without_feature_import_hook`` takes out only serves ``from __feature__ import``."""
    import re
    from pathlib import Path

    statement = re.compile(r"^\s*(from\s+__feature__\s+import|import\s+__feature__)", re.MULTILINE)
    root = Path(__file__).resolve().parents[2] / "app"
    assert [p for p in root.rglob("*.py") if statement.search(p.read_text(encoding="utf-8"))] == []
