"""The hot loop stays lean as the conversation grows: inside an answer no step compares the
whole context again, and a drafter catching up feeds only what it missed."""

from __future__ import annotations

from dataclasses import replace

from app.engine import Engine, GenerationConfig
from app.engine.decoding.acceptance import Rule
from app.engine.decoding.drafters import ModelDrafter
from app.engine.decoding.sampling import gumbel_noise
from app.engine.runners.kv import CachedModel

GREEDY = GenerationConfig(max_new_tokens=40, k=3, auto_k=False)
PROMPT = "The quick brown fox jumps over the lazy dog. The quick brown"


def test_only_the_first_pass_of_an_answer_compares_the_sequence(load_tiny, monkeypatch):
    engine = Engine(load_tiny("llama"), lookup=True)
    compared: list[int] = []
    original = CachedModel.common_prefix

    def counting(self, ids, trusted=0):
        compared.append(len(ids) - trusted)
        return original(self, ids, trusted)

    monkeypatch.setattr(CachedModel, "common_prefix", counting)
    result = engine.generate(PROMPT, GREEDY)
    assert len(result.steps) > 5
    # the run's stats (reused prompt tokens) and the prefill pass: two comparisons, then none
    assert len(compared) == 2


def test_a_model_drafter_inside_an_answer_compares_and_feeds_only_the_new_tail(load_tiny):
    target = load_tiny("llama")
    runner = CachedModel(target.model, target.vocab_size)
    drafter = ModelDrafter(runner, "self")
    rule = Rule(GREEDY)
    tokens = target.tokenizer.encode(PROMPT)
    first = drafter.propose(tokens, 3, rule, 0.0, new_turn=True)
    tokens = tokens + first.tokens[:1] + [7]  # one draft accepted, then the target's own token
    fed = runner.fed_tokens
    drafter.propose(tokens, 3, rule, 0.0, new_turn=False)
    # the target's token (the accepted draft was cached while drafting), then two more drafts
    assert runner.fed_tokens - fed == 1 + 2
    # a new turn with another sequence is compared in full and matches a fresh drafter
    other = target.tokenizer.encode("def add(a, b):\n    return a + b")
    again = drafter.propose(other, 3, rule, 0.0, new_turn=True)
    fresh = ModelDrafter(CachedModel(target.model, target.vocab_size), "fresh")
    assert again.tokens == fresh.propose(other, 3, rule, 0.0).tokens


def test_seed_invariant_noise_is_drawn_once_per_position():
    first = gumbel_noise(5, 17, 100)
    assert gumbel_noise(5, 17, 100) is first  # cached, not drawn again
    assert not gumbel_noise(5, 18, 100).equal(first)


def test_seed_invariant_speculation_still_gives_the_same_text(load_tiny):
    engine = Engine(load_tiny("llama"), load_tiny("llama-draft"))
    config = replace(GREEDY, temperature=0.8, sampling="seed-invariant", seed=3)
    spec = engine.generate(PROMPT, config)
    assert spec.token_ids == engine.generate(PROMPT, replace(config, speculative=False)).token_ids
