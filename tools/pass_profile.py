"""Where a forward pass goes: milliseconds per pass over m = 1 / 2 / 4 / 8 tokens, split by part.

    python tools/pass_profile.py                       # the bundled model, bf16, 1 thread
    python tools/pass_profile.py --dtype float32 --rows 1,4 --repeat 30
    python tools/pass_profile.py --weights int4        # where the runner has weight forms
    python tools/pass_profile.py --json

Method (one, for every part): ``time.perf_counter_ns`` clocks around each module's forward
(forward pre- and post-hooks on every module) and around two functions inside the attention
module (the attention function and the KV-cache update, wrapped). Each part gets its
*exclusive* time (its own clock minus the clocks of the timed parts inside it), so the parts add
up to the hooked pass. A pass is what verification runs: roll the cache back to a fixed context
(``--context`` tokens of a real prompt) and feed m tokens, every row's logits kept
(``CachedModel.feed_at``). "Python/other" is the pass minus every timed part: the decoder layers'
and the model's own code (residual adds, masks, positions, the cache object), the runner's.

The hooks cost time themselves (two clock reads and a dict lookup per module call): the table
also gives the pass timed without hooks, interleaved with the hooked passes; the difference is
what the profile adds, spread over the parts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.engine.models.loading import bundled_model_path, load_model
from app.engine.runners.cpu_kernels import apply_threads
from app.engine.runners.kv import CachedModel

PARTS = (
    "linears", "attention kernel", "attention glue", "KV cache update", "rotary", "norms",
    "MLP activation", "LM head", "embedding", "Python/other",
)  # fmt: skip
PROMPT = (
    "Write a Python function is_prime(n) that returns whether n is a prime number, with a docstring "
    "and a few doctests. Then write it again with type hints and explain the difference in two lines."
)


def part_of(name: str, module: nn.Module, head: nn.Module | None) -> str | None:
    """The part a module's exclusive time counts for (None: its time goes to Python/other)."""
    cls = type(module).__name__
    if module is head:
        return "LM head"
    if isinstance(module, nn.Embedding):
        return "embedding"
    if "Norm" in cls:
        return "norms"
    if "Rotary" in cls:
        return "rotary"
    if cls.endswith("Attention"):
        return "attention glue"
    if cls.endswith("MLP"):
        return "MLP activation"
    if hasattr(module, "in_features") and hasattr(module, "out_features") or cls.endswith("Linear"):
        return "linears"
    return None


class Clocks:
    """Exclusive nanoseconds per part, from a stack of running clocks."""

    def __init__(self) -> None:
        self.spent: dict[str, int] = defaultdict(int)
        self.stack: list[list[Any]] = []  # [part, started, children's ns]
        self.on = False

    def enter(self, part: str | None) -> None:
        if self.on:
            self.stack.append([part, time.perf_counter_ns(), 0])

    def leave(self) -> None:
        if not self.on or not self.stack:
            return
        part, started, children = self.stack.pop()
        took = time.perf_counter_ns() - started
        if part is not None:
            self.spent[part] += took - children
            if self.stack:
                self.stack[-1][2] += took
        elif self.stack:  # an untimed module: its inner clocks count for the enclosing one
            self.stack[-1][2] += children

    def timed(self, part: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self.enter(part)
            try:
                return fn(*args, **kwargs)
            finally:
                self.leave()

        return wrapper


@contextmanager
def hooked(model: nn.Module, clocks: Clocks) -> Iterator[None]:
    """Clocks on every module and on the attention function and the cache update."""
    from transformers import cache_utils
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    handles = []
    for name, module in model.named_modules():
        if module is model:
            continue
        part = part_of(name, module, head)
        handles.append(module.register_forward_pre_hook(lambda m, a, p=part: clocks.enter(p)))
        handles.append(module.register_forward_hook(lambda m, a, o: clocks.leave()))
    mapping = ALL_ATTENTION_FUNCTIONS._global_mapping
    attention_name = model.config._attn_implementation
    attention_fn = mapping.get(attention_name)
    if attention_fn is not None:
        mapping[attention_name] = clocks.timed("attention kernel", attention_fn)
    layer_classes = [c for c in vars(cache_utils).values() if isinstance(c, type) and "update" in vars(c)]
    updates = {c: vars(c)["update"] for c in layer_classes if c.__name__.endswith("Layer")}
    for cls, fn in updates.items():
        cls.update = clocks.timed("KV cache update", fn)
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
        if attention_fn is not None:
            mapping[attention_name] = attention_fn
        for cls, fn in updates.items():
            cls.update = fn


def profile(runner: CachedModel, context: int, feed: list[int], repeat: int, clocks: Clocks) -> dict[str, float]:
    """Median ms per pass over ``feed`` after ``context`` cached positions, hooked and not, and
    the hooked pass's exclusive ms per part (medians over ``repeat`` passes)."""
    plain, hooked_total = [], []
    parts: dict[str, list[float]] = defaultdict(list)
    for _ in range(3):
        runner.feed_at(context, feed)
    for _ in range(repeat):
        started = time.perf_counter_ns()
        runner.feed_at(context, feed)
        plain.append((time.perf_counter_ns() - started) / 1e6)
        clocks.spent.clear()
        clocks.on = True
        started = time.perf_counter_ns()
        runner.feed_at(context, feed)
        total = time.perf_counter_ns() - started
        clocks.on = False
        hooked_total.append(total / 1e6)
        timed = sum(clocks.spent.values())
        for part in PARTS:
            ns = clocks.spent.get(part, 0) if part != "Python/other" else total - timed
            parts[part].append(ns / 1e6)
    result = {part: statistics.median(values) for part, values in parts.items()}
    result["pass (hooked)"] = statistics.median(hooked_total)
    result["pass (no hooks)"] = statistics.median(plain)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", default="default", help="a model (default: the bundled GGUF)")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--weights", default=None, help="the weights form, where the loader has one")
    parser.add_argument("--rows", default="1,2,4,8")
    parser.add_argument("--context", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--threads", default="1")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    apply_threads(args.threads)
    source = str(bundled_model_path()) if args.source == "default" else args.source
    options: dict[str, Any] = {"device": "cpu", "dtype": args.dtype}
    if args.weights:
        options["weights"] = args.weights
    loaded = load_model(source, **options)
    runner = CachedModel(loaded.model, loaded.vocab_size)
    ids = loaded.tokenizer(PROMPT * 4)["input_ids"]
    context, rest = ids[: args.context], ids[args.context :]
    runner.forward(context, keep=1)
    clocks = Clocks()
    rows = [int(r) for r in args.rows.split(",")]
    table: dict[int, dict[str, float]] = {}
    with hooked(loaded.model, clocks):
        for m in rows:
            table[m] = profile(runner, len(context), rest[:m], args.repeat, clocks)
    form = loaded.kernels.path if loaded.kernels is not None else loaded.dtype
    if args.json:
        print(json.dumps({"model": loaded.name, "form": form, "threads": args.threads, "ms": table}, indent=1))
        return 0
    print(f"{loaded.name} · {form} · {args.threads} thread(s) · context {len(context)} · median of {args.repeat}")
    print(f"{'ms per pass':<20}" + "".join(f"{f'm = {m}':>10}" for m in rows))
    for part in (*PARTS, "pass (hooked)", "pass (no hooks)"):
        print(f"{part:<20}" + "".join(f"{table[m][part]:>10.2f}" for m in rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
