"""A lean pass whose layers are each one C call (``decoder_layer`` as it runs) against the same
model's pass with one of those calls' parts taken out again, interleaved in one process on one
load: ms per one-token step (greedy, after a 100-token prompt) and per 5-token pass, new ÷ old,
and whether both answered the same tokens.

    python tools/layer_call_ab.py [MODEL] --without mlp|split [--threads 1] [--rounds 6]

``--without mlp``: each layer's call stops at gate | up (SiLU · up, down and the residual add in
torch and a kernel call of their own, as before ``silu_mul``). ``--without split``: a layer whose
q | k | v mixes forms (a Q4_K_M file's Q6_K v) is not one call (as before ``side_by_side_runs``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.engine.models.loading import load_model
from app.engine.runners import lean
from app.engine.runners.kv import CachedModel

PROMPT = list(range(100, 200))


def _old_runner(model: Any, vocab: int, without: str) -> CachedModel:
    """The runner as it was before the part ``without`` went into the layer's call."""
    if without == "mlp":
        name, old = "_silu_in_c", lambda width: False
    else:
        runs = lean.side_by_side_runs
        name, old = "side_by_side_runs", lambda layers: r if (r := runs(layers)) is None or len(r) == 1 else None
    kept = getattr(lean, name)
    setattr(lean, name, old)
    try:
        return CachedModel(model, vocab)
    finally:
        setattr(lean, name, kept)


def _steps(runner: CachedModel, n: int) -> tuple[float, list[int]]:
    runner.reset()
    runner.forward(PROMPT, keep=1)
    token, tokens = 7, []
    started = time.perf_counter()
    for _ in range(n):
        token = int(runner.forward([token], keep=1)[-1].argmax())
        tokens.append(token)
    return (time.perf_counter() - started) / n * 1000, tokens


def _block(runner: CachedModel, n: int) -> float:
    runner.reset()
    runner.forward(PROMPT, keep=1)
    started = time.perf_counter()
    for _ in range(n):
        runner.forward([5, 6, 7, 8, 9], keep=5)
        runner.truncate(len(PROMPT))
    return (time.perf_counter() - started) / n * 1000


def _interleaved(rounds: int, new: Callable[[], Any], old: Callable[[], Any]) -> tuple[list[Any], list[Any]]:
    got: tuple[list[Any], list[Any]] = ([], [])
    for r in range(rounds):
        order = ((0, new), (1, old)) if r % 2 == 0 else ((1, old), (0, new))
        for at, run in order:
            got[at].append(run())
    return got


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", nargs="?", default="default")
    parser.add_argument("--without", choices=("mlp", "split"), required=True)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--steps", type=int, default=24)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    loaded = load_model(args.model, device="cpu")
    new = CachedModel(loaded.model, loaded.vocab_size)
    old = _old_runner(loaded.model, loaded.vocab_size, args.without)
    if new.lean is None or old.lean is None:
        print("this model's passes are not lean passes: nothing to compare")
        return 1
    calls = [sum(1 for layer in r.lean.layers if layer.block is not None) for r in (new, old)]  # type: ignore[union-attr]
    whole = [sum(1 for layer in r.lean.layers if layer.block is not None and layer.block.mlp) for r in (new, old)]  # type: ignore[union-attr]
    print(f"{loaded.weights_label}; layers in one call: new {calls[0]}, old {calls[1]} (whole: {whole[0]}, {whole[1]})"
          f" of {len(new.lean.layers)}")
    steps = _interleaved(args.rounds, lambda: _steps(new, args.steps), lambda: _steps(old, args.steps))
    same = all(tokens == steps[0][0][1] for side in steps for _, tokens in side)
    a, b = (statistics.median(ms for ms, _ in side) for side in steps)
    print(f"one-token step: new {a:.2f} ms, old {b:.2f} ms, new ÷ old {a / b:.3f}; same tokens: {same}")
    blocks = _interleaved(max(2, args.rounds // 2), lambda: _block(new, 6), lambda: _block(old, 6))
    a, b = (statistics.median(side) for side in blocks)
    print(f"5-token pass: new {a:.2f} ms, old {b:.2f} ms, new ÷ old {a / b:.3f}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
