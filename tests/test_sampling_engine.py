"""Standard speculative sampling through the whole engine has exactly the target's distribution,
with and without the confidence threshold, with top-k and top-p; the threshold also keeps
seed-invariant sampling invariant.

The threshold once stopped drafting on the probability of the token just drawn, so proposals
came from q restricted to {q >= t} while the rule divided by the whole q. The first test
reproduces that bias on exact numbers; the engine tests would catch it (their guard shows so).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import replace

import pytest
import torch

from app.engine import Engine, GenerationConfig
from app.engine.backend import AnswerOptions
from app.engine.config import DRAFT_MODEL
from app.engine.decoding.acceptance import Rule
from app.engine.decoding.cost import FIRST_MODEL_KEY, MODEL_KEY, KChooser
from app.engine.decoding.drafters import ModelDrafter, Proposal
from app.engine.decoding.sampling import filter_logits


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models run fastest on one thread (and a loaded machine then costs no barrier waits)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


Z_999 = 3.0902  # standard normal quantile for p = 0.999


def chi2_critical(df: int, z: float = Z_999) -> float:
    """Chi-square critical value (Wilson–Hilferty; within 1% of the exact one for df >= 3)."""
    a = 2.0 / (9.0 * df)
    return df * (1.0 - a + z * math.sqrt(a)) ** 3


def chi2_statistic(counts: Counter, probs: dict, total: int) -> tuple[float, int]:
    """Pearson's statistic and its degrees of freedom; cells expected below 5 are pooled, and a
    token outside the support counts into the pool (expected ~0: a huge statistic)."""
    small = [cell for cell, p in probs.items() if p * total < 5]
    pooled_p = sum(probs[c] for c in small)
    pooled_n = sum(n for cell, n in counts.items() if cell in small or cell not in probs)
    stat = sum((counts.get(c, 0) - p * total) ** 2 / (p * total) for c, p in probs.items() if c not in small)
    cells = len(probs) - len(small)
    if small or pooled_n:
        expected = max(pooled_p * total, 1e-9)
        stat += (pooled_n - expected) ** 2 / expected
        cells += 1
    return stat, cells - 1


# --- the rule and the drafter alone: exact numbers -------------------------------------------


def propose_stopping_after_the_draw(
    self: ModelDrafter, tokens: list[int], k: int, rule: Rule, confidence_threshold: float, new_turn: bool = True
) -> Proposal:
    """The old, biased drafter: draw first, then stop if the drawn token's q is below t."""
    raw = self.runner.continue_from(tokens)
    drafts: list[int] = []
    rows: list[torch.Tensor] = []
    for i in range(k):
        logits = rule.logits(raw, tokens, drafts)
        q = rule.probs(logits)[0]
        token = rule.choose_draft(logits[0], q, len(tokens) + i)
        if confidence_threshold and float(q[token]) < confidence_threshold:
            break
        drafts.append(token)
        rows.append(q)
        raw = self.runner.forward([token], keep=1)
    q_all = torch.stack(rows) if rows else None
    return Proposal(drafts, q_all, [float(r[t]) for r, t in zip(rows, drafts)], len(drafts))


class ContextDraftModel:
    """A draft 'model' whose next-token distribution depends on the last token only (the
    CachedModel calls ``ModelDrafter.propose`` uses), so its max q, and with it the threshold's
    decision, changes from one position to the next."""

    def __init__(self, q_after: dict[int, list[float]]) -> None:
        self.logits = {token: torch.tensor(q).log()[None] for token, q in q_after.items()}  # [1, V]

    def continue_from(self, tokens: list[int], rows: int = 1, trusted: int = 0) -> torch.Tensor:
        return self.logits[tokens[-1]]

    def forward(self, ids: list[int], keep: int = 0) -> torch.Tensor:
        return self.logits[ids[-1]]

    def common_prefix(self, ids: list[int], trusted: int = 0) -> int:
        return 0  # it holds nothing: every ask feeds the whole context

    def reset(self) -> None:
        pass


A, B, START = 0, 1, 2  # tokens a and b; START only begins the context
P = [0.5, 0.5, 0.0]  # the target: a or b, evenly, at every position
THRESHOLD = 0.65
# after START: max q .7 >= t, drafted; after a: max q .6 < t, stopped; after b: .8, drafted
Q_AFTER = {START: [0.7, 0.3, 0.0], A: [0.6, 0.4, 0.0], B: [0.8, 0.2, 0.0]}


