"""Marking engine sentences for translation without importing Qt.

The engine words its verdicts and explanations in English (one wording for the CLI and the
GUI); ``QT_TRANSLATE_NOOP("Context", "…")`` returns the text unchanged but lets pyside6-lupdate
find it, and the GUI translates it with ``QCoreApplication.translate("Context", text)``.
"""

from __future__ import annotations


def QT_TRANSLATE_NOOP(context: str, text: str) -> str:
    return text
