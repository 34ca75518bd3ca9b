"""Sentences shown under answers and in the compare view (all translatable)."""

from __future__ import annotations

from PySide6.QtCore import QCoreApplication

from app.engine.events import RunStats


def _tr(text: str) -> str:
    return QCoreApplication.translate("Stats", text)


def stats_line(stats: RunStats, speculative: bool) -> str:
    """ "42 new tokens · 118 tokens/s · acceptance 76% · 2.9 tokens/pass · 15 target passes
    (27 saved vs one per token)"."""
    parts = [
        _tr("{0} new tokens").format(stats.new_tokens),
        _tr("{0:.1f} tokens/s").format(stats.tokens_per_s),
    ]
    if speculative:
        parts.append(_tr("acceptance {0:.0%}").format(stats.acceptance_rate))
    parts.append(_tr("{0:.2f} tokens per target pass").format(stats.tokens_per_pass))
    parts.append(
        _tr("{0} target passes ({1} saved vs one per token)").format(stats.target_passes, stats.passes_saved)
    )
    return " · ".join(parts)


def how_made(speculative: bool, drafter: str) -> str:
    if speculative and drafter != "none":
        return _tr("with speculation ({0})").format(drafter)
    return _tr("target model only, no speculation")


def stop_note(stop_reason: str | None) -> str:
    return {
        "cancelled": _tr("Stopped: the answer is partial."),
        "max_new_tokens": _tr("Reached the max new tokens limit."),
    }.get(stop_reason or "", "")
