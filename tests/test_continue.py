"""Continuing a cut answer: the prompt is the conversation plus the partial answer as the
assistant's open turn (no end-of-turn), and greedy decoding goes on where it stopped."""

from __future__ import annotations

import threading
from dataclasses import replace

from app.engine import Engine, GenerationConfig
from app.engine.backend import AnswerOptions
from app.engine.events import RunStats

PROMPT = "Hello world!"


def _engine(load_tiny) -> Engine:  # type: ignore[no-untyped-def]
    return Engine(load_tiny("llama"), load_tiny("llama-draft"))


def test_the_continue_prompt_is_the_open_answer_without_an_end_of_turn(load_tiny):
    engine = _engine(load_tiny)
    cut = engine.generate(PROMPT, GenerationConfig(max_new_tokens=6, k=3))
    asked = engine.prompt_ids([{"role": "user", "content": PROMPT}])
    opened = engine.prompt_ids(
        [{"role": "user", "content": PROMPT}, {"role": "assistant", "content": cut.text}],
        continue_answer=True,
    )
    tokenizer = engine.target.tokenizer
    assert opened[: len(asked)] == asked  # the question and the assistant's header, unchanged
    assert tokenizer.decode(opened[len(asked) :]) == cut.text  # then exactly the partial answer
    assert tokenizer.convert_tokens_to_ids("<|im_end|>") not in opened[len(asked) :]


def test_continuing_a_cut_greedy_answer_gives_the_uncut_answer(load_tiny):
    # the text of a cut answer is tokenized again; on this prompt it gives back the same ids
    # (a cut inside a multi-byte character would not: the partial text holds U+FFFD there)
    engine, prompt = _engine(load_tiny), "def add(a, b):"
    whole = engine.generate(prompt, GenerationConfig(max_new_tokens=20, k=3))
    cut = engine.generate(prompt, GenerationConfig(max_new_tokens=8, k=3))
    assert cut.stop_reason == "max_new_tokens" and whole.text.startswith(cut.text)
    conversation = [{"role": "user", "content": prompt}, {"role": "assistant", "content": cut.text}]
    assert engine.prompt_ids(conversation, continue_answer=True)[-8:] == cut.token_ids
    go_on = AnswerOptions(continue_answer=True)
    rest = engine.generate(conversation, GenerationConfig(max_new_tokens=12, k=3), options=go_on)
    assert cut.text + rest.text == whole.text
    assert rest.stats.prompt_tokens == cut.stats.prompt_tokens + cut.stats.new_tokens


def test_stats_of_a_continued_answer_add_up_and_keep_the_first_token_time():
    first = RunStats(
        new_tokens=8, target_passes=4, proposed=6, accepted=4, prefill_s=0.5, decode_s=1.0, prompt_tokens=10
    )
    more = RunStats(
        new_tokens=4, target_passes=2, proposed=3, accepted=2, prefill_s=0.2, decode_s=0.3, prompt_tokens=18
    )
    both = first.followed_by(more)
    assert (both.new_tokens, both.target_passes, both.proposed, both.accepted) == (12, 6, 9, 6)
    assert both.time_to_first_token_s == 0.5 and both.prefill_s + both.decode_s == 2.0
    assert both.context_tokens == 10 + 12


SPLIT_PROMPT = "東京 and 日本語 🙂🚀"  # the tiny qwen2 answers it with characters split across tokens


def _cut_points(whole) -> list[int]:  # type: ignore[no-untyped-def]
    """Token counts at which ``whole`` is cut inside a character (its piece so far is empty)."""
    return [n for n in range(1, len(whole.tokens)) if whole.tokens[n - 1].text == ""]


def test_continue_after_a_cut_inside_a_character_goes_on_from_the_exact_ids(load_tiny):
    engine = Engine(load_tiny("qwen2"), lookup=True)
    config = GenerationConfig(max_new_tokens=30, k=3)
    whole = engine.generate(SPLIT_PROMPT, config)
    cuts = _cut_points(whole)
    assert len(cuts) >= 3  # the test needs cuts inside characters
    for i, n in enumerate(cuts[:6]):
        if i % 2:  # out of new tokens
            cut = engine.generate(SPLIT_PROMPT, replace(config, max_new_tokens=n))
            assert cut.stop_reason == "max_new_tokens"
        else:  # Stop after the n-th token (one token per pass without speculation)
            cancel = threading.Event()

            def stop_after(step, n=n, cancel=cancel):  # type: ignore[no-untyped-def]
                if step.stats.new_tokens >= n:
                    cancel.set()

            plain = replace(config, speculative=False)
            cut = engine.generate(SPLIT_PROMPT, plain, cancel=cancel, on_step=stop_after)
            assert cut.stop_reason == "cancelled"
        assert cut.token_ids == whole.token_ids[:n]  # the exact tokens are kept
        conversation = [{"role": "user", "content": SPLIT_PROMPT}, {"role": "assistant", "content": cut.text}]
        go_on = AnswerOptions(continue_answer=True, answer_ids=cut.token_ids)
        rest = engine.generate(conversation, replace(config, max_new_tokens=30 - n), options=go_on)
        assert cut.token_ids + rest.token_ids == whole.token_ids
        assert cut.text + rest.text == whole.text  # no U+FFFD left where the character was cut
        assert "\ufffd" not in cut.text[-1:] and not cut.text.endswith("\ufffd")


def test_a_continued_answer_is_prompted_with_its_own_ids_after_the_question(load_tiny):
    engine = Engine(load_tiny("qwen2"))
    ids = engine.target.tokenizer.encode("😁🚀")[:-1]  # cut inside 🚀
    conversation = [{"role": "user", "content": PROMPT}, {"role": "assistant", "content": "😁"}]
    asked = engine.prompt_ids(conversation[:1])
    assert engine.prompt_ids(conversation, continue_answer=True, answer_ids=ids) == asked + ids


def test_a_saved_answer_gives_continue_its_exact_ids(load_tiny):
    from app.ui.common.conversation import Message

    engine = Engine(load_tiny("qwen2"), lookup=True)
    cut = engine.generate(SPLIT_PROMPT, GenerationConfig(max_new_tokens=2, k=3))
    message = Message("assistant", "", config=GenerationConfig(max_new_tokens=2).to_dict())
    for step in cut.steps:
        message.add_step(step)
    message.finish(cut)
    restored = Message.from_json(message.to_json())  # as saved and opened again
    assert restored.token_ids() == tuple(cut.token_ids)  # rejected drafts left out
    assert restored.can_continue
    # an answer cut inside its first character has no text yet, but can go on
    no_text = Message("assistant", "", records=restored.records, stop_reason="cancelled")
    assert no_text.can_continue
    old = Message.from_json({**message.to_json(), "records": [[r.text, r.kind, r.step, -1, None, None, None]
                                                             for r in restored.records]})
    assert old.token_ids() is None  # a file without ids: Continue falls back to the text
