"""The comparison service: one conversation answered with and without speculation, fairly.

The CLI's ``compare`` and the GUI's Compare both call ``run_comparison`` and only present its
``ComparisonReport`` (pure data, ``app.engine.analysis.compare``)::

    report = run_comparison(engine, messages, GenerationConfig(k=4))
    print(headline(report.comparison).render())

Cache policy (``CACHE_POLICY``): the engine's kernels are warmed up once, then each arm starts
from fresh KV caches (``engine.reset()``: only the chat template's head, which every
conversation begins with, is kept), so neither arm reuses a prompt the other prefilled;
the speculative arm runs first, so whatever one-off cost the warm-up left lands on speculation,
never in its favour. Before each arm a few plain passes are timed and, during it, the load of
other processes measured (``Engine.start_arm``): when the machine changed between the arms the
measured speed-up is reported as not comparable instead of as a result (``measure_speedup``).
Afterwards the caches hold the chat template's head only: the next turn prefills the rest of the chat.
"""

from __future__ import annotations

import threading
from dataclasses import replace

from app.engine.analysis.compare import ComparisonReport, StoredAnswerCheck, compare_runs
from app.engine.backend import AnswerOptions, Conversation, TimedArms
from app.engine.config import GenerationConfig
from app.engine.events import ArmConditions, RunResult

ORDER = ("speculative", "baseline")
CACHE_POLICY = (
    "warmed up, then each arm from fresh caches (the chat template's head kept) after a timed plain pass; "
    "speculative first"
)


def arm_configs(config: GenerationConfig) -> tuple[GenerationConfig, GenerationConfig]:
    """The two arms: the same settings, with and without speculation."""
    return replace(config, speculative=True), replace(config, speculative=False)


def run_comparison(
    engine: TimedArms,
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
    conversation the answer belongs to: the suffix drafter sees nothing indexed under it, and
    neither arm records anything."""
    if stored is not None and _cut_or_continued(stored, config):
        config = replace(config, max_new_tokens=stored.stats.new_tokens)  # rerun at its own length
    spec_config, base_config = arm_configs(config)
    if warm_up:
        engine.warm_up()
    runs: dict[str, RunResult] = {}
    # a fresh rerun: neither arm drafts from the answer under comparison (it is indexed under
    # ``history_id``) nor records its own answer for the other
    fresh = AnswerOptions(history_id=history_id, rerun=True)
    conditions: dict[str, ArmConditions] = {}
    for arm in ORDER:
        engine.reset()
        arm_done = engine.start_arm()  # a plain pass timed before each arm: like conditions, or says not
        runs[arm] = engine.generate(
            conversation, spec_config if arm == "speculative" else base_config, cancel, options=fresh
        )
        conditions[arm] = arm_done()
    engine.reset()  # leave no cache that only one of the arms built
    speculative, baseline = runs["speculative"], runs["baseline"]
    return ComparisonReport(
        speculative=speculative,
        baseline=baseline,
        comparison=compare_runs(speculative, baseline, conditions=(conditions["speculative"], conditions["baseline"])),
        order=ORDER,
        cache_policy=CACHE_POLICY,
        stored=None if stored is None else check_stored(stored, speculative, baseline, config, engine),
    )


def _cut_or_continued(stored: RunResult, config: GenerationConfig) -> bool:
    """A stored answer of another length than ``config`` gives: stopped, or made longer by
    Continue (its new tokens add up past its settings' limit)."""
    n = stored.stats.new_tokens
    return n > 0 and (stored.stop_reason == "cancelled" or n > config.max_new_tokens)


def check_stored(
    stored: RunResult,
    speculative: RunResult,
    baseline: RunResult,
    config: GenerationConfig,
    engine: TimedArms | None = None,
) -> StoredAnswerCheck:
    """Did the models that made ``stored`` make the rerun, and did the rerun reproduce it?
    The models are those ``engine`` has loaded for the rerun's arm (the rerun itself may have
    skipped its draft model: that changes no model). Token ids are compared only where
    ``config`` promises the same answer again from its seed (``GenerationConfig.reproducible``);
    otherwise ``reproduced`` is None and ``sampled`` says why."""
    rerun = speculative if stored.speculative else baseline
    loaded = rerun.made_by
    if engine is not None and loaded is not None:
        loaded = engine.made_by(replace(config, speculative=stored.speculative))
    if stored.made_by is None or loaded is None:
        return StoredAnswerCheck(stored.made_by, (), None)
    differences = stored.made_by.differences(loaded)
    if differences:
        return StoredAnswerCheck(stored.made_by, differences, None)
    if not config.reproducible(drafted=stored.speculative):
        return StoredAnswerCheck(stored.made_by, (), None, sampled=True)
    ids, again = stored.token_ids, rerun.token_ids
    mismatch = next((i for i, (a, b) in enumerate(zip(ids, again)) if a != b), None)
    if mismatch is None and len(ids) != len(again):
        mismatch = min(len(ids), len(again))
    return StoredAnswerCheck(stored.made_by, (), mismatch is None, mismatch)
