"""What Q6_K as Q6_K costs against the int8 rows it replaced: the kernels alone, and a target's passes.

    python tools/q6k_cost.py kernels [--calls 21]
    python tools/q6k_cost.py passes TARGET.gguf [--checkout DIR] [--passes 21]

``kernels``: ``Q6KLinear`` against ``Int8Linear.from_float`` of one random weight (Qwen2.5-1.5B's
head 151,936 × 1,536, ffn_down 1,536 × 8,960, attn_v 256 × 1,536) at 1, 2, 4, 5 and 8 rows, one
thread, the two forms called in turn, the median of ``--calls`` calls each: a markdown table.

``passes``: the target loaded as the app loads it (``Engine.load(T, "lookup", threads=1)``) from the
checkout ``--checkout`` (default: this one), then passes over 1 and 5 new tokens after a 100-token
context, each truncated back, in turn: one line of medians. For a before / after run it in turn from
the two checkouts, several processes each; give each its own ``SPECCHAT_CACHE_DIR`` when their forms'
formats differ (a load of a newer format removes the file's older forms, which the other then
converts again).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

SHAPES = ((151936, 1536, "head"), (1536, 8960, "ffn_down"), (256, 1536, "attn_v"))
ROWS = (1, 2, 4, 5, 8)
CONTEXT = 100


def medians(calls: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Seconds per call (median), the calls made in turn so a busy machine slows all alike."""
    for call in calls.values():
        call()
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(repeat):
        for name, call in calls.items():
            started = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - started)
    return {name: statistics.median(t) for name, t in times.items()}


def kernels(repeat: int) -> None:
    import torch

    from app.engine.runners.quant import Int8Linear, Q6KLinear

    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(0)
    print("| shape | rows | Q6_K µs | int8 µs | Q6_K ÷ int8 |\n|---|---|---|---|---|")
    for n, k, name in SHAPES:
        weight = torch.randn(n, k, generator=gen) * 0.05
        forms = {"q6k": Q6KLinear.from_float(weight).rows_fn(), "int8": Int8Linear.from_float(weight).rows_fn()}
        del weight
        for m in ROWS:
            x = torch.randn(m, k, generator=gen).to(torch.bfloat16)
            took = medians({f: (lambda fn=fn, x=x: fn(x)) for f, fn in forms.items()}, repeat)
            q6k, int8 = took["q6k"] * 1e6, took["int8"] * 1e6
            print(f"| {name} {n} × {k} | {m} | {q6k:.0f} | {int8:.0f} | {q6k / int8:.2f} |", flush=True)


def passes(target: str, checkout: Path, repeat: int) -> None:
    import torch

    from app.engine.config import LoadOptions
    from app.engine.session import Engine

    engine = Engine.load(target, "lookup", LoadOptions(threads=1))
    runner = engine._target_kv
    runner.continue_from(list(range(1000, 1000 + CONTEXT)))

    def one(rows: int) -> None:
        runner.forward([5] * rows, keep=rows)
        runner.truncate(CONTEXT)

    took = medians({"1-row": lambda: one(1), "5-row": lambda: one(5)}, repeat)
    head = type(engine.target.model.get_output_embeddings()).__name__
    form = engine.target.form.describe() if engine.target.form is not None else engine.target.dtype
    cells = ", ".join(f"{name} {seconds * 1000:.1f} ms" for name, seconds in took.items())
    print(f"{checkout.name}: threads {torch.get_num_threads()}, head {head}: {cells} · {form}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("kernels").add_argument("--calls", type=int, default=21)
    run = sub.add_parser("passes")
    run.add_argument("target")
    run.add_argument("--checkout", type=Path, default=Path(__file__).resolve().parents[1])
    run.add_argument("--passes", type=int, default=21)
    args = parser.parse_args(argv)
    if args.what == "kernels":
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        kernels(args.calls)
    else:
        sys.path.insert(0, str(args.checkout.resolve()))
        passes(args.target, args.checkout.resolve(), args.passes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
