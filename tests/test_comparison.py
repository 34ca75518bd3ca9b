"""The comparison service: both arms fresh under one cache policy, each run recording which models
and settings made it, and a stored answer checked against the models loaded now."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from app.engine import Engine
from app.engine.analysis.comparison import CACHE_POLICY, ORDER, run_comparison
from app.engine.backend import NEW_ANSWER, AnswerOptions
from app.engine.config import GenerationConfig
from app.engine.decoding import decode as decode_module
from app.engine.decoding.suffix_drafter import SUFFIX_DRAFTER_NAME
from app.engine.events import RunStats, TokenInfo

PROMPT = "The quick brown fox jumps over the lazy dog. The quick brown"
# a fixed k: with auto k the engine may skip the draft model for answers this short (its
# catch-up would not be repaid), and the speculative arm then rightly names no drafter
CONFIG = GenerationConfig(max_new_tokens=16, k=4, auto_k=False)


@pytest.fixture(scope="module")
def engine(load_tiny) -> Engine:  # type: ignore[no-untyped-def]
    return Engine(load_tiny("llama"), load_tiny("llama-draft"))


class _SpyEngine:
    """Records the calls the service makes, with every option it passes; generates through a
    real engine (whatever it is not told here goes to the engine unchanged)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.calls: list[str] = []
        self.options: list[AnswerOptions] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self.engine, name)

    def warm_up(self) -> None:
        self.calls.append("warm_up")

    def reset(self) -> None:
        self.calls.append("reset")
        self.engine.reset()

    def start_arm(self):  # type: ignore[no-untyped-def]
        self.calls.append("start_arm")
        return self.engine.start_arm()

    def generate(self, conversation, config, cancel=None, options=NEW_ANSWER):  # type: ignore[no-untyped-def]
        self.calls.append("speculative" if config.speculative else "baseline")
        self.options.append(options)
        return self.engine.generate(conversation, config, cancel, options=options)


def test_both_arms_run_after_a_warm_up_from_empty_caches_speculative_first(engine):
    engine.generate(PROMPT, CONFIG)  # a warm prompt cache that neither arm may reuse
    spy = _SpyEngine(engine)
    report = run_comparison(spy, PROMPT, CONFIG)  # type: ignore[arg-type]

    assert spy.calls == [
        "warm_up", "reset", "start_arm", "speculative", "reset", "start_arm", "baseline", "reset"
    ]
    assert report.comparison.measured is not None and report.comparison.measured.plain_drift is not None
    assert report.order == ORDER == ("speculative", "baseline") and report.cache_policy == CACHE_POLICY
    for run in (report.speculative, report.baseline):
        assert run.stats.reused_prompt_tokens == 0
    assert report.speculative.speculative and not report.baseline.speculative
    assert report.comparison.identical and report.comparison.verdict == "identical"


def test_both_arms_are_answered_under_the_conversations_own_history_id(engine):
    """The spy keeps every option, so a service that dropped ``history_id`` (the suffix
    drafter's owner of the conversation) for either arm would fail here."""
    spy = _SpyEngine(engine)
    run_comparison(spy, PROMPT, CONFIG, history_id="chat 7")  # type: ignore[arg-type]
    assert [(o.history_id, o.rerun) for o in spy.options] == [("chat 7", True), ("chat 7", True)]


def test_each_run_records_the_models_dtype_device_and_settings_that_made_it(engine):
    report = run_comparison(engine, PROMPT, CONFIG)
    spec, base = report.speculative.made_by, report.baseline.made_by
    assert spec is not None and base is not None
    assert spec.target == base.target == engine.target.name
    assert spec.dtype == base.dtype == "float32" and spec.device == base.device == "cpu"
    assert spec.drafter == engine.drafter_name and spec.draft_dtype == "float32"
    assert base.drafter == "none" and base.draft_dtype is None
    assert GenerationConfig.from_dict(spec.config) == CONFIG
    assert GenerationConfig.from_dict(base.config) == replace(CONFIG, speculative=False)
    assert report.comparison.dtype == "float32"


def test_tokens_record_the_top_logit_that_sets_their_margin_resolution(engine):
    result = engine.generate(PROMPT, CONFIG)
    assert all(t.top_logit is not None and t.margin is not None for t in result.tokens)
    assert all(t.margin >= 0 for t in result.tokens)  # type: ignore[operator]


def test_a_stored_answer_from_the_same_models_is_checked_against_the_rerun(engine):
    stored = engine.generate(PROMPT, CONFIG)
    report = run_comparison(engine, PROMPT, CONFIG, stored=stored)
    assert report.stored is not None and report.stored.same_models
    assert report.stored.reproduced is True and report.stored.first_mismatch is None

    altered = replace(stored, tokens=stored.tokens[:3] + (TokenInfo(1, "?", "target"),) + stored.tokens[4:])
    report = run_comparison(engine, PROMPT, CONFIG, stored=altered)
    assert report.stored is not None and report.stored.reproduced is False
    assert report.stored.first_mismatch == 3
    assert "differs from the stored answer from token 3" in report.to_dict()["notes"][0]


