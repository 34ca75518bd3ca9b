"""Sampling keeps the target's distribution; seed-invariant mode keeps the text; the
detokeniser never breaks a character."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest
import torch

from app.engine import Engine, GenerationConfig
from app.engine.decoding.acceptance import accept_standard
from app.engine.decoding.detok import IncrementalDetokenizer
from app.engine.decoding.sampling import filter_logits, gumbel_argmax, sample

CHI2_DF4_P001 = 18.47  # chi-square critical value, 4 degrees of freedom, p = 0.001
TRIALS = 20_000


def chi2(counts: Counter, probs: torch.Tensor, total: int) -> float:
    expected = probs * total
    observed = torch.tensor([counts.get(i, 0) for i in range(len(probs))], dtype=torch.float64)
    return float(((observed - expected) ** 2 / expected).sum())


P = torch.tensor([[0.40, 0.25, 0.20, 0.10, 0.05], [0.05, 0.15, 0.20, 0.25, 0.35]], dtype=torch.float64)
Q = torch.tensor([[0.10, 0.10, 0.50, 0.20, 0.10]], dtype=torch.float64)


def test_standard_rule_emits_the_target_distribution_from_any_draft_distribution():
    gen = torch.Generator().manual_seed(1234)
    first, bonus = Counter(), Counter()
    for _ in range(TRIALS):
        draft = sample(Q[0], gen)
        verdict = accept_standard(P, [draft], Q, gen)
        token = draft if verdict.n_accepted == 1 else verdict.next_token
        first[token] += 1
        if verdict.n_accepted == 1:
            bonus[verdict.next_token] += 1
    assert chi2(first, P[0], TRIALS) < CHI2_DF4_P001
    assert chi2(bonus, P[1], sum(bonus.values())) < CHI2_DF4_P001
    # the draft disagrees with the target, so some drafts must be rejected
    assert 0 < sum(bonus.values()) < TRIALS


def test_point_mass_drafts_keep_the_target_distribution():
    """Prompt lookup proposes without probabilities: accept with p(d), else sample p without d."""
    gen = torch.Generator().manual_seed(99)
    proposer = torch.tensor([0.0, 0.0, 0.3, 0.0, 0.7], dtype=torch.float64)  # whatever lookup found
    first = Counter()
    for _ in range(TRIALS):
        draft = sample(proposer, gen)
        verdict = accept_standard(P, [draft], None, gen)
        first[draft if verdict.n_accepted == 1 else verdict.next_token] += 1
    assert chi2(first, P[0], TRIALS) < CHI2_DF4_P001


def test_a_biased_rule_would_fail_the_distribution_check():
    """Guard for the two tests above: always accepting the draft is detected."""
    gen = torch.Generator().manual_seed(1234)
    first = Counter(sample(Q[0], gen) for _ in range(TRIALS))
    assert chi2(first, P[0], TRIALS) > CHI2_DF4_P001


def test_gumbel_sampling_over_seeds_has_the_softmax_distribution():
    logits = torch.log(P[0]).float()[None]
    config = GenerationConfig(temperature=1.0, sampling="seed-invariant")
    counts = Counter(
        gumbel_argmax(logits, replace(config, seed=s), first_position=3)[0] for s in range(TRIALS)
    )
    assert chi2(counts, P[0], TRIALS) < CHI2_DF4_P001


def test_top_k_and_top_p_keep_the_smallest_sufficient_set():
    logits = torch.log(P[:1]).float()
    top_k = filter_logits(logits, GenerationConfig(temperature=1.0, top_k=2))
    assert torch.isfinite(top_k[0]).tolist() == [True, True, False, False, False]
    top_p = filter_logits(logits, GenerationConfig(temperature=1.0, top_p=0.6))  # 0.40 + 0.25 >= 0.6
    assert torch.isfinite(top_p[0]).tolist() == [True, True, False, False, False]
    tiny_p = filter_logits(logits, GenerationConfig(temperature=1.0, top_p=0.01))
    assert torch.isfinite(tiny_p[0]).tolist() == [True, False, False, False, False]


SAMPLED = GenerationConfig(
    max_new_tokens=40, k=4, auto_k=False, temperature=0.9, top_p=0.95, top_k=50, sampling="seed-invariant"
)
PROMPT = "The quick brown fox jumps over the lazy dog. The quick brown"


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("drafter", ["model", "lookup"])
def test_seed_invariant_sampling_gives_the_same_text_with_and_without_speculation(load_tiny, arch, drafter):
    target = load_tiny(arch)
    engine = Engine(target, load_tiny(f"{arch}-draft")) if drafter == "model" else Engine(target, lookup=True)
    texts = set()
    for seed in (1, 2, 3):
        config = replace(SAMPLED, seed=seed)
        spec = engine.generate(PROMPT, config)
        base = engine.generate(PROMPT, replace(config, speculative=False))
        assert spec.token_ids == base.token_ids
        assert spec.stats.proposed > 0
        texts.add(spec.text)
    assert len(texts) > 1  # the seed matters: this is sampling, not greedy in disguise


def test_standard_sampling_is_reproducible_per_seed(load_tiny):
    engine = Engine(load_tiny("llama"), load_tiny("llama-draft"))
    config = replace(SAMPLED, sampling="standard", seed=5)
    assert engine.generate(PROMPT, config).token_ids == engine.generate(PROMPT, config).token_ids


def test_sampling_with_the_target_as_its_own_draft_accepts_everything(load_tiny):
    """p == q: min(1, p/q) = 1, so the standard rule never rejects."""
    target = load_tiny("llama")
    result = Engine(target, target).generate(PROMPT, replace(SAMPLED, sampling="standard"))
    assert result.stats.drafts_accepted_share == 1.0


MULTIBYTE = "Café, naïve, déjà vu — 東京 and 日本語 🙂🚀 ok"


def test_incremental_detokenisation_never_splits_a_character(tokenizer):
    ids = tokenizer.encode(MULTIBYTE)
    detok = IncrementalDetokenizer(tokenizer)
    pieces = [detok.add(i) for i in ids]
    pieces.append(detok.flush())
    assert "".join(pieces) == tokenizer.decode(ids) == MULTIBYTE
    assert all("\ufffd" not in p for p in pieces)
    assert "" in pieces[:-1]  # some character really was split across tokens


def test_a_cut_inside_a_character_is_flushed_not_lost(tokenizer):
    ids = tokenizer.encode("🙂")
    assert len(ids) > 1
    detok = IncrementalDetokenizer(tokenizer)
    pieces = [detok.add(i) for i in ids[:-1]] + [detok.flush()]
    assert "".join(pieces) == tokenizer.decode(ids[:-1])
