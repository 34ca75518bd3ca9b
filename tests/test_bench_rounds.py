"""bench's single rounds read against the machine's noise: the lowest round's speed-up, and how far
a round of the same work (our target-only ÷ Hugging Face plain) moves from its prompt's median."""

from __future__ import annotations

import statistics

import pytest

from app.bench.runs import _round_noise, _worst, format_report


def _rounds(runs: list[dict]) -> dict:
    """The summary's round figures: the worst round from each prompt's lowest (as
    ``_prompt_medians`` gives it), the noise from the rounds themselves."""
    rows = [
        {
            "prompt_index": index,
            "prompt": str(index),
            "whole_run_speedup": statistics.median(r["whole_run_speedup"] for r in runs if r["prompt_index"] == index),
            "worst_round_speedup": min(r["whole_run_speedup"] for r in runs if r["prompt_index"] == index),
        }
        for index in sorted({r["prompt_index"] for r in runs})
    ]
    return {**_worst(rows), "round_noise": _round_noise(runs)}


def _run(prompt: int, speedup: float, ours: float, hf: float) -> dict:
    return {
        "prompt_index": prompt,
        "whole_run_speedup": speedup,
        "baseline": {"tokens_per_s": ours},
        "hf_plain": {"tokens_per_s": hf},
    }


def test_round_noise_is_the_same_work_per_round_against_its_prompts_median():
    runs = [
        _run(0, 1.30, 20.0, 10.0),  # same work: 2.0
        _run(0, 1.10, 19.0, 10.0),  # 1.9: 0.95 of the prompt's median
        _run(0, 1.25, 20.0, 10.0),
        _run(1, 0.93, 22.0, 10.0),  # the lowest round
        _run(1, 1.01, 20.0, 10.0),  # 2.0 against a median of 2.2: 0.909
        _run(1, 0.99, 22.0, 10.0),
    ]
    figures = _rounds(runs)
    assert figures["worst_round_speedup"] == 0.93 and figures["worst_round_prompt_index"] == 1
    assert figures["round_noise"]["low"] == pytest.approx(2.0 / 2.2)
    assert figures["round_noise"]["high"] == pytest.approx(1.0)


def test_round_noise_needs_three_rounds_of_a_prompt_and_hugging_faces_run():
    two_rounds = [_run(0, 1.2, 20.0, 10.0), _run(0, 1.1, 18.0, 10.0)]
    assert _rounds(two_rounds)["round_noise"] is None
    sampled = [{"prompt_index": 0, "whole_run_speedup": s, "baseline": {"tokens_per_s": 20.0}} for s in (1.1, 1.2, 1.3)]
    figures = _rounds(sampled)  # not greedy: no Hugging Face run to compare with
    assert figures["round_noise"] is None and figures["worst_round_speedup"] == 1.1


def _report_summary() -> dict[str, object]:
    """A bench summary with what ``format_report`` reads (the worst round read against the noise)."""
    return {
        "runs": 6,
        "drafter": "lookup",
        "k": 5,
        "auto_k": True,
        "adaptive": False,
        "device": "cpu",
        "worst_whole_run_speedup": 0.99,
        "worst_prompt_index": 1,
        "mean_k": 2.0,
        "plain_step_share": 0.2,
        "outside_forward_ms_per_pass": 1.0,
        "outside_forward_share": 0.02,
        "worst_round_speedup": 0.93,
        "worst_round_prompt_index": 1,
        "round_noise": {"low": 0.909, "high": 1.0},
        "cost_curve_ms": {},
        "baseline_tps": 20.0,
        "speculative_tps": 24.0,
        "whole_run_speedup": 1.2,
        "whole_run_speedup_of_totals": 1.2,
        "drafts_accepted_share": 0.7,
        "tokens_per_pass": 2.0,
        "all_identical": True,
        "hf_assisted_tps": None,
        "note": None,
    }


def test_the_report_reads_the_worst_round_against_the_noise():
    text = format_report({"prompts": [], "summary": _report_summary()})
    assert "worst single round: #2 at 0.93x; a round's noise here: our target-only / Hugging Face plain" in text
    assert "ran 0.91-1.00x its prompt's median" in text
