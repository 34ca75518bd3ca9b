"""What one target pass costs against the rows it feeds (1, 2, 3, 5 by default): the curve that
decides whether checking drafts can pay on this CPU (a pass of k + 1 rows against k + 1 plain steps).

    python tools/pass_curve.py MODEL [--threads 1] [--rounds 7] [--context 100]
    SPECCHAT_CACHE_DIR=/tmp/before-cache python tools/pass_curve.py MODEL --root ../before

``MODEL``: a GGUF file or a model folder, loaded as the app loads it (``--weights auto``). Each
pass is made after a ``--context``-token prompt, the cache cut back to it before every pass; the
sizes are taken in turn, round after round, so a busy machine affects all alike. Prints, per
size, the median ms and its ratio to one row: for the pass with every row's logits (verifying)
and with the last row's only, and for the LM head alone. ``--root``: the checkout whose engine
to time (another tree's kernels: give it its own ``SPECCHAT_CACHE_DIR``, a forms cache holds
one layout); run two trees' processes alternately to compare them.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--context", type=int, default=100)
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 2, 3, 5])
    parser.add_argument("--root", default=str(Path(__file__).resolve().parents[1]))
    args = parser.parse_args(argv)
    sys.path.insert(0, args.root)
    import torch

    from app.engine.models.loading import load_model
    from app.engine.runners.kv import CachedModel

    torch.set_num_threads(args.threads)
    loaded = load_model(args.model, device="cpu")
    runner = CachedModel(loaded.model, loaded.vocab_size)
    prompt = list(range(100, 100 + args.context))
    runner.reset()
    runner.forward(prompt, keep=1)
    head = runner.lean.head if runner.lean is not None else loaded.model.lm_head
    hidden = torch.randn(max(args.rows), loaded.model.config.hidden_size).to(loaded.model.dtype)

    def timed_pass(rows: int, keep: int) -> float:
        runner.truncate(len(prompt))
        start = time.perf_counter()
        runner.forward(list(range(5, 5 + rows)), keep=keep)
        return time.perf_counter() - start

    def timed_head(rows: int) -> float:
        start = time.perf_counter()
        head(hidden[:rows])
        return time.perf_counter() - start

    samples: dict[tuple[str, int], list[float]] = {}
    for _ in range(args.rounds):
        for rows in args.rows:
            samples.setdefault(("pass, every row's logits", rows), []).append(timed_pass(rows, rows))
            samples.setdefault(("pass, the last row's", rows), []).append(timed_pass(rows, 1))
            samples.setdefault(("the head alone", rows), []).append(timed_head(rows))
    print(f"{loaded.weights_label}; {args.threads} thread(s), {args.context} tokens of context, "
          f"median of {args.rounds}")  # fmt: skip
    for kind in dict.fromkeys(k for k, _ in samples):
        one = statistics.median(samples[(kind, args.rows[0])])
        cells = [f"{rows}: {statistics.median(samples[(kind, rows)]) * 1000:.1f} ms "
                 f"({statistics.median(samples[(kind, rows)]) / one:.2f}x)" for rows in args.rows]  # fmt: skip
        print(f"{kind:26} " + "  ".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
