"""Sliding-window models (Mistral, Gemma): speculation past the window stays lossless, and a
rejected draft rolls back the cache instead of re-prefilling the whole conversation."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch
from tiny_models import hf_greedy, save
from transformers import AutoModelForCausalLM, MistralConfig

from app.engine import Engine, GenerationConfig
from app.engine.models.loading import load_model
from app.engine.runners.kv import CachedModel

WINDOW = 16
GREEDY = GenerationConfig(max_new_tokens=40, k=4, auto_k=False)
PROMPT = "The quick brown fox jumps over the lazy dog. The quick brown fox jumps over"


@pytest.fixture(scope="module")
def mistral_folder(tmp_path_factory, tokenizer):
    torch.manual_seed(3)
    config = MistralConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        sliding_window=WINDOW,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=0,
        tie_word_embeddings=False,
    )
    model = AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad():
        model.lm_head.weight.mul_(30.0)  # sharp outputs: no argmax near-ties
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return save(model, tokenizer, tmp_path_factory.mktemp("mistral") / "mistral")


@pytest.fixture(scope="module")
def mistral(mistral_folder):
    return load_model(str(mistral_folder), device="cpu", dtype="float32")


@pytest.mark.parametrize("drafter", ["self", "lookup", "lookup-auto"])
def test_greedy_speculation_past_the_window_equals_the_target_alone(mistral, drafter):
    target = replace(mistral, eos_token_ids=())  # run the full length, far past the window
    engine = Engine(target, lookup=True) if drafter.startswith("lookup") else Engine(target, target)
    config = replace(GREEDY, auto_k=drafter == "lookup-auto")
    prompt_len = len(engine.prompt_ids(PROMPT))
    assert prompt_len > WINDOW
    spec = engine.generate(PROMPT, config)
    assert spec.stats.proposed > 0
    assert spec.token_ids == engine.generate(PROMPT, replace(config, speculative=False)).token_ids
    assert spec.token_ids == hf_greedy(engine, PROMPT, config.max_new_tokens, eos_token_id=[], pad_token_id=0)


def test_a_rejection_past_the_window_rolls_back_instead_of_re_prefilling(mistral):
    target = replace(mistral, eos_token_ids=())
    engine = Engine(target, lookup=True)
    engine.reset()
    runner = engine._target_kv
    before = runner.fed_tokens
    result = engine.generate(PROMPT, GREEDY)
    assert result.stats.proposed > result.stats.accepted  # some drafts were rejected
    # every pass feeds only its own tokens: the prompt once, then [last, d1..dm] per pass
    fed = runner.fed_tokens - before
    passes = result.stats.target_passes
    assert fed == len(engine.prompt_ids(PROMPT)) + (passes - 1) + result.stats.proposed
    # and the sliding layers hold no more than the window after the step's crop
    assert all(layer.keys.shape[-2] <= WINDOW - 1 for layer in runner._cache.layers)


def test_a_window_shorter_than_the_context_is_called_exact_past_it(mistral):
    """Each row attends to its window's keys as one row (the call decoding makes), so the model is
    exact at every context it holds, and a run's provenance says so past the window too."""
    kernels = mistral.kernels
    assert kernels is not None and kernels.window == WINDOW and kernels.max_context == 512
    assert kernels.exact and kernels.exact_up_to() == 512 and not kernels.notes
    made_by = Engine(mistral, lookup=True).made_by(GREEDY)
    assert made_by.exact_context == 512
    assert made_by.exact_at(WINDOW + 1) and made_by.exact_at(512)


@pytest.mark.parametrize("form", ["int4", "int8", "bfloat16"])
def test_greedy_speculation_past_the_window_is_lossless_in_every_weights_form(mistral_folder, form):
    """The weight-only forms keep a sliding-window target's speculation exact past the window too."""
    target = replace(load_model(str(mistral_folder), device="cpu", dtype=form), eos_token_ids=())
    engine = Engine(target, lookup=True)
    assert len(engine.prompt_ids(PROMPT)) > WINDOW
    spec = engine.generate(PROMPT, GREEDY)
    assert spec.stats.proposed > 0
    assert spec.token_ids == engine.generate(PROMPT, replace(GREEDY, speculative=False)).token_ids


@pytest.mark.parametrize("form", ["float32", "bfloat16", "int4", "int8"])
def test_past_the_window_a_block_gives_the_logits_of_one_token_at_a_time(mistral_folder, form):
    """Each row attends to exactly its window's keys as one row, the call decoding makes, so a
    verified block past the window is exact too, in every form; and its logits are the stock
    model's to rounding (the window is honoured, not widened)."""
    loaded = load_model(str(mistral_folder), device="cpu", dtype=form)
    ids = torch.randint(3, loaded.vocab_size, (3 * WINDOW,), generator=torch.Generator().manual_seed(2)).tolist()
    together, alone = CachedModel(loaded.model, loaded.vocab_size), CachedModel(loaded.model, loaded.vocab_size)
    prompt = 2 * WINDOW
    together.forward(ids[:prompt], keep=1)
    block = together.forward(ids[prompt:], keep=len(ids) - prompt)
    alone.forward(ids[:1], keep=1)
    singles = torch.cat([alone.forward([t], keep=1) for t in ids[1:]])[prompt - 1 :]
    assert torch.equal(block, singles)
    if form == "float32":
        stock = AutoModelForCausalLM.from_pretrained(str(mistral_folder), attn_implementation="sdpa").eval()
        with torch.inference_mode():
            reference = stock(torch.tensor([ids])).logits[0, prompt:]
        assert torch.allclose(block, reference, atol=1e-4)
