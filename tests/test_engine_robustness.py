"""What a hostile user found in the engine's Python API: a stale stream resumed after another
answer, a lone surrogate in a message, and an answer naming a drafter the engine skipped."""

from __future__ import annotations

import pytest

from app.engine import Engine, GenerationConfig
from app.engine.decoding.suffix_drafter import SUFFIX_DRAFTER_NAME
from app.engine.errors import StaleStreamError

PROMPT = "The quick brown fox jumps over the lazy dog. The quick brown"
GREEDY = GenerationConfig(max_new_tokens=12, k=3, auto_k=False)


def test_resuming_a_stream_after_another_answer_raises(load_tiny):
    engine = Engine(load_tiny("llama"), lookup=True)
    old = engine.stream(PROMPT, GREEDY)
    next(old)
    engine.generate("def add(a, b):", GREEDY)  # moves the caches to another conversation
    with pytest.raises(StaleStreamError, match="another answer"):
        next(old)
    # the engine is still fine, and the same question answers as it would have
    fresh = Engine(load_tiny("llama"), lookup=True).generate(PROMPT, GREEDY)
    assert engine.generate(PROMPT, GREEDY).token_ids == fresh.token_ids


def test_a_finished_or_abandoned_stream_does_not_disturb_the_next(load_tiny):
    """After an answer abandoned mid-way, and after one that finished, the next answer is token
    for token what a fresh engine gives (the caches and the drafter's state kept nothing wrong)."""
    fresh = Engine(load_tiny("llama"), lookup=True)
    expected = {prompt: fresh.generate(prompt, GREEDY).token_ids for prompt in (PROMPT, "def add(a, b):")}
    engine = Engine(load_tiny("llama"), lookup=True)
    abandoned = engine.stream(PROMPT, GREEDY)
    next(abandoned)
    next(abandoned)
    abandoned.close()  # the consumer stopped early: nothing to raise
    assert engine.generate(PROMPT, GREEDY).token_ids == expected[PROMPT]
    finished = list(engine.stream("def add(a, b):", GREEDY))
    assert [t.id for s in finished for t in s.tokens] == expected["def add(a, b):"]
    assert engine.generate(PROMPT, GREEDY).token_ids == expected[PROMPT]


@pytest.mark.parametrize("text", ["caf\udce9 ok", "lone \ud800 high", "\udcff"])
def test_a_lone_surrogate_in_a_message_is_replaced_not_an_engine_error(load_tiny, text):
    engine = Engine(load_tiny("llama"), lookup=True)
    clean = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    assert "\ufffd" in clean
    ids = engine.prompt_ids([{"role": "user", "content": text}])
    assert ids == engine.prompt_ids([{"role": "user", "content": clean}])
    result = engine.generate([{"role": "user", "content": text}], GREEDY)
    assert result.stats.new_tokens > 0


def test_an_answer_names_no_draft_model_when_the_engine_skipped_it(load_tiny):
    engine = Engine(load_tiny("llama"), load_tiny("llama-draft"))
    config = GenerationConfig(max_new_tokens=8, k=3, auto_k=True)
    drafted = engine.generate(PROMPT, config)
    assert drafted.drafter == drafted.made_by.drafter != "none" and drafted.speculative
    engine.reset()
    engine.chooser.worth_catching_up = lambda *args: False  # the catch-up would not be repaid
    skipped = engine.generate(PROMPT, config)
    assert skipped.stats.draft_passes == 0  # lookup drafted alone (the engine's drafter takes it beside the model)
    assert skipped.drafter == skipped.made_by.drafter == SUFFIX_DRAFTER_NAME
    assert skipped.made_by.draft_dtype is None and skipped.made_by.draft_weights is None


def _kv_bytes(engine: Engine) -> int:
    cache = engine._target_kv._cache
    if cache is None:
        return 0
    storages = {id(t.untyped_storage()): t.untyped_storage().nbytes() for layer in cache.layers
                for t in (layer.keys, layer.values) if t is not None}
    return sum(storages.values())


def test_what_the_engine_keeps_follows_the_conversation_not_the_number_of_turns(load_tiny):
    """A soak's memory rose with a growing conversation: the KV cache (what lets a follow-up
    turn prefill only its new tokens) grows with the context and nothing else does. A fresh
    conversation afterwards holds only its own cache; the lookup index and the chooser's
    measurements stay bounded."""
    engine = Engine(load_tiny("llama"), lookup=True)
    config = GenerationConfig(max_new_tokens=8, k=3)
    messages: list[dict[str, str]] = []
    for i in range(8):
        messages.append({"role": "user", "content": f"Turn {i}: the quick brown fox."})
        messages.append({"role": "assistant", "content": engine.generate(messages, config).text})
    per_token = _kv_bytes(engine) / len(engine._target_kv.tokens)
    assert per_token > 0
    fresh = []
    for _ in range(6):
        engine.generate("A fresh chat: hello", config)
        lookup = engine._drafters["lookup"]
        fresh.append((_kv_bytes(engine), sum(len(t) for t in lookup.index.tables.values())))
        # the cache holds this conversation only, not the long one before it
        assert _kv_bytes(engine) <= 2 * per_token * len(engine._target_kv.tokens)
    assert len(set(fresh[1:])) == 1  # the same short chat again and again: nothing accumulates
