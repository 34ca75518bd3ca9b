"""The pure comparison data: verdicts that match the runs' own numbers, a near tie that depends on
the dtype, tokens per second for the speed ratio, and one JSON shape for a run (no models)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from app.engine.analysis.compare import CAUSES as COMPARE_CAUSES
from app.engine.analysis.compare import (
    ComparisonReport,
    Phrase,
    cause_phrase,
    compare_runs,
    headline,
    headline_tone,
    near_tie_threshold,
    resolution,
    speed_cause,
    verdict_reasons,
)
from app.engine.analysis.explanation import CAUSES as WHY_CAUSES
from app.engine.analysis.explanation import explain
from app.engine.config import GenerationConfig
from app.engine.events import RunProvenance, RunResult, RunStats, StepEvent, TokenInfo

PLAIN_STEP_S = 0.1


def _token(i: int, source: str = "target", margin: float = 50.0, top: float = 60.0) -> TokenInfo:
    return TokenInfo(i, f"t{i} ", source, 0.5, None, margin, top)  # type: ignore[arg-type]


def _plain_run(n: int = 10, step_s: float = PLAIN_STEP_S) -> RunResult:
    """``n`` tokens, one per pass, each decoding pass ``step_s``."""
    steps, stats = [], RunStats()
    for i in range(n):
        stats = RunStats(
            new_tokens=i + 1,
            target_passes=i + 1,
            prefill_s=step_s,
            decode_s=step_s * i,
        )
        kind = "prefill" if i == 0 else "plain"
        steps.append(StepEvent(i, (), _token(i), (), kind, 0, 0.0, step_s, stats))  # type: ignore[arg-type]
    return RunResult.from_steps(steps, speculative=False, drafter="none", config={"temperature": 0.0})


def _speculative_run(
    steps_n: int, k: int, accepted: int, draft_pass_s: float, verify_s: float, n_extra: int = 0
) -> RunResult:
    """``steps_n`` decoding passes after the prefill, each drafting ``k`` tokens (one draft
    pass per token) and accepting ``accepted`` of them."""
    steps = [StepEvent(0, (), _token(0), (), "prefill", 0, 0.0, PLAIN_STEP_S, RunStats(1, 1, prefill_s=0.1))]
    stats = steps[0].stats
    next_id = 1
    for i in range(1, steps_n + 1):
        ok = tuple(_token(next_id + j, "draft") for j in range(accepted))
        own = _token(next_id + accepted)
        next_id += accepted + 1
        wrong = tuple(_token(1000 + j, "draft") for j in range(k - accepted))
        draft_s = k * draft_pass_s
        stats = RunStats(
            new_tokens=stats.new_tokens + accepted + 1,
            target_passes=stats.target_passes + 1,
            draft_passes=stats.draft_passes + k,
            proposed=stats.proposed + k,
            accepted=stats.accepted + accepted,
            prefill_s=stats.prefill_s,
            decode_s=stats.decode_s + draft_s + verify_s,
        )
        kind = "bonus" if accepted == k else "correction"
        steps.append(StepEvent(i, ok, own, wrong, kind, k, draft_s, verify_s, stats, draft_passes=k))  # type: ignore[arg-type]
    return RunResult.from_steps(steps, speculative=True, drafter="draft model: d", config={"temperature": 0.0})


# --- §3: the cause of a slower run comes from its own steps ----------------------------------


def test_a_slower_run_with_high_acceptance_blames_the_verify_pass_not_acceptance():
    # 6 of 7 drafts accepted (86 %), cheap drafting, but each verify pass costs 12 plain steps
    speculative = _speculative_run(steps_n=3, k=7, accepted=6, draft_pass_s=0.001, verify_s=12 * PLAIN_STEP_S)
    baseline = _plain_run(n=22)
    comparison = compare_runs(speculative, baseline)

    assert comparison.outcome == "slower"
    assert comparison.cause is not None and comparison.cause.kind == "verify_cost"
    assert comparison.cause.drafts_accepted_share == pytest.approx(6 / 7)
    assert comparison.cause.verify_cost == pytest.approx(12.0)
    words = " ".join(p.render() for p in verdict_reasons(comparison))
    assert "although 86% of the drafts were accepted" in words and "verify pass" in words
    assert "too few" not in words


def test_a_slower_run_with_expensive_drafting_blames_drafting():
    # all drafts accepted, verification flat (1 plain step), but a draft pass costs 2 plain steps
    speculative = _speculative_run(steps_n=3, k=4, accepted=4, draft_pass_s=2 * PLAIN_STEP_S, verify_s=PLAIN_STEP_S)
    comparison = compare_runs(speculative, _plain_run(n=16))

    assert comparison.outcome == "slower"
    assert comparison.cause is not None and comparison.cause.kind == "draft_cost"
    assert comparison.cause.draft_cost == pytest.approx(2.0)
    words = verdict_reasons(comparison)[-1].render()
    assert "although 100% of the drafts were accepted" in words and "spent as long drafting as 8.00" in words


def test_a_slower_run_with_low_acceptance_blames_acceptance():
    speculative = _speculative_run(steps_n=10, k=5, accepted=1, draft_pass_s=0.02, verify_s=1.5 * PLAIN_STEP_S)
    comparison = compare_runs(speculative, _plain_run(n=21))

    assert comparison.outcome == "slower"
    assert comparison.cause is not None and comparison.cause.kind == "acceptance"
    assert "only 20% of the drafts were accepted" in verdict_reasons(comparison)[-1].render()


def test_a_faster_run_is_green_and_has_no_cause_a_slower_one_is_not_green():
    fast = _speculative_run(steps_n=3, k=4, accepted=4, draft_pass_s=0.001, verify_s=PLAIN_STEP_S)
    faster = compare_runs(fast, _plain_run(n=16))
    assert faster.outcome == "faster" and faster.cause is None
    assert headline_tone(faster) == "good"
    assert headline(faster).render() == "Identical answer · 4.81× faster decoding"  # the decode speed-up
    slow = _speculative_run(steps_n=3, k=4, accepted=4, draft_pass_s=2 * PLAIN_STEP_S, verify_s=PLAIN_STEP_S)
    slower = compare_runs(slow, _plain_run(n=16))
    assert slower.outcome == "slower" and headline_tone(slower) == "warning"  # not green


def test_speed_is_compared_in_tokens_per_second_not_wall_time():
    # 9 tokens in 0.5 s (2 per decoding pass) against 20 tokens in 2 s: 2x the decode tokens per
    # second, 1.8x over the whole runs (wall time says 4x)
    speculative = _speculative_run(steps_n=4, k=1, accepted=1, draft_pass_s=0.0, verify_s=0.1)
    baseline = _plain_run(n=20, step_s=0.1)
    comparison = compare_runs(speculative, baseline)
    assert speculative.stats.wall_s == pytest.approx(0.5) and baseline.stats.wall_s == pytest.approx(2.0)
    assert comparison.decode_speedup == pytest.approx(2.0)
    assert comparison.whole_run_speedup == pytest.approx(1.8)
    assert "2.00× faster decoding" in headline(comparison).render()


def test_a_plain_run_measured_faster_than_another_plain_run_is_not_a_speedup():
    """One token per pass on both sides, yet 2x: the arms ran under different load. Physics
    allows at most the tokens per pass (1.00x), so the figure is not presented as a result."""
    comparison = compare_runs(_plain_run(n=10, step_s=0.1), _plain_run(n=20, step_s=0.2))
    assert comparison.decode_speedup == pytest.approx(2.0) and comparison.outcome == "not_comparable"
    text = headline(comparison).render()
    assert "2.00× faster" not in text and "not comparable" in text
    reasons = " ".join(p.render() for p in verdict_reasons(comparison))
    # the same one-token pass took twice as long in the plain run: the load changed between them
    assert "load changed" in reasons and "the same one-token pass inside each run: 0.50× of the other" in reasons
    assert "unknown" not in reasons  # only what was measured is named


def test_a_cause_needs_step_events():
    rebuilt = RunResult("a", (_token(1),), (), RunStats(1, 1, decode_s=1.0), "eos", True, "prompt lookup")
    assert speed_cause(rebuilt, _plain_run()) is None


# --- §3: near tie by the dtype's resolution at the logit ---------------------------------------


def test_resolution_is_the_dtype_step_at_the_logit_magnitude():
    assert resolution("bfloat16", 20.0) == 0.125  # the example: one bf16 step in [16, 32)
    assert resolution("float32", 20.0) == 2.0**-19
    assert resolution("float16", -3.0) == 2.0**-9
    assert near_tie_threshold("bfloat16", 20.0) == 64 * 0.125


def _differing_at(margin: float, top: float, dtype: str) -> RunResult:
    made_by = RunProvenance("t", "none", dtype, "cuda:0")
    run = _plain_run(n=3)
    tokens = run.tokens[:2] + (TokenInfo(99, "x", "target", 0.5, None, margin, top),)
    return RunResult("".join(t.text for t in tokens), tokens, (), run.stats, "eos", True, "d", {}, made_by)


@pytest.mark.parametrize(
    ("margin", "top", "bf16", "fp32"),
    [
        (0.5, 20.0, "near_tie", "divergence"),  # 4 bf16 steps: numerics in bf16, a bug in fp32
        (5e-5, 20.0, "near_tie", "near_tie"),  # ~26 fp32 steps
        (12.0, 20.0, "divergence", "divergence"),  # 96 bf16 steps: no rounding flips that
        (0.5, 200.0, "near_tie", "divergence"),
    ],
)
def test_a_near_tie_depends_on_the_dtype_at_the_logit(margin, top, bf16, fp32):
    for dtype, expected in (("bfloat16", bf16), ("float32", fp32)):
        speculative = _differing_at(margin, top, dtype)
        comparison = compare_runs(speculative, _plain_run(n=3))
        assert comparison.verdict == expected, dtype
        assert comparison.dtype == dtype
        assert dtype in verdict_reasons(comparison)[0].render()


def test_a_speedup_above_what_the_passes_allow_is_not_a_result():
    """2 tokens per pass cannot measure 8x faster than one token per plain pass."""
    fast = _speculative_run(steps_n=4, k=1, accepted=1, draft_pass_s=0.0, verify_s=0.05)
    comparison = compare_runs(fast, _plain_run(n=20, step_s=0.2))
    assert comparison.decode_speedup == pytest.approx(8.0) and comparison.outcome == "not_comparable"
    assert comparison.measured is not None and comparison.measured.problem == "above_ceiling"
    reasons = " ".join(p.render() for p in verdict_reasons(comparison))
    assert "above the 2.00× these passes allow" in reasons and "8.00×" in reasons
    assert "8.00× faster" not in headline(comparison).render()


def test_under_exact_kernels_a_greedy_divergence_is_a_defect_never_a_near_tie():
    """Main called a 5e-5 logit margin in fp32 a near tie even when both runs verified on
    exact kernels, where a block's logits are one-token decoding's bit for bit."""
    speculative = _differing_at(5e-5, 20.0, "float32")
    exact = RunProvenance("t", "none", "float32", "cpu", exact_context=8192)
    plain = _plain_run(n=3)
    exact_pair = compare_runs(replace(speculative, made_by=exact), replace(plain, made_by=exact))
    assert exact_pair.exact and exact_pair.verdict == "divergence" and headline_tone(exact_pair) == "bad"
    meaning = verdict_reasons(exact_pair)[0].render()
    assert "exact kernels" in meaning and "defect" in meaning and "numerics" not in meaning
    # stock kernels (exact_context 0), or past a sliding window: a near tie it may be
    stock = RunProvenance("t", "none", "float32", "cpu", exact_context=0)
    assert compare_runs(replace(speculative, made_by=stock), replace(plain, made_by=stock)).verdict == "near_tie"
    windowed = RunProvenance("t", "none", "float32", "cpu", exact_context=2)  # shorter than the runs
    pair = compare_runs(replace(speculative, made_by=windowed), replace(plain, made_by=windowed))
    assert not pair.exact and pair.verdict == "near_tie"


# --- one JSON shape --------------------------------------------------------------------------


def test_a_run_round_trips_through_json_with_its_provenance():
    run = _speculative_run(steps_n=3, k=4, accepted=2, draft_pass_s=0.01, verify_s=0.1)
    made_by = RunProvenance("target", "draft model: d", "bfloat16", "cuda:0", "int8", GenerationConfig(k=4).to_dict())
    run = RunResult(run.text, run.tokens, run.steps, run.stats, "eos", True, run.drafter, {"k": 4}, made_by)
    data = json.loads(json.dumps(run.to_dict()))
    assert data["target"] == "target" and data["stats"]["wall_s"] == run.stats.wall_s
    assert RunResult.from_dict(data) == run


def test_generation_config_round_trips_and_ignores_unknown_keys():
    config = GenerationConfig(k=3, temperature=0.7, top_k=5, stop_strings=("END",), sampling="seed-invariant")
    data = json.loads(json.dumps(config.to_dict()))
    assert GenerationConfig.from_dict(data) == config
    assert GenerationConfig.from_dict({**data, "added_in_a_later_version": 1}) == config
    assert GenerationConfig.from_dict({}) == GenerationConfig()


def test_provenance_names_the_fields_that_differ():
    a = RunProvenance("A", "draft model: d", "float32", "cpu", "float32")
    assert a.differences(a) == ()
    assert a.differences(RunProvenance("B", "draft model: d", "bfloat16", "cpu", "float32")) == (
        "target",
        "dtype",
    )
    assert a.differences(RunProvenance("A", "prompt lookup", "float32", "cpu")) == ("drafter", "draft_dtype")
    plain = RunProvenance("A", "none", "float32", "cpu")
    assert plain.differences(a) == ()  # a run that drafted nothing does not care about drafters


# --- one truth: Compare and Why name the cause the runs were built to have ----------------------

# Runs whose cause is known by construction: in each, the named factor alone makes speculation
# lose (with it at a typical value the same run is clearly faster), the others are typical.
KNOWN_CAUSES = {
    # no draft (or one in four or five) accepted; drafting and a verify pass cost what they
    # usually do (c = 0.1-0.2, v = 1.2-1.5): at 100 % acceptance these runs would be 2-4x faster
    "acceptance": [
        dict(k=k, accepted=0, draft_pass_s=d, verify_s=v * PLAIN_STEP_S)
        for k in (2, 3, 5)
        for d in (0.01, 0.02)
        for v in (1.2, 1.5)
    ]
    + [dict(k=k, accepted=1, draft_pass_s=0.02, verify_s=1.5 * PLAIN_STEP_S) for k in (4, 5)],
    # every draft accepted, the verify pass as cheap as a plain step, but a draft pass costs
    # 1.5-3 plain target steps
    "draft_cost": [
        dict(k=k, accepted=k, draft_pass_s=d * PLAIN_STEP_S, verify_s=PLAIN_STEP_S)
        for k in (2, 3, 4)
        for d in (1.5, 2.0, 3.0)
    ],
    # (nearly) every draft accepted and drafting free, but one verify pass costs 8-12 plain steps
    "verify_cost": [
        dict(k=k, accepted=a, draft_pass_s=0.001, verify_s=v * PLAIN_STEP_S)
        for k, a in ((7, 6), (4, 4), (5, 5))
        for v in (8.0, 12.0)
    ],
}
# the Why panel's words for the same causes (its own enum)
WHY_CAUSE = {"acceptance": "acceptance", "draft_cost": "draft", "verify_cost": "verify"}


def _known_cause_cases() -> list[tuple[str, dict[str, float]]]:
    return [(cause, case) for cause, cases in KNOWN_CAUSES.items() for case in cases]


def known_cause_report(case: dict[str, float]) -> ComparisonReport:
    """The comparison report of a constructed slower run against 22 plain steps."""
    speculative = _speculative_run(steps_n=3, **case)  # type: ignore[arg-type]
    baseline = _plain_run(n=22)
    comparison = compare_runs(speculative, baseline)
    return ComparisonReport(speculative, baseline, comparison, ("speculative", "baseline"), "fresh caches")


def compare_shows(phrases: tuple[Phrase, ...]) -> list[str]:
    """The causes Compare's verdict text is made of: which cause sentences it renders."""
    sentences = {template: kind for kind, template in COMPARE_CAUSES.items()}
    return [sentences[p.template] for p in phrases if p.template in sentences]


