"""French and English: the window in French, every string translated with its placeholders,
and the conventions that keep every string visible to pyside6-lupdate."""

from __future__ import annotations

import ast
import importlib.util
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from gui_helpers import send_and_wait, tiny_settings
from PySide6.QtCore import QLocale
from PySide6.QtWidgets import QApplication, QDialogButtonBox

from app.ui.common.conversation import TokenRecord
from app.ui.common.i18n import install_translators, remove_translators
from app.ui.common.storage import ConversationStore
from app.ui.settings.settings_dialog import SettingsDialog
from app.ui.settings.store import AppSettings, SettingsStore

ROOT = Path(__file__).resolve().parents[2]


def _load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("i18n_tool", ROOT / "tools" / "i18n.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


tool = _load_tool()


@pytest.fixture
def french(qapp: QApplication, app_dirs: Path) -> Iterator[None]:
    """The language setting is French, and its translators are installed as ``main`` does."""
    SettingsStore().save(AppSettings(language="fr"))
    previous = QLocale()
    translators = install_translators(qapp, SettingsStore().load().language)
    yield
    remove_translators(qapp, translators)
    QLocale.setDefault(previous)


@pytest.fixture(scope="module")
def messages() -> list:  # type: ignore[type-arg]
    """The strings of the code as lupdate extracts them now, with the committed translations."""
    return tool.current_messages()


def test_window_started_in_french_shows_french_strings(french, open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models, language="fr"))
    assert window.send_button.text() == "Envoyer"
    assert window.windowTitle() == "SpecChat"
    assert window.model_label.text().startswith("Cible : ")  # "Target: {0} · Drafter: {1}"
    send_and_wait(qtbot, window)
    stats = window.chat_view.answers[-1].stats.text()
    assert "nouveaux jetons" in stats and "passes du modèle cible" in stats
    assert "new tokens" not in stats


def test_qt_standard_buttons_are_french_too(french, qtbot):
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
    qtbot.addWidget(buttons)
    assert buttons.button(QDialogButtonBox.StandardButton.Cancel).text() == "Annuler"


def test_english_installs_no_translation(qapp: QApplication) -> None:
    previous = QLocale()
    try:
        assert install_translators(qapp, "en") == []
    finally:
        QLocale.setDefault(previous)


def test_language_setting_round_trips_through_the_dialog_and_the_store(app_dirs, qtbot):
    dialog = SettingsDialog(AppSettings(language="fr"))
    qtbot.addWidget(dialog)
    assert dialog.language.currentData() == "fr"
    dialog.language.setCurrentIndex(dialog.language.findData("en"))
    SettingsStore().save(dialog.settings())
    assert SettingsStore().load().language == "en"


def test_every_string_in_the_code_has_a_finished_french_translation(messages):
    missing = [(m.context, m.source) for m in messages if not m.finished]
    assert messages and not missing, f"run tools/i18n.py update, translate, update again: {missing}"


def test_committed_translation_file_holds_every_string_of_the_code(messages):
    committed = {(m.context, m.source) for m in tool.read_ts() if m.finished}
    assert {(m.context, m.source) for m in messages} <= committed


def test_translations_keep_exactly_the_placeholders_of_their_source():
    wrong = [
        (m.source, form)
        for m in tool.read_ts()
        if m.finished
        for form in (m.translation.split("\n") if "%n" in m.source else [m.translation])  # each plural form
        if tool.placeholders(m.source) != tool.placeholders(form)
    ]
    assert not wrong


def test_placeholder_check_sees_a_lost_placeholder():
    assert tool.placeholders("{0} of {1:.0%} <b>x</b>") == ["</b>", "<b>", "{0}", "{1:.0%}"]
    assert tool.placeholders("{0} sur") != tool.placeholders("{0} of {1}")


def test_compiled_qm_matches_the_ts(tmp_path: Path) -> None:
    fresh = tmp_path / "specchat_fr.qm"
    tool.compile_qm(tool.TS_FILE, fresh)
    assert fresh.read_bytes() == tool.QM_FILE.read_bytes(), "run tools/i18n.py update"


