"""Rank draft candidates by measuring them: a short answer (a few dozen tokens) from the target
alone, then with each candidate drafting, on this machine. Each run's own passes give the
acceptance α and what drafting and verifying cost against a plain step; ``explain`` turns them
into the speed-up they predict (the same number the Why panel calls "predicted").

A short probe is noisy, and says how a drafter does on one kind of text; it beats guessing from
the tokenizer and the parameter count alone (a random-weight model with the right tokenizer
would be "suggested" and never accepted). This module is torch-free (the window imports it);
``probe_run.probe_drafts`` runs the probe, on the model library's thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

PROBE_PROMPT = (
    "List the eight planets of the solar system in order from the Sun, one per line, each with one short fact."
)
PROBE_TOKENS = 48  # new tokens per run: enough passes to fit α, short enough for seconds
PROBE_K = 4  # drafts per pass: a fixed k, so every candidate is measured the same way


@dataclass(frozen=True)
class DraftProbe:
    """One candidate's short run: what it measured and the speed-up that predicts."""

    target: str  # sources, as the library lists them
    draft: str  # a model source, or LOOKUP
    predicted_decode_speedup: float | None  # from α and the measured pass costs (``explain``)
    decode_speedup: float | None  # decode tokens/s ÷ the target alone's, on this short run
    alpha: float | None  # acceptance α
    new_tokens: int = 0
    error: str = ""  # why it could not be measured (the engine's message)

    @property
    def rank_key(self) -> float:
        """Higher is better; a candidate that could not be measured ranks last."""
        if self.predicted_decode_speedup is not None:
            return self.predicted_decode_speedup
        return self.decode_speedup if self.decode_speedup is not None else -1.0


def best_probe(probes: Sequence[DraftProbe]) -> DraftProbe | None:
    """The candidate predicted fastest, if it beats the target alone (else None)."""
    ranked = sorted((p for p in probes if not p.error), key=lambda p: p.rank_key, reverse=True)
    return ranked[0] if ranked and ranked[0].rank_key > 1.0 else None