def why_shows(summary: str) -> list[str]:
    """The causes the Why panel's sentence names (its cause clauses, as rendered)."""
    return [cause for cause, words in WHY_CAUSES.items() if words in summary]


@pytest.mark.parametrize(("cause", "case"), _known_cause_cases())
def test_the_compare_verdict_and_the_why_panel_name_the_cause_the_run_was_built_with(cause, case):
    """One truth, against the data: what Compare's sentence blames and what the Why panel it
    opens blames is the factor that made this run slower, in the enum and in the shown words."""
    report = known_cause_report(case)
    comparison = report.comparison
    assert comparison.outcome == "slower", case  # the construction holds: speculation lost

    # Compare: the cause it carries and the sentence it shows (CLI text, JSON and the dialog)
    assert comparison.cause is not None and comparison.cause.kind == cause
    assert compare_shows(verdict_reasons(comparison)) == [cause]
    data = report.to_dict()
    assert data["cause"]["kind"] == cause
    shown = data["verdict_text"]
    rendered = {kind: cause_phrase(replace(comparison.cause, kind=kind)).render() for kind in COMPARE_CAUSES}
    assert [kind for kind, words in rendered.items() if words in shown] == [cause]

    # Why: the cause it computes and the one its sentence names
    why = data["explanation"]
    assert why["cause"] == WHY_CAUSE[cause]
    assert why_shows(why["summary"]) == [WHY_CAUSE[cause]]
    assert why_shows(explain(report.speculative, report.baseline).summary) == [WHY_CAUSE[cause]]


def test_compare_and_why_show_the_same_cause_on_every_slower_run():
    """Across a grid of runs, whenever Compare shows a cause sentence, the Why panel's sentence
    names the same cause (before they shared the rule, 34 of these runs disagreed)."""
    compared = 0
    for k in (2, 3, 4, 5, 7):
        for accepted in range(k + 1):
            for draft_pass_s in (0.001, 0.01, 0.03, 0.06):
                for verify_factor in (1.0, 1.5, 2.0, 3.0, 5.0):
                    verify_s = verify_factor * PLAIN_STEP_S
                    case = dict(k=k, accepted=accepted, draft_pass_s=draft_pass_s, verify_s=verify_s)
                    report = known_cause_report(case)
                    shown = compare_shows(verdict_reasons(report.comparison))
                    if shown:
                        compared += 1
                        summary = report.to_dict()["explanation"]["summary"]
                        assert [WHY_CAUSE[c] for c in shown] == why_shows(summary), case
    assert compared > 100