def test_translatable_text_is_always_a_literal_lupdate_can_see():
    problems = [p for path in tool.source_files() for p in tool.convention_problems(path)]
    assert not problems


def test_convention_check_catches_helpers_variables_and_fstrings(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from PySide6.QtCore import QCoreApplication\n"
        "def _tr(text):\n"
        "    return QCoreApplication.translate('Ctx', text)\n"
        "class W:\n"
        "    def m(self, name):\n"
        "        self.tr(name)\n"
        "        self.tr(f'hi {name}')\n"
        "        QCoreApplication.translate('Ctx', 'fine')\n"
    )
    problems = list(tool.convention_problems(bad))
    assert len(problems) == 4  # the helper, its translate(text), tr(name), tr(f"...")
    assert any("helper _tr()" in p for p in problems)


def test_self_tr_is_not_inherited_by_a_subclass_in_app():
    """PySide6's self.tr() looks up the *runtime* class name: a subclass of a class that calls
    it would find no translation (lupdate files the strings under the defining class)."""
    classes: dict[str, bool] = {}  # class name -> calls self.tr
    bases: set[str] = set()
    for path in tool.source_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                classes[node.name] = classes.get(node.name, False) or any(
                    isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "tr"
                    for n in ast.walk(node)
                )
                bases |= {b.id for b in node.bases if isinstance(b, ast.Name)}
    assert not [name for name, uses_tr in classes.items() if uses_tr and name in bases]


def test_rewrite_inlines_a_tr_helper_as_literal_translate_calls():
    source = (
        "from PySide6.QtCore import QCoreApplication\n\n\n"
        "def _tr(text: str) -> str:\n"
        '    return QCoreApplication.translate("Stats", text)\n\n\n'
        "def line(n: int) -> str:\n"
        '    return _tr("{0} new tokens").format(n) + _tr("é" "x")\n'
    )
    out, problems = tool.rewrite_source(source)
    assert not problems and "_tr" not in out
    assert 'QCoreApplication.translate("Stats", "{0} new tokens").format(n)' in out
    assert 'QCoreApplication.translate("Stats", "é" "x")' in out
    _, problems = tool.rewrite_source(source.replace('_tr("é" "x")', "_tr(str(n))"))
    assert problems


def test_rewrite_leaves_calls_inside_fstrings_to_a_person():
    source = (
        "from PySide6.QtCore import QCoreApplication\n"
        "def _tr(text):\n"
        "    return QCoreApplication.translate('Export', text)\n"
        "x = f\"# {_tr('New chat')}\"\n"
    )
    out, problems = tool.rewrite_source(source)
    assert out == source and problems


def test_a_new_untranslated_string_is_reported_missing(tmp_path: Path) -> None:
    """What the completeness test relies on: lupdate sees a new self.tr() string and the
    merge with the committed .ts leaves it unfinished."""
    extra = tmp_path / "new_widget.py"
    extra.write_text(
        "from PySide6.QtWidgets import QWidget\n"
        "class NewWidget(QWidget):\n"
        "    def m(self):\n"
        '        return self.tr("A brand new string")\n'
    )
    ts = tmp_path / "specchat_fr.ts"
    shutil.copy(tool.TS_FILE, ts)
    tool.extract(ts, [*tool.source_files(), extra])
    found = {(m.context, m.source): m.finished for m in tool.read_ts(ts)}
    assert found[("NewWidget", "A brand new string")] is False
    assert found[("MainWindow", "Send")] is True  # existing translations are kept


