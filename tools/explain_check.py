"""Is the explanation honest? Predicted against measured speed-up on the bench prompts.

    python tools/explain_check.py                         # bundled model + prompt lookup
    python tools/explain_check.py --tiny                  # a tiny random pair (tests/tiny_models.py)
    python tools/explain_check.py --draft DIR --k 4 --max-new-tokens 64 --json

Each prompt runs with and without speculation (order alternating per prompt, caches reset
before each run), and ``explain(speculative, baseline)`` gives the prediction from the
speculative run's own acceptance and pass costs. Both speed-ups are decode tokens per second.

With the costs taken from the same pair, the prediction differs from the measurement only
through the acceptance model (expected against actual tokens per pass), so for greedy runs its
error does not depend on timing noise. The "transf" column is out of sample: the prompt's own
α and draft lengths, but every cost measured on the other prompts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.cli import DEFAULT_PROMPTS_FILE, read_prompts_file
from app.engine import LOOKUP, Engine, GenerationConfig
from app.engine.analysis.explanation import expected_tokens, explain
from app.engine.config import LoadOptions
from app.engine.errors import PromptError
from app.engine.events import RunResult, StepEvent


def tiny_pair() -> tuple[str, str]:
    """A tiny target and a draft close to it, saved to a temporary folder."""
    sys.path.insert(0, str(ROOT / "tests"))
    from tiny_models import build_model, build_tokenizer, perturbed_copy, save

    root = Path(tempfile.mkdtemp(prefix="specchat-explain-"))
    tokenizer = build_tokenizer()
    target = build_model("llama", tokenizer, seed=0, scale=30.0)
    draft = perturbed_copy(target, 0.05, seed=100)
    return str(save(target, tokenizer, root / "target")), str(save(draft, tokenizer, root / "draft"))


def run_once(engine: Engine, prompt: str, config: GenerationConfig) -> RunResult:
    engine.reset()
    return engine.generate([{"role": "user", "content": prompt}], config)


def check(engine: Engine, prompts: list[str], config: GenerationConfig) -> list[dict[str, object]]:
    plain = replace(config, speculative=False)
    run_once(engine, prompts[0], replace(config, max_new_tokens=8))  # untimed: first-call set-up
    pairs = []
    for i, prompt in enumerate(prompts):
        order = [config, plain] if i % 2 == 0 else [plain, config]
        runs = {c.speculative: run_once(engine, prompt, c) for c in order}
        pairs.append((runs[True], runs[False]))
    rows = []
    for i, (spec, base) in enumerate(pairs):
        e = explain(spec, base)
        others = pairs[:i] + pairs[i + 1 :]
        transferred = transferred_prediction(spec, e.alpha, others)
        rows.append(
            {
                "prompt": i,
                "tokens": spec.stats.new_tokens,
                "alpha": e.alpha,
                "k": e.k_used,
                "c": e.draft_cost_ratio,
                "v": e.verify_cost_ratio,
                "predicted": e.predicted_decode_speedup,
                "formula": e.formula_speedup,
                "transferred": transferred,
                "measured": e.decode_speedup,
                "error": _error(e.predicted_decode_speedup, e.decode_speedup),
                "transferred_error": _error(transferred, e.decode_speedup),
                "summary": e.summary,
            }
        )
    return rows


def _error(predicted: float | None, measured: float | None) -> float | None:
    return predicted / measured - 1 if predicted and measured else None


def _decode(run: RunResult) -> list[StepEvent]:
    return [s for s in run.steps if s.index > 0 and s.tokens]


def transferred_prediction(
    spec: RunResult, alpha: float | None, others: list[tuple[RunResult, RunResult]]
) -> float | None:
    """The prediction for ``spec`` with its own α and draft lengths but every cost (plain pass,
    drafting per token, verify per pass size) measured on the OTHER prompts: out of sample."""
    plain = [s.draft_s + s.verify_s for _, base in others for s in _decode(base)]
    passes = [s for other, _ in others for s in _decode(other)]
    drafted = sum(len(s.accepted) + len(s.rejected) for s in passes)
    if not plain or not drafted or alpha is None:
        return None
    plain_s = statistics.mean(plain)
    draft_per_token = sum(s.draft_s for s in passes) / drafted
    verify: dict[int, list[float]] = {}
    for s in passes:
        verify.setdefault(len(s.accepted) + len(s.rejected), []).append(s.verify_s)
    tokens = cost = 0.0
    for s in _decode(spec):
        m = len(s.accepted) + len(s.rejected)
        tokens += expected_tokens(alpha, m)
        cost += m * draft_per_token + statistics.mean(verify.get(m, [s.verify_s]))
    return tokens * plain_s / cost if cost > 0 else None


def _cell(value: object, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def print_table(rows: list[dict[str, object]]) -> None:
    print(
        f"{'#':>2} {'tok':>4} {'α':>5} {'k':>2} {'c':>5} {'v(k)':>5} {'pred':>5} {'formula':>7} "
        f"{'transf':>6} {'meas':>5} {'error':>6} {'t.err':>6}"
    )
    for r in rows:
        print(
            f"{r['prompt']:>2} {r['tokens']:>4} {_cell(r['alpha'], '5.2f')} {r['k']:>2} {_cell(r['c'], '5.3f')} "
            f"{_cell(r['v'], '5.2f')} {_cell(r['predicted'], '5.2f')} {_cell(r['formula'], '7.2f')} "
            f"{_cell(r['transferred'], '6.2f')} {_cell(r['measured'], '5.2f')} {_cell(r['error'], '+6.0%')} "
            f"{_cell(r['transferred_error'], '+6.0%')}"
        )
    for key, name in (("error", "prediction"), ("transferred_error", "costs from the other prompts")):
        errors = [abs(r[key]) for r in rows if r[key] is not None]  # type: ignore[arg-type]
        if errors:
            within = sum(e <= 0.25 for e in errors)
            print(
                f"{name}: median |error| {statistics.median(errors):.0%}, max {max(errors):.0%}, "
                f"within 25 %: {within}/{len(errors)}"
            )


def fits(engine: Engine, prompt: str, room: int) -> bool:
    try:
        return len(engine.prompt_ids(prompt)) <= room
    except PromptError:  # longer than the context
        return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--target", default="default", help="model source (default: the bundled model)")
    parser.add_argument("--draft", default=LOOKUP, help="draft model source, or 'lookup' (default)")
    parser.add_argument("--tiny", action="store_true", help="use a tiny random target/draft pair instead")
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--prompts-file", type=Path, default=DEFAULT_PROMPTS_FILE)
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads (1 is fastest on a busy 2-core box)"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    target, draft = tiny_pair() if args.tiny else (args.target, args.draft)
    engine = Engine.load(target, draft, LoadOptions(device="cpu", dtype="float32"))
    engine.warm_up()
    config = GenerationConfig(k=args.k, auto_k=False, max_new_tokens=args.max_new_tokens)  # the k asked for
    room = engine.context_length - args.max_new_tokens  # the tiny pair holds 512 tokens: no long document
    prompts = [p for p in read_prompts_file(args.prompts_file) if fits(engine, p, room)]
    rows = check(engine, prompts, config)
    if args.json:
        json.dump(rows, sys.stdout, ensure_ascii=False, indent=2)
        print()
    else:
        print(
            f"target {engine.target_name} · drafter {engine.drafter_name} · k {args.k} · {args.threads} thread(s)"
        )
        print_table(rows)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
