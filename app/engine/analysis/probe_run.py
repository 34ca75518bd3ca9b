"""Running the draft probe (see ``probe.py``): loads the target once and each draft once,
answers ``PROBE_PROMPT`` with the target alone and then with each candidate drafting.

    for probe in probe_drafts("default", ["lookup", "/models/small"]):
        print(probe.draft, probe.predicted_decode_speedup, probe.alpha)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence

from app.engine.analysis.explanation import explain
from app.engine.analysis.probe import PROBE_K, PROBE_PROMPT, PROBE_TOKENS, DraftProbe
from app.engine.config import LOOKUP, GenerationConfig
from app.engine.errors import SpecChatError
from app.engine.models.loading import LoadedModel, load_model
from app.engine.session import Engine


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
            explanation.predicted_decode_speedup,
            explanation.decode_speedup,
            explanation.alpha,
            run.stats.new_tokens,
        )
