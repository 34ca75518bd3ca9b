"""What a draft model's step costs beside a target pass, each model as the app loads the pair.

    python tools/draft_step_cost.py --target T --draft D [--threads N] [--repeat 25]

After 100 tokens of context in each model's cache (``CachedModel.feed_at``, the cache rolled back
before each pass), medians of ``--repeat`` passes, milliseconds: each model's pass over 1 to 4
tokens, then what the drafter's ``propose`` costs in the shapes decoding asks of it: one draft
after a kept block (its first pass feeds the last draft and the target's token: 2 tokens), one
draft after a rejected block (1 token fed), and three drafts (1 token fed, then one pass a draft).
Each as a share of the target's one-token pass: the pass cost the issue's "draft step ≤ 0.15 of a
target pass" is about. ``bench``'s c is the drafting time per draft verified, lookup's free drafts
included ([numbers](../docs/numbers.md)); this is the draft model's own.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.engine.config import GenerationConfig, LoadOptions
from app.engine.startup import import_engine

CONTEXT = 100


def median_ms(work: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e3


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True)
    parser.add_argument("--draft", required=True)
    parser.add_argument("--threads", default="auto")
    parser.add_argument("--repeat", type=int, default=25)
    args = parser.parse_args(argv)
    import_engine()
    import torch

    from app.engine.decoding.acceptance import Rule
    from app.engine.decoding.drafters import model_of
    from app.engine.session import Engine

    engine = Engine.load(args.target, args.draft, LoadOptions(threads=args.threads))
    engine.warm_up()
    drafter = model_of(engine._drafter)
    if drafter is None:
        raise SystemExit("no draft model loaded")
    draft, target = drafter.runner, engine._target_kv
    context = list(range(1000, 1000 + CONTEXT))
    for runner in (draft, target):
        runner.reset()
        runner.forward(context, keep=1)
    print(f"{torch.get_num_threads()} thread(s); after {CONTEXT} tokens of context; ms, medians of {args.repeat}")
    plain = median_ms(lambda: target.feed_at(CONTEXT, [2000]), args.repeat)
    for n in range(1, 5):
        ids = list(range(2000, 2000 + n))
        d = median_ms(lambda ids=ids: draft.feed_at(CONTEXT, ids), args.repeat)
        t = median_ms(lambda ids=ids: target.feed_at(CONTEXT, ids), args.repeat)
        print(f"pass over {n} token(s): draft {d:6.2f}   target {t:6.2f}   draft / plain target pass {d / plain:.2f}")
    rule = Rule(GenerationConfig())
    sequence = context + [5, 6]

    def propose(held: int, k: int) -> Callable[[], object]:
        def work() -> object:
            draft.truncate(held)
            drafter._seen = held  # the positions it holds are this turn's
            return drafter.propose(sequence, k, rule, 0.0, new_turn=False)

        return work

    for label, held, k in (("1 draft, 2 tokens fed", CONTEXT, 1), ("1 draft, 1 fed", CONTEXT + 1, 1),
                           ("3 drafts, 1 fed", CONTEXT + 1, 3)):
        ms = median_ms(propose(held, k), args.repeat)
        print(f"propose, {label}: {ms:6.2f} ms, {ms / k / plain:.2f} of a plain target pass a draft")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
