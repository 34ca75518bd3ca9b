"""llama.cpp beside SpecChat on the same GGUF files: ``bench --peer DIR``.

DIR holds llama.cpp's ``llama-bench`` and ``llama-speculative-simple`` (built from llama.cpp's
source, e.g. ``cmake --build build --target llama-bench llama-speculative-simple``; the folder
may be llama.cpp's ``build/bin``). For every round, in an order rotated each round so a noisy
machine slows all alike, four runs on the same target file and thread count:

- llama.cpp plain: ``llama-bench -p 0 -n N -d P`` (decode only, after P tokens of context: P is
  the prompt's length, the context ours decodes after);
- llama.cpp speculative: ``llama-speculative-simple`` on the same prompt text (our chat template
  applied), drafting with the same draft file (``draft-simple``) or, for prompt lookup, its
  n-gram drafter (``ngram-simple``), greedy;
- ours without and with speculation, from fresh caches (the chat template's head kept).

Every figure is *decode* tokens per second (the prompt's pass left out on both sides):
llama.cpp's own "decoded N tokens in S seconds" and llama-bench's ``avg_ts``; ours
``(new tokens − 1) ÷ decode seconds`` (the first token comes from the prompt's pass).
"""

from __future__ import annotations

import json
import math
import re
import statistics
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.bench.common import ratio, rotated, share
from app.engine.config import GenerationConfig

if TYPE_CHECKING:
    from app.engine import Engine

BENCH_TOOL, SPEC_TOOL = "llama-bench", "llama-speculative-simple"
LLAMA_PLAIN, LLAMA_SPEC, OURS_PLAIN, OURS_SPEC = "llama_plain", "llama_speculative", "ours_plain", "ours_speculative"
KINDS = (LLAMA_PLAIN, LLAMA_SPEC, OURS_PLAIN, OURS_SPEC)
PEER_TIMEOUT_S = 1800
METHOD = {
    "decode_tps": "decode tokens per second, the prompt's pass left out: llama.cpp's own 'decoded N tokens "
    "in S seconds' (speculative) and llama-bench's avg_ts (plain, -p 0, -d the prompt's tokens); ours "
    "(new tokens - 1) / decode seconds",
    "medians": "per kind, the median over rounds",
    "order": "each round runs the four kinds in an order rotated by one per round",
    "ratio": "ours_speculative / llama_speculative decode tokens per second, median over rounds",
    "identical": "our speculative answer's token ids equal our target-only answer's, every round",
}

_DECODED = re.compile(r"decoded\s+(\d+)\s+tokens in\s+([\d.]+)\s+seconds")
_DRAFTED = re.compile(r"n_drafted\s*=\s*(\d+)")
_ACCEPTED = re.compile(r"n_accept\s*=\s*(\d+)")


class PeerError(Exception):
    """A peer run that cannot be made, in one sentence for the person."""


def checked_rate(value: object, tool: str, what: str = "tokens per second") -> float:
    """A figure a tool printed, as a rate: a finite number above zero, else PeerError naming the
    tool (NaN, ±inf, a negative or zero rate is a tool's bug, never a measurement to show)."""
    try:
        rate = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise PeerError(f"{tool} printed {str(value)[:40]!r} as its {what}, which is not a number") from None
    if not math.isfinite(rate) or rate <= 0:
        raise PeerError(f"{tool} printed {str(value)[:40]} as its {what}: not a finite rate above zero")
    return rate


def checked_drafts(drafted: int | None, accepted: int | None, tool: str) -> tuple[int | None, int | None]:
    """Drafts proposed and accepted as a tool counted them; it cannot accept more than it drafted."""
    if drafted is not None and accepted is not None and accepted > drafted:
        raise PeerError(f"{tool} reports it accepted {accepted} drafts of {drafted} drafted, which cannot be")
    return drafted, accepted


@dataclass(frozen=True)
class PeerTools:
    bench: Path
    speculative: Path

    @classmethod
    def find(cls, folder: Path) -> PeerTools:
        """The two tools in ``folder`` (or its ``bin`` / ``build/bin``)."""
        for place in (folder, folder / "bin", folder / "build" / "bin"):
            bench, spec = place / BENCH_TOOL, place / SPEC_TOOL
            if bench.is_file() and spec.is_file():
                return cls(bench, spec)
        raise PeerError(
            f"{folder} does not hold {BENCH_TOOL} and {SPEC_TOOL} (build them from llama.cpp's source: "
            f"cmake --build build --target {BENCH_TOOL} {SPEC_TOOL})"
        )


