"""A lean pass with torch's own ops on one thread (as it runs: ``LeanPass.native``) against the
same pass with torch's ops on the full thread count (as before), pass for pass interleaved in one
process: ms per pass over 1, 2 and 5 rows after a 100-token context, and new ÷ old.

    python tools/lean_threads_ab.py [MODEL] [--threads 2] [--repeat 21]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.engine import Engine
from app.engine.config import LoadOptions
from app.engine.draft_threads import timed_pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", nargs="?", default="default")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=21)
    args = parser.parse_args(argv)
    engine = Engine.load(args.model, "lookup", LoadOptions(threads=args.threads))
    runner = engine._target_kv
    lean = runner.lean
    if lean is None or not lean.native:
        print("this model's passes do not run every linear on SpecChat's kernels: nothing to compare")
        return 1
    runner.continue_from(list(range(1000, 1100)))
    samples: dict[tuple[int, bool], list[float]] = {}
    for _ in range(args.repeat + 1):  # the first round warms up and is dropped
        for native in (True, False):
            lean.native = native
            for rows in (1, 2, 5):
                samples.setdefault((rows, native), []).append(timed_pass(runner, rows))
    print(f"{engine.target.weights_label}, {torch.get_num_threads()} threads, median of {args.repeat} passes")
    for rows in (1, 2, 5):
        new, old = (statistics.median(samples[rows, n][1:]) for n in (True, False))
        print(f"{rows} row(s): torch ops on one thread {new * 1e3:.2f} ms, on all {old * 1e3:.2f} ms: {new / old:.3f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
