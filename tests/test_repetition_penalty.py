"""The repetition penalty is Hugging Face's, applied to target and draft alike with each verified
row's own history, so greedy speculation with a penalty is still the target's greedy answer."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from tiny_models import hf_greedy

from app.engine import Engine, GenerationConfig
from app.engine.decoding.sampling import RepetitionPenalty

PROMPTS = ["The quick brown fox jumps over the lazy dog. The quick brown", "def add(a, b):\n    return"]
PENALISED = GenerationConfig(max_new_tokens=40, k=4, auto_k=False, repetition_penalty=1.3)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("drafter", ["draft model", "lookup"])
def test_greedy_speculation_with_a_repetition_penalty_is_hf_generate_with_it(load_tiny, arch, drafter):
    target = load_tiny(arch)
    engine = (
        Engine(target, load_tiny(f"{arch}-draft"))
        if drafter == "draft model"
        else Engine(target, lookup=True)
    )
    changed = False
    for prompt in PROMPTS:
        spec = engine.generate(prompt, PENALISED)
        base = engine.generate(prompt, replace(PENALISED, speculative=False))
        reference = hf_greedy(engine, prompt, PENALISED.max_new_tokens, repetition_penalty=PENALISED.repetition_penalty)
        assert spec.token_ids == base.token_ids == reference
        assert spec.stats.proposed > 0
        plain = engine.generate(prompt, replace(PENALISED, repetition_penalty=1.0, speculative=False))
        changed |= plain.token_ids != base.token_ids
    assert changed  # the penalty really steers these models


def test_seed_invariant_sampling_with_a_penalty_gives_the_same_text_with_and_without_speculation(load_tiny):
    engine = Engine(load_tiny("llama"), load_tiny("llama-draft"))
    config = replace(PENALISED, temperature=0.9, top_k=50, sampling="seed-invariant", seed=3)
    assert (
        engine.generate(PROMPTS[0], config).token_ids
        == engine.generate(PROMPTS[0], replace(config, speculative=False)).token_ids
    )


def naive_penalty(logits: torch.Tensor, history: list[int], penalty: float) -> torch.Tensor:
    """One row, the way Hugging Face's RepetitionPenaltyLogitsProcessor does it.  [V]"""
    out = logits.clone()
    ids = torch.tensor(sorted(set(history)))
    seen = out[ids]
    out[ids] = torch.where(seen < 0, seen * penalty, seen / penalty)
    return out


def test_each_verified_row_is_penalised_for_its_own_history():
    """Row j of a verify pass follows context + d1..dj; the last row of a drafter follows all drafts."""
    torch.manual_seed(0)
    penalty = RepetitionPenalty(1.7)
    context, drafts = [3, 5, 5, 9], [7, 3, 7, 11]  # a draft repeated, one from the context
    logits = torch.randn(len(drafts) + 1, 16)  # [m+1, V]
    rows = penalty(logits, context, drafts)
    for j in range(len(drafts) + 1):
        assert torch.equal(rows[j], naive_penalty(logits[j], context + drafts[:j], 1.7))
    one = penalty(logits[-1:], context + [8], drafts)  # the mask grows with the context
    assert torch.equal(one[0], naive_penalty(logits[-1], context + [8] + drafts, 1.7))
    shorter = penalty(logits[:1], context[:2], [])  # a shorter history starts over
    assert torch.equal(shorter[0], naive_penalty(logits[0], context[:2], 1.7))


def test_no_penalty_leaves_the_logits_untouched():
    logits = torch.randn(3, 8)
    assert RepetitionPenalty(1.0)(logits, [1, 2], [3, 4]) is logits


def test_bench_gives_hugging_face_the_same_penalty(tiny_models, capsys):
    """bench compares our answers with HF generate(): with a penalty, HF must get it too."""
    import json

    from app.cli import main

    argv = ["bench", "--target", str(tiny_models["llama"]), "--lookup", "--prompt", PROMPTS[0]]
    code = main([*argv, "--max-new-tokens", "24", "--repetition-penalty", "1.3", "--json"])
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert code == 0 and summary["all_identical"]
    assert summary["hf_plain_identical"] and summary["hf_assisted_identical"]
