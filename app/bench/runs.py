"""Benchmark: our baseline and speculative runs against Hugging Face ``generate()``.

For every prompt and repeat, four runs on the same models and prompt ids — ours without
speculation, ours with it, HF plain greedy, HF assisted greedy (``assistant_model`` for a draft
model, ``prompt_lookup_num_tokens`` for prompt lookup) — in an order rotated each round, so a
noisy machine slows all four alike. Every run is timed by the wall clock around the whole
call, and ours start from an empty KV cache (``engine.reset(whole_prompt=True)``) so they prefill
like HF's.

HF runs are greedy only: with temperature > 0 they are skipped (their random streams differ
from ours, so neither their text nor the comparison would mean much).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from app.bench.common import cell, median, ratio, rotated, short, yes
from app.engine.config import GenerationConfig

if TYPE_CHECKING:
    from app.engine import Engine
    from app.engine.events import RunResult, RunStats

BASELINE, SPECULATIVE, HF_PLAIN, HF_ASSISTED = "baseline", "speculative", "hf_plain", "hf_assisted"
METHOD = {
    "tps": "total generated tokens / total wall-clock seconds over all runs of that kind",
    "whole_run_speedup": "median over rounds of (speculative / baseline tokens per second of the whole call, the "
    "prompt's pass included): robust to a round slowed by other load on the machine",
    "whole_run_speedup_of_totals": "speculative_tps / baseline_tps",
    "ratio_vs_hf_assisted": "speculative_tps / hf_assisted_tps",
    "ratio_vs_hf_assisted_median_of_runs": "median over rounds of (speculative / hf_assisted tokens/s)",
    "prompts": "per prompt: medians over repeats",
    "order": "each round runs baseline, speculative, hf_plain, hf_assisted, rotated by one per round",
    "tokens": "generated ids, including the EOS a run stops on",
    "worst_prompt": "the prompt with the lowest median whole-run speed-up",
    "worst_round_speedup": "the lowest whole-run speed-up of any single round, and its prompt",
    "round_noise": "per prompt with 3 rounds or more, each round's baseline / hf_plain tokens per second (the "
    "whole call) divided by that prompt's median of it, lowest and highest over all prompts and rounds: how far "
    "one round moves from its prompt's median when both sides do the same work every round (greedy), the "
    "machine's noise alone, against which a single round's speed-up is read",
    "mean_k": "drafts verified per target pass after the prompt's, as chosen (auto k) or fixed",
    "plain_step_share": "share of target passes after the prompt's that verified no draft",
    "outside_forward": "per target pass: the decode loop's wall time (prefill + decode) minus the time "
    "inside the models' forward calls; share = that / the loop's wall time",
    "cost_curve_ms": "the k chooser's running median of ms per target pass, by tokens fed (1 = plain step)",
    "time_split_ms": "per answer: prefill (the prompt's pass, with any drafting folded into it), draft (the "
    "drafter's time in later steps), verify (the target's later passes, with acceptance and detokenising), "
    "outside (the rest of the whole call: chat template, events, the loop between steps)",
    "weights": "the target's weights form, where it came from, its size and why (auto: the fastest exact form "
    "measured at load)",
    "draft_form": "the draft model's weights form, likewise (auto: the cheapest draft step measured at load)",
}
HF_SKIPPED = "Hugging Face runs skipped: they are compared greedy only (temperature 0)"

Conversation = list[dict[str, str]]


@dataclass(frozen=True)
class Timing:
    """One timed run: the ids it generated and the wall-clock seconds of the whole call."""

    ids: tuple[int, ...]
    seconds: float
    text: str
    stats: RunStats | None = None  # ours only
    loop: LoopFigures | None = None  # ours only
    result: RunResult | None = None  # ours only: the run itself (explained beside its baseline)

    @property
    def tokens(self) -> int:
        return len(self.ids)

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "tokens": self.tokens,
            "seconds": self.seconds,
            "tokens_per_s": self.tokens_per_s,
            "text": self.text,
        }
        if self.stats is not None:
            data.update(
                target_passes=self.stats.target_passes,
                drafts_accepted_share=self.stats.drafts_accepted_share,
                tokens_per_pass=self.stats.tokens_per_pass,
            )
        if self.loop is not None:
            data.update(self.loop.to_dict())
        return data


@dataclass(frozen=True)
class LoopFigures:
    """How one of our runs spent its passes: the drafts it chose and its time outside the models."""

    mean_k: float
    plain_step_share: float
    outside_forward_ms_per_pass: float
    outside_forward_share: float
    time_split_ms: dict[str, float]  # prefill, draft, verify, outside (see METHOD)

    @classmethod
    def of(cls, result: RunResult, forward_s: float, call_s: float) -> LoopFigures:
        later = result.steps[1:]  # after the prompt's pass
        loop_s = result.stats.prefill_s + result.stats.decode_s
        outside = max(0.0, loop_s - forward_s)
        first = result.steps[0] if result.steps else None
        prefill = first.draft_s + first.verify_s if first is not None else 0.0
        draft = sum(s.draft_s for s in later)
        verify = sum(s.verify_s for s in later)
        split = {"prefill": prefill, "draft": draft, "verify": verify}
        split["outside"] = max(0.0, call_s - prefill - draft - verify)
        return cls(
            mean_k=statistics.fmean(s.k for s in later) if later else 0.0,
            plain_step_share=sum(s.k == 0 for s in later) / len(later) if later else 0.0,
            outside_forward_ms_per_pass=1000.0 * outside / max(1, len(result.steps)),
            outside_forward_share=outside / loop_s if loop_s > 0 else 0.0,
            time_split_ms={part: 1000.0 * seconds for part, seconds in split.items()},
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "mean_k": self.mean_k,
            "plain_step_share": self.plain_step_share,
            "outside_forward_ms_per_pass": self.outside_forward_ms_per_pass,
            "outside_forward_share": self.outside_forward_share,
            "time_split_ms": dict(self.time_split_ms),
        }


def time_ours(engine: Engine, messages: Conversation, config: GenerationConfig) -> Timing:
    engine.reset(whole_prompt=True)  # prefill the whole prompt, as HF does
    engine.history.clear()  # no run drafts from another's answer (bench.sessions measures that)
    forward_before = engine.forward_seconds
    start = time.perf_counter()
    result = engine.generate(messages, config)
    seconds = time.perf_counter() - start
    loop = LoopFigures.of(result, engine.forward_seconds - forward_before, seconds)
    return Timing(tuple(result.token_ids), seconds, result.text, result.stats, loop, result)


class HuggingFaceRunner:
    """Hugging Face ``generate()`` on the engine's own (already loaded) models, greedy."""

    def __init__(self, engine: Engine, config: GenerationConfig) -> None:
        self.engine = engine
        self.config = config

    def run(self, prompt_ids: list[int], assisted: bool, max_new_tokens: int) -> Timing:
        import torch

        from app.engine.runners.llama_family import as_transformers  # SpecChat's own classes have no generate

        target = self.engine.target
        ids = torch.tensor([prompt_ids], device=target.device)  # [1, T]
        pad = target.tokenizer.pad_token_id
        kwargs: dict[str, Any] = {
            "attention_mask": torch.ones_like(ids),
            "do_sample": False,
            "max_new_tokens": max_new_tokens,
            "eos_token_id": list(target.eos_token_ids),
            "pad_token_id": target.eos_token_ids[0] if pad is None else pad,
        }
        if self.config.repetition_penalty != 1.0:  # same semantics as ours, so the answers compare
            kwargs.update(repetition_penalty=self.config.repetition_penalty)
        if self.config.stop_strings:
            kwargs.update(stop_strings=list(self.config.stop_strings), tokenizer=target.tokenizer)
        if assisted and self.engine.draft is not None:
            kwargs.update(assistant_model=as_transformers(self.engine.draft.model))
        elif assisted:
            kwargs.update(prompt_lookup_num_tokens=self.config.k)
        with torch.inference_mode(), self._assistant_settings() if assisted else nullcontext():
            start = time.perf_counter()
            output = as_transformers(target.model).generate(ids, **kwargs)  # [1, T + new]
            seconds = time.perf_counter() - start
        new = output[0, ids.shape[1] :].tolist()  # with the EOS it stops on, as ours
        return Timing(tuple(new), seconds, target.tokenizer.decode(new, skip_special_tokens=True))

    @contextmanager
    def _assistant_settings(self) -> Iterator[None]:
        """Our k, constant (HF's heuristic schedule with --adaptive), our confidence threshold
        (0: off; HF's default is 0.4), on the draft's generation config for one call."""
        from app.engine.runners.llama_family import as_transformers

        if self.engine.draft is None:
            yield
            return
        settings = as_transformers(self.engine.draft.model).generation_config
        names = ("num_assistant_tokens", "num_assistant_tokens_schedule", "assistant_confidence_threshold")
        saved = {name: getattr(settings, name, None) for name in names}
        settings.num_assistant_tokens = self.config.k
        settings.num_assistant_tokens_schedule = (
            "heuristic_transient" if self.config.adaptive_k else "constant"
        )
        settings.assistant_confidence_threshold = self.config.confidence_threshold
        try:
            yield
        finally:
            for name, value in saved.items():
                setattr(settings, name, value)


