"""Failures reach the person as a clear message; the app keeps running, the conversation is
kept, and the next message works."""

from __future__ import annotations

import shutil
from dataclasses import replace

import pytest
import torch
from gui_helpers import LOAD_TIMEOUT_MS, send_and_wait, tiny_settings
from tiny_models import build_model, build_tokenizer, save

from app.engine.errors import ModelLoadError


@pytest.fixture(scope="module")
def other_tokenizer_model(tmp_path_factory):  # type: ignore[no-untyped-def]
    """A tiny llama with a different vocabulary: incompatible as a draft for the others."""
    tok = build_tokenizer(vocab_size=300)
    return save(build_model("llama", tok, seed=3), tok, tmp_path_factory.mktemp("other") / "other-vocab")


def _reload(qtbot, window, models):  # type: ignore[no-untyped-def]
    with qtbot.waitSignal(window.worker.load_failed, timeout=LOAD_TIMEOUT_MS) as failed:
        window.apply_settings(replace(window.settings, models=models))
    return failed.args[0]


def test_a_bad_model_path_shows_an_error_and_the_next_message_still_works(
    open_window, qtbot, tiny_models, tmp_path
):
    window = open_window(tiny_settings(tiny_models))
    good = window.settings.models
    missing = tmp_path / "no-such-model"
    message = _reload(qtbot, window, replace(good, target_path=str(missing)))

    assert window.banner.isVisible() and message in window.banner_text.text()
    assert str(missing) in message or "no-such-model" in message
    assert window.settings.models.target_path == str(missing)  # kept, so it can be fixed
    assert "llama" in window.model_label.text()  # the models still answering
    assert window.models_in_use is not None and window.models_in_use.models == good
    result = send_and_wait(qtbot, window)
    assert result.stats.new_tokens > 0 and window.chat_view.answers[-1].message.error is None


def test_an_incompatible_pair_is_refused_before_anything_is_generated(
    open_window, qtbot, tiny_models, other_tokenizer_model
):
    window = open_window(tiny_settings(tiny_models))
    message = _reload(qtbot, window, replace(window.settings.models, draft_path=str(other_tokenizer_model)))
    assert "incompatible" in message.lower() and message in window.banner_text.text()
    assert send_and_wait(qtbot, window).drafter == "draft model: llama-draft + lookup"


def test_a_corrupt_model_file_shows_a_readable_error(open_window, qtbot, tiny_models, tmp_path):
    corrupt = tmp_path / "corrupt"
    shutil.copytree(tiny_models["llama"], corrupt)
    (corrupt / "model.safetensors").write_bytes(b"\x00not a safetensors file" * 10)
    window = open_window(tiny_settings(tiny_models))
    message = _reload(qtbot, window, replace(window.settings.models, target_path=str(corrupt)))
    assert message in window.banner_text.text() and "Traceback" not in message
    assert send_and_wait(qtbot, window).stats.new_tokens > 0


def _break_next_generate(window, monkeypatch, error: BaseException) -> None:  # type: ignore[no-untyped-def]
    engine = window.worker._engine
    real = engine.generate

    def failing(*args, **kwargs):  # type: ignore[no-untyped-def]
        monkeypatch.setattr(engine, "generate", real)
        raise error

    monkeypatch.setattr(engine, "generate", failing)


def test_an_exception_in_the_worker_shows_a_message_and_the_chat_continues(
    open_window, qtbot, tiny_models, monkeypatch
):
    window = open_window(tiny_settings(tiny_models))
    _break_next_generate(window, monkeypatch, RuntimeError("boom"))
    with qtbot.waitSignal(window.worker.failed, timeout=LOAD_TIMEOUT_MS):
        window.send_message("first")
    qtbot.waitUntil(lambda: not window.controller.busy)
    assert "RuntimeError: boom" in window.banner_text.text()
    assert "RuntimeError: boom" in window.chat_view.answers[-1].status.text()

    send_and_wait(qtbot, window, "second")
    assert [m.content for m in window.controller.conversation.messages if m.role == "user"] == [
        "first",
        "second",
    ]
    assert window.chat_view.answers[-1].message.error is None


def test_out_of_memory_is_reported_in_plain_words(open_window, qtbot, tiny_models, monkeypatch):
    window = open_window(tiny_settings(tiny_models))
    _break_next_generate(window, monkeypatch, torch.OutOfMemoryError("CUDA out of memory"))
    with qtbot.waitSignal(window.worker.failed, timeout=LOAD_TIMEOUT_MS):
        window.send_message("hi")
    assert "Out of memory" in window.banner_text.text()
    assert send_and_wait(qtbot, window).stats.new_tokens > 0


def test_without_any_model_a_message_explains_why(open_window, qtbot, tiny_models, tmp_path):
    settings = tiny_settings(tiny_models)
    broken = replace(settings, models=replace(settings.models, target_path=str(tmp_path / "missing")))
    window = open_window(broken, wait_loaded=False)
    load = window.worker._loader

    def bundled_missing_too(**kwargs):  # type: ignore[no-untyped-def]
        if kwargs["target"] == "default":  # the fall-back after the saved models failed
            raise ModelLoadError("the bundled model is not installed")
        return load(**kwargs)

    window.worker._loader = bundled_missing_too
    def the_fallback_failed(message: str, _load_id: int) -> bool:
        return "bundled model is not installed" in message

    with qtbot.waitSignal(window.worker.load_failed, timeout=LOAD_TIMEOUT_MS, check_params_cb=the_fallback_failed):
        window.start()
    with qtbot.waitSignal(window.worker.failed, timeout=LOAD_TIMEOUT_MS):
        window.send_message("hello")
    assert "No model is loaded" in window.chat_view.answers[-1].status.text()
    assert window.settings.models == broken.models  # kept, so the person can fix the path


def test_a_failed_save_is_reported_and_the_chat_goes_on(open_window, qtbot, tiny_models, app_dirs):
    window = open_window(tiny_settings(tiny_models, max_new_tokens=4))
    blocker = app_dirs / "data" / "conversations"
    blocker.parent.mkdir(parents=True, exist_ok=True)
    blocker.write_text("a file where the folder should be")
    with qtbot.waitSignal(window.controller.error, timeout=LOAD_TIMEOUT_MS) as error:
        send_and_wait(qtbot, window)
    assert "Could not save the conversation" in error.args[0]
    qtbot.waitUntil(lambda: "Could not save" in window.banner_text.text())
    assert window.chat_view.answers[-1].message.content
