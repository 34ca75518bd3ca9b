"""SIGINT and SIGTERM to the window behave like closing it (issue 20, section 3): the answer
under way is kept as a cut answer (Continue goes on with it), the process exits at once and
quietly (no traceback, no abort), also when idle. The real app runs in a child process, on a
tiny model slowed to a few tokens a second so the signal lands mid-answer."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.ui.common.storage import DATA_DIR_ENV

LAUNCHER = r"""
import sys, time
from dataclasses import replace
from PySide6.QtCore import QSettings
QSettings.setDefaultFormat(QSettings.Format.IniFormat)
QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, sys.argv[2])
from app.engine.runners.kv import CachedModel
from app.ui.chat.chat_controller import ChatController
from app.ui.main_window import MainWindow
from app.ui.settings.store import AppSettings, ModelSettings, SettingsStore

forward = CachedModel.forward
def slow_forward(self, *args, **kwargs):
    time.sleep(0.05)  # a few passes a second: the signal arrives mid-answer
    return forward(self, *args, **kwargs)
CachedModel.forward = slow_forward
said = set()
def say_once(word):
    if word not in said:
        said.add(word)
        print(word, flush=True)
on_events, on_loaded = ChatController._on_events, MainWindow._on_loaded
ChatController._on_events = lambda self, *a: (say_once("streaming"), on_events(self, *a))[1]
MainWindow._on_loaded = lambda self, *a: (on_loaded(self, *a), say_once("loaded"))[0]
models = ModelSettings(target_kind="folder", target_path=sys.argv[1], draft_kind="lookup", device="cpu",
                       dtype="float32")
SettingsStore().save(AppSettings(models=models, max_new_tokens=400, k=4, auto_k=False))
from app.gui import main
sys.exit(main(sys.argv[3:]))
"""


def _launch(tmp_path: Path, model: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", DATA_DIR_ENV: str(tmp_path / "data")}
    return subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, str(model), str(tmp_path / "settings"), *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip


def _wait_for_line(process: subprocess.Popen[str], word: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if line.strip() == word:
            return
        if not line and process.poll() is not None:
            break
    process.kill()
    pytest.fail(f"the app never said {word!r}: {process.communicate()[1][-2000:]}")


def _ended_quietly(process: subprocess.Popen[str], signalled_at: float) -> None:
    try:
        _out, err = process.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        pytest.fail("the app did not exit after the signal")
    took = time.monotonic() - signalled_at
    assert process.returncode == 0, err[-2000:]
    assert "Traceback" not in err and "terminate called" not in err, err[-2000:]
    assert took < 8, f"took {took:.1f} s to exit"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_answering_keeps_the_partial_answer_and_exits_quietly(tmp_path, tiny_models, signum):
    process = _launch(tmp_path, tiny_models["llama"], "--smoke-test", "Hello world! Tell me a long story.")
    _wait_for_line(process, "streaming")
    time.sleep(0.5)
    process.send_signal(signum)
    _ended_quietly(process, time.monotonic())
    files = list((tmp_path / "data" / "conversations").glob("*.json"))
    assert len(files) == 1
    answer = json.loads(files[0].read_text("utf-8"))["messages"][-1]
    assert answer["role"] == "assistant" and answer["content"] and answer["records"]
    assert answer["stop_reason"] == "cancelled"  # a cut answer: Continue goes on with it


def test_sigint_to_the_idle_window_exits_quietly_and_promptly(tmp_path, tiny_models):
    process = _launch(tmp_path, tiny_models["llama"])  # SIGTERM takes the same handler
    _wait_for_line(process, "loaded")
    process.send_signal(signal.SIGINT)
    _ended_quietly(process, time.monotonic())