def test_why_compare_and_the_charts_print_numbers_the_french_way(french, qtbot):
    import re

    from test_compare import _report, _run

    from app.ui.compare.charts import LocaleAxis
    from app.ui.compare.compare_view import CompareDialog

    speculative = _run("abcX", [1, 2, 3, 9], margin=1e-5, wall=1.0, one_pass=True)
    baseline = _run("abcYZ", [1, 2, 3, 7, 8], margin=1e-5, wall=2.0)
    records = [TokenRecord(t.text, "draft", 1, t.id) for t in speculative.tokens]
    dialog = CompareDialog(_report(speculative, baseline), records)
    qtbot.addWidget(dialog)
    english_decimal = re.compile(r"(?<![\w.])\d+\.\d+")
    assert "1,50×" in dialog.verdict.text() and not english_decimal.search(dialog.verdict.text())
    cells = [dialog.table.item(r, 0).text() for r in range(dialog.table.rowCount())]
    assert "1,50×" in cells and not any(english_decimal.search(c) for c in cells), cells
    why = dialog.open_why()
    qtbot.addWidget(why)
    shown = [why.summary.text(), *(label.text() for label in why.values.values())]
    assert not any(english_decimal.search(text) for text in shown), shown
    assert LocaleAxis("left").tickStrings([0.2, 0.4], 1.0, 0.2) == ["0,2", "0,4"]


def test_the_bundled_model_loads_du_modele_and_settings_is_one_word(french, qtbot):
    from app.engine.errors import ModelLoadError
    from app.ui.main_window import MainWindow
    from app.ui.settings.settings_dialog import SettingsDialog
    from app.ui.settings.store import SettingsStore
    from app.worker import EngineWorker

    def fail(**_options: object) -> None:
        raise ModelLoadError("not loaded in this test")

    window = MainWindow(EngineWorker(loader=fail), SettingsStore(), ConversationStore())
    qtbot.addWidget(window)
    window._request_load(window.settings.models)  # the bundled model by default
    assert window.model_label.text() == "Chargement du modèle fourni…"
    dialog = SettingsDialog(window.settings, window)
    qtbot.addWidget(dialog)
    assert window.settings_action.text() == "Réglages…" and dialog.windowTitle() == "Réglages"
    window._on_load_failed("x", window._latest_load)
    assert "Réglages" in window.banner_text.text() and "Paramètres" not in window.banner_text.text()
    window.close()


def test_engine_errors_reach_the_french_window_in_french(french, open_window, qtbot, tiny_models):
    from dataclasses import replace

    from app.engine.errors import InvalidSettingError
    from app.ui.experiment.sweep_view import SweepDialog
    from app.worker.engine_worker import translated

    window = open_window(tiny_settings(tiny_models, language="fr"))
    with qtbot.waitSignal(window.worker.failed, timeout=60_000) as failed:
        assert window.send_message("mot " * 600)  # longer than the tiny model's 512 tokens
    assert failed.args[1].startswith("Le prompt fait ") and "jetons" in failed.args[1]
    assert "Le prompt fait" in window.banner_text.text() and "tokens long" not in window.banner_text.text()

    with qtbot.waitSignal(window.worker.load_failed, timeout=60_000):
        models = replace(window.settings.models, target_path="/nowhere/model")
        window.apply_settings(replace(window.settings, models=models))
    assert "Il n’y a aucun fichier ni dossier de modèle à l’emplacement « /nowhere/model »" in window.banner_text.text()

    dialog = SweepDialog(["lookup"], None)
    qtbot.addWidget(dialog)
    error = InvalidSettingError.of("drafter_not_loaded", drafter="'draft model'", available="prompt lookup")
    dialog.finish(error=translated(error))
    assert dialog.status.text() == (
        "L’expérience s’est arrêtée : Le brouillon 'draft model' n’est pas chargé (disponibles : prompt lookup)."
    )


def test_the_earlier_conversations_drafter_has_one_french_name(french, qtbot):
    from app.ui.chat.message_widgets import AnswerWidget
    from app.ui.common.conversation import Message
    from app.ui.common.engine_words import drafter_label

    assert drafter_label("suffix index") == "conversations antérieures"
    answer = AnswerWidget(Message("assistant", "x", speculative=True, drafter="suffix index"))
    qtbot.addWidget(answer)
    assert "conversations antérieures" in answer.header.text() and "suffix" not in answer.header.text()
