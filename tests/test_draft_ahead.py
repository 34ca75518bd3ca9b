"""A draft model drafts the next block while the target verifies this one (``decode``'s drafting
ahead, on the CPU's spare core): the answer is the target's own, greedy and seed-invariant; the
block drafted ahead is used when the target went the way it guessed; standard sampling (random
draws shared by the two) drafts in turn."""

from __future__ import annotations

import pytest

from app.engine import Engine, GenerationConfig
from app.engine.backend import AnswerOptions
from app.engine.config import DRAFT_MODEL, LoadOptions
from app.engine.decoding import decode, drafters
from app.engine.session import DRAFT_AHEAD_ENV

MODEL_ALONE = AnswerOptions(drafter_choice=DRAFT_MODEL)
PROMPT = "The quick brown fox jumps over the lazy dog. The quick brown fox"
GREEDY = GenerationConfig(max_new_tokens=40, k=4, auto_k=False)
SEEDED = GenerationConfig(max_new_tokens=40, k=4, auto_k=False, temperature=0.8, seed=3, sampling="seed-invariant")
SEEDED_STANDARD = GenerationConfig(max_new_tokens=40, k=4, auto_k=False, temperature=0.8, seed=3)


@pytest.fixture
def spied(monkeypatch):
    """Counts the blocks drafted ahead and those the next step took."""
    seen = {"drafted": 0, "taken": 0}
    propose_ahead, from_ahead = drafters.ModelDrafter.propose_ahead, decode._from_ahead

    def drafting(self, *args, **kwargs):
        seen["drafted"] += 1
        return propose_ahead(self, *args, **kwargs)

    def taking(*args, **kwargs):
        branch, guessed = from_ahead(*args, **kwargs)
        seen["taken"] += branch is not None
        return branch, guessed

    monkeypatch.setattr(drafters.ModelDrafter, "propose_ahead", drafting)
    monkeypatch.setattr(decode, "_from_ahead", taking)
    return seen


def _engine(tiny_models, arch: str = "llama") -> Engine:
    return Engine.load(str(tiny_models[arch]), str(tiny_models[f"{arch}-draft"]), LoadOptions(device="cpu"))


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("config", [GREEDY, SEEDED], ids=["greedy", "seed-invariant"])
def test_drafting_ahead_gives_the_target_alones_answer(tiny_models, monkeypatch, spied, arch, config):
    monkeypatch.setenv(DRAFT_AHEAD_ENV, "1")
    engine = _engine(tiny_models, arch)
    ahead = engine.generate(PROMPT, config)
    assert spied["drafted"] > 0 and spied["taken"] > 0  # blocks were drafted ahead and used
    assert ahead.stats.accepted > 0
    plain = engine.generate(PROMPT, GenerationConfig(**{**config.to_dict(), "speculative": False}))
    assert ahead.token_ids == plain.token_ids
    monkeypatch.setenv(DRAFT_AHEAD_ENV, "0")
    in_turn = engine.generate(PROMPT, config)
    assert in_turn.token_ids == ahead.token_ids
    assert [(t.id, t.source) for t in in_turn.tokens] == [(t.id, t.source) for t in ahead.tokens]


def test_standard_sampling_drafts_in_turn(tiny_models, monkeypatch, spied):
    monkeypatch.setenv(DRAFT_AHEAD_ENV, "1")
    engine = _engine(tiny_models)
    result = engine.generate(PROMPT, GenerationConfig(max_new_tokens=24, k=4, auto_k=False, temperature=0.8, seed=3))
    assert result.stats.proposed > 0 and spied["drafted"] == 0


def test_a_stop_inside_a_block_leaves_the_drafter_ready_for_the_next_answer(tiny_models, monkeypatch, spied):
    """The block drafted ahead of the answer's last step is waited for, and the next answer's
    drafter rolls back from it: the next answer is the target's own too."""
    monkeypatch.setenv(DRAFT_AHEAD_ENV, "1")
    engine = _engine(tiny_models)
    short = engine.generate(PROMPT, GenerationConfig(max_new_tokens=7, k=4, auto_k=False))
    assert spied["drafted"] > 0 and len(short.tokens) == 7
    again = engine.generate(PROMPT, GREEDY)
    plain = engine.generate(PROMPT, GenerationConfig(max_new_tokens=40, speculative=False))
    assert again.token_ids == plain.token_ids