def sample_two_tokens(context: int, trials: int, k: int = 2) -> tuple[Counter, list[list[int]]]:
    """Draft with ``ModelDrafter`` and verify with ``Rule`` pass after pass, as the decode loop
    does, until two tokens are out: the pairs, and the number of drafts of each pass per trial."""
    drafter = ModelDrafter(ContextDraftModel(Q_AFTER), "fixed")  # type: ignore[arg-type]
    config = GenerationConfig(temperature=1.0, confidence_threshold=THRESHOLD, seed=2024)
    rule = Rule(config)
    p_rows = torch.tensor([P] * (k + 1))
    pairs: Counter = Counter()
    drafted: list[list[int]] = []
    for _ in range(trials):
        tokens, out, passes = [context], [], []
        while len(out) < 2:
            proposal = drafter.propose(tokens, k, rule, THRESHOLD)
            m = len(proposal.tokens)
            passes.append(m)
            verdict = rule.verify(p_rows[: m + 1].log(), p_rows[: m + 1], proposal.tokens, proposal.q, len(tokens))
            new = proposal.tokens[: verdict.n_accepted] + [verdict.next_token]
            tokens += new
            out += new
        pairs[tuple(out[:2])] += 1
        drafted.append(passes)
    return pairs, drafted


UNIFORM_PAIRS = {(a, b): 0.25 for a in (A, B) for b in (A, B)}
TRIALS = 8_000
SIGMA = math.sqrt(0.25 / TRIALS)  # binomial standard error near 0.5


def first_token_share(pairs: Counter, token: int) -> float:
    return sum(n for (first, _), n in pairs.items() if first == token) / sum(pairs.values())


def test_stopping_on_the_drawn_token_biases_the_answer_and_stopping_on_q_does_not(monkeypatch):
    """From START (q = (.7, .3), p = (.5, .5), t = .65) the drafter drafts a first token, then
    stops after a (max q .6 < t) and goes on after b (max q .8): both happen, and the two tokens
    out are p's. The old drafter, which stopped on the drawn token's q (b: .3 < t), gives
    P(a) = .7·(.5/.7) + .3·.5 = .65."""
    pairs, drafted = sample_two_tokens(START, TRIALS)
    first_pass = Counter(passes[0] for passes in drafted)
    assert first_pass[1] > TRIALS / 10 and first_pass[2] > TRIALS / 10, first_pass  # stopped, and drafted on
    assert set(first_pass) == {1, 2}
    stat, df = chi2_statistic(pairs, UNIFORM_PAIRS, TRIALS)
    assert stat < chi2_critical(df), (stat, df, pairs)
    assert abs(first_token_share(pairs, A) - 0.5) < 4 * SIGMA
    with monkeypatch.context() as patched:
        patched.setattr(ModelDrafter, "propose", propose_stopping_after_the_draw)
        biased, _ = sample_two_tokens(START, 3000)
    assert abs(first_token_share(biased, A) - 0.65) < 4 * math.sqrt(0.25 / 3000)


def test_a_position_below_the_threshold_is_not_drafted_and_the_target_samples_it_alone():
    """From a (max q .6 < t) nothing is drafted and the target samples alone; after its b the
    drafter drafts again, after its a it does not: the pairs are still p's."""
    drafter = ModelDrafter(ContextDraftModel(Q_AFTER), "fixed")  # type: ignore[arg-type]
    rule = Rule(GenerationConfig(temperature=1.0, confidence_threshold=THRESHOLD))
    assert drafter.propose([START, A], 3, rule, THRESHOLD).tokens == []
    assert len(drafter.propose([START, A], 3, rule, 0.5).tokens) == 3  # a lower threshold drafts
    # inside a block too: a proposal never goes on after an a (max q .6 after it), after a b it does
    proposals = [drafter.propose([START], 3, rule, THRESHOLD).tokens for _ in range(300)]
    assert all(A not in drafts[:-1] for drafts in proposals)
    assert {len(drafts) for drafts in proposals} == {1, 2, 3}
    pairs, drafted = sample_two_tokens(A, 4000)
    assert all(passes[0] == 0 for passes in drafted)  # the first position: the target alone
    second = Counter(passes[1] > 0 for passes in drafted if len(passes) > 1)
    assert second[True] > 400 and second[False] > 400, second  # drafted after b, not after a
    stat, df = chi2_statistic(pairs, UNIFORM_PAIRS, 4000)
    assert stat < chi2_critical(df), (stat, df, pairs)


