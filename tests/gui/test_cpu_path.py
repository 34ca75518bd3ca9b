"""What the window says about how the models compute on this CPU: bf16 saved in the settings
loads after a restart on a CPU without bf16 matrix instructions (forced here), the status bar
names the dtype and the kernel path, and the bf16 tooltip says what bf16 does on this CPU."""

from __future__ import annotations

from dataclasses import replace

import pytest
from gui_helpers import send_and_wait, tiny_settings
from PySide6.QtCore import Qt

from app.engine.runners.cpu_probe import CpuProbe, force_probe, probe
from app.ui.settings.settings_dialog import SettingsDialog
from app.ui.settings.store import AppSettings

FALLBACK = "bf16 weights computed in fp32: this CPU has no bf16 matrix instructions."


@pytest.fixture
def no_bf16_packing():
    force_probe("avx2")
    yield
    force_probe(None)


def bf16_settings(tiny_models) -> AppSettings:
    settings = tiny_settings(tiny_models, draft="lookup")
    return replace(settings, models=replace(settings.models, dtype="bfloat16"))


def test_bf16_saved_loads_after_a_restart_and_the_status_bar_says_how_it_computes(
    open_window, qtbot, tiny_models, no_bf16_packing
):
    open_window(bf16_settings(tiny_models)).close()  # saved, as by an earlier session
    window = open_window()  # the restart: bf16 read back from the settings
    assert window.settings.models.dtype == "bfloat16"
    label = window.model_label.text()
    assert "Target: llama · Drafter: prompt lookup · bf16 weights, fp32 compute" == label
    assert FALLBACK in window.model_label.toolTip()  # as it is, or wrapped as rich text
    assert window.banner.isHidden()
    result = send_and_wait(qtbot, window)
    assert result.stats.new_tokens > 0 and window.banner.isHidden()


def test_the_status_bar_names_the_native_kernel_path_and_the_settings_get_the_probe(open_window, tiny_models, qtbot):
    window = open_window(tiny_settings(tiny_models, draft="lookup"))
    assert window.model_label.text().endswith(" · fp32 · oneDNN kernels")
    assert window.model_label.toolTip() == ""
    qtbot.waitUntil(lambda: window.cpu is not None)
    assert window.cpu == probe()
    dialog = window.open_settings()
    assert "On this CPU (" in dialog.dtype.toolTip()
    dialog.reject()


def test_the_status_bar_says_when_the_kernels_are_off(open_window, tiny_models):
    settings = tiny_settings(tiny_models, draft="lookup")
    window = open_window(replace(settings, models=replace(settings.models, cpu_kernels=False)))
    assert window.model_label.text().endswith(" · fp32 · stock kernels")


@pytest.mark.parametrize(
    ("packs", "expected"),
    [
        (("float32", "bfloat16"), "bfloat16 runs the fast kernels in bf16: half the memory of float32 and faster"),
        (("float32",), "bfloat16 gains nothing: it has no bf16 matrix instructions"),
        ((), "the fast kernels cannot run"),
    ],
)
def test_the_bf16_tooltip_says_what_bf16_does_on_this_cpu(qtbot, packs, expected):
    cpu = CpuProbe("AVX2", ("avx2",), packs)
    dialog = SettingsDialog(AppSettings(), cpu=cpu)
    qtbot.addWidget(dialog)
    item_tip = dialog.dtype.itemData(dialog.dtype.findText("bfloat16"), Qt.ItemDataRole.ToolTipRole)
    assert expected in item_tip and "On this CPU (AVX2)" in item_tip
    assert item_tip in dialog.dtype.toolTip()


def test_the_status_bar_names_the_draft_form_auto_chose_and_an_asked_one(open_window, tiny_models):
    window = open_window(tiny_settings(tiny_models))  # a draft model, the draft dtype left at auto
    assert window.settings.models.draft_dtype == "auto"
    label = window.model_label.text()
    assert " · draft " in label and "measured cheapest" in label
    chosen = label.split(" · draft ")[1].split(" ")[0]
    assert chosen in ("fp32", "bf16", "int8", "int4")
    asked = tiny_settings(tiny_models)
    window = open_window(replace(asked, models=replace(asked.models, draft_dtype="int8")))
    assert window.model_label.text().endswith(" · draft int8")


def test_the_weights_form_setting_loads_int4_and_the_status_bar_names_it(open_window, tiny_models, qtbot):
    """Issue 18: the Settings choice reaches the engine, and the status bar says the form, who
    quantized it, from what, and its size."""
    settings = tiny_settings(tiny_models, draft="lookup")
    window = open_window(replace(settings, models=replace(settings.models, dtype="auto", weights="int4")))
    assert window.worker._engine.target.dtype == "int4"
    label = window.model_label.text()
    assert " · int4 (quantized by SpecChat) from fp32 · " in label and label.endswith(" GB · weight-only kernels")
    dialog = window.open_settings()
    assert dialog.weights.currentData() == "int4" and dialog.settings().models.weights == "int4"
    dialog.reject()
    result = send_and_wait(qtbot, window)
    assert result.made_by is not None and result.made_by.dtype == "int4"
