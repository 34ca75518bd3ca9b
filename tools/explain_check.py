"""Is the explanation honest? Predicted against measured speed-up on the bench prompts.

    python tools/explain_check.py                         # bundled model + prompt lookup
    python tools/explain_check.py --tiny                  # a tiny random pair (tests/tiny_models.py)
    python tools/explain_check.py --draft DIR --k 4 --max-new-tokens 64 --json

Each prompt runs with and without speculation (order alternating per prompt, caches reset
before each run), and ``explain(speculative, baseline)`` gives the prediction from the
speculative run's own acceptance and pass costs. Both speed-ups are decode tokens per second.
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
from app.engine.events import RunResult
from app.engine.explanation import explain


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
    rows = []
    for i, prompt in enumerate(prompts):
        order = [config, plain] if i % 2 == 0 else [plain, config]
        runs = {c.speculative: run_once(engine, prompt, c) for c in order}
        e = explain(runs[True], runs[False])
        error = (
            (e.predicted_speedup / e.measured_speedup - 1)
            if e.predicted_speedup and e.measured_speedup
            else None
        )
        rows.append(
            {
                "prompt": i,
                "tokens": runs[True].stats.new_tokens,
                "alpha": e.acceptance_rate,
                "k": e.k_used,
                "c": e.draft_cost_ratio,
                "v": e.verify_cost_ratio,
                "predicted": e.predicted_speedup,
                "formula": e.formula_speedup,
                "measured": e.measured_speedup,
                "error": error,
                "summary": e.summary,
            }
        )
    return rows


def _cell(value: object, spec: str) -> str:
    return "—" if value is None else format(value, spec)


def print_table(rows: list[dict[str, object]]) -> None:
    print(
        f"{'#':>2} {'tok':>4} {'α':>5} {'k':>2} {'c':>5} {'v(k)':>5} {'pred':>5} {'formula':>7} {'meas':>5} {'error':>6}"
    )
    for r in rows:
        print(
            f"{r['prompt']:>2} {r['tokens']:>4} {_cell(r['alpha'], '5.2f')} {r['k']:>2} {_cell(r['c'], '5.3f')} "
            f"{_cell(r['v'], '5.2f')} {_cell(r['predicted'], '5.2f')} {_cell(r['formula'], '7.2f')} "
            f"{_cell(r['measured'], '5.2f')} {_cell(r['error'], '+6.0%')}"
        )
    errors = [abs(r["error"]) for r in rows if r["error"] is not None]  # type: ignore[arg-type]
    if errors:
        within = sum(e <= 0.25 for e in errors)
        print(
            f"median |error| {statistics.median(errors):.0%}, max {max(errors):.0%}, within 25 %: {within}/{len(errors)}"
        )


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
    engine = Engine.load(target, draft, device="cpu", dtype="float32")
    engine.warm_up()
    config = GenerationConfig(k=args.k, max_new_tokens=args.max_new_tokens)
    rows = check(engine, read_prompts_file(args.prompts_file), config)
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
