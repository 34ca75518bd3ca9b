"""Decoding speed against torch's CPU thread count, plain and with prompt lookup.

    python tools/thread_speed.py [--threads 1 2] [--rounds 3] [--tokens 48]

Thread counts and modes are interleaved round by round, so a machine that other processes
load affects all alike; prints the median tok/s of each and the speculative ÷ plain ratio.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import PROMPT

from app.engine import Engine, GenerationConfig
from app.engine.config import LoadOptions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=48)
    args = parser.parse_args()
    engine = Engine.load("default", "lookup", LoadOptions(device="cpu", dtype="float32", threads=1))
    engine.warm_up()
    speeds: dict[tuple[int, bool], list[float]] = {}
    for _ in range(args.rounds):
        for threads in args.threads:
            torch.set_num_threads(threads)
            for speculative in (False, True):
                engine.reset()
                config = GenerationConfig(max_new_tokens=args.tokens, speculative=speculative, k=4)
                stats = engine.generate(PROMPT, config).stats
                speeds.setdefault((threads, speculative), []).append(stats.tokens_per_s)
    print("| threads | plain tok/s | lookup tok/s | lookup ÷ plain |\n|---|---|---|---|")
    for threads in args.threads:
        plain, spec = (statistics.median(speeds[(threads, s)]) for s in (False, True))
        print(f"| {threads} | {plain:.2f} | {spec:.2f} | {spec / plain:.2f} |")


if __name__ == "__main__":
    main()
