"""The interface language: SpecChat's own translation plus Qt's, installed at startup.

Translations live in ``resources/i18n/specchat_<lang>.qm`` (built by ``tools/i18n.py update``).
Contexts: ``self.tr("…")`` looks its text up under the *runtime* class name of ``self``
(PySide6 behaviour), which is also the context lupdate writes for the class that holds the
call. A subclass that inherits a method calling ``self.tr`` would look under its own name and
find nothing: keep ``self.tr`` in classes that are not subclassed, or use
``QCoreApplication.translate("Context", "…")`` there. tests/gui/test_i18n.py checks both.
"""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QLibraryInfo, QLocale, QTranslator

from app.paths import resource_path

# The settings value → the language it names; "auto" follows the system locale.
LANGUAGES = ("auto", "en", "fr")


def ui_locale(language: str) -> QLocale:
    if language == "en":
        return QLocale(QLocale.Language.English, QLocale.Country.UnitedStates)
    if language == "fr":
        return QLocale(QLocale.Language.French, QLocale.Country.France)
    return QLocale.system()


def install_translators(app: QCoreApplication, language: str) -> list[QTranslator]:
    """Install the translations for ``language`` ("auto", "en" or "fr") on ``app``; the
    translators are children of ``app`` (kept alive with it). Returns those installed:
    none for English, or where no translation exists for the locale."""
    locale = ui_locale(language)
    QLocale.setDefault(locale)
    installed = []
    folders = [
        ("specchat", resource_path("i18n")),
        ("qtbase", QLibraryInfo.path(QLibraryInfo.LibraryPath.TranslationsPath)),
    ]
    for name, folder in folders:
        if folder is None or locale.language() == QLocale.Language.English:
            continue
        translator = QTranslator(app)
        if translator.load(locale, name, "_", str(folder)) and app.installTranslator(translator):
            installed.append(translator)
    return installed


def remove_translators(app: QCoreApplication, translators: list[QTranslator]) -> None:
    for translator in translators:
        app.removeTranslator(translator)
        translator.deleteLater()