def test_drafting_ahead_costs_the_verification_when_the_block_is_kept_and_both_when_dropped():
    from app.engine.decoding.cost import step_cost

    assert step_cost(0.7, 4, 0.1, 1.3, ahead=False) == pytest.approx(4 * 0.1 + 1.3)
    assert step_cost(1.0, 4, 0.1, 1.3, ahead=True) == pytest.approx(1.3)  # hidden behind the pass
    assert step_cost(1.0, 4, 0.5, 1.3, ahead=True) == pytest.approx(2.0)  # longer than it: the drafting
    assert step_cost(0.0, 4, 0.1, 1.3, ahead=True) == pytest.approx(4 * 0.1 + 1.3)  # always dropped
    kept = 0.8**5
    assert step_cost(0.8, 4, 0.1, 1.3, ahead=True) == pytest.approx(1.3 + 0.4 * (1 - kept))


def test_a_draft_dear_in_turn_pays_when_drafted_ahead():
    """The real pair's costs (a draft step 0.45 of a plain pass, v(n) = 1 + 0.4 (n - 1)) at an
    acceptance of 0.9: in turn no k is predicted to gain; drafted ahead, one is."""
    from app.engine.decoding.cost import best_k

    def verify(n: int) -> float:
        return 1.0 + 0.4 * (n - 1)

    assert best_k(0.9, 0.45, verify, 5).k == 0
    choice = best_k(0.9, 0.45, verify, 5, ahead=True)
    assert choice.k > 0 and choice.predicted_speedup > 1.03


def test_beside_a_plain_step_the_drafter_guesses_ahead_and_a_right_guess_is_verified_next(
    tiny_models, monkeypatch, spied
):
    """A draft step measured dearer than any gain: auto k verifies no draft it would have to
    wait for; drafted ahead beside the plain steps (off the clock), the guesses are free evidence
    and the drafts they leave ready are verified. The answer is the target's alone."""
    from app.engine.decoding.cost import KChooser

    monkeypatch.setenv(DRAFT_AHEAD_ENV, "1")
    monkeypatch.setattr(KChooser, "_draft_cost", lambda self: 10.0)
    engine = _engine(tiny_models)
    config = GenerationConfig(max_new_tokens=40, k=4)  # auto k
    result = engine.generate(PROMPT, config, options=MODEL_ALONE)  # lookup's drafts are verified on the clock
    assert spied["taken"] > 0 and result.stats.accepted > 0
    assert all(s.drafted_ahead for s in result.steps[1:] if s.drafted)  # none drafted on the clock
    assert result.token_ids == engine.generate(PROMPT, GenerationConfig(max_new_tokens=40, speculative=False)).token_ids


def test_an_answer_that_does_not_draft_ahead_gets_its_threads_back(tiny_models, monkeypatch):
    """Drafting ahead caps the target at cores − 1 threads (the drafter takes the last core); the
    next answer without it (speculation off: a comparison's target-only arm) runs on the threads
    it was given again, not on the capped count."""
    import torch

    from app.engine import session

    monkeypatch.setattr(session, "physical_cores", lambda: 2)
    monkeypatch.delenv(DRAFT_AHEAD_ENV, raising=False)
    before = torch.get_num_threads()
    try:
        engine = Engine.load(
            str(tiny_models["llama"]), str(tiny_models["llama-draft"]), LoadOptions(device="cpu", threads=1)
        )
        torch.set_num_threads(2)  # as --threads 2 on 2 cores (a pinned xdist worker caps --threads at its one core)
        engine.generate(PROMPT, GREEDY)
        assert torch.get_num_threads() == 1  # drafted ahead: the target on one core, the drafter on the other
        engine.generate(PROMPT, GenerationConfig(**{**GREEDY.to_dict(), "speculative": False}))
        assert torch.get_num_threads() == 2
        engine.generate(PROMPT, GREEDY)
        assert torch.get_num_threads() == 1
        engine.generate(PROMPT, SEEDED_STANDARD)  # standard sampling drafts in turn
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
