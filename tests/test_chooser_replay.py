"""tools/chooser_replay.py replays the app's own decode loop and chooser on recorded answers: the
replayed answer is the recorded one, the same record gives the same figures every time, the
clock counts exactly the passes taken, and a chooser that drafts at a loss shows as a loss."""

from __future__ import annotations

import pytest

from app.engine import Engine
from app.engine.config import LoadOptions
from app.engine.decoding import cost
from app.engine.decoding.cost import Choice
from tools import chooser_replay

PROMPTS = ["the cat sat on the mat. the cat sat on the mat. the cat", "one two three four one two three"]


@pytest.fixture(scope="module")
def recorded(tiny_models):
    engine = Engine.load(str(tiny_models["llama"]), draft="lookup", options=LoadOptions(threads=1))
    return engine, chooser_replay.record(engine, PROMPTS, max_new_tokens=12)


def test_a_record_holds_each_answer_and_a_cost_per_block_size(recorded):
    _, record = recorded
    assert [a["prompt"] for a in record["answers"]] == PROMPTS
    assert all(1 <= len(a["ids"]) <= 12 for a in record["answers"])
    assert "1" in record["step_ms"] and all(ms > 0 for ms in record["step_ms"].values())


def test_a_replay_is_the_same_every_time(recorded):
    engine, record = recorded
    first, second = (chooser_replay.replay(engine, record, rounds=2) for _ in range(2))
    assert first == second
    assert len(first["prompts"]) == 2 and all(len(p["lookup_vs_plain"]) == 2 for p in first["prompts"])


def test_noise_misleads_the_chooser_but_not_the_score(recorded, monkeypatch):
    """``--noise`` is seeded (the same every run) and a rate is scored on the passes' own cost:
    with the chooser kept from drafting, lookup and plain take the same passes, so exactly 1.0."""
    engine, record = recorded
    noisy = [chooser_replay.replay(engine, record, rounds=2, noise=0.2) for _ in range(2)]
    assert noisy[0] == noisy[1]
    monkeypatch.setattr(
        cost.KChooser, "choose", lambda self, key, k_max, *a, **kw: Choice(0, 1.0, 0.0, "gain_below_margin")
    )
    result = chooser_replay.replay(engine, record, rounds=1, noise=0.2)
    assert all(r == pytest.approx(1.0, abs=1e-12) for p in result["prompts"] for r in p["lookup_vs_plain"])


def test_without_drafts_lookup_costs_exactly_what_plain_does(recorded, monkeypatch):
    engine, record = recorded

    def never(self, key, k_max, drafts_ready, prefill=False, probe=True):
        return Choice(0, 1.0, 0.0, "gain_below_margin")

    monkeypatch.setattr(cost.KChooser, "choose", never)
    result = chooser_replay.replay(engine, record, rounds=1)
    assert all(r == pytest.approx(1.0, abs=1e-12) for p in result["prompts"] for r in p["lookup_vs_plain"])


def test_drafts_that_always_fail_show_as_a_loss(recorded, monkeypatch):
    """An answer that keeps coming back to one token and never goes on as before (10, 11, 10, 12,
    10, 13, …): after each 10 the lookup proposes what followed the last one, always wrong. Made
    to verify every draft, each such step pays a larger pass for nothing: lookup below plain."""
    engine, record = recorded
    monkeypatch.setattr(cost.KChooser, "choose", lambda self, key, k_max, *a, **kw: Choice(k_max, 1.0, 1.0))
    misleading = [10 if i % 2 == 0 else 11 + i // 2 for i in range(12)]
    wrong = [dict(a, ids=misleading) for a in record["answers"]]
    costs = {1: 10.0, 2: 13.0, 3: 16.0, 4: 19.0, 5: 22.0, 6: 25.0}
    result = chooser_replay.replay(engine, {**record, "answers": wrong}, rounds=1, step_ms=costs)
    assert result["worst"] < 1.0
