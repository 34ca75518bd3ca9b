"""The suffix drafter through the engine: lossless (greedy equals the target alone on two
architectures; sampling keeps the target's distribution), and it learns: the same question in
a new conversation takes far fewer target passes, with the same text."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest
from test_sampling_engine import PROMPT, RUNS, TOP_K, chi2_critical, chi2_statistic, exact_pair_probs

from app.engine import Engine, GenerationConfig
from app.engine.analysis.explanation import explain
from app.engine.backend import AnswerOptions
from app.engine.config import SUFFIX
from app.engine.events import RunResult, TokenInfo

QUESTIONS = ["The quick brown fox jumps over the lazy dog. The quick brown", "def add(a, b):\n    return"]
# a fixed k: auto k decides from measured pass times, so pass counts would depend on the machine
GREEDY = GenerationConfig(max_new_tokens=40, k=6, auto_k=False)


def _drafted(run: RunResult) -> tuple[int, int]:
    return run.stats.proposed, run.stats.accepted


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_greedy_with_the_suffix_drafter_equals_the_target_alone(load_tiny, arch):
    engine = Engine(load_tiny(arch), suffix=True)
    assert engine.drafter_name == "suffix index"
    # an earlier conversation that shares the start of the answer but goes elsewhere after it,
    # so drafts are both accepted and rejected
    unrecorded = AnswerOptions(record=False)
    plain = {q: engine.generate(q, replace(GREEDY, speculative=False), options=unrecorded) for q in QUESTIONS}
    for question in QUESTIONS:
        ids = engine.prompt_ids(question)
        answer = plain[question].token_ids
        engine.history.record(f"earlier: {question}", ids + answer[:12] + [5, 6, 7, 8, 9, 10] + answer[12:20])
    proposed = accepted = 0
    for question in QUESTIONS:
        for _ in range(2):  # the second time, the first answer is in the index too
            run = engine.generate(question, GREEDY)
            assert run.token_ids == plain[question].token_ids, (arch, question)
            assert run.text == plain[question].text
            p, a = _drafted(run)
            proposed, accepted = proposed + p, accepted + a
    assert 0 < accepted < proposed  # drafts were taken and drafts were refused


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_the_same_question_in_a_new_conversation_takes_far_fewer_target_passes(load_tiny, arch):
    engine = Engine(load_tiny(arch), suffix=True)
    config = replace(GREEDY, max_new_tokens=48)
    first = engine.generate(QUESTIONS[0], config, options=AnswerOptions(history_id="first chat"))
    again = engine.generate(QUESTIONS[0], config, options=AnswerOptions(history_id="a new chat"))
    assert again.token_ids == first.token_ids
    assert first.stats.target_passes >= 2.5 * again.stats.target_passes  # same tokens: passes per token
    origins = Counter(t.origin for t in again.tokens if t.source == "draft")
    assert origins["earlier"] > 0.5 * again.stats.new_tokens, origins
    # auto k learned how far to trust the index under its own evidence keys
    assert any(key.startswith("suffix") for key in engine.chooser.acceptance.evidence)
    why = explain(again, first)  # the Why panel says where the drafts came from
    assert why.accepted_from_earlier == origins["earlier"] and why.accepted_drafts == sum(origins.values())
    assert f"{origins['earlier']} of the {sum(origins.values())} accepted drafts came from an earlier" in why.summary
    assert explain(first).accepted_from_earlier == 0 and "earlier conversation" not in explain(first).summary


def test_without_remembering_nothing_is_recorded_nor_learned(load_tiny):
    engine = Engine(load_tiny("llama"), suffix=True)
    engine.set_remembering(False)
    first = engine.generate(QUESTIONS[0], GREEDY, options=AnswerOptions(history_id="a"))
    again = engine.generate(QUESTIONS[0], GREEDY, options=AnswerOptions(history_id="b"))
    assert engine.history.size == 0
    assert all(t.origin != "earlier" for t in again.tokens)
    assert again.token_ids == first.token_ids


def test_a_deleted_conversation_no_longer_drafts(load_tiny):
    engine = Engine(load_tiny("llama"), suffix=True)
    first = engine.generate(QUESTIONS[1], GREEDY, options=AnswerOptions(history_id="deleted chat"))
    engine.forget("deleted chat")
    assert "deleted chat" not in engine.history.owners
    again = engine.generate(QUESTIONS[1], GREEDY, options=AnswerOptions(history_id="new chat"))
    assert all(t.origin != "earlier" for t in again.tokens)
    assert again.token_ids == first.token_ids


def test_a_remembered_conversation_is_drafted_from_in_a_new_one(load_tiny):
    engine = Engine(load_tiny("llama"), suffix=True)
    answer = engine.generate(QUESTIONS[0], replace(GREEDY, speculative=False), options=AnswerOptions(record=False))
    saved = [{"role": "user", "content": QUESTIONS[0]}, {"role": "assistant", "content": answer.text}]
    engine.remember("saved chat", saved)
    rendered = engine.target.tokenizer.apply_chat_template(saved, tokenize=True)
    assert engine.history.documents("saved chat") == [list(rendered["input_ids"])]
    again = engine.generate(QUESTIONS[0], GREEDY, options=AnswerOptions(history_id="new chat"))
    assert again.token_ids == answer.token_ids
    # the random model's text does not re-tokenise to the same ids everywhere; where it does, drafts come
    assert sum(t.origin == "earlier" for t in again.tokens) > 0


def test_token_origin_survives_json_and_old_files_read_as_unknown():
    token = TokenInfo(5, "x", "draft", origin="earlier")
    assert TokenInfo.from_dict(token.to_dict()) == token
    old = token.to_dict()
    del old["origin"]
    assert TokenInfo.from_dict(old).origin is None


def test_standard_sampling_with_suffix_drafts_keeps_the_target_distribution(load_tiny):
    """Drafts copied from the index are point masses: accept d with p(d), else draw from p
    without d. The pair (first, second answer token) must follow the target's own law."""
    engine = Engine(load_tiny("llama"), suffix=True)
    exact = exact_pair_probs(engine, TOP_K)
    (a, b), _ = max(exact.items(), key=lambda item: item[1])
    engine.history.record("earlier", engine.prompt_ids(PROMPT) + [a, b, a])
    pairs, proposed = Counter(), Counter()
    for seed in range(RUNS):
        options = AnswerOptions(drafter_choice=SUFFIX, record=False)
        run = engine.generate(PROMPT, replace(TOP_K, seed=seed), options=options)
        pairs[tuple(run.token_ids[:2])] += 1
        first = run.steps[0]
        proposed[len(first.accepted) + len(first.rejected)] += 1
        assert all(t.origin == "earlier" for t in first.accepted + first.rejected)
    assert proposed == Counter({TOP_K.k: RUNS})  # every run verified the two copied drafts
    assert 0 < pairs[(a, b)] < RUNS
    stat, df = chi2_statistic(pairs, exact, RUNS)
    assert stat < chi2_critical(df), (stat, df, pairs)


