"""Prompt lookup against the "earlier conversations" drafter on prompts with nothing to reuse:
the index cleared before every run, every run from empty caches, the two arms alternated per
prompt and round. Prints one JSON line per prompt and round, then the medians.

    python tools/suffix_vs_lookup.py [--rounds 2] [--max-new-tokens 64]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.cli import DEFAULT_PROMPTS_FILE, read_prompts_file
from app.engine import Engine, GenerationConfig
from app.engine.backend import AnswerOptions
from app.engine.config import LOOKUP, SUFFIX, LoadOptions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    args = parser.parse_args()
    prompts = read_prompts_file(DEFAULT_PROMPTS_FILE)
    engine = Engine.load(draft=SUFFIX, options=LoadOptions(threads=1))
    engine.warm_up()
    config = GenerationConfig(max_new_tokens=args.max_new_tokens)
    ratios, more_passes, same = [], 0, True
    for r in range(args.rounds):
        for i, prompt in enumerate(prompts):
            runs = {}
            for arm in (LOOKUP, SUFFIX) if (i + r) % 2 == 0 else (SUFFIX, LOOKUP):
                engine.history.clear()
                engine.reset()
                messages = [{"role": "user", "content": prompt}]
                runs[arm] = engine.generate(messages, config, options=AnswerOptions(drafter_choice=arm, record=False))
            tps = {a: (run.stats.new_tokens - 1) / run.stats.decode_s for a, run in runs.items() if run.stats.decode_s}
            ratio = tps[SUFFIX] / tps[LOOKUP] if len(tps) == 2 else None
            passes = {a: run.stats.target_passes for a, run in runs.items()}
            same = same and runs[LOOKUP].token_ids == runs[SUFFIX].token_ids
            more_passes += passes[SUFFIX] > passes[LOOKUP]
            if ratio is not None:
                ratios.append(ratio)
            print(json.dumps({"round": r, "prompt": i, "passes": passes, "decode_ratio": ratio}), flush=True)
    print(
        f"decode tokens/s, earlier conversations / prompt lookup: median {statistics.median(ratios):.3f} "
        f"(min {min(ratios):.3f}, max {max(ratios):.3f}); more passes in {more_passes} of {len(ratios)} runs; "
        f"same answers: {same}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