def test_a_stored_answer_from_other_models_is_named_and_not_compared_as_the_same(engine):
    stored = engine.generate(PROMPT, CONFIG)
    assert stored.made_by is not None
    made_by = replace(stored.made_by, target="Qwen2.5-1.5B", dtype="bfloat16", weights="bf16 · 3.1 GB")
    other = replace(stored, made_by=made_by)
    report = run_comparison(engine, PROMPT, CONFIG, stored=other)

    assert report.stored is not None and report.stored.differences == ("target", "dtype")
    assert report.stored.reproduced is None  # other models: nothing to reproduce
    assert report.speculative.made_by.target == report.baseline.made_by.target == engine.target.name  # type: ignore[union-attr]
    note = report.to_dict()["notes"][0]
    assert "Qwen2.5-1.5B (bf16 · 3.1 GB, cpu)" in note and "Both runs were made again" in note
    unrecorded = run_comparison(engine, PROMPT, CONFIG, stored=replace(stored, made_by=None))
    assert "without a record of the models" in unrecorded.to_dict()["notes"][0]


def test_a_stopped_stored_answer_is_compared_at_its_own_length(engine):
    stored = engine.generate(PROMPT, CONFIG)
    partial = replace(stored, tokens=stored.tokens[:5], stop_reason="cancelled", stats=RunStats(new_tokens=5))
    report = run_comparison(engine, PROMPT, CONFIG, stored=partial)
    assert report.speculative.stats.new_tokens == report.baseline.stats.new_tokens == 5
    assert report.stored is not None and report.stored.reproduced is True


def test_the_clock_waits_for_the_device_on_cuda_and_mps_only(monkeypatch):
    synced: list[str] = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: synced.append(f"cuda {device}"))
    monkeypatch.setattr(torch.mps, "synchronize", lambda: synced.append("mps"))
    decode_module._sync(torch.device("cpu"))
    assert synced == []
    decode_module._sync(torch.device("cuda:1"))
    decode_module._sync(torch.device("mps"))
    assert synced == ["cuda cuda:1", "mps"]


def test_every_step_reads_the_clock_after_a_device_sync(engine, monkeypatch):
    devices: list[str] = []
    monkeypatch.setattr(decode_module, "_sync", lambda device: devices.append(device.type))
    result = engine.generate(PROMPT, CONFIG)
    assert devices == ["cpu"] * (3 * len(result.steps))  # before drafting, after it, after verifying


SAMPLED = replace(CONFIG, temperature=0.9, seed=5)


def test_a_sampled_answer_with_automatic_k_is_not_checked_as_a_reproduction(load_tiny):
    engine = Engine(load_tiny("llama"), lookup=True)  # prompt lookup: never skipped, always drafts
    config = replace(SAMPLED, sampling="standard", auto_k=True)
    assert not config.reproducible(drafted=True)
    stored = engine.generate(PROMPT, config)
    assert stored.speculative
    # another sample from the same seed, as a rerun with other k per step may draw
    other = replace(stored, tokens=stored.tokens[:2] + (TokenInfo(1, "?", "target"),) + stored.tokens[3:])
    report = run_comparison(engine, PROMPT, config, stored=other)
    assert report.stored is not None and report.stored.same_models
    assert report.stored.reproduced is None and report.stored.sampled
    assert "does not repeat an answer from its seed" in report.to_dict()["notes"][0]


@pytest.mark.parametrize(
    "config",
    [
        replace(SAMPLED, sampling="seed-invariant", auto_k=True),
        replace(SAMPLED, sampling="standard", auto_k=False),
        replace(SAMPLED, sampling="standard", auto_k=False, adaptive_k=True),
        replace(SAMPLED, sampling="standard", speculative=False),
    ],
    ids=["seed-invariant", "fixed-k", "adaptive-k", "no-speculation"],
)
def test_modes_that_repeat_an_answer_from_its_seed_are_checked_and_do_repeat_it(engine, config):
    assert config.reproducible(drafted=config.speculative)
    stored = engine.generate(PROMPT, config)
    report = run_comparison(engine, PROMPT, config, stored=stored)
    assert report.stored is not None and report.stored.reproduced is True and not report.stored.sampled
    altered = replace(stored, tokens=stored.tokens[:3] + (TokenInfo(1, "?", "target"),) + stored.tokens[4:])
    assert run_comparison(engine, PROMPT, config, stored=altered).stored.reproduced is False


def test_a_continued_answer_is_rerun_at_its_own_length(engine):
    config = replace(CONFIG, max_new_tokens=8)
    cut = engine.generate(PROMPT, config)
    conversation = [{"role": "user", "content": PROMPT}, {"role": "assistant", "content": cut.text}]
    go_on = AnswerOptions(continue_answer=True, answer_ids=cut.token_ids)
    rest = engine.generate(conversation, config, options=go_on)
    stored = replace(
        cut,
        text=cut.text + rest.text,
        tokens=cut.tokens + rest.tokens,
        steps=(),
        stats=cut.stats.followed_by(rest.stats),
        stop_reason=rest.stop_reason,
    )
    assert stored.stats.new_tokens == 16 > config.max_new_tokens
    report = run_comparison(engine, PROMPT, config, stored=stored)
    assert report.speculative.stats.new_tokens == report.baseline.stats.new_tokens == 16
    assert report.stored is not None and report.stored.reproduced is True


def test_a_rerun_that_skips_the_draft_model_still_counts_as_the_same_models(load_tiny, monkeypatch):
    engine = Engine(load_tiny("llama"), load_tiny("llama-draft"))
    config = replace(CONFIG, auto_k=True)
    stored = engine.generate(PROMPT, config)
    assert stored.made_by is not None and stored.made_by.drafter == engine.drafter_name  # it drafted
    monkeypatch.setattr(engine.chooser, "worth_catching_up", lambda *args: False)
    report = run_comparison(engine, PROMPT, config, stored=stored)
    # the rerun skipped the draft model and drafted from lookup alone, and says so
    assert report.speculative.made_by.drafter == SUFFIX_DRAFTER_NAME
    assert report.stored is not None and report.stored.same_models and report.stored.reproduced is True
