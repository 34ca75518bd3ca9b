"""The server back-end on answers recorded from real servers (tests/data/servers): the steps,
the attribution of tokens and the server's own counts come out as the servers said."""

from __future__ import annotations

import pytest
from remote_replay import recording, replay_session

from app.engine.analysis.explanation import explain
from app.engine.config import GenerationConfig
from app.engine.events import RunResult
from app.remote.comparison import with_plain_probabilities

ALL = ["llamacpp-plain", "llamacpp-ngram", "llamacpp-draft", "llamacpp-ngram-fixed", "vllm-plain", "vllm-ngram",
       "vllm-ngram-fixed"]  # fmt: skip


def answer(name: str) -> tuple[RunResult, object]:
    data = recording(name)
    session = replay_session(name)
    result = session.generate(data["prompt"], GenerationConfig(max_new_tokens=data["max_new_tokens"]))
    return result, session.last_figures


@pytest.mark.parametrize("name", ALL)
def test_a_recorded_answer_gives_the_servers_text_and_counts(name):
    expected = recording(name)["expected"]
    result, figures = answer(name)
    assert result.text == expected["text"]
    assert (figures.drafted, figures.accepted) == (expected["drafted"], expected["accepted"])
    assert (result.stats.proposed, result.stats.accepted) == (expected["drafted"] or 0, expected["accepted"] or 0)
    # every pass emits one own token after its accepted drafts: passes = tokens − accepted (+ a cut last pass)
    assert result.stats.new_tokens - result.stats.accepted <= result.stats.target_passes
    assert result.stats.target_passes <= result.stats.new_tokens - result.stats.accepted + 1
    assert result.made_by.server is not None and result.speculative == bool(expected["drafted"])


@pytest.mark.parametrize("name", ["llamacpp-ngram", "llamacpp-draft", "vllm-ngram"])
def test_tokens_are_drafts_exactly_as_many_as_the_server_accepted(name):
    result, figures = answer(name)
    sources = [t.source for t in result.tokens]
    assert sources.count("draft") == figures.accepted
    assert "unknown" not in sources  # these streams say which tokens were drafts
    steps = [s for s in result.steps if s.tokens]
    assert sum(s.drafted for s in steps) == figures.drafted


def test_llama_cpp_token_ids_are_known_while_speculating():
    """Its /completion stream names every token's id, the verified blocks' too (its chat stream does not)."""
    result, _ = answer("llamacpp-draft")
    assert all(t.id >= 0 for t in result.tokens)
    plain, _ = answer("llamacpp-plain")
    assert result.token_ids[:40] == plain.token_ids[:40]


def test_speculated_tokens_get_no_probability_and_take_the_plain_runs():
    """llama.cpp gives no probabilities for a verified block; the comparison takes them from
    the plain run up to where the answers part, never a false 1.0."""
    spec, _ = answer("llamacpp-draft")
    plain, _ = answer("llamacpp-plain")
    drafts = [t for t in spec.tokens if t.source == "draft"]
    assert drafts and all(t.p_target is None for t in drafts)
    filled = with_plain_probabilities(spec, plain)
    assert all(t.p_target is not None for t in filled.tokens)
    assert [t.p_target for t in filled.tokens] == [t.p_target for t in plain.tokens]
    assert filled.token_ids == spec.token_ids and filled.text == spec.text
    assert [len(s.tokens) for s in filled.steps] == [len(s.tokens) for s in spec.steps]


def test_a_margin_is_the_gap_of_the_two_best_log_probabilities():
    plain, _ = answer("llamacpp-plain")
    first = plain.tokens[0]
    assert first.margin == pytest.approx(-2.187049627304077 - -2.3835084438323975)


def test_vllm_one_token_steps_are_not_known_when_its_figures_cannot_place_them():
    """vLLM's fixed-length answer: 36 drafts proposed, none accepted, over one-token steps some
    of which did not draft: those tokens are "not known", their counts still the server's."""
    result, figures = answer("vllm-ngram-fixed")
    unknown = [t for t in result.tokens if t.source == "unknown"]
    assert unknown and figures.accepted == 0
    assert result.stats.proposed == 36 and result.stats.accepted == 0


