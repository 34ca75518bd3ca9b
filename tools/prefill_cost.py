"""What a prompt's pass costs: milliseconds to feed N prompt tokens on an empty cache (the pass a
new conversation starts with), median of a few passes per size, one model, one thread (or --threads).

    python tools/prefill_cost.py                          # the bundled model, --weights auto
    python tools/prefill_cost.py --weights int4 --sizes 50,200,800 --repeat 3
    python tools/prefill_cost.py --target F.gguf --weights int4 --json
    python tools/prefill_cost.py --target F.gguf --threads 2 --first-token resources/bench_prompts.txt

``--first-token FILE``: each prompt of the file as a new conversation, answered to its first token
after the warm-up, the chat template's head kept (``Engine.reset()``: only what follows it is
prefilled) and the whole prompt prefilled (``reset(whole_prompt=True)``) in turn, ``--repeat``
rounds: milliseconds (medians) and the ratio of the two per prompt and round.

Every row of such a pass is computed as one-token decoding computes it (row-wise attention, at
most 32 rows a linear call), so an answer does not depend on how its prompt was split into passes
(docs/how-it-works.md#exactness). To see what that costs, run this tool on two checkouts (the
commit before and after) one after the other, in turn, and compare the medians: a figure of one
run alone on a shared machine is not a result.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch

from app.cli.inputs import read_prompts_file
from app.engine import Engine
from app.engine.config import GenerationConfig, LoadOptions
from app.engine.runners.kv import CachedModel


def prefill_ms(runner: CachedModel, ids: list[int], repeat: int) -> float:
    """Median milliseconds of feeding ``ids`` to an empty cache (the last row's logits kept)."""
    times = []
    for _ in range(repeat):
        runner.reset()
        started = time.perf_counter()
        runner.forward(ids, keep=1)
        times.append(time.perf_counter() - started)
    runner.reset()
    return 1000.0 * statistics.median(times)


def first_token(engine: Engine, prompts: list[str], rounds: int) -> dict[str, object]:
    """Per prompt and round, the first token of a new conversation with the template's head kept
    and with the whole prompt prefilled, in turn: milliseconds and kept ÷ whole."""
    config = GenerationConfig(max_new_tokens=1, speculative=False)
    seconds: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(rounds):
        for prompt in prompts:
            for whole_prompt in (False, True):
                engine.reset(whole_prompt=whole_prompt)
                started = time.perf_counter()
                engine.generate([{"role": "user", "content": prompt}], config)
                seconds[whole_prompt].append(time.perf_counter() - started)
    ratios = [kept / whole for kept, whole in zip(seconds[False], seconds[True], strict=True)]
    return {
        "head_tokens": len(engine.template_head()),
        "kept_ms": 1000.0 * statistics.median(seconds[False]),
        "whole_ms": 1000.0 * statistics.median(seconds[True]),
        "kept_over_whole": {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios)},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="default", help="a model source (default: the bundled model)")
    parser.add_argument("--weights", default="auto", help="the weights form: auto, int4, int8, bf16, fp32")
    parser.add_argument("--sizes", default="50,200,800", help="prompt tokens per pass, comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="passes per size (the median is shown)")
    parser.add_argument("--threads", default="1", help="CPU threads (a number, or auto)")
    parser.add_argument(
        "--first-token", type=Path, metavar="FILE", help="a prompts file: each prompt's first token, head kept or not"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    engine = Engine.load(args.target, None, LoadOptions(weights=args.weights, threads=args.threads))
    threads = torch.get_num_threads()
    if args.first_token is not None:
        engine.warm_up()
        report = first_token(engine, read_prompts_file(args.first_token), args.repeat) | {"threads": threads}
        print(json.dumps(report, indent=1))
        return 0
    runner = CachedModel(engine.target.model, engine.target.vocab_size)
    ids = torch.randint(100, engine.target.vocab_size, (max(sizes),), generator=torch.Generator().manual_seed(0))
    prefill_ms(runner, ids[:16].tolist(), 1)  # the first pass of a process pays one-off set-up
    figures = {size: prefill_ms(runner, ids[:size].tolist(), args.repeat) for size in sizes}
    report = {"weights": engine.target.weights_label, "threads": threads, "ms_by_tokens": figures}
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(f"{engine.target.name} · {report['weights']} · {threads} thread(s)")
        print("  ".join(f"{size} tokens: {ms:.0f} ms" for size, ms in figures.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