@dataclass(frozen=True)
class PeerFiles:
    """The GGUF files both engines run: the target and the draft (None: n-gram / prompt lookup)."""

    target: Path
    draft: Path | None

    @classmethod
    def of(cls, target: str, draft: str | None, bundled: Path | None) -> PeerFiles:
        def gguf(source: str, role: str) -> Path:
            path = bundled if source == "default" else Path(source).expanduser()
            if path is None or not path.is_file() or path.suffix.lower() != ".gguf":
                raise PeerError(f"--peer runs both engines on the same files: the {role} must be a .gguf file")
            return path

        return cls(gguf(target, "target"), gguf(draft, "draft") if draft else None)


@dataclass(frozen=True)
class PeerRun:
    kind: str
    decode_tps: float
    tokens: int
    drafted: int | None = None
    accepted: int | None = None
    ids: tuple[int, ...] = ()
    # ours, speculating: the target's passes that verified a draft at all, of all its passes (the
    # prompt's included: a first block can be verified with it); the draft
    # model's passes; and the sentence saying why nothing was drafted or the model sat out ("")
    passes_with_drafts: int | None = None
    target_passes: int | None = None
    draft_model_passes: int | None = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"decode_tps": self.decode_tps, "tokens": self.tokens}
        if self.drafted is not None:
            data.update(drafted=self.drafted, accepted=self.accepted)
        if self.target_passes is not None:
            data.update(
                passes_with_drafts=self.passes_with_drafts,
                target_passes=self.target_passes,
                draft_model_passes=self.draft_model_passes,
                note=self.note,
            )
        return data


Runner = Callable[[Sequence[str]], str]


def run_tool(command: Sequence[str]) -> str:
    """Run one llama.cpp tool; its stdout and stderr together (it logs timings to stderr)."""
    try:
        done = subprocess.run(
            list(command), capture_output=True, text=True, errors="replace", timeout=PEER_TIMEOUT_S, check=False
        )
    except OSError as error:
        raise PeerError(f"cannot run {command[0]}: {error.strerror or error}") from None
    except subprocess.TimeoutExpired:
        raise PeerError(f"{Path(command[0]).name} ran for more than {PEER_TIMEOUT_S} s") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise PeerError(f"{Path(command[0]).name} failed (exit {done.returncode}): {last}")
    return done.stdout + done.stderr


def llama_plain(
    tools: PeerTools, files: PeerFiles, tokens: int, threads: int, runner: Runner, depth: int = 0
) -> PeerRun:
    """llama-bench's decode speed over ``tokens`` after ``depth`` tokens of context (``-d``: ours
    decodes after the prompt, and attention over a 3.7k-token prompt costs more per token)."""
    output = runner(
        [str(tools.bench), "-m", str(files.target), "-p", "0", "-n", str(tokens), "-d", str(depth),
         "-t", str(threads), "-r", "1", "-o", "json"]
    )  # fmt: skip
    start = output.find("[")
    try:
        rows = json.loads(output[start : output.rindex("]") + 1])
        avg_ts = rows[0]["avg_ts"]
    except (ValueError, LookupError, TypeError):
        raise PeerError(f"{BENCH_TOOL} printed no result this version of SpecChat can read") from None
    if isinstance(avg_ts, (bool, str)):  # json gives NaN / Infinity as floats; a string is no figure
        raise PeerError(f"{BENCH_TOOL} printed {str(avg_ts)[:40]!r} as its avg_ts, which is not a number")
    return PeerRun(LLAMA_PLAIN, checked_rate(avg_ts, BENCH_TOOL, "avg_ts"), tokens)


PEER_CONTEXT = 4096  # llama-speculative-simple's context (-c) unless the prompt needs more


