"""Settings that cannot hurt, in the window (issue 20, section 4): a thread count above the
CPUs is capped with a reason; a temperature past 2, a largest adaptive k below k are refused with
a message; max new tokens above the context length are capped and said so; a saved model path
that does not load falls back to the bundled model, saying why; error banners stay short and go
once what they complained about works again."""

from __future__ import annotations

from dataclasses import replace

import pytest
from gui_helpers import send_and_wait, tiny_settings
from test_model_state import TIMEOUT_MS, models, stub_window  # noqa: F401 - the fixture

from app.engine.config import MAX_TEMPERATURE, available_cpus
from app.engine.errors import InvalidSettingError
from app.ui.main_window import MAX_BANNER_CHARS
from app.ui.settings.settings_dialog import SettingsDialog
from app.ui.settings.store import AppSettings, ModelSettings


def test_threads_above_the_cpus_are_capped_and_the_window_says_so(stub_window, qtbot):  # noqa: F811
    assert ModelSettings(cpu_threads=256).threads_option == available_cpus()
    window, _loader = stub_window("a")
    sent: list[object] = []
    request = window.worker.request_load
    window.worker.request_load = lambda *a, **kw: sent.append(kw["threads"]) or request(*a, **kw)
    asked = replace(models("b"), cpu_threads=available_cpus() + 254)
    with qtbot.waitSignal(window.worker.loaded, timeout=TIMEOUT_MS):
        window.apply_settings(replace(window.settings, models=asked))
    assert sent == [available_cpus()]
    assert f"{available_cpus() + 254}" in window.statusBar().currentMessage()
    dialog = SettingsDialog(window.settings, parent=window)
    qtbot.addWidget(dialog)
    assert dialog.cpu_threads.maximum() == available_cpus()


def test_absurd_sampling_and_adaptive_k_are_refused_with_a_reason(qapp, qtbot):
    with pytest.raises(InvalidSettingError, match="temperature"):
        AppSettings(sampling=True, temperature=5.0).generation_config()
    with pytest.raises(InvalidSettingError, match="adaptive"):
        AppSettings(adaptive_k=True, k=8, k_max=4).generation_config()
    AppSettings(adaptive_k=False, k=8, k_max=4).generation_config()  # k_max unused without adaptive k
    dialog = SettingsDialog(AppSettings())
    qtbot.addWidget(dialog)
    assert dialog.temperature.maximum() == MAX_TEMPERATURE
    dialog.adaptive_k.setChecked(True)
    dialog.auto_k.setChecked(False)
    dialog.k.setValue(8)
    dialog.k_max.setValue(4)
    dialog._on_accept()
    assert not dialog.error.isHidden() and "adaptive" in dialog.error.text()


def test_max_new_tokens_above_the_context_are_capped_and_said(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models, max_new_tokens=32768, draft="lookup"))
    limit = window.context_meter.limit
    assert 0 < limit < 32768
    sent = []
    request = window.worker.request_generate
    window.worker.request_generate = lambda conversation, config, **kw: sent.append(config) or request(
        conversation, config, **kw
    )
    send_and_wait(qtbot, window, "Hello world!")
    assert sent[0].max_new_tokens <= limit
    assert "32768" in window.statusBar().currentMessage() or "32768" in window.banner_text.text()


def test_a_saved_model_that_does_not_load_falls_back_to_the_bundled_one(stub_window, qtbot):  # noqa: F811
    window, _loader = stub_window("broken")  # the first load fails: nothing to keep using
    qtbot.waitUntil(lambda: window.models_in_use is not None, timeout=TIMEOUT_MS)
    assert window.models_in_use.models.target_kind == "default"
    assert window.settings.models == models("broken")  # what the person saved is kept to fix
    text = window.banner_text.text()
    assert "/models/broken" in text and "bundled" in text
    dialog = window.open_settings()
    assert dialog.model_error.isVisible()  # beside the models that failed


def test_a_no_model_banner_goes_when_a_model_loads_and_a_huge_error_is_bounded(stub_window, qtbot):  # noqa: F811
    window, _loader = stub_window("a")
    window.controller.error.emit("x" * 100_000)  # an answer's failure
    assert window.banner.isVisible() and len(window.banner_text.text()) <= MAX_BANNER_CHARS
    with qtbot.waitSignal(window.worker.loaded, timeout=TIMEOUT_MS):
        window.apply_settings(replace(window.settings, models=models("b")))
    assert window.banner.isHidden()  # the models changed: an earlier answer's failure is old news


def test_a_later_successful_answer_clears_an_answer_error(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models, max_new_tokens=3, draft="lookup"))
    window.controller.error.emit("Unexpected error in the engine (boom). " * 3000)
    assert window.banner.isVisible() and len(window.banner_text.text()) <= MAX_BANNER_CHARS
    send_and_wait(qtbot, window, "Hello world!")
    assert window.banner.isHidden()


def test_the_dialog_says_when_it_brings_a_saved_value_into_range(qapp, qtbot):
    saved = AppSettings(models=ModelSettings(cpu_threads=available_cpus() + 254), temperature=5.0)
    dialog = SettingsDialog(saved)
    qtbot.addWidget(dialog)
    text = dialog.error.text()
    assert not dialog.error.isHidden() and f"CPU threads {available_cpus() + 254} → {available_cpus()}" in text
    assert "temperature 5 → 2" in text
    quiet = SettingsDialog(AppSettings())
    qtbot.addWidget(quiet)
    assert quiet.error.isHidden()