# --- through the Engine: the first two answer tokens against the target's exact joint ---------

PROMPT = "The quick brown fox"
RUNS = 300
# T = 3 spreads the tiny model's mass over the top-k tokens; k = 2, three new tokens: both
# draft positions are verified, and the pair (first, second answer token) is what is counted
TOP_K = GenerationConfig(max_new_tokens=3, k=2, auto_k=False, temperature=3.0, top_k=4)  # fixed k: the rule is tested
TOP_P = replace(TOP_K, top_k=6, top_p=0.9)
# each threshold lies inside the range of the draft's max q over the first two positions
# (checked below), so the drafter both stops and goes on
CASES = {
    "top-k": TOP_K,
    "top-k, threshold": replace(TOP_K, confidence_threshold=0.36),
    "top-p, threshold": replace(TOP_P, confidence_threshold=0.33),
}


@pytest.fixture(scope="module")
def engine(load_tiny) -> Engine:
    """The tiny llama target and its perturbed copy: at T = 3, q differs visibly from p."""
    return Engine(load_tiny("llama"), load_tiny("llama-draft"))


def _next_probs(
    model: torch.nn.Module, ids: list[int], config: GenerationConfig, vocab: int, answered: int = 0
) -> torch.Tensor:
    """The next token's probabilities from the logits decoding computes after ``answered`` answer
    tokens: the prompt's last token and those rows kept, so they are computed as the engine's
    prompt pass and one-token decoding compute them (the prompt before them as one block, each
    kept row with row-wise attention). A full block's pass differs in its last bits (~0.1 logit
    on these tiny models with int8 activations), enough for the chi-square test to see."""
    with torch.inference_mode():
        logits = model(torch.tensor([ids]), logits_to_keep=answered + 1).logits[0, -1, :vocab]
    return filter_logits(logits[None], config).softmax(dim=-1)[0].double()  # [V]


def exact_pair_probs(engine: Engine, config: GenerationConfig) -> dict[tuple[int, int], float]:
    """P(first, second) = p(first | prompt) · p(second | prompt, first), from the target's logits
    with the same temperature, top-k and top-p."""
    ids, vocab, model = engine.prompt_ids(PROMPT), engine.target.vocab_size, engine.target.model
    first = _next_probs(model, ids, config, vocab)
    pairs = {}
    for a in first.nonzero().flatten().tolist():
        second = _next_probs(model, ids + [a], config, vocab, answered=1)
        for b in second.nonzero().flatten().tolist():
            pairs[(a, b)] = float(first[a] * second[b])
    return pairs


def draft_max_q(engine: Engine, config: GenerationConfig) -> list[float]:
    """The draft's max q at the first position and at the second after each possible first token."""
    ids, vocab, model = engine.prompt_ids(PROMPT), engine.target.vocab_size, engine.draft.model
    first = _next_probs(model, ids, config, vocab)
    drafted_first = first.nonzero().flatten().tolist()
    return [float(first.max())] + [
        float(_next_probs(model, ids + [a], config, vocab, answered=1).max()) for a in drafted_first
    ]


def sampled_pairs(engine: Engine, config: GenerationConfig) -> tuple[Counter, Counter]:
    """Pairs over RUNS seeds, and how many drafts each run proposed in its first pass."""
    pairs, proposed = Counter(), Counter()
    for seed in range(RUNS):
        result = engine.generate(PROMPT, replace(config, seed=seed))
        pairs[tuple(result.token_ids[:2])] += 1
        first_pass = result.steps[0]
        proposed[len(first_pass.accepted) + len(first_pass.rejected)] += 1
    return pairs, proposed


