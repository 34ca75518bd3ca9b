"""A draft model drafts the next block while the target verifies this one (``decode``'s drafting
ahead, on the CPU's spare core): the answer is the target's own, greedy and seed-invariant; the
block drafted ahead is used when the target went the way it guessed; standard sampling (random
draws shared by the two) drafts in turn."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from app.engine import Engine, GenerationConfig, draft_threads
from app.engine.backend import AnswerOptions
from app.engine.config import DRAFT_MODEL, LoadOptions
from app.engine.decoding import decode, drafters
from app.engine.decoding.cost import CostModel
from app.engine.draft_threads import Split
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


def test_an_answer_drafting_ahead_takes_a_thread_of_the_budget_and_gives_it_back(tiny_models, monkeypatch):
    """``threads`` is the run's budget: drafting ahead, the target verifies on one thread fewer
    (the draft model has the other) during the answer only; an answer that does not draft ahead
    (speculation off: a comparison's target-only arm; standard sampling) runs on the whole budget."""
    import torch

    monkeypatch.setenv(DRAFT_AHEAD_ENV, "1")
    before = torch.get_num_threads()
    try:
        engine = Engine.load(
            str(tiny_models["llama"]), str(tiny_models["llama-draft"]), LoadOptions(device="cpu", threads=1)
        )
        torch.set_num_threads(2)  # as --threads 2 on 2 cores (a pinned xdist worker caps --threads at its one core)

        def target_threads(config: GenerationConfig) -> set[int]:
            seen: set[int] = set()
            engine.generate(PROMPT, config, on_step=lambda step: seen.add(torch.get_num_threads()))
            assert torch.get_num_threads() == 2  # the budget again after the answer
            return seen

        assert target_threads(GREEDY) == {1} and engine.split == Split(2, ahead=True)
        assert target_threads(GenerationConfig(**{**GREEDY.to_dict(), "speculative": False})) == {2}
        assert engine.split == Split(2)
        assert target_threads(GREEDY) == {1}
        assert target_threads(SEEDED_STANDARD) == {2} and engine.split == Split(2)  # standard sampling: in turn
    finally:
        torch.set_num_threads(before)


def test_ahead_is_taken_only_where_it_is_expected_faster_than_in_turn_on_every_thread():
    """The real pair's costs as measured on two machines, at 2 threads. AVX-512 EPYC: a plain pass
    at 2 threads 63 ms, at 1 thread 78 ms, v(n) = 1 + 0.15 (n - 1), a draft step 26 ms (in turn, 2
    threads) or 30 ms (its own thread): ahead. AVX2-only EPYC: a plain pass 115 / 165 ms, a 5-token
    pass 3.4 / 4.0 plain ones, a draft step 46 / 64 ms: in turn (plain steps on both threads win)."""
    from app.engine.decoding.cost import CostModel, ahead_is_faster

    def costs(plain: float, extra: float, draft: float) -> CostModel:
        model = CostModel()
        for n in (1, 2, 3, 4, 5, 6):
            model.observe_verify(n, plain * (1 + extra * (n - 1)))
        model.observe_draft(1, draft)
        return model

    avx512 = {"in_turn": costs(0.063, 0.15, 0.026), "ahead": costs(0.078, 0.15, 0.030)}
    avx2 = {"in_turn": costs(0.115, 0.6, 0.046), "ahead": costs(0.165, 0.75, 0.064)}
    assert ahead_is_faster(avx512["in_turn"], avx512["ahead"], alpha=0.9, k_max=5) is True
    assert ahead_is_faster(avx2["in_turn"], avx2["ahead"], alpha=0.9, k_max=5) is False
    assert ahead_is_faster(avx512["in_turn"], CostModel(), alpha=0.9, k_max=5) is None  # not measured: unknown
    # a fixed k is weighed at that k: 5 drafts verified on the AVX2 machine lose either way, in turn least
    assert ahead_is_faster(avx2["in_turn"], avx2["ahead"], alpha=0.9, k_max=5, fixed_k=5) is False
    # a mixed drafter whose lookup blocks take part of the time: those steps verify on one thread
    # fewer (78 against 63 ms a plain pass) and gain nothing from the model's thread. The model's
    # rate ahead is 1.18x in turn's: 20 % of the time in lookup's steps still pays, 40 % does not
    assert ahead_is_faster(avx512["in_turn"], avx512["ahead"], alpha=0.9, k_max=5, free_share=0.2) is True
    assert ahead_is_faster(avx512["in_turn"], avx512["ahead"], alpha=0.9, k_max=5, free_share=0.4) is False


def test_the_warm_up_times_both_ways_and_an_answer_takes_the_one_measured_faster(tiny_models, monkeypatch):
    """At a budget of 2 the warm-up times drafting in turn and ahead (each way's passes and draft
    steps); each answer takes the way its costs say is faster, and the chooser weighs that way's
    costs. One thread: in turn only, nothing timed ahead."""
    import torch

    from app.engine.decoding.cost import CostModel

    monkeypatch.delenv(DRAFT_AHEAD_ENV, raising=False)
    before = torch.get_num_threads()
    try:
        engine = Engine.load(
            str(tiny_models["llama"]), str(tiny_models["llama-draft"]), LoadOptions(device="cpu", threads=1)
        )
        engine.warm_up()
        assert set(engine.chooser.ways) == {Split(1)}
        torch.set_num_threads(2)
        engine.warm_up()
        in_turn, ahead = engine.chooser.ways[Split(2)], engine.chooser.ways[Split(2, ahead=True)]
        for measured in (in_turn, ahead):
            assert measured.verify_cost(1) is not None and measured.draft_cost() is not None
        fast, slow = CostModel(), CostModel()
        for n in range(1, 7):
            fast.observe_verify(n, 0.01 * (1 + 0.1 * (n - 1)))
            slow.observe_verify(n, 0.05 * n)
        fast.observe_draft(1, 0.001)
        slow.observe_draft(1, 0.05)
        engine.chooser.ways[Split(2)], engine.chooser.ways[Split(2, ahead=True)] = slow, fast
        engine.generate(PROMPT, GREEDY)
        assert engine.split == Split(2, ahead=True) and engine.chooser.costs is fast
        engine.chooser.ways[Split(2)], engine.chooser.ways[Split(2, ahead=True)] = fast, slow
        engine.generate(PROMPT, GREEDY)
        assert engine.split == Split(2) and engine.chooser.costs is fast
    finally:
        torch.set_num_threads(before)


def test_the_warm_ups_draft_cost_outvotes_a_busy_moment(monkeypatch):
    """The chooser starts from the median of the warm-up's draft steps: three slow ones (the real
    pair at 2 threads once kept 20.3 / 15.3 / 20.1 ms for a 16.5 ms step, and the next answers set
    the draft model aside as too dear) are outvoted by the rest."""
    target, runner = object(), object()
    steps = iter([0.0203, 0.0153, 0.0201, 0.0165, 0.0168, 0.0163, 0.0170])

    def timed(model, size):
        return next(steps) if model is runner else 0.041 * (1 + 0.15 * (size - 1))

    monkeypatch.setattr(draft_threads, "timed_pass", timed)
    timings = draft_threads.time_in_turn(target, SimpleNamespace(runner=runner))  # type: ignore[arg-type]
    costs = CostModel()
    for tokens, seconds in timings["verify"]:
        costs.observe_verify(tokens, seconds)
    for seconds in timings["draft"]:
        costs.observe_draft(1, seconds)
    assert costs.draft_cost() == pytest.approx(0.0168)  # the slow three: above the median


def test_a_mixed_drafters_lookup_share_weighs_against_drafting_ahead(tiny_models, monkeypatch):
    """Lookup's blocks gain nothing from the draft model's own thread and verify on one thread
    fewer: each mixed answer moves ``Engine.free_share`` halfway to the share of its decoding time
    they took, and the next answer drafts ahead only if the model's gain there outweighs that
    share's loss (the AVX-512 EPYC's costs: ahead's rate 1.18x in turn's, a plain pass 78 against
    63 ms; with 60 % of the time in lookup's steps, in turn)."""
    import torch

    from app.engine.decoding.cost import MODEL_KEY

    monkeypatch.delenv(DRAFT_AHEAD_ENV, raising=False)
    auto = GenerationConfig(max_new_tokens=40, k=4)
    repeating = "def add(a, b):\n    return a + b\n\ndef add(a, b):\n    return a + b\n\ndef add(a, b):"
    before = torch.get_num_threads()
    try:
        engine = Engine.load(
            str(tiny_models["llama"]), str(tiny_models["llama-draft"]), LoadOptions(device="cpu", threads=1)
        )
        torch.set_num_threads(2)  # a budget of two (as the test above): both ways timed
        engine.warm_up()
        assert engine.free_share == 0.0
        result = engine.generate(repeating, auto, options=AnswerOptions(record=False))
        decoding = [s for s in result.steps if s.index > 0]
        free = [s for s in decoding if (s.accepted or s.rejected) and not (s.draft_passes or s.drafted_ahead)]
        assert free  # lookup's blocks verified
        share = sum(s.draft_s + s.verify_s for s in free) / sum(s.draft_s + s.verify_s for s in decoding)
        assert engine.free_share == pytest.approx(0.5 * share)

        def costs(plain: float, draft: float) -> CostModel:
            model = CostModel()
            for n in range(1, 7):
                model.observe_verify(n, plain * (1 + 0.15 * (n - 1)))
            model.observe_draft(1, draft)
            return model

        def measured(free_share: float) -> None:
            engine.chooser.ways[Split(2)] = costs(0.063, 0.026)
            engine.chooser.ways[Split(2, ahead=True)] = costs(0.078, 0.030)
            engine.chooser.acceptance.evidence[MODEL_KEY] = (36.0, 40.0, engine.chooser.acceptance.step)
            engine.free_share = free_share

        def split_with(free_share: float) -> Split | None:
            measured(free_share)
            engine.generate(PROMPT, auto, options=AnswerOptions(record=False))
            return engine.split

        assert split_with(0.0) == Split(2, ahead=True)
        assert split_with(0.6) == Split(2)
        plain = engine.generate(PROMPT, GenerationConfig(max_new_tokens=40, speculative=False))
        fixed = GenerationConfig(max_new_tokens=40, k=4, auto_k=False)  # the model drafts alone: no share weighed
        measured(0.6)
        assert engine.generate(PROMPT, fixed).token_ids == plain.token_ids and engine.split == Split(2, ahead=True)
    finally:
        torch.set_num_threads(before)