def peer_context(prompt_tokens: int, tokens: int) -> int:
    """The context and batch size (``-c``, ``-b``) llama-speculative-simple is given: room for the
    prompt, the answer and its drafts, in whole KiB of tokens. Its prompt is evaluated in one batch, so a
    prompt longer than its default batch (2048) fails ("the prompt exceeds the batch size")."""
    needed = prompt_tokens + tokens + 64
    return max(PEER_CONTEXT, -(-needed // 1024) * 1024)


def llama_speculative(
    tools: PeerTools, files: PeerFiles, prompt: str, tokens: int, threads: int, k: int, runner: Runner,
    context: int = PEER_CONTEXT,
) -> PeerRun:
    if files.draft is not None:
        drafting = ["--spec-type", "draft-simple", "-md", str(files.draft)]
    else:
        drafting = ["--spec-type", "ngram-simple"]
    output = runner(
        [str(tools.speculative), "-m", str(files.target), *drafting, "-p", prompt, "-n", str(tokens),
         "-t", str(threads), "-td", str(threads), "--temp", "0", "--spec-draft-n-max", str(k),
         "-c", str(context), "-b", str(context)]
    )  # fmt: skip
    decoded = _DECODED.search(output)
    if decoded is None:
        raise PeerError(f"{SPEC_TOOL} printed no timing this version of SpecChat can read")
    count = int(decoded.group(1))
    try:
        seconds = float(decoded.group(2))
    except ValueError:
        raise PeerError(f"{SPEC_TOOL} printed {decoded.group(2)[:40]!r} as its decode seconds") from None
    rate = checked_rate(count / seconds if seconds > 0 else math.inf, SPEC_TOOL, "decode tokens per second")
    drafted, accepted = _DRAFTED.search(output), _ACCEPTED.search(output)
    counts = checked_drafts(
        int(drafted.group(1)) if drafted else None, int(accepted.group(1)) if accepted else None, SPEC_TOOL
    )
    return PeerRun(LLAMA_SPEC, rate, count, *counts)


def ours(engine: Engine, messages: list[dict[str, str]], config: GenerationConfig, kind: str) -> PeerRun:
    engine.reset()
    # no run drafts from another's answer: the same prompt answered by the target-only arm a
    # moment before was in the suffix index, and the draft model + lookup copied it whole (every
    # draft accepted, a 0.5B "guessing" a poem at 100 %) beside a llama.cpp that drafts afresh
    engine.history.clear()
    result = engine.generate(messages, config)
    stats = result.stats
    decode_tps = (stats.new_tokens - 1) / stats.decode_s if stats.decode_s > 0 and stats.new_tokens > 1 else 0.0
    run = PeerRun(kind, decode_tps, stats.new_tokens, ids=tuple(result.token_ids))
    if not config.speculative:
        return run
    from app.engine.analysis.explanation import drafting_notes

    return replace(
        run,
        drafted=stats.proposed,
        accepted=stats.accepted,
        passes_with_drafts=sum(1 for step in result.steps if step.drafted),
        target_passes=stats.target_passes,
        draft_model_passes=stats.draft_passes,
        note=" ".join(drafting_notes(result)),
    )


def run(
    engine: Engine,
    tools: PeerTools,
    files: PeerFiles,
    messages: list[dict[str, str]],
    config: GenerationConfig,
    threads: int,
    rounds: int,
    runner: Runner = run_tool,
    on_round: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Every kind ``rounds`` times, interleaved; {"rounds", "medians", "summary", "method"}."""
    prompt_ids = engine.prompt_ids(messages)
    prompt_text = engine.target.tokenizer.decode(prompt_ids)
    context = peer_context(len(prompt_ids), config.max_new_tokens)
    plain = replace(config, speculative=False)
    k = config.k

    def one(kind: str) -> PeerRun:
        if kind == LLAMA_PLAIN:
            return llama_plain(tools, files, config.max_new_tokens, threads, runner, depth=len(prompt_ids))
        if kind == LLAMA_SPEC:
            return llama_speculative(tools, files, prompt_text, config.max_new_tokens, threads, k, runner, context)
        return ours(engine, messages, config if kind == OURS_SPEC else plain, kind)

    engine.warm_up()  # as the app's worker does: one-off kernel set-up, the chooser's first points
    ours(engine, messages, replace(config, max_new_tokens=min(8, config.max_new_tokens)), OURS_SPEC)  # warm-up
    table: list[dict[str, PeerRun]] = []
    for r in range(rounds):
        order = rotated(KINDS, r)
        table.append({kind: one(kind) for kind in order})
        if on_round is not None:
            on_round(r + 1, rounds)
    medians = {kind: statistics.median(row[kind].decode_tps for row in table) for kind in KINDS}
    ratios = [
        row[OURS_SPEC].decode_tps / row[LLAMA_SPEC].decode_tps for row in table if row[LLAMA_SPEC].decode_tps > 0
    ]
    spec_rows = [row[LLAMA_SPEC] for row in table]
    summary = {
        "ours_speculative_vs_llama_speculative": statistics.median(ratios) if ratios else None,
        "ours_speculative_vs_ours_plain": ratio(medians[OURS_SPEC], medians[OURS_PLAIN]),
        "llama_speculative_vs_llama_plain": ratio(medians[LLAMA_SPEC], medians[LLAMA_PLAIN]),
        "identical": all(row[OURS_SPEC].ids == row[OURS_PLAIN].ids for row in table),
        "llama_drafts_accepted_share": share(
            sum(r.accepted or 0 for r in spec_rows), sum(r.drafted or 0 for r in spec_rows)
        ),
        "ours_drafts_accepted_share": share(
            sum(row[OURS_SPEC].accepted or 0 for row in table), sum(row[OURS_SPEC].drafted or 0 for row in table)
        ),
        "ours_passes_with_drafts": sum(row[OURS_SPEC].passes_with_drafts or 0 for row in table),
        "ours_target_passes": sum(row[OURS_SPEC].target_passes or 0 for row in table),
        "ours_draft_model_passes": sum(row[OURS_SPEC].draft_model_passes or 0 for row in table),
        "ours_notes": sorted({row[OURS_SPEC].note for row in table if row[OURS_SPEC].note}),
    }
    return {
        "target": str(files.target),
        "draft": str(files.draft) if files.draft else "n-gram (llama.cpp ngram-simple) / prompt lookup (ours)",
        "threads": threads,
        "weights": engine.target.form.describe() if engine.target.form is not None else engine.target.dtype,
        "draft_form": engine.draft_form.describe() if engine.draft_form is not None else None,
        "max_new_tokens": config.max_new_tokens,
        "k": k,
        "rounds": [{kind: row[kind].to_dict() for kind in KINDS} for row in table],
        "medians": medians,
        "summary": summary,
        "method": METHOD,
    }


def format_report(report: dict[str, Any]) -> str:
    medians, summary = report["medians"], report["summary"]
    names = {
        LLAMA_PLAIN: "llama.cpp plain",
        LLAMA_SPEC: "llama.cpp speculative",
        OURS_PLAIN: "SpecChat target-only",
        OURS_SPEC: "SpecChat speculative",
    }
    lines = [
        f"target {report['target']}",
        f"draft  {report['draft']}",
        f"{report['threads']} thread(s), {report['max_new_tokens']} new tokens, k ≤ {report['k']}, "
        f"{len(report['rounds'])} round(s), decode tokens/s (median)",
        "",
    ]
    if report.get("weights"):
        draft = f"; draft: {report['draft_form']}" if report.get("draft_form") else ""
        lines.insert(3, f"SpecChat's weights: {report['weights']}{draft}")
    lines += [f"  {names[kind]:<24} {medians[kind]:8.2f}" for kind in KINDS]
    ratio = summary["ours_speculative_vs_llama_speculative"]
    lines += [
        "",
        f"SpecChat speculative ÷ llama.cpp speculative: {ratio:.2f}×" if ratio is not None else "",
        f"identical to SpecChat's target-only answer: {'yes' if summary['identical'] else 'NO'}",
    ]
    if summary.get("ours_target_passes"):
        drafted, passes = summary["ours_passes_with_drafts"], summary["ours_target_passes"]
        lines.append(
            f"SpecChat speculative: {drafted} of {passes} target passes verified drafts, "
            f"{summary['ours_draft_model_passes']} draft-model passes (all rounds)"
        )
        lines += summary.get("ours_notes", [])
    return "\n".join(line for line in lines) + "\n"
