"""Draft candidates ranked by a short measured run (issue 12 §5): a well-matched draft model
measures a high acceptance and ranks above an unrelated one with the same tokenizer."""

from __future__ import annotations

import threading

from app.engine.analysis.probe import DraftProbe, best_probe
from app.engine.analysis.probe_run import probe_drafts
from app.engine.config import LOOKUP


def test_a_matched_draft_ranks_above_an_unrelated_one_with_the_same_tokenizer(tiny_models, load_tiny):
    drafts = [str(tiny_models["llama-draft"]), str(tiny_models["llama-other"]), LOOKUP]
    by_path = {str(path): name for name, path in tiny_models.items()}
    probes = list(
        probe_drafts(str(tiny_models["llama"]), drafts, tokens=24, loader=lambda source: load_tiny(by_path[source]))
    )

    assert [p.draft for p in probes] == drafts and not any(p.error for p in probes)
    matched, unrelated, _lookup = probes
    assert matched.alpha is not None and unrelated.alpha is not None
    assert matched.alpha > 0.5 > unrelated.alpha
    assert matched.new_tokens == 24 and matched.predicted_decode_speedup is not None
    assert matched.rank_key > unrelated.rank_key


def test_cancelling_stops_between_candidates(tiny_models, load_tiny):
    cancel = threading.Event()
    by_path = {str(path): name for name, path in tiny_models.items()}
    probes = probe_drafts(
        str(tiny_models["llama"]),
        [LOOKUP, str(tiny_models["llama-draft"])],
        tokens=8,
        cancel=cancel,
        loader=lambda source: load_tiny(by_path[source]),
    )
    first = next(probes)
    cancel.set()
    assert first.draft == LOOKUP and list(probes) == []


def test_the_best_candidate_must_beat_the_target_alone():
    def probe(draft: str, speedup: float | None, error: str = "") -> DraftProbe:
        return DraftProbe("t", draft, speedup, None, None, error=error)

    assert best_probe([probe("a", 1.4), probe("b", 2.2), probe("c", None, "failed")]).draft == "b"  # type: ignore[union-attr]
    assert best_probe([probe("a", 0.8), probe("b", None, "failed")]) is None