def test_why_on_a_server_answer_gives_acceptance_and_no_pass_costs():
    result, figures = answer("vllm-ngram")
    e = explain(result)
    assert e.plain_cost_source == "server"
    assert e.draft_cost_ratio is None and e.verify_cost_ratio is None and e.what_if == ()
    assert "does not report what its passes cost" in e.summary
    assert e.drafts_accepted_share == pytest.approx(figures.accepted / figures.drafted)
    positions = e.acceptance_by_position
    assert positions[0].accepted == figures.accepted_by_position[0]


def test_a_server_run_survives_its_json():
    result, _ = answer("vllm-ngram-fixed")
    again = RunResult.from_dict(result.to_dict())
    assert again.tokens == result.tokens and again.steps == result.steps
    assert [s.rejected_unseen for s in again.steps] == [s.rejected_unseen for s in result.steps]


@pytest.mark.parametrize("name", ["llamacpp-draft", "vllm-ngram"])
def test_acceptance_by_position_is_the_servers_per_step_figures(name):
    result, figures = answer(name)
    positions = explain(result).acceptance_by_position
    assert tuple(p.accepted for p in positions) == figures.accepted_by_position
    assert sum(figures.per_step_accepted) == figures.accepted and sum(figures.per_step_drafted) == figures.drafted


def test_vllm_chunks_that_merge_steps_keep_the_counts_and_place_no_token():
    """vLLM may merge engine steps into one chunk (a plain server did): then its chunks cannot
    be its steps; the answer and the server's counts stand, no token is called a draft."""
    import json

    from remote_replay import replay_session

    def merge_two_steps(chunks):
        data = [json.loads(c) if c != "[DONE]" else c for c in chunks]
        with_ids = [i for i, d in enumerate(data) if isinstance(d, dict) and d.get("choices")
                    and len(d["choices"][0].get("token_ids") or []) > 1]  # fmt: skip
        a, b = with_ids[0], with_ids[1]
        first, second = data[a]["choices"][0], data[b]["choices"][0]
        between = [d["choices"][0] for d in data[a + 1 : b + 1]]
        first["token_ids"] += [t for c in between for t in c["token_ids"]]
        first["delta"]["content"] += "".join(c["delta"].get("content", "") for c in between)
        first["logprobs"]["content"] += [e for c in between for e in c["logprobs"]["content"]]
        del data[a + 1 : b + 1]
        assert second  # merged into the first
        return [json.dumps(d) if isinstance(d, dict) else d for d in data]

    expected = recording("vllm-ngram")["expected"]
    session = replay_session("vllm-ngram", merge_two_steps)
    result = session.generate(recording("vllm-ngram")["prompt"], GenerationConfig(max_new_tokens=48))
    assert result.text == expected["text"]
    assert (result.stats.proposed, result.stats.accepted) == (expected["drafted"], expected["accepted"])
    assert "draft" not in {t.source for t in result.tokens[1:]} and "unknown" in {t.source for t in result.tokens}
    assert any("merged steps" in note for note in session.last_figures.notes)


def test_an_unknown_openai_server_streams_text_whose_source_is_not_known():
    """A server that is neither llama.cpp nor vLLM: its answer streams, its tokens are "not
    known" (it says nothing of drafts), and the run names it as OpenAI-compatible."""
    import json

    import httpx

    from app.remote.client import ServerClient
    from app.remote.detect import detect

    chunks = [{"choices": [{"delta": {"content": piece}, "finish_reason": None}]} for piece in ("Hel", "lo", "!")]
    usage = {"prompt_tokens": 5, "completion_tokens": 3}
    chunks.append({"choices": [{"delta": {}, "finish_reason": "stop"}], "usage": usage})
    stream = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"

    def serve(request):
        if request.url.path == "/v1/models":
            return httpx.Response(200, json={"data": [{"id": "some-model"}]})
        if request.url.path == "/v1/chat/completions":
            return httpx.Response(200, headers={"content-type": "text/event-stream"}, text=stream)
        return httpx.Response(404, json={"error": "no such path"})

    client = ServerClient("http://other", transport=httpx.MockTransport(serve))
    info = detect(client)
    from app.remote.session import ServerSession

    result = ServerSession(client, info, "some-model").generate("hi", GenerationConfig(max_new_tokens=8))
    assert info.kind == "openai" and result.text == "Hello!" and result.stop_reason == "eos"
    assert {t.source for t in result.tokens} == {"unknown"} and result.stats.proposed == 0
    assert "OpenAI-compatible" in result.made_by.describe()
