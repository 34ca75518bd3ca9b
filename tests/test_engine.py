"""The engine's promises: lossless greedy speculation on two architectures, exact KV
rollback, the stopping rules, the shared loop without a drafter."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest
import torch
from tiny_models import hf_greedy

from app.engine import Engine, GenerationConfig
from app.engine.errors import InvalidSettingError, PromptError
from app.engine.runners.kv import CachedModel

PROMPTS = ["The quick brown fox jumps over the lazy dog. The quick brown", "def add(a, b):\n    return"]
# a fixed k: these tests check the mechanics (pass counts, drafts per step); the automatic
# choice of k has its own tests (tests/test_cost.py)
GREEDY = GenerationConfig(max_new_tokens=48, k=4, auto_k=False)


DRAFTERS = ["well-matched", "mismatched", "self", "lookup"]


def make_engine(load_tiny, arch: str, drafter: str, form: str = "float32", draft_form: str | None = None) -> Engine:
    target = load_tiny(arch, form)
    if drafter == "lookup":
        return Engine(target, lookup=True)
    draft = {"well-matched": f"{arch}-draft", "mismatched": f"{arch}-other", "self": arch}[drafter]
    return Engine(target, load_tiny(draft, draft_form or form))


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("drafter", DRAFTERS)
def test_greedy_speculation_equals_target_alone_and_hf_generate(load_tiny, arch, drafter):
    engine = make_engine(load_tiny, arch, drafter)
    for prompt in PROMPTS:
        spec = engine.generate(prompt, GREEDY)
        base = engine.generate(prompt, replace(GREEDY, speculative=False))
        assert spec.token_ids == base.token_ids
        assert spec.token_ids == hf_greedy(engine, prompt, GREEDY.max_new_tokens)
        assert spec.text == base.text
        assert spec.stats.proposed > 0


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize(
    "form, draft_form, drafter",
    [("int4", "int4", "well-matched"), ("int8", "int8", "well-matched"), ("bfloat16", "int4", "well-matched"),
     ("int4", None, "lookup"), ("int8", None, "lookup")],
)
def test_greedy_speculation_equals_target_alone_in_every_weights_form(load_tiny, arch, form, draft_form, drafter):
    """Issue 18 §3: a target in a weight-only (or bf16) form, drafted for by any form, answers
    greedily exactly as it does alone."""
    engine = make_engine(load_tiny, arch, drafter, form, draft_form)
    assert engine.target.dtype == form
    for prompt in PROMPTS:
        spec = engine.generate(prompt, GREEDY)
        assert spec.token_ids == engine.generate(prompt, replace(GREEDY, speculative=False)).token_ids
        assert spec.stats.proposed > 0
        assert spec.made_by is not None and spec.made_by.dtype == form


@pytest.mark.parametrize("drafter", DRAFTERS)
def test_greedy_speculation_with_automatic_k_equals_target_alone(load_tiny, drafter):
    engine = make_engine(load_tiny, "llama", drafter)
    auto = replace(GREEDY, auto_k=True)
    for prompt in PROMPTS:
        spec = engine.generate(prompt, auto)
        assert spec.token_ids == engine.generate(prompt, replace(auto, speculative=False)).token_ids


def test_drafter_quality_shows_in_acceptance(load_tiny):
    rates = {}
    for drafter in ["self", "well-matched", "mismatched"]:
        result = make_engine(load_tiny, "llama", drafter).generate(PROMPTS[0], GREEDY)
        rates[drafter] = result.stats.drafts_accepted_share
    assert rates["self"] == 1.0  # the target as its own draft: everything accepted
    assert 0.3 < rates["well-matched"] < 1.0
    assert rates["mismatched"] < 0.2
    self_run = make_engine(load_tiny, "llama", "self").generate(PROMPTS[0], GREEDY)
    # all k drafts plus a bonus per pass (the prefill pass yields one token)
    assert self_run.stats.target_passes <= 1 + -(-(GREEDY.max_new_tokens - 1) // (GREEDY.k + 1))


def test_without_speculation_every_token_costs_one_target_pass(load_tiny):
    result = make_engine(load_tiny, "llama", "lookup").generate(PROMPTS[0], replace(GREEDY, speculative=False))
    assert result.stats.target_passes == result.stats.new_tokens == len(result.tokens)
    assert result.stats.proposed == result.stats.draft_passes == 0
    assert all(t.source == "target" for t in result.tokens)
    assert result.drafter == "none" and not result.speculative


def test_events_account_for_every_token(load_tiny):
    engine = make_engine(load_tiny, "llama", "well-matched")
    steps = list(engine.stream(PROMPTS[0], GREEDY))
    tokens = [t for s in steps for t in s.tokens]
    last = steps[-1].stats
    assert len(steps) == last.target_passes
    assert len(tokens) == last.new_tokens
    assert sum(len(s.accepted) for s in steps) == last.accepted == sum(t.source == "draft" for t in tokens)
    assert sum(len(s.accepted) + len(s.rejected) for s in steps) == last.proposed
    assert any(s.rejected for s in steps) and any(s.target_kind == "bonus" for s in steps)
    for s in steps[1:]:
        # a correction follows a rejection; a bonus follows a fully accepted block
        assert (s.target_kind == "correction") == bool(s.rejected)
    assert all(0.0 <= t.p_target <= 1.0 and t.margin >= 0.0 for t in tokens)
    assert all(t.p_draft is not None for t in tokens if t.source == "draft")
    assert steps[-1].stop_reason == "max_new_tokens" and all(s.stop_reason is None for s in steps[:-1])


def test_a_drafter_stops_drafting_at_an_end_of_sequence_and_the_answer_ends_there(load_tiny):
    # (a drafter that drafts past the EOS, so that the stop falls inside the accepted block:
    # tests/test_decode_edges.py)
    target = load_tiny("llama")
    plain = Engine(target).generate(PROMPTS[0], replace(GREEDY, speculative=False))
    eos = plain.token_ids[6]  # pretend the 7th token is an end-of-sequence token
    first = plain.token_ids.index(eos)
    target_eos = replace(target, eos_token_ids=(eos,))
    result = Engine(target_eos, replace(target, eos_token_ids=(eos,))).generate(PROMPTS[0], replace(GREEDY, k=8))
    assert result.token_ids == plain.token_ids[: first + 1]
    assert result.stop_reason == "eos"
    last = result.steps[-1]
    assert last.target is None and last.accepted[-1].id == eos  # stopped inside the accepted block
    # the drafter stopped drafting at the end of sequence instead of filling k = 8
    assert [len(s.accepted) + len(s.rejected) for s in result.steps] == [first + 1]


def test_prompt_lookup_does_not_draft_past_an_end_of_sequence():
    from app.engine.decoding.acceptance import Rule
    from app.engine.decoding.drafters import PromptLookupDrafter

    tokens = [5, 6, 7, 2, 9, 9, 5, 6]  # 2 ends a sequence
    proposal = PromptLookupDrafter(frozenset({2})).propose(tokens, 5, Rule(GREEDY), 0.0)
    assert proposal.tokens == [7, 2]


def test_max_new_tokens_caps_the_block_so_the_answer_ends_at_the_limit_with_no_draft_wasted(load_tiny):
    """k is capped to the room left (limit − tokens − 1), so no block is ever cut by the limit:
    the answer is plain decoding's first n tokens, the last one the target's own, and a drafter
    that is never rejected has every draft it proposed accepted."""
    target = load_tiny("llama")
    plain = Engine(target).generate(PROMPTS[1], replace(GREEDY, max_new_tokens=11, speculative=False))
    for n in (1, 2, 7, 11):
        result = Engine(target, target).generate(PROMPTS[1], replace(GREEDY, max_new_tokens=n, k=8))
        assert result.token_ids == plain.token_ids[:n] and result.stats.new_tokens == n
        assert result.stop_reason == "max_new_tokens" and result.steps[-1].target is not None
        assert result.stats.proposed == result.stats.accepted
        done = 0
        for step in result.steps:
            assert len(step.accepted) + len(step.rejected) <= n - done - 1
            done += len(step.tokens)


def test_stop_string_ends_the_answer_after_it(load_tiny):
    """The answer is plain decoding's, up to and including the token that completes the first
    occurrence of the stop string, whatever block the stop falls in."""
    engine = make_engine(load_tiny, "llama", "self")
    plain = engine.generate(PROMPTS[0], replace(GREEDY, speculative=False))
    for start in (4, 10, 17):
        stop = plain.text[start : start + 3]
        end = next(i for i in range(len(plain.tokens)) if stop in "".join(t.text for t in plain.tokens[: i + 1]))
        cut = engine.generate(PROMPTS[0], replace(GREEDY, stop_strings=(stop,)))
        assert cut.stop_reason == "stop_string"
        assert cut.token_ids == plain.token_ids[: end + 1]
        assert cut.text == "".join(t.text for t in plain.tokens[: end + 1])


def _cache_tensors(runner: CachedModel) -> list[torch.Tensor]:
    cache = runner._cache
    assert cache is not None
    return [t for layer in cache.layers for t in (layer.keys, layer.values)]


def test_kv_rollback_restores_exactly_the_cache_of_the_kept_prefix(load_tiny):
    """Bit for bit (the CPU kernels make a position's states independent of the block it was
    computed in): after rolling back three rejected drafts the cache and the next logits are
    those of a runner that never saw them."""
    target = load_tiny("llama")
    sequence = target.tokenizer.encode(PROMPTS[0])
    never_drafted = CachedModel(target.model, target.vocab_size)
    never_drafted.forward(sequence[:-3])
    never_drafted.forward(sequence[-3:-1])  # the two good tokens, without the drafts

    runner = CachedModel(target.model, target.vocab_size)
    runner.forward(sequence[:-3])
    runner.forward(sequence[-3:-1] + [5, 6, 7])  # two good tokens, three rejected drafts
    runner.truncate(len(sequence) - 1)
    assert runner.tokens == never_drafted.tokens == sequence[:-1]
    assert runner._cache.get_seq_length() == len(sequence) - 1
    kept, reference = _cache_tensors(runner), _cache_tensors(never_drafted)
    assert len(kept) == len(reference) > 0
    assert all(torch.equal(a, b) for a, b in zip(kept, reference))
    logits = runner.forward(sequence[-1:])[-1]
    assert torch.equal(logits, never_drafted.forward(sequence[-1:])[-1])
    # one pass over the whole sequence runs a long block through other kernels: equal to float precision
    fresh = CachedModel(target.model, target.vocab_size).forward(sequence)[-1]
    torch.testing.assert_close(logits, fresh, rtol=1e-4, atol=1e-4)


def test_follow_up_turn_prefills_only_new_tokens(load_tiny):
    engine = make_engine(load_tiny, "llama", "well-matched")
    first = engine.generate(PROMPTS[0], GREEDY)
    conversation = [
        {"role": "user", "content": PROMPTS[0]},
        {"role": "assistant", "content": first.text},
        {"role": "user", "content": "And then?"},
    ]
    second = engine.generate(conversation, GREEDY)
    assert second.stats.reused_prompt_tokens >= len(engine.prompt_ids(PROMPTS[0]))
    fresh = make_engine(load_tiny, "llama", "well-matched")
    fresh.reset()
    assert second.token_ids == fresh.generate(conversation, GREEDY).token_ids


def test_cancel_stops_within_one_target_pass(load_tiny):
    engine = make_engine(load_tiny, "llama", "well-matched")
    cancel = threading.Event()
    steps = []
    for step in engine.stream(PROMPTS[0], replace(GREEDY, max_new_tokens=200), cancel):
        steps.append(step)
        if step.index == 2:
            cancel.set()
    assert steps[-1].stop_reason == "cancelled"
    assert len(steps) == 4 and steps[-1].tokens == ()
    # the engine is still usable and consistent afterwards
    again = engine.generate(PROMPTS[0], GREEDY)
    assert again.token_ids == engine.generate(PROMPTS[0], replace(GREEDY, speculative=False)).token_ids


def test_adaptive_k_grows_after_full_acceptance(load_tiny):
    target = load_tiny("llama")
    result = Engine(target, target).generate(PROMPTS[0], replace(GREEDY, k=2, adaptive_k=True, k_max=6))
    ks = [s.k for s in result.steps if s.k]
    assert ks[:5] == [2, 3, 4, 5, 6]


def test_adaptive_k_shrinks_after_rejections(load_tiny):
    engine = make_engine(load_tiny, "llama", "mismatched")
    result = engine.generate(PROMPTS[0], replace(GREEDY, k=6, adaptive_k=True))
    ks = [s.k for s in result.steps if s.k]
    assert ks[0] == 6 and min(ks) == 1


def test_confidence_threshold_stops_drafting_early(load_tiny):
    engine = make_engine(load_tiny, "llama", "mismatched")
    eager = engine.generate(PROMPTS[0], GREEDY)
    careful = engine.generate(PROMPTS[0], replace(GREEDY, confidence_threshold=0.9))
    assert careful.stats.proposed < eager.stats.proposed
    assert careful.token_ids == eager.token_ids


def test_lookup_drafts_come_from_earlier_text(load_tiny):
    engine = make_engine(load_tiny, "llama", "lookup")
    result = engine.generate(PROMPTS[0], GREEDY)
    assert result.stats.draft_passes == 0 and result.stats.proposed > 0
    assert all(t.p_draft is None for t in result.tokens)


def test_empty_prompt_is_refused(load_tiny):
    engine = make_engine(load_tiny, "llama", "lookup")
    with pytest.raises(PromptError, match="empty"):
        engine.generate("   ", GREEDY)


def test_prompt_longer_than_the_context_is_refused(load_tiny):
    engine = make_engine(load_tiny, "llama", "lookup")
    with pytest.raises(PromptError, match="512 tokens"):
        engine.generate("fox " * 600, GREEDY)


def test_answer_stops_at_the_end_of_the_context(load_tiny):
    engine = make_engine(load_tiny, "llama", "self")
    prompt = "fox " * 240
    room = engine.target.context_length - len(engine.prompt_ids(prompt))
    result = engine.generate(prompt, replace(GREEDY, max_new_tokens=400))
    assert len(result.tokens) == room and result.stop_reason == "context_full"


@pytest.mark.parametrize(
    "setting",
    [
        {"k": 0},
        {"top_p": 0.0},
        {"top_p": 1.5},
        {"temperature": -0.1},
        {"temperature": float("nan")},
        {"max_new_tokens": 0},
        {"top_k": -1},
        {"confidence_threshold": 1.0},
        {"sampling": "beam"},
    ],
)
def test_absurd_settings_are_refused_with_a_message(setting):
    with pytest.raises(InvalidSettingError) as error:
        GenerationConfig(**setting)
    assert str(error.value) and "\n" not in str(error.value)


def test_first_drafts_are_verified_in_the_prompt_pass(load_tiny):
    """Drafting before the prefill saves a target pass per answer (as HF assisted does)."""
    target = load_tiny("llama")
    result = Engine(target, target).generate(PROMPTS[0], GREEDY)
    first = result.steps[0]
    assert first.target_kind == "prefill" and first.k == GREEDY.k
    assert len(first.accepted) == GREEDY.k and first.target is not None
    assert first.stats.target_passes == 1


def test_warm_up_leaves_no_trace_in_the_caches(load_tiny):
    engine = make_engine(load_tiny, "llama", "well-matched")
    before = engine.generate(PROMPTS[0], GREEDY)
    engine.warm_up()
    after = engine.generate(PROMPTS[0], GREEDY)
    head = engine.template_head()
    prompt = engine._encode([{"role": "user", "content": PROMPTS[0]}], continue_answer=False)
    assert head and prompt[: len(head)] == head
    assert after.stats.reused_prompt_tokens == len(head)  # the chat template's head, nothing of the warm-up
    assert after.token_ids == before.token_ids


@pytest.mark.parametrize("form", ["float32", "bfloat16", "int8", "int4"])
@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_the_targets_kept_template_head_changes_no_answer(load_tiny, arch, form):
    """The warm-up reads the chat template's head into the target's cache and ``reset`` keeps it:
    a new conversation prefills only what follows it, and every answer, target-only and
    speculative, is token for token the one a prefill of the whole prompt gives."""
    engine = make_engine(load_tiny, arch, "well-matched", form)
    engine.warm_up()
    head = engine.template_head()
    conversation = [{"role": "user", "content": PROMPTS[0]}]
    assert 0 < len(head) < len(engine._encode(conversation, continue_answer=False))
    config = replace(GREEDY, max_new_tokens=24)
    answers = {}
    for whole_prompt in (False, True):
        for speculative in (False, True):
            engine.reset(whole_prompt=whole_prompt)
            assert engine._target_kv.tokens == ([] if whole_prompt else head)
            run = engine.generate(conversation, replace(config, speculative=speculative))
            assert run.stats.reused_prompt_tokens == (0 if whole_prompt else len(head))
            answers[whole_prompt, speculative] = run.token_ids
    assert len(set(map(tuple, answers.values()))) == 1


@pytest.mark.parametrize("form", ["int8", "int4"])
def test_a_quantized_target_speculates_and_answers_as_it_does_alone(tiny_models, form):
    """Dynamic int8 (scaled per block) was refused as a target; the weight-only forms are exact."""
    from app.engine.models.loading import load_model

    target = load_model(str(tiny_models["llama"]), device="cpu", dtype=form)
    engine = Engine(target, lookup=True)
    config = replace(GREEDY, max_new_tokens=24)
    spec = engine.generate(PROMPTS[0], config)
    assert spec.stats.proposed > 0
    assert spec.token_ids == engine.generate(PROMPTS[0], replace(config, speculative=False)).token_ids


@pytest.mark.parametrize("keep", [0, 1, 3, 9])
def test_isolating_the_first_token_changes_no_logit_shape_or_value_in_fp32(load_tiny, keep):
    target = load_tiny("llama")
    ids = target.tokenizer.encode(PROMPTS[0])[:9]
    plain = CachedModel(target.model, target.vocab_size).forward(ids, keep=keep)
    isolated = CachedModel(target.model, target.vocab_size, isolate_first_token=True)
    rows = isolated.forward(ids, keep=keep)
    assert rows.shape == plain.shape and isolated.tokens == ids
    torch.testing.assert_close(rows, plain, rtol=1e-4, atol=1e-4)