def _index_of(engine: Engine) -> dict[str, list[list[int]]]:
    return {owner: engine.history.documents(owner) for owner in engine.history.owners}


def test_compare_with_the_suffix_drafter_reruns_fresh_and_never_recites_the_compared_answer(load_tiny):
    from app.engine.analysis.comparison import run_comparison

    loaded = load_tiny("qwen2")
    engine = Engine(loaded, suffix=True)
    # the answer now compared: indexed
    engine.generate(QUESTIONS[0], GREEDY, options=AnswerOptions(history_id="this chat"))
    engine.history.record("another chat", engine.prompt_ids("Say hello") + [5, 6, 7])
    before = _index_of(engine)
    report = run_comparison(engine, QUESTIONS[0], GREEDY, warm_up=False, history_id="this chat")
    # as on an engine that never saw the answer: the same drafts, the same passes
    fresh = Engine(loaded, suffix=True).generate(QUESTIONS[0], GREEDY, options=AnswerOptions(record=False))
    assert report.speculative.token_ids == report.baseline.token_ids == fresh.token_ids
    assert report.speculative.stats.target_passes == fresh.stats.target_passes
    assert report.speculative.stats.accepted == fresh.stats.accepted
    assert not [t for t in report.speculative.tokens if t.origin == "earlier"]
    assert _index_of(engine) == before  # neither arm recorded its answer


def test_compare_still_drafts_from_the_same_answer_in_another_conversation(load_tiny):
    from app.engine.analysis.comparison import run_comparison

    engine = Engine(load_tiny("qwen2"), suffix=True)
    engine.generate(QUESTIONS[0], GREEDY, options=AnswerOptions(history_id="an earlier chat"))
    report = run_comparison(engine, QUESTIONS[0], GREEDY, warm_up=False, history_id="this chat")
    drafted = [t for t in report.speculative.tokens if t.source == "draft"]
    assert drafted and all(t.origin == "earlier" for t in drafted)
    assert report.speculative.stats.target_passes < report.baseline.stats.target_passes


def test_the_drafter_experiment_reruns_fresh_and_never_recites_the_answer_it_reruns(load_tiny):
    from app.engine.analysis.sweep import plan_arms, run_sweep

    loaded = load_tiny("qwen2")
    engine = Engine(loaded, suffix=True)
    answer = engine.generate(QUESTIONS[0], replace(GREEDY, speculative=False), options=AnswerOptions(record=False))
    engine.history.record("this chat", engine.prompt_ids(QUESTIONS[0]) + answer.token_ids)  # the answer tried again
    before = _index_of(engine)
    arms = plan_arms([SUFFIX], [6], engine.drafter_choices)
    plain, suffix = run_sweep(engine, QUESTIONS[0], GREEDY, arms, history_id="this chat")
    assert _index_of(engine) == before  # no arm left its answer behind for another
    assert suffix.identical and suffix.arm.label == "suffix index, k=6"
    fresh = Engine(loaded, suffix=True).generate(QUESTIONS[0], GREEDY, options=AnswerOptions(record=False))
    assert suffix.run.stats.target_passes == fresh.stats.target_passes
    assert not [t for t in suffix.run.tokens if t.origin == "earlier"]
