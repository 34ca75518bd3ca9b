"""Rank draft candidates by measuring them: a short answer (a few dozen tokens) from the target
alone, then with each candidate drafting, on this machine. Each run's own passes give the
acceptance α and what drafting and verifying cost against a plain step; ``explain`` turns them
into the speed-up they predict (the same number the Why panel calls "predicted").

A short probe is noisy, and says how a drafter does on one kind of text; it beats guessing from
the tokenizer and the parameter count alone (a random-weight model with the right tokenizer
would be "suggested" and never accepted). Torch-free at import: the model library's thread
imports the engine when it runs a probe.

    for probe in probe_drafts("default", ["lookup", "/models/small"]):
        print(probe.draft, probe.predicted_speedup, probe.acceptance_rate)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from app.engine.config import LOOKUP, GenerationConfig
from app.engine.errors import SpecChatError

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
    predicted_speedup: float | None  # from α and the measured pass costs (``explain``)
    measured_speedup: float | None  # decode tokens/s ÷ the target alone's, on this short run
    acceptance_rate: float | None  # α
    new_tokens: int = 0
    error: str = ""  # why it could not be measured (the engine's message)

    @property
    def rank_key(self) -> float:
        """Higher is better; a candidate that could not be measured ranks last."""
        if self.predicted_speedup is not None:
            return self.predicted_speedup
        return self.measured_speedup if self.measured_speedup is not None else -1.0


def best_probe(probes: Sequence[DraftProbe]) -> DraftProbe | None:
    """The candidate predicted fastest, if it beats the target alone (else None)."""
    ranked = sorted((p for p in probes if not p.error), key=lambda p: p.rank_key, reverse=True)
    return ranked[0] if ranked and ranked[0].rank_key > 1.0 else None


def probe_drafts(
    target: str,
    drafts: Sequence[str],
    *,
    tokens: int = PROBE_TOKENS,
    k: int = PROBE_K,
    device: str | None = "auto",
    cancel: threading.Event | None = None,
    loader: Callable[[str], object] | None = None,
) -> Iterator[DraftProbe]:
    """Yield one ``DraftProbe`` per draft (a source or LOOKUP), in order, as each is measured.
    ``cancel`` stops between runs. Loads the target once and each draft model once."""
    from app.engine.analysis.explanation import explain
    from app.engine.models.loading import LoadedModel, load_model
    from app.engine.session import Engine

    def load(source: str) -> LoadedModel:
        loaded = loader(source) if loader is not None else load_model(source, device=device)
        assert isinstance(loaded, LoadedModel)
        return loaded

    conversation = [{"role": "user", "content": PROBE_PROMPT}]
    try:
        target_model = load(target)
        plain = Engine(target_model)
        plain.warm_up()  # one-off kernel set-up would otherwise count against the plain run
        baseline = plain.generate(conversation, GenerationConfig(max_new_tokens=tokens, speculative=False))
    except SpecChatError as exc:
        for draft in drafts:
            yield DraftProbe(target, draft, None, None, None, error=str(exc))
        return
    config = GenerationConfig(max_new_tokens=tokens, speculative=True, auto_k=False, k=k, k_max=max(16, k))
    for draft in drafts:
        if cancel is not None and cancel.is_set():
            return
        try:
            engine = Engine(target_model, lookup=True) if draft == LOOKUP else Engine(target_model, load(draft))
            engine.warm_up()
            run = engine.generate(conversation, config, cancel=cancel)
        except SpecChatError as exc:
            yield DraftProbe(target, draft, None, None, None, error=str(exc))
            continue
        if cancel is not None and cancel.is_set():
            return
        explanation = explain(run, baseline)
        yield DraftProbe(
            target,
            draft,
            explanation.predicted_speedup,
            explanation.measured_speedup,
            explanation.acceptance_rate,
            run.stats.new_tokens,
        )