def run(
    engine: Engine,
    prompts: list[str],
    conversations: list[Conversation],
    config: GenerationConfig,
    repeat: int = 1,
    on_round: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Time every kind on every prompt ``repeat`` times; returns {"runs", "prompts", "summary"}."""
    with_hf = config.greedy
    kinds = [BASELINE, SPECULATIVE] + ([HF_PLAIN, HF_ASSISTED] if with_hf else [])
    baseline_config = replace(config, speculative=False)
    hf = HuggingFaceRunner(engine, config)

    def time_kind(kind: str, messages: Conversation, prompt_ids: list[int], max_new_tokens: int) -> Timing:
        if kind in (BASELINE, SPECULATIVE):
            ours = baseline_config if kind == BASELINE else config
            return time_ours(engine, messages, replace(ours, max_new_tokens=max_new_tokens))
        return hf.run(prompt_ids, kind == HF_ASSISTED, max_new_tokens)

    engine.warm_up()  # as the app's worker does: one-off kernel set-up, the chooser's first points
    # One short untimed round first: first calls pay for allocations and lazy initialisation.
    for kind in kinds:
        time_kind(kind, conversations[0], engine.prompt_ids(conversations[0]), min(8, config.max_new_tokens))
    runs: list[dict[str, Any]] = []
    timings: dict[str, list[Timing]] = {kind: [] for kind in kinds}
    total = len(conversations) * repeat
    for index, messages in enumerate(conversations):
        prompt_ids = engine.prompt_ids(messages)
        for r in range(repeat):
            order = rotated(kinds, len(runs))
            measured = {kind: time_kind(kind, messages, prompt_ids, config.max_new_tokens) for kind in order}
            for kind, timing in measured.items():
                timings[kind].append(timing)
            runs.append(_run_entry(index, prompts[index], r, order, measured))
            if on_round is not None:
                on_round(len(runs), total)
    per_prompt = [
        _prompt_medians(i, prompt, [r for r in runs if r["prompt_index"] == i])
        for i, prompt in enumerate(prompts)
    ]
    summary = _summary(runs, timings, engine, config)
    summary.update(_worst(per_prompt))
    summary["round_noise"] = _round_noise(runs)
    return {"runs": runs, "prompts": per_prompt, "summary": summary}


def _worst(per_prompt: list[dict[str, Any]]) -> dict[str, Any]:
    """The prompt speculation served worst (by its median, and by its lowest round), and every
    prompt's speedup in order."""
    rated = [row for row in per_prompt if row["whole_run_speedup"] is not None]
    worst = min(rated, key=lambda row: row["whole_run_speedup"], default=None)
    lowest = min(rated, key=lambda row: row["worst_round_speedup"], default=None)
    return {
        "whole_run_speedups": [row["whole_run_speedup"] for row in per_prompt],
        "worst_whole_run_speedup": worst["whole_run_speedup"] if worst else None,
        "worst_prompt_index": worst["prompt_index"] if worst else None,
        "worst_prompt": worst["prompt"] if worst else None,
        "worst_round_speedup": lowest["worst_round_speedup"] if lowest else None,
        "worst_round_prompt_index": lowest["prompt_index"] if lowest else None,
    }


NOISE_ROUNDS = 3  # rounds of a prompt before its rounds' spread around their median says anything


def _round_noise(runs: list[dict[str, Any]]) -> dict[str, float] | None:
    """``round_noise`` (``METHOD``), against which the lowest single round is read: ours
    target-only ÷ Hugging Face plain repeats the same greedy work every round, so its rounds'
    spread around their median is the machine's alone (None: no prompt has enough rounds)."""
    noise: list[float] = []
    for index in sorted({r["prompt_index"] for r in runs}):
        same_work = [
            ratio(r[BASELINE]["tokens_per_s"], r[HF_PLAIN]["tokens_per_s"])
            for r in runs
            if r["prompt_index"] == index and HF_PLAIN in r
        ]
        values = [v for v in same_work if v]
        if len(values) >= NOISE_ROUNDS:
            middle = statistics.median(values)
            noise.extend(v / middle for v in values)
    return {"low": min(noise), "high": max(noise)} if noise else None


def _median_of(runs: list[dict[str, Any]], key: str) -> float | None:
    return median([r[key] for r in runs if r.get(key) is not None])


def _mean_of(timings: list[Timing], key: str) -> float | None:
    values = [getattr(t.loop, key) for t in timings if t.loop is not None]
    return statistics.fmean(values) if values else None


def _total_tps(timings: list[Timing]) -> float | None:
    seconds = sum(t.seconds for t in timings)
    return sum(t.tokens for t in timings) / seconds if seconds > 0 else None


def _run_entry(
    index: int, prompt: str, repeat: int, order: list[str], measured: dict[str, Timing]
) -> dict[str, Any]:
    base, spec = measured[BASELINE], measured[SPECULATIVE]
    entry: dict[str, Any] = {"prompt_index": index, "prompt": prompt, "repeat": repeat, "order": order}
    entry.update({kind: measured[kind].to_dict() for kind in order})
    entry["whole_run_speedup"] = ratio(spec.tokens_per_s, base.tokens_per_s)
    entry["identical"] = spec.ids == base.ids
    if spec.result is not None:
        entry.update(_drafting(spec.result, base.result))
    if HF_ASSISTED in measured:
        entry["hf_plain_identical"] = measured[HF_PLAIN].ids == base.ids
        entry["hf_assisted_identical"] = measured[HF_ASSISTED].ids == spec.ids
        entry["ratio_vs_hf_assisted"] = ratio(spec.tokens_per_s, measured[HF_ASSISTED].tokens_per_s)
    return entry


def _drafting(run: RunResult, baseline: RunResult | None) -> dict[str, Any]:
    """What the drafting cost, from the Why panel's own explanation of this round: ``c`` (a draft
    step on the answer's clock ÷ a plain pass of the baseline), the share of drafting passes made
    ahead, the acceptance that would only break even at that cost, and the sentence saying that
    no draft was used and why ("" when some were), or that the draft model sat the run out and why."""
    from app.engine.analysis.explanation import explain, no_drafts_note, sat_out_note

    e = explain(run, baseline)
    return {
        "draft_cost_ratio": e.draft_cost_ratio,
        "draft_pass_ratio": e.draft_pass_ratio,
        "drafted_ahead_share": e.drafted_ahead_share,
        "break_even_alpha": e.break_even_alpha,
        "alpha": e.alpha,
        "no_drafts_note": no_drafts_note(run),
        "sat_out_note": sat_out_note(run),
    }


def _prompt_medians(index: int, prompt: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    def median_of(kind: str, key: str = "tokens_per_s") -> float | None:
        return median([r[kind][key] for r in runs if kind in r])

    with_hf = HF_ASSISTED in runs[0]
    return {
        "prompt_index": index,
        "prompt": prompt,
        "tokens": median_of(SPECULATIVE, "tokens"),
        "baseline_tps": median_of(BASELINE),
        "speculative_tps": median_of(SPECULATIVE),
        "hf_plain_tps": median_of(HF_PLAIN),
        "hf_assisted_tps": median_of(HF_ASSISTED),
        "whole_run_speedup": _median_of(runs, "whole_run_speedup"),
        "worst_round_speedup": min(
            (r["whole_run_speedup"] for r in runs if r.get("whole_run_speedup") is not None), default=None
        ),
        "drafts_accepted_share": median_of(SPECULATIVE, "drafts_accepted_share"),
        "tokens_per_pass": median_of(SPECULATIVE, "tokens_per_pass"),
        "mean_k": median_of(SPECULATIVE, "mean_k"),
        "plain_step_share": median_of(SPECULATIVE, "plain_step_share"),
        "outside_forward_ms_per_pass": median_of(SPECULATIVE, "outside_forward_ms_per_pass"),
        "outside_forward_share": median_of(SPECULATIVE, "outside_forward_share"),
        "baseline_outside_forward_share": median_of(BASELINE, "outside_forward_share"),
        "time_split_ms": _split_medians([r[SPECULATIVE]["time_split_ms"] for r in runs]),
        "baseline_time_split_ms": _split_medians([r[BASELINE]["time_split_ms"] for r in runs]),
        "ratio_vs_hf_assisted": _median_of(runs, "ratio_vs_hf_assisted"),
        "identical": all(r["identical"] for r in runs),
        "hf_assisted_identical": all(r["hf_assisted_identical"] for r in runs) if with_hf else None,
    }


SPLIT_PARTS = ("prefill", "draft", "verify", "outside")


def _split_medians(splits: list[dict[str, float]]) -> dict[str, float]:
    """Per part, the median over answers of its ms."""
    return {part: statistics.median(s[part] for s in splits) for part in SPLIT_PARTS} if splits else {}


def _split_totals(timings: list[Timing]) -> dict[str, float]:
    """Per part, the mean ms per answer over all answers."""
    splits = [t.loop.time_split_ms for t in timings if t.loop is not None]
    return {part: statistics.fmean(s[part] for s in splits) for part in SPLIT_PARTS} if splits else {}


def _summary(
    runs: list[dict[str, Any]], timings: dict[str, list[Timing]], engine: Engine, config: GenerationConfig
) -> dict[str, Any]:
    tps = {kind: _total_tps(timings.get(kind, [])) for kind in (BASELINE, SPECULATIVE, HF_PLAIN, HF_ASSISTED)}
    spec_stats = [t.stats for t in timings[SPECULATIVE] if t.stats is not None]
    proposed = sum(s.proposed for s in spec_stats)
    passes = sum(s.target_passes for s in spec_stats)
    with_hf = HF_ASSISTED in timings
    return {
        "baseline_tps": tps[BASELINE],
        "speculative_tps": tps[SPECULATIVE],
        "whole_run_speedup": _median_of(runs, "whole_run_speedup"),
        "whole_run_speedup_of_totals": ratio(tps[SPECULATIVE], tps[BASELINE]),
        "hf_plain_tps": tps[HF_PLAIN],
        "hf_assisted_tps": tps[HF_ASSISTED],
        "ratio_vs_hf_assisted": ratio(tps[SPECULATIVE], tps[HF_ASSISTED]),
        "ratio_vs_hf_assisted_median_of_runs": _median_of(runs, "ratio_vs_hf_assisted"),
        "drafts_accepted_share": sum(s.accepted for s in spec_stats) / proposed if proposed else 0.0,
        "tokens_per_pass": sum(s.new_tokens for s in spec_stats) / passes if passes else 0.0,
        "all_identical": all(r["identical"] for r in runs),
        "hf_plain_identical": all(r["hf_plain_identical"] for r in runs) if with_hf else None,
        "hf_assisted_identical": all(r["hf_assisted_identical"] for r in runs) if with_hf else None,
        "runs": len(runs),
        "target": engine.target.name,
        "drafter": engine.drafter_name,
        "device": str(engine.target.device),
        "k": config.k,
        "auto_k": config.auto_k,
        "adaptive": config.adaptive_k,
        "mean_k": _mean_of(timings[SPECULATIVE], "mean_k"),
        "plain_step_share": _mean_of(timings[SPECULATIVE], "plain_step_share"),
        "outside_forward_share": _mean_of(timings[SPECULATIVE], "outside_forward_share"),
        "outside_forward_ms_per_pass": _mean_of(timings[SPECULATIVE], "outside_forward_ms_per_pass"),
        "cost_curve_ms": {n: 1000.0 * s for n, s in engine.chooser.costs.measured().items()},
        "time_split_ms": _split_totals(timings[SPECULATIVE]),
        "baseline_time_split_ms": _split_totals(timings[BASELINE]),
        "weights": engine.target.form.describe() if engine.target.form is not None else engine.target.dtype,
        "draft_form": engine.draft_form.describe() if engine.draft_form is not None else None,
        "max_new_tokens": config.max_new_tokens,
        "temperature": config.temperature,
        "method": METHOD,
        "note": None if with_hf else HF_SKIPPED,
        "draft_cost_ratio": _median_of(runs, "draft_cost_ratio"),
        "draft_pass_ratio": _median_of(runs, "draft_pass_ratio"),
        "drafted_ahead_share": _median_of(runs, "drafted_ahead_share"),
        "break_even_alpha": _median_of(runs, "break_even_alpha"),
        "alpha": _median_of(runs, "alpha"),
        "rounds_without_drafts": sum(bool(r.get("no_drafts_note")) for r in runs),
        "no_drafts_note": next((r["no_drafts_note"] for r in runs if r.get("no_drafts_note")), ""),
        "rounds_draft_model_sat_out": sum(bool(r.get("sat_out_note")) for r in runs),
        "sat_out_note": next((r["sat_out_note"] for r in runs if r.get("sat_out_note")), ""),
    }


# --- the table -------------------------------------------------------------------------------


def format_report(report: dict[str, Any]) -> str:
    """The per-prompt table (medians over repeats, tokens per second) and the summary."""
    header = (
        f"{'#':>2}  {'prompt':<30} {'tokens':>6} {'base':>6} {'spec':>6} {'whole-run':>9} {'drafts accepted':>15} "
        f"{'tok/pass':>8} {'mean k':>6} {'plain':>5} {'hf':>6} {'hf-asst':>7} {'/asst':>6} {'outside':>7}  same"
    )
    lines = ["tokens per second (medians over repeats)", header]
    for row in report["prompts"]:
        lines.append(
            f"{row['prompt_index'] + 1:>2}  {short(row['prompt'], 30):<30} {cell(row['tokens'], '6.0f')} "
            f"{cell(row['baseline_tps'], '6.1f')} {cell(row['speculative_tps'], '6.1f')} "
            f"{cell(row['whole_run_speedup'], '8.2f', 'x')} {cell(row['drafts_accepted_share'], '15.0%')} "
            f"{cell(row['tokens_per_pass'], '8.2f')} {cell(row['mean_k'], '6.2f')} "
            f"{cell(row['plain_step_share'], '5.0%')} {cell(row['hf_plain_tps'], '6.1f')} "
            f"{cell(row['hf_assisted_tps'], '7.1f')} {cell(row['ratio_vs_hf_assisted'], '5.2f', 'x')} "
            f"{cell(row['outside_forward_share'], '7.1%')}  {yes(row['identical'])}"
        )
    s = report["summary"]

    def tps(key: str) -> str:
        return cell(s[key], ".1f")

    def times(key: str) -> str:
        return cell(s[key], ".2f", "x")

    adaptive = " adaptive" if s["adaptive"] else ""
    k_mode = f"auto k <= {s['k']}" if s["auto_k"] else f"k={s['k']}"
    lines.append("")
    lines.append(
        f"{s['runs']} rounds, {s['drafter']}, {k_mode}{adaptive}, {s['device']}; "
        "tokens/s = total tokens / total seconds; 'outside' = loop time outside the forward passes"
    )
    if s["worst_whole_run_speedup"] is not None:
        lines.append(
            f"worst prompt: #{s['worst_prompt_index'] + 1} at {s['worst_whole_run_speedup']:.2f}x; "
            f"mean k {cell(s['mean_k'], '.2f')}, plain steps {cell(s['plain_step_share'], '.0%')}, "
            f"outside the forward passes {cell(s['outside_forward_ms_per_pass'], '.1f', ' ms')} per pass "
            f"({cell(s['outside_forward_share'], '.1%')})"
        )
    if s.get("worst_round_speedup") is not None and s["runs"] > len(report["prompts"]):
        noise = s.get("round_noise")
        read_against = (
            f"; a round's noise here: our target-only / Hugging Face plain, the same work every round, ran "
            f"{noise['low']:.2f}-{noise['high']:.2f}x its prompt's median"
            if noise
            else ""
        )
        lines.append(
            f"worst single round: #{s['worst_round_prompt_index'] + 1} at {s['worst_round_speedup']:.2f}x{read_against}"
        )
    for label, key in (("speculative", "time_split_ms"), ("baseline", "baseline_time_split_ms")):
        if s.get(key):
            parts = ", ".join(f"{part} {s[key][part]:.0f}" for part in SPLIT_PARTS)
            lines.append(f"ms per answer, {label} (mean): {parts}")
    if s.get("draft_cost_ratio") is not None:
        model_pass = s.get("draft_pass_ratio")
        lines.append(
            f"drafting cost c {s['draft_cost_ratio']:.2f} of a plain pass a draft verified, on the answer's clock "
            "(median of rounds; lookup's drafts cost none)"
            + (f", a draft model's pass {model_pass:.2f}" if model_pass is not None else "")
            + f"; {cell(s['drafted_ahead_share'], '.0%')} of the drafting passes drafted ahead; break-even "
            f"acceptance at c {cell(s['break_even_alpha'], '.0%')} (this run's acceptance α: {cell(s['alpha'], '.0%')})"
        )
    if s.get("rounds_without_drafts"):
        lines.append(f"{s['rounds_without_drafts']} of {s['runs']} rounds: {s['no_drafts_note']}")
    if s.get("rounds_draft_model_sat_out"):
        lines.append(f"{s['rounds_draft_model_sat_out']} of {s['runs']} rounds: {s['sat_out_note']}")
    if s.get("weights"):
        lines.append(f"target weights: {s['weights']}")
    if s.get("draft_form"):
        lines.append(f"draft model form: {s['draft_form']}")
    if s["cost_curve_ms"]:
        curve = ", ".join(f"{n}: {ms:.0f}" for n, ms in s["cost_curve_ms"].items())
        lines.append(f"ms per target pass by tokens fed (measured): {curve}")
    lines.append(
        f"ours: baseline {tps('baseline_tps')} tok/s, speculative {tps('speculative_tps')} tok/s, "
        f"whole-run speed-up {times('whole_run_speedup')} "
        f"(median of rounds; {times('whole_run_speedup_of_totals')} from totals); "
        f"drafts accepted {s['drafts_accepted_share']:.0%}, {s['tokens_per_pass']:.2f} tokens/pass; "
        f"answers identical: {yes(s['all_identical'])}"
    )
    if s["hf_assisted_tps"] is not None:
        lines.append(
            f"Hugging Face generate(): plain {tps('hf_plain_tps')} tok/s, assisted {tps('hf_assisted_tps')} "
            f"tok/s; ours / HF assisted {times('ratio_vs_hf_assisted')} from totals "
            f"({times('ratio_vs_hf_assisted_median_of_runs')} median of rounds); same answers as HF: "
            f"plain {yes(s['hf_plain_identical'])}, assisted {yes(s['hf_assisted_identical'])}"
        )
    if s["note"]:
        lines.append(s["note"])
    return "\n".join(lines) + "\n"
