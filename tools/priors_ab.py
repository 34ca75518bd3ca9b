"""Two sets of prompt lookup's priors side by side on the real model, in one process.

    python tools/priors_ab.py --other lookup1=0.3,lookup2=0.65 [--rounds 4] [--prompts-file F]

Both arms share one loaded engine and start each prompt from a copy of the same warmed-up k
chooser (the same measured step costs); round by round, in an order that alternates, each arm
answers the prompt target-only and then with prompt lookup. It prints each prompt's lookup ÷
plain decode rate per round and per arm, and per arm the geometric mean and the worst prompt of
the per-prompt medians. "now" is ``cost.PRIORS`` as shipped; ``--other`` changes some of them.
The prompts: ``is_prime`` (``bench --peer``'s) and the first 8 of ``resources/bench_prompts.txt``.
"""

from __future__ import annotations

import argparse
import copy
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.engine import Engine, GenerationConfig
from app.engine.config import LoadOptions
from app.engine.decoding import cost
from tools.chooser_replay import _prompts

ROOT = Path(__file__).resolve().parent.parent
IS_PRIME = (
    "Write a Python function is_prime(n) that returns True when n is a prime number. "
    "Then write it again with type hints."
)


def _rate(run) -> float:  # type: ignore[no-untyped-def]
    return (run.stats.new_tokens - 1) / run.stats.decode_s


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--other", required=True, help="key=rate,... (the prior weights stay)")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--prompts-file", type=Path, default=ROOT / "resources" / "bench_prompts.txt")
    args = ap.parse_args()
    now = dict(cost.PRIORS)
    other = dict(now)
    for item in args.other.split(","):
        key, rate = item.split("=")
        other[key] = (float(rate), now.get(key, cost.DEFAULT_PRIOR)[1])
    arms = {"now": now, "other": other}
    prompts = [IS_PRIME, *_prompts(args.prompts_file)[:8]]
    engine = Engine.load(draft="lookup", options=LoadOptions(threads=1))
    engine.warm_up()
    warmed = engine.chooser
    medians: dict[str, list[float]] = {arm: [] for arm in arms}
    for index, prompt in enumerate(prompts):
        choosers = {arm: copy.deepcopy(warmed) for arm in arms}
        ratios: dict[str, list[float]] = {arm: [] for arm in arms}
        for round_ in range(args.rounds):
            for arm in list(arms) if round_ % 2 == 0 else list(arms)[::-1]:
                cost.PRIORS.clear()
                cost.PRIORS.update(arms[arm])
                engine.chooser = choosers[arm]
                plain = engine.generate(prompt, GenerationConfig(max_new_tokens=96, speculative=False))
                lookup = engine.generate(prompt, GenerationConfig(max_new_tokens=96))
                if plain.token_ids != lookup.token_ids:
                    raise AssertionError("prompt lookup changed the answer")
                ratios[arm].append(_rate(lookup) / _rate(plain))
        for arm in arms:
            medians[arm].append(statistics.median(ratios[arm]))
        print(index, {arm: [round(r, 3) for r in rs] for arm, rs in ratios.items()}, flush=True)
    cost.PRIORS.clear()
    cost.PRIORS.update(now)
    for arm, values in medians.items():
        geomean = math.exp(sum(map(math.log, values)) / len(values))
        print(f"{arm}: lookup ÷ plain, median per prompt: geometric mean {geomean:.3f}, worst {min(values):.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
