"""Sentences shown under answers and in the compare view (all translatable)."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication, QLocale

from app.engine.events import RunStats


def stats_line(stats: RunStats, speculative: bool) -> str:
    """ "42 new tokens · 118 tokens/s · first token after 0.21 s · acceptance 76% · 2.9 tokens/pass ·
    15 target passes (27 saved vs one per token)"."""
    parts = [
        QCoreApplication.translate("Stats", "{0} new tokens").format(stats.new_tokens),
        QCoreApplication.translate("Stats", "{0:.1f} tokens/s").format(stats.tokens_per_s),
    ]
    if stats.new_tokens:
        parts.append(
            QCoreApplication.translate("Stats", "first token after {0:.2f} s").format(
                stats.time_to_first_token_s
            )
        )
    if speculative:
        parts.append(QCoreApplication.translate("Stats", "acceptance {0:.0%}").format(stats.acceptance_rate))
    parts.append(
        QCoreApplication.translate("Stats", "{0:.2f} tokens per target pass").format(stats.tokens_per_pass)
    )
    parts.append(
        QCoreApplication.translate("Stats", "{0} target passes ({1} saved vs one per token)").format(
            stats.target_passes, stats.passes_saved
        )
    )
    return " · ".join(parts)


def how_made(speculative: bool, drafter: str) -> str:
    if not drafter:  # asked for before any model was loaded: nothing has answered yet
        return QCoreApplication.translate("Stats", "no model loaded")
    if speculative and drafter != "none":
        return QCoreApplication.translate("Stats", "with speculation ({0})").format(drafter)
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
        return QCoreApplication.translate("Stats", "Context: {0} tokens").format(f"{used:,}")
    return QCoreApplication.translate("Stats", "Context: {0} of {1} tokens ({2:.0%})").format(
        f"{used:,}", f"{limit:,}", used / limit
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
        "The conversation fills {0:.0%} of the context window: start a new chat soon, "
        "or the next answers will be cut.",
    ).format(used / limit)


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
