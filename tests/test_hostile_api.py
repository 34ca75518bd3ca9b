"""The engine's API against what a careless caller or a foreign file hands it (issue 20,
sections 1 and 2): messages of the wrong shape and malformed settings are one readable
``InvalidSettingError``; token ids made by another model, or that do not fit this one, are never
fed to it (Continue goes from the answer's text); and a conversation forgotten while its answer
streams stays forgotten."""

from __future__ import annotations

import pytest

from app.engine import Engine, GenerationConfig
from app.engine.backend import AnswerOptions
from app.engine.config import SUFFIX
from app.engine.errors import InvalidSettingError

QUESTION = "The quick brown fox jumps over the lazy dog. The quick brown"


@pytest.mark.parametrize(
    "data",
    [{"stop_strings": 5}, {"stop_strings": [1, 2]}, {"k": "5"}, {"max_new_tokens": -1}, "k=5", None, [("k", 5)]],
)
def test_malformed_saved_settings_are_one_invalid_setting_error(data):
    with pytest.raises(InvalidSettingError):
        GenerationConfig.from_dict(data)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "user"}],  # no content
        [{"content": "hi"}],  # no role
        {"role": "user", "content": "hi"},  # a dict, not a list of them
        ["hi"],  # a list of strings
        [{"role": "user", "content": "hi", "name": 5}],  # a field that is not text
        42,
    ],
)
def test_a_message_list_of_the_wrong_shape_is_one_invalid_setting_error(load_tiny, messages):
    engine = Engine(load_tiny("llama"), lookup=True)
    with pytest.raises(InvalidSettingError):
        engine.generate(messages, GenerationConfig(max_new_tokens=2))


def _cut_answer(engine: Engine) -> tuple[list[dict[str, str]], list[int], str]:
    cut = engine.generate(QUESTION, GenerationConfig(max_new_tokens=3, speculative=False))
    chat = [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": cut.text}]
    return chat, list(cut.token_ids), cut.text


@pytest.mark.parametrize("bad", [49152, 2_000_000_000, -1, 2**70])
def test_answer_ids_that_do_not_fit_the_model_continue_from_the_text(load_tiny, bad):
    engine = Engine(load_tiny("llama"), lookup=True)
    chat, ids, _text = _cut_answer(engine)
    bad_ids = [*ids, bad if bad >= 0 else -1, engine.target.vocab_size + (bad if bad > 0 else 0)]
    assert engine.answer_ids_problem(bad_ids) != ""
    config = GenerationConfig(max_new_tokens=4, speculative=False)
    from_text = engine.generate(chat, config, options=AnswerOptions(continue_answer=True))
    went_on = engine.generate(chat, config, options=AnswerOptions(continue_answer=True, answer_ids=bad_ids))
    assert went_on.token_ids == from_text.token_ids


def test_answer_ids_made_by_another_model_are_not_reused(load_tiny):
    engine = Engine(load_tiny("llama"), lookup=True)
    chat, ids, _text = _cut_answer(engine)
    config = GenerationConfig(max_new_tokens=4, speculative=False)
    assert engine.answer_ids_problem(ids, made_by=engine.target.name) == ""
    problem = engine.answer_ids_problem(ids, made_by="Qwen2.5-0.5B-Instruct")
    assert "Qwen2.5-0.5B-Instruct" in problem and "text" in problem
    foreign = [(i * 7 + 3) % engine.target.vocab_size for i in ids]  # another tokenizer's ids
    from_text = engine.generate(chat, config, options=AnswerOptions(continue_answer=True))
    go_on = AnswerOptions(continue_answer=True, answer_ids=foreign, answer_made_by="Qwen2.5-0.5B-Instruct")
    went_on = engine.generate(chat, config, options=go_on)
    assert went_on.token_ids == from_text.token_ids


def test_a_conversation_forgotten_between_two_steps_of_its_stream_stays_forgotten(load_tiny):
    engine = Engine(load_tiny("llama"), suffix=True)
    config = GenerationConfig(max_new_tokens=12, k=2, auto_k=False)
    stream = engine.stream(QUESTION, config, options=AnswerOptions(history_id="c1"))
    next(stream)
    assert "c1" in engine.history.owners
    engine.forget("c1")
    for _step in stream:
        pass
    assert "c1" not in engine.history.owners and engine.history.size == 0
    engine.generate(QUESTION, GenerationConfig(max_new_tokens=2), options=AnswerOptions(history_id="c1"))
    assert "c1" in engine.history.owners  # a new answer in it afterwards is recorded again
    assert SUFFIX in engine.drafter_choices