def assert_target_distribution(engine: Engine, config: GenerationConfig) -> None:
    exact = exact_pair_probs(engine, config)
    pairs, proposed = sampled_pairs(engine, config)
    stat, df = chi2_statistic(pairs, exact, RUNS)
    assert stat < chi2_critical(df), (stat, df, pairs)
    firsts = Counter()
    for (a, _), n in pairs.items():
        firsts[a] += n
    first_exact = Counter()
    for (a, _), p in exact.items():
        first_exact[a] += p
    stat, df = chi2_statistic(firsts, dict(first_exact), RUNS)
    assert stat < chi2_critical(df), (stat, df, firsts)
    # speculation really ran; with a threshold, some runs stopped drafting after one token
    assert set(proposed) == ({1, TOP_K.k} if config.confidence_threshold else {TOP_K.k}), proposed


@pytest.mark.parametrize("case", list(CASES))
def test_standard_sampling_through_the_engine_has_the_target_distribution(engine, case):
    config = CASES[case]
    if config.confidence_threshold:
        max_q = draft_max_q(engine, config)
        assert min(max_q) < config.confidence_threshold <= max(max_q)
        assert max_q[0] >= config.confidence_threshold  # the first position is drafted
    assert len(exact_pair_probs(engine, config)) > 10  # a real spread, not greedy in disguise
    assert_target_distribution(engine, config)


@pytest.mark.parametrize("form", ["int4", "int8", "bfloat16"])
@pytest.mark.parametrize("case", ["top-k", "top-p, threshold"])
def test_sampling_with_a_quantized_target_and_draft_has_the_target_distribution(load_tiny, form, case):
    """Issue 18 §3: with the target and the draft both in a weight-only (or bf16) form, the first
    two tokens still follow the target's own exact distribution (its own logits, in its form)."""
    engine = Engine(load_tiny("llama", form), load_tiny("llama-draft", form))
    assert engine.target.dtype == form and engine.draft is not None and engine.draft.dtype == form
    config = CASES[case]
    assert len(exact_pair_probs(engine, config)) > 10
    exact = exact_pair_probs(engine, config)
    pairs, proposed = sampled_pairs(engine, config)
    stat, df = chi2_statistic(pairs, exact, RUNS)
    assert stat < chi2_critical(df), (stat, df, pairs)
    assert sum(proposed[k] for k in proposed if k > 0) == RUNS  # every run drafted


def test_the_engine_distribution_check_catches_a_drafter_that_stops_after_drawing(engine, monkeypatch):
    """Guard: the same check fails on the old threshold behaviour."""
    monkeypatch.setattr(ModelDrafter, "propose", propose_stopping_after_the_draw)
    config = CASES["top-k, threshold"]
    exact = exact_pair_probs(engine, config)
    pairs, _ = sampled_pairs(engine, config)
    stat, df = chi2_statistic(pairs, exact, RUNS)
    assert stat > chi2_critical(df), (stat, df)
    print(f"biased drafter: chi2 {stat:.1f} on {df} df (critical {chi2_critical(df):.1f})")


# --- automatic k with standard sampling -------------------------------------------------------

# a draft step's cost, in plain target steps, for each third of the runs: at the chooser's
# acceptance (0.6, held) and verification as dear as a plain step whatever its size, the best k is
# 2 drafts, 1 draft and none (DESIGN.md's tokens per second: 1.96 / (2d + 1), 1.6 / (d + 1), 1)
AUTO_DRAFT_COSTS = (0.05, 0.42, 3.0)
AUTO_K = replace(TOP_K, auto_k=True)
MODEL_ALONE = AnswerOptions(drafter_choice=DRAFT_MODEL)


def held_chooser(draft_step: float, alpha: float = 0.6) -> KChooser:
    """A chooser with hand-set costs and acceptance that the runs cannot change (no timing in
    the test): what it chooses is decided before drafting, as always, from what it holds."""
    chooser = KChooser()
    for i in range(400):
        for key in (MODEL_KEY, FIRST_MODEL_KEY):  # the answer's first block too
            chooser.observe_step(key, 1, int((i + 1) * alpha) - int(i * alpha))
    for n in range(1, 8):  # measured last: no size has aged toward the prior
        chooser.costs.observe_verify(n, 0.01)
    chooser.costs.observe_draft(1, draft_step * 0.01)
    chooser.costs.observe_verify = lambda tokens, seconds: None  # type: ignore[method-assign]
    chooser.costs.observe_draft = lambda passes, seconds: None  # type: ignore[method-assign]
    chooser.costs.observe_draft_catch_up = lambda tokens, seconds, passes=1: None  # type: ignore[method-assign]
    chooser.observe_step = lambda key, proposed, accepted: None  # type: ignore[method-assign]
    return chooser


