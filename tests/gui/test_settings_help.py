"""Every setting explains itself (a tooltip in plain language), the repetition penalty reaches
the engine from the dialog, and a cut answer says why."""

from __future__ import annotations

from dataclasses import replace

from gui_helpers import tiny_settings
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractSlider,
    QAbstractSpinBox,
    QComboBox,
    QDialogButtonBox,
    QLineEdit,
    QTabBar,
    QWidget,
)

from app.engine.config import GenerationConfig
from app.ui.common.formatting import stop_note
from app.ui.settings.settings_dialog import SettingsDialog
from app.ui.settings.store import AppSettings

INPUTS = (QAbstractButton, QComboBox, QAbstractSpinBox, QLineEdit, QAbstractSlider)


def _inside(widget: QWidget, kinds: tuple[type, ...]) -> bool:
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, kinds):
            return True
        parent = parent.parentWidget()
    return False


def setting_widgets(dialog: SettingsDialog) -> list[QWidget]:
    """Every input a person edits a setting with: not the dialog's OK/Cancel/Restore buttons, not
    the line edits inside spin and combo boxes, not the tab bar's scroll arrows."""
    return [
        w
        for w in dialog.findChildren(QWidget)
        if isinstance(w, INPUTS) and not _inside(w, (QDialogButtonBox, QComboBox, QAbstractSpinBox, QTabBar))
    ]


def _name(dialog: SettingsDialog, widget: QWidget) -> str:
    for name, value in vars(dialog).items():
        if value is widget:
            return name
    text = widget.text() if isinstance(widget, (QAbstractButton, QLineEdit)) else ""
    return f"{type(widget).__name__} {text!r} in {type(widget.parent()).__name__}"


def test_every_setting_in_the_dialog_has_a_tooltip(app_dirs, qtbot):
    dialog = SettingsDialog(AppSettings())
    qtbot.addWidget(dialog)
    widgets = setting_widgets(dialog)
    assert len(widgets) >= 25  # the walk found the settings (pickers, tabs and the language)
    assert dialog.repetition_penalty in widgets and dialog.draft.kind in widgets
    missing = [_name(dialog, w) for w in widgets if not w.toolTip().strip()]
    assert not missing, f"settings without a tooltip: {missing}"


def test_the_tooltips_explain_the_speculation_words(app_dirs, qtbot):
    dialog = SettingsDialog(AppSettings())
    qtbot.addWidget(dialog)
    lookup = dialog.draft.kind.findData("lookup")
    assert "conversation" in dialog.draft.kind.itemData(lookup, Qt.ItemDataRole.ToolTipRole)
    assert "k:" in dialog.k.toolTip()
    assert "most likely next token" in dialog.confidence.toolTip()
    assert "the same answer whether speculation is on or off" in dialog.sampling_mode.toolTip()
    assert "identically to the target and the draft" in dialog.repetition_penalty.toolTip()


def test_the_toolbar_switches_and_system_prompt_have_tooltips(open_window, tiny_models):
    window = open_window(tiny_settings(tiny_models), wait_loaded=False)
    for widget in (window.speculation_switch, window.show_rejected, window.system_prompt):
        assert widget.toolTip().strip()


def test_the_dialogs_repetition_penalty_reaches_the_config_the_window_sends(
    open_window, qtbot, tiny_models, monkeypatch
):
    window = open_window(tiny_settings(tiny_models))
    dialog = SettingsDialog(window.settings, window)
    qtbot.addWidget(dialog)
    assert dialog.repetition_penalty.value() == 1.0  # off by default
    dialog.repetition_penalty.setValue(1.3)
    dialog.accepted.connect(lambda: window.apply_settings(dialog.settings()))
    dialog._on_accept()

    sent: list[GenerationConfig] = []
    monkeypatch.setattr(window.controller, "send", lambda text, config: sent.append(config) or True)
    assert window.send_message("Hello")
    assert sent[0].repetition_penalty == 1.3


def test_the_repetition_penalty_round_trips_through_the_dialog(app_dirs, qtbot):
    settings = replace(AppSettings(), repetition_penalty=1.15)
    dialog = SettingsDialog(settings)
    qtbot.addWidget(dialog)
    assert dialog.settings() == settings
    dialog._on_restore_defaults()
    assert dialog.settings().repetition_penalty == 1.0


def test_an_answer_cut_by_a_full_context_window_says_so():
    note = stop_note("context_full")
    assert "context window is full" in note and "new chat" in note
