"""The with/without comparison against servers, on recorded answers: the rounds run A B B A
after a warm-up, the engine's comparison judges the pair, and the endpoints are checked."""

from __future__ import annotations

import json

from remote_replay import recording, replay_session

from app.engine.config import GenerationConfig
from app.remote.comparison import run_server_comparison


def compare(spec: str, plain: str, spec_edit=None):
    data = recording(spec)
    speculative = replay_session(spec, spec_edit, url="http://spec")
    baseline = replay_session(plain, url="http://plain")
    config = GenerationConfig(max_new_tokens=data["max_new_tokens"])
    return run_server_comparison(speculative, baseline, data["prompt"], config)


def test_a_fair_comparison_identical_answers_and_the_servers_counts():
    report = compare("llamacpp-draft", "llamacpp-plain")
    assert [r.arm for r in report.rounds] == ["speculative", "baseline", "baseline", "speculative"]
    assert report.comparison.verdict == "identical" and report.checks == ()
    assert report.figures[0].drafted == report.speculative.stats.proposed == 29
    assert report.figures[1].drafted is None
    data = report.to_dict()
    assert data["server_figures"]["speculative"]["accepted"] == 29 and len(data["rounds"]) == 4
    json.dumps(data)  # one JSON document


def test_the_requests_are_fixed_length_greedy_and_without_the_prompt_cache():
    seen = []

    def spy(request):
        if request.method == "POST" and request.url.path == "/completion":
            seen.append(json.loads(request.content))
        return None

    data = recording("llamacpp-plain")
    speculative, plain = (replay_session("llamacpp-plain", handler=spy) for _ in range(2))
    run_server_comparison(speculative, plain, data["prompt"], GenerationConfig(max_new_tokens=40))
    assert len(seen) == 2 + 4  # a warm-up on each, then A B B A
    for body in seen[2:]:
        assert body["ignore_eos"] is True and body["cache_prompt"] is False
        assert body["temperature"] == 0 and body["seed"] == 0 and body["n_predict"] == 40


def test_a_plain_endpoint_that_drafts_is_named():
    report = compare("llamacpp-ngram", "llamacpp-ngram")
    assert any("plain endpoint" in p.render() and "drafted too (2 of 2" in p.render() for p in report.checks)


def test_a_vllm_without_its_detailed_metrics_is_told_the_flag():
    def no_metrics(chunks):
        return [c.replace('"metrics": {"speculative_decoding"', '"metrics": null, "x": {"speculative_decoding"')
                .replace('"metrics":{"speculative_decoding"', '"metrics":null,"x":{"speculative_decoding"')
                for c in chunks]  # fmt: skip

    report = compare("vllm-ngram", "vllm-plain", no_metrics)
    texts = [p.render() for p in report.checks]
    assert any("--per-request-spec-decode-metrics detailed" in t for t in texts), texts


def test_the_speculative_answer_takes_the_plain_runs_probabilities():
    report = compare("llamacpp-draft", "llamacpp-plain")
    assert all(t.p_target is not None for t in report.speculative.tokens)
    assert report.comparison.first_difference is None