def test_standard_sampling_with_automatic_k_has_the_target_distribution(load_tiny):
    """The k chooser varies k from run to run (2, 1 or no drafts on the first pass, then what the
    cap leaves): the first two tokens still have the target's exact joint distribution."""
    engine = Engine(load_tiny("llama"), load_tiny("llama-draft"))
    choosers = [held_chooser(d) for d in AUTO_DRAFT_COSTS]
    exact = exact_pair_probs(engine, AUTO_K)
    assert len(exact) > 10
    pairs, first_k, chosen = Counter(), Counter(), Counter()
    for seed in range(RUNS):
        engine.chooser = choosers[seed % len(choosers)]
        result = engine.generate(PROMPT, replace(AUTO_K, seed=seed), options=MODEL_ALONE)
        pairs[tuple(result.token_ids[:2])] += 1
        first_k[result.steps[0].k] += 1
        chosen.update(step.k for step in result.steps)
        assert all(
            len(step.accepted) + len(step.rejected) <= step.k for step in result.steps
        )  # never more drafts than chosen
    assert len(first_k) >= 2 and first_k[2] > 0 and first_k[1] + first_k[0] > 0, first_k  # auto k varied
    assert sum(n for k, n in first_k.items() if k > 0) > RUNS / 2  # and mostly drafted
    stat, df = chi2_statistic(pairs, exact, RUNS)
    assert stat < chi2_critical(df), (stat, df, pairs, first_k)
    print(f"auto k: first-pass k {dict(first_k)}, all steps {dict(chosen)}; chi2 {stat:.1f} on {df} df")


# --- the threshold with seed-invariant sampling ----------------------------------------------

SEED_INVARIANT = GenerationConfig(
    max_new_tokens=24, k=4, auto_k=False, temperature=0.9, top_k=50, sampling="seed-invariant", confidence_threshold=0.5
)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_a_confidence_threshold_keeps_seed_invariant_text_identical_with_and_without_speculation(
    load_tiny, arch
):
    engine = Engine(load_tiny(arch), load_tiny(f"{arch}-draft"))
    texts = set()
    for seed in (1, 2, 3):
        config = replace(SEED_INVARIANT, seed=seed)
        careful = engine.generate(PROMPT, config)
        eager = engine.generate(PROMPT, replace(config, confidence_threshold=0.0))
        base = engine.generate(PROMPT, replace(config, speculative=False))
        assert careful.token_ids == base.token_ids == eager.token_ids
        assert 0 < careful.stats.proposed < eager.stats.proposed  # the threshold did stop drafting
        texts.add(careful.text)
    assert len(texts) > 1


def test_standard_sampling_with_the_model_and_lookup_together_has_the_target_distribution(load_tiny):
    """The default drafter with a draft model: each step verifies prompt lookup's block or the
    model's, as the chooser rates them before any draw (nothing recorded: the suffix index's
    matches of the same prompt asked before would win every step). Both kinds are verified over
    the runs, and the first two tokens keep the target's exact joint distribution."""
    engine = Engine(load_tiny("llama"), load_tiny("llama-draft"))
    assert engine.drafter_name.endswith(" + lookup")
    choosers = [held_chooser(0.05), held_chooser(3.0)]  # the model's block wins the first pass; lookup's does
    exact = exact_pair_probs(engine, AUTO_K)
    pairs, kinds = Counter(), Counter()
    for seed in range(RUNS):
        engine.chooser = choosers[seed % len(choosers)]
        result = engine.generate(PROMPT, replace(AUTO_K, seed=seed), options=AnswerOptions(record=False))
        pairs[tuple(result.token_ids[:2])] += 1
        for step in result.steps:
            if step.accepted or step.rejected:
                kinds["model" if step.draft_passes else "lookup"] += 1
    assert kinds["model"] > RUNS / 10 and kinds["lookup"] > RUNS / 10, kinds
    stat, df = chi2_statistic(pairs, exact, RUNS)
    assert stat < chi2_critical(df), (stat, df, pairs, kinds)
