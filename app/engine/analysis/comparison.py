"""The comparison service: one conversation answered with and without speculation, fairly.

The CLI's ``compare`` and the GUI's Compare both call ``run_comparison`` and only present its
``ComparisonReport`` (pure data, ``app.engine.analysis.compare``)::

    report = run_comparison(engine, messages, GenerationConfig(k=4))
    print(headline(report.comparison).render())

Cache policy (``CACHE_POLICY``): the engine's kernels are warmed up once, then each arm starts
from empty KV caches (``engine.reset()``), so neither arm reuses a prompt the other prefilled;
the speculative arm runs first, so whatever one-off cost the warm-up left lands on speculation,
never in its favour. Afterwards the caches are empty: the next turn prefills the whole chat.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from app.engine.analysis.compare import ComparisonReport, StoredAnswerCheck, compare_runs
from app.engine.config import GenerationConfig
from app.engine.events import RunResult

if TYPE_CHECKING:
    from app.engine.session import Conversation, Engine

ORDER = ("speculative", "baseline")
CACHE_POLICY = "warmed up, then each arm from empty caches; speculative first"


def arm_configs(config: GenerationConfig) -> tuple[GenerationConfig, GenerationConfig]:
    """The two arms: the same settings, with and without speculation."""
    return replace(config, speculative=True), replace(config, speculative=False)


def run_comparison(
    engine: Engine,
    conversation: Conversation,
    config: GenerationConfig,
    *,
    stored: RunResult | None = None,
    cancel: threading.Event | None = None,
    warm_up: bool = True,
    history_id: str | None = None,
) -> ComparisonReport:
    """Run both arms fresh and compare them. ``stored``: an earlier answer to the same
    conversation that the person asked to compare; the report says whether the models that
    made it are the ones used now and whether the rerun reproduced it. ``history_id``: the
    conversation the answers are indexed under (the suffix drafter's memory)."""
    if stored is not None and stored.stop_reason == "cancelled" and stored.stats.new_tokens > 0:
        config = replace(config, max_new_tokens=stored.stats.new_tokens)  # the same length
    spec_config, base_config = arm_configs(config)
    if warm_up:
        engine.warm_up()
    runs: dict[str, RunResult] = {}
    more: dict[str, Any] = {} if history_id is None else {"history_id": history_id}  # stand-in engines take none
    for arm in ORDER:
        engine.reset()
        runs[arm] = engine.generate(
            conversation, spec_config if arm == "speculative" else base_config, cancel, **more
        )
    engine.reset()  # leave no cache that only one of the arms built
    speculative, baseline = runs["speculative"], runs["baseline"]
    return ComparisonReport(
        speculative=speculative,
        baseline=baseline,
        comparison=compare_runs(speculative, baseline),
        order=ORDER,
        cache_policy=CACHE_POLICY,
        stored=None if stored is None else check_stored(stored, speculative, baseline),
    )


def check_stored(stored: RunResult, speculative: RunResult, baseline: RunResult) -> StoredAnswerCheck:
    """Did the models that made ``stored`` make the rerun, and did the rerun reproduce it?"""
    rerun = speculative if stored.speculative else baseline
    if stored.made_by is None or rerun.made_by is None:
        return StoredAnswerCheck(stored.made_by, (), None)
    differences = stored.made_by.differences(rerun.made_by)
    if differences:
        return StoredAnswerCheck(stored.made_by, differences, None)
    ids, again = stored.token_ids, rerun.token_ids
    mismatch = next((i for i, (a, b) in enumerate(zip(ids, again)) if a != b), None)
    if mismatch is None and len(ids) != len(again):
        mismatch = min(len(ids), len(again))
    return StoredAnswerCheck(stored.made_by, (), mismatch is None, mismatch)
