"""Sentences shown under answers and in the compare view (all translatable)."""

from __future__ import annotations

import re

from PySide6.QtCore import QCoreApplication, QLocale

from app.engine.events import RunStats
from app.ui.common.engine_words import drafter_label, server_words


def stats_line(stats: RunStats, speculative: bool) -> str:
    """ "42 new tokens · 118 tokens/s · first token after 0.21 s · drafts accepted 76% · 2.90 tokens per target pass ·
    15 target passes (27 saved vs one per token)"."""
    parts = [
        QCoreApplication.translate("Stats", "{0} new tokens").format(integer(stats.new_tokens)),
        QCoreApplication.translate("Stats", "{0} tokens/s").format(decimal(stats.tokens_per_s, 1)),
    ]
    if stats.new_tokens:
        parts.append(
            QCoreApplication.translate("Stats", "first token after {0} s").format(
                decimal(stats.time_to_first_token_s, 2)
            )
        )
    if speculative:
        parts.append(
            QCoreApplication.translate("Stats", "drafts accepted {0}").format(percent(stats.drafts_accepted_share))
        )
    parts.append(
        QCoreApplication.translate("Stats", "{0} tokens per target pass").format(decimal(stats.tokens_per_pass, 2))
    )
    parts.append(
        QCoreApplication.translate("Stats", "{0} target passes ({1} saved vs one per token)").format(
            integer(stats.target_passes), integer(stats.passes_saved)
        )
    )
    return " · ".join(parts)


def how_made(speculative: bool, drafter: str, server: str | None = None) -> str:
    """How an answer was made; ``server``: the server that made it (``RunProvenance.server``)."""
    if server:
        made = QCoreApplication.translate("Stats", "on the server {0}").format(server_words(server))
        if speculative and drafter != "none":
            return made + ", " + QCoreApplication.translate("Stats", "with the server's speculation")
        return made + ", " + QCoreApplication.translate("Stats", "no speculation")
    if not drafter:  # asked for before any model was loaded: nothing has answered yet
        return QCoreApplication.translate("Stats", "no model loaded")
    if speculative and drafter != "none":
        return QCoreApplication.translate("Stats", "with speculation ({0})").format(drafter_label(drafter))
    return QCoreApplication.translate("Stats", "target model only, no speculation")


def stop_note(stop_reason: str | None) -> str:
    return {
        "cancelled": QCoreApplication.translate("Stats", "Stopped: the answer is partial."),
        "max_new_tokens": QCoreApplication.translate("Stats", "Reached the max new tokens limit."),
        "context_full": QCoreApplication.translate(
            "Stats", "The context window is full: the answer was cut. Start a new chat to continue."
        ),
    }.get(stop_reason or "", "")


CONTEXT_WARN_FRACTION = 0.8  # warn from here on: the next answer may not fit


def context_line(used: int, limit: int) -> str:
    """ "Context: 1,234 of 2,048 tokens (60%)"."""
    if limit <= 0:
        return QCoreApplication.translate("Stats", "Context: {0} tokens").format(integer(used))
    return QCoreApplication.translate("Stats", "Context: {0} of {1} tokens ({2})").format(
        integer(used), integer(limit), percent(used / limit)
    )


def context_warning(used: int, limit: int) -> str:
    """A warning once the conversation fills ``CONTEXT_WARN_FRACTION`` of the window, else ""."""
    if limit <= 0 or used < CONTEXT_WARN_FRACTION * limit:
        return ""
    if used >= limit:
        return QCoreApplication.translate(
            "Stats", "The context window is full: start a new chat (answers here will be cut)."
        )
    return QCoreApplication.translate(
        "Stats",
        "The conversation fills {0} of the context window: start a new chat soon, "
        "or the next answers will be cut.",
    ).format(percent(used / limit))


# ---- numbers in the interface's locale ("2,048" / "2 048", "0.42" / "0,42", "76%" / "76 %") --
def number_locale() -> QLocale:
    """The interface's locale (``QLocale.setDefault`` at start); the C locale, which does not
    group digits, reads as US English."""
    locale = QLocale()
    if locale.language() == QLocale.Language.C:
        return QLocale(QLocale.Language.English, QLocale.Country.UnitedStates)
    return locale


def integer(value: int) -> str:
    return number_locale().toString(int(value))


def decimal(value: float, decimals: int) -> str:
    return number_locale().toString(float(value), "f", decimals)


def percent(fraction: float, decimals: int = 0) -> str:
    """A share as a percentage; French puts a narrow no-break space before the sign."""
    locale = number_locale()
    sign = "\u202f%" if locale.language() == QLocale.Language.French else "%"
    return decimal(fraction * 100, decimals) + sign


def ratio(value: float, decimals: int = 2) -> str:
    """ "5.40×" / "5,40×": a speed-up or a cost in units of a plain pass."""
    return decimal(value, decimals) + "×"


_ENGLISH_NUMBER = re.compile(r"(?<![\w.,])(\d+)\.(\d+)(?=×|%|\s|$|[),;:])|(?<![\w.,])(\d+)%")


def localized_numbers(text: str) -> str:
    """A sentence the engine wrote (English number format: "6.00", "5.40×", "28%") with its
    numbers in the interface's locale ("6,00", "5,40×", "28 %"); names such as "Qwen2.5-0.5B"
    are left alone (a digit glued to a letter or a dash is no number of the sentence)."""
    locale = number_locale()
    point = locale.decimalPoint()
    if point == "." and locale.language() != QLocale.Language.French:
        return text

    def local(match: re.Match[str]) -> str:
        if match.group(3) is not None:
            return percent(int(match.group(3)) / 100)
        return f"{match.group(1)}{point}{match.group(2)}"

    return _ENGLISH_NUMBER.sub(local, text)


def parameter_count(count: int | None) -> str:
    """ "135M", "1.5B" ("135 M", "1,5 Md" in French): the engine's ``format_parameters``
    rounding, in the interface's language."""
    if not count:
        return "?"
    units = (
        (1e9, QCoreApplication.translate("Units", "{0}B", "billions of parameters")),
        (1e6, QCoreApplication.translate("Units", "{0}M", "millions of parameters")),
        (1e3, QCoreApplication.translate("Units", "{0}K", "thousands of parameters")),
    )
    for scale, unit in units:
        if count >= scale:
            value = count / scale
            return unit.format(decimal(value, 1 if value < 10 else 0))
    return integer(count)


def byte_size(size: int | None) -> str:
    """ "1.1 GB" ("1,1 Go" in French): the engine's ``format_size`` rounding (powers of 1000)."""
    if size is None:
        return "?"
    units = (
        QCoreApplication.translate("Units", "{0} B", "bytes"),
        QCoreApplication.translate("Units", "{0} KB", "kilobytes"),
        QCoreApplication.translate("Units", "{0} MB", "megabytes"),
        QCoreApplication.translate("Units", "{0} GB", "gigabytes"),
    )
    value = float(size)
    for index, unit in enumerate(units):
        if value < 1000 or index == len(units) - 1:
            whole = index == 0 or value >= 10
            return unit.format(decimal(value, 0 if whole else 1))
        value /= 1000
    return integer(size)
