"""A draft model's head over part of its vocabulary (``models/draft_head.py``): the kept tokens'
logits as the whole head computes them, the others left out, and speculation that still gives
the target's answer (greedy) and the target's distribution (sampling) when the target wants a
token the draft can never propose."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest
import torch
from test_sampling_engine import MODEL_ALONE, PROMPT, RUNS, TOP_K, chi2_critical, chi2_statistic, exact_pair_probs
from torch import nn

from app.engine import Engine, GenerationConfig
from app.engine.models import draft_head
from app.engine.models.draft_head import (
    LEFT_OUT,
    SPACE_MARKS,
    SubsetHead,
    extend_draft_head,
    kept_tokens,
    restrict_draft_head,
    restrict_head,
    structural_tokens,
)
from app.engine.models.loading import load_model
from app.engine.runners.prepacked import PrepackedLinear
from app.engine.runners.quant import Int8Linear


@pytest.fixture(autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def fresh(tiny_models, name: str, form: str = "float32"):
    """A model of its own (``load_tiny``'s are shared: a swapped head would leak into other tests);
    float32 with plain ``nn.Linear`` layers (no prepacking)."""
    return load_model(str(tiny_models[name]), device="cpu", dtype=form, cpu_kernels=form != "float32")


def test_the_kept_tokens_are_the_first_ids_and_every_added_one():
    keep = kept_tokens(100, [97, 3, 250], first=10)
    assert keep.tolist() == [*range(10), 97]  # 250 is past the vocabulary; 3 is kept already
    assert kept_tokens(8, [], first=10).tolist() == list(range(8))


@pytest.mark.parametrize("form", ["float32", "int8"])
def test_a_subset_head_computes_the_kept_rows_as_the_whole_head(tiny_models, form):
    loaded = fresh(tiny_models, "llama-draft", form)
    head = loaded.model.get_output_embeddings()
    assert isinstance(head, Int8Linear if form == "int8" else nn.Linear)
    x = torch.randn(3, head.in_features).to(torch.bfloat16 if form == "int8" else torch.float32)
    whole = head(x)
    keep = torch.arange(0, head.out_features, 3)
    note = restrict_head(loaded.model, keep)
    assert note == f"head: {keep.numel():,} of {head.out_features:,} tokens"
    sub = loaded.model.get_output_embeddings()
    assert isinstance(sub, SubsetHead) and restrict_head(loaded.model, keep) is None  # once
    got = sub(x)
    assert got.shape == whole.shape
    left = torch.ones(head.out_features, dtype=torch.bool)
    left[keep] = False
    assert bool((got[:, left] == LEFT_OUT).all())
    if form == "int8":  # SpecChat's kernel: each output column is computed alone, the same bits
        assert torch.equal(got[:, keep], whole[:, keep])
    else:
        assert torch.allclose(got[:, keep], whole[:, keep], rtol=0, atol=1e-5)
    assert float(got.float().softmax(-1)[:, left].sum()) == 0.0  # left out: probability 0


def test_a_prepacked_head_tied_to_its_embedding_takes_the_embeddings_rows(tiny_models):
    """oneDNN's packing is opaque: a prepacked head is restricted from the embedding it is tied to
    (the same rows), and left whole when it is not tied."""
    loaded = fresh(tiny_models, "llama-draft")
    model, head = loaded.model, loaded.model.get_output_embeddings()
    keep = torch.arange(0, head.out_features, 2)
    model.set_output_embeddings(PrepackedLinear.of(head, torch.float32))
    assert restrict_head(model, keep) is None  # untied: nothing to take its rows from
    with torch.no_grad():
        model.get_input_embeddings().weight.copy_(head.weight)
    model.config.tie_word_embeddings = True
    x = torch.randn(3, head.in_features)
    whole = model.get_output_embeddings()(x)
    assert restrict_head(model, keep) is not None
    got = model.get_output_embeddings()(x)
    assert torch.allclose(got[:, keep], whole[:, keep], rtol=0, atol=1e-5)


def test_tokens_of_punctuation_and_white_space_alone_are_structure(tiny_models):
    tokenizer = fresh(tiny_models, "llama-draft").tokenizer
    names = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
    found = structural_tokens(tokenizer, 0, len(tokenizer))
    assert found and all(not any(c.isalnum() and c not in SPACE_MARKS for c in names[i]) for i in found)
    words = [i for i, name in enumerate(names) if any("a" <= c.lower() <= "z" for c in name)]
    assert words and not set(words) & set(found)
    assert structural_tokens(tokenizer, len(tokenizer), len(tokenizer)) == []


@pytest.mark.parametrize("form", ["float32", "int8"])
def test_a_restricted_head_takes_in_the_tokens_of_each_conversation(tiny_models, form):
    loaded = fresh(tiny_models, "llama-draft", form)
    head = loaded.model.get_output_embeddings()
    x = torch.randn(2, head.in_features).to(torch.bfloat16 if form == "int8" else torch.float32)
    whole = head(x)
    restrict_head(loaded.model, torch.arange(10))
    assert extend_draft_head(loaded.model, [3, 50, 50, 60, 10_000]) == 2  # 3 is kept; 10,000 is no token
    sub = loaded.model.get_output_embeddings()
    assert sub.keep.tolist() == [*range(10), 50, 60]
    got = sub(x)
    assert torch.allclose(got[:, sub.keep].float(), whole[:, sub.keep].float(), rtol=0, atol=1e-5)
    assert bool((got[:, 11:50] == LEFT_OUT).all())
    assert extend_draft_head(loaded.model, [50, 60]) == 0
    plain = fresh(tiny_models, "llama-draft", form)
    assert extend_draft_head(plain.model, [50]) == 0  # a head left whole has nothing to add


def test_an_answer_extends_the_drafts_head_with_its_conversation(load_tiny, tiny_models):
    target, draft = load_tiny("llama"), fresh(tiny_models, "llama-draft")
    restrict_head(draft.model, torch.arange(20))
    engine = Engine(target, draft)
    prompt = engine.prompt_ids(PROMPT)
    engine.generate(PROMPT, GenerationConfig(max_new_tokens=4, k=2, auto_k=False), options=MODEL_ALONE)
    assert set(prompt) <= set(draft.model.get_output_embeddings().keep.tolist())


def test_a_small_vocabulary_keeps_its_whole_head(tiny_models):
    loaded = fresh(tiny_models, "llama-draft")
    assert loaded.vocab_size < 2 * draft_head.DRAFT_HEAD_TOKENS
    assert restrict_draft_head(loaded.model, loaded.tokenizer, loaded.vocab_size) is None
    assert type(loaded.model.get_output_embeddings()) is nn.Linear


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("form", ["float32", "int8"])
def test_greedy_speculation_with_a_draft_over_part_of_its_vocabulary_is_the_target_alone(tiny_models, arch, form):
    """The draft's head leaves out the tokens the target answers with most that its prompts do
    not hold (the head takes in the prompt's own), and keeps the rest of the first half of the
    vocabulary: those steps are rejected where the draft cannot propose the target's token, and
    the answer is still the target's, token for token."""
    target, draft = fresh(tiny_models, arch, form), fresh(tiny_models, f"{arch}-draft", form)
    config = GenerationConfig(max_new_tokens=32, k=4, auto_k=False)
    prompts = ("The quick brown fox jumps over the lazy dog. The quick brown", "def add(a, b):\n    return")
    alone = Engine(target)
    asked = {t for prompt in prompts for t in alone.prompt_ids(prompt)}
    plain = replace(config, speculative=False)
    said = Counter(t for prompt in prompts for t in alone.generate(prompt, plain).token_ids)
    common = [t for t, _ in said.most_common() if t not in asked][:3]
    assert common
    keep = torch.tensor([i for i in range(draft.vocab_size // 2) if i not in common])
    restrict_head(draft.model, keep)
    engine = Engine(target, draft)
    rejected = 0
    for prompt in prompts:
        spec = engine.generate(prompt, config, options=MODEL_ALONE)
        base = engine.generate(prompt, replace(config, speculative=False))
        assert spec.token_ids == base.token_ids
        drafted = [t.id for s in spec.steps for t in (*s.accepted, *s.rejected)]
        kept = set(draft.model.get_output_embeddings().keep.tolist())
        assert drafted and set(drafted) <= kept and not kept & set(common)  # it proposes only what its head keeps
        rejected += sum(bool(s.rejected) for s in spec.steps)
    assert rejected > 0


def test_sampling_with_a_draft_over_part_of_its_vocabulary_has_the_target_distribution(tiny_models, load_tiny):
    """The draft's head leaves out the target's most likely first token: q is 0 there, so that
    token comes only from the residual max(0, p − q), and the first two tokens still follow the
    target's exact joint distribution."""
    target, draft = load_tiny("llama"), fresh(tiny_models, "llama-draft")
    engine = Engine(target, draft)
    exact = exact_pair_probs(engine, TOP_K)
    firsts: Counter = Counter()
    for (a, _), p in exact.items():
        firsts[a] += p
    asked = set(engine.prompt_ids(PROMPT))  # the head takes these in before each answer
    favourite = max((a for a in firsts if a not in asked), key=firsts.__getitem__)
    assert firsts[favourite] > 0.1  # a token the target often starts with
    keep = torch.tensor([i for i in range(draft.vocab_size) if i != favourite])
    restrict_head(draft.model, keep)
    pairs, drafted = Counter(), Counter()
    for seed in range(RUNS):
        result = engine.generate(PROMPT, replace(TOP_K, seed=seed), options=MODEL_ALONE)
        pairs[tuple(result.token_ids[:2])] += 1
        drafted.update(t.id for t in (*result.steps[0].accepted, *result.steps[0].rejected))
    assert favourite not in drafted and sum(drafted.values()) > 0
    assert sum(n for (a, _), n in pairs.items() if a == favourite) > 0.05 * RUNS  # the target still says it
    stat, df = chi2_statistic(pairs, exact, RUNS)
    assert stat < chi2_critical(df), (stat, df, pairs)
