"""Continuing a cut answer: the prompt is the conversation plus the partial answer as the
assistant's open turn (no end-of-turn), and greedy decoding goes on where it stopped."""

from __future__ import annotations

from app.engine import Engine, GenerationConfig
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
    rest = engine.generate(conversation, GenerationConfig(max_new_tokens=12, k=3), continue_answer=True)
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
