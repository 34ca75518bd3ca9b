"""Where a forward pass goes: milliseconds per pass over m = 1 / 2 / 4 / 8 tokens, split by part.

    python tools/pass_profile.py                       # the bundled model, bf16, 1 thread
    python tools/pass_profile.py --dtype float32 --rows 1,4 --repeat 30
    python tools/pass_profile.py --weights int4        # a weights form (auto, int4, int8, bf16, fp32)
    python tools/pass_profile.py --json

Method (one, for every part): clocks around each module's forward (forward pre- and
post-hooks on every module) and around two functions inside the attention module (the
attention function and the KV-cache update, wrapped). Each part gets its *exclusive* time (its
own clock minus the clocks of the timed parts inside it), so the parts add up to the hooked
pass. The clock is this thread's CPU time (``time.thread_time_ns``; torch runs its one intra-op
thread in the caller), so what other processes take from a shared machine is left out;
``--clock wall`` uses ``time.perf_counter_ns``. A pass is what verification runs: roll the
cache back to a fixed context (``--context`` tokens of a real prompt) and feed m tokens, every
row's logits kept (``CachedModel.feed_at``). "Python/other" is the pass minus every timed part:
the decoder layers' and the model's own code (residual adds, masks, positions, the cache
object), the runner's.

The lean pass the app runs for such blocks (``runners/lean.py``) calls no module, so no hook
sees its parts: the parts are clocked on transformers' path over the same model (the same
kernels and the same bits, more Python around them), and "pass (no hooks)" is the app's own
pass, lean where it applies; ``--against transformers`` times the two paths side by side.

The hooks cost time themselves (two clock reads and a list push per module call): the table
also gives the pass timed with no hooks registered, interleaved with the hooked passes; the
difference is what the profile adds, spread over the parts. ``--against`` runs a second way of
making the pass (a copy of the same model, for the noise of the comparison itself; separate
projections; the earlier row-wise attention) pass for pass interleaved with the current one.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.engine.config import LoadOptions
from app.engine.models.loading import LoadedModel, bundled_model_path, load_model
from app.engine.runners import cpu_kernels, kv
from app.engine.runners.kv import CachedModel
from app.engine.runners.llama_family import as_transformers
from app.engine.runners.threads import apply_threads

# the clock every part is timed with: this thread's CPU time (the default: on a machine where
# other processes take the cores, wall time measures the scheduler) or wall time
CLOCKS = {"cpu": time.thread_time_ns, "wall": time.perf_counter_ns}
CLOCK = [time.thread_time_ns]
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
            self.stack.append([part, CLOCK[0](), 0])

    def leave(self) -> None:
        if not self.on or not self.stack:
            return
        part, started, children = self.stack.pop()
        took = CLOCK[0]() - started
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
    modules = (*vars(cache_utils).values(), *vars(kv).values())
    layer_classes = [c for c in modules if isinstance(c, type) and "update" in vars(c)]
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


@dataclass
class Variant:
    """One way of running the pass: a model and what is switched on around each of its passes."""

    name: str
    loaded: LoadedModel
    runner: CachedModel
    around: Callable[[], AbstractContextManager[object]] = nullcontext
    filling: Callable[[], AbstractContextManager[object]] = nullcontext  # around the context's pass
    # the runner the hooked pass runs on: transformers' path (the lean pass, runners/lean.py,
    # calls no module hooks), with the same model and weights; None: ``runner``
    split: CachedModel | None = None
    plain: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    hooked: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    parts: dict[int, dict[str, list[float]]] = field(default_factory=lambda: defaultdict(lambda: defaultdict(list)))

    def timed_pass(self, context: int, feed: list[int], clocks: Clocks | None) -> int:
        """ns of one pass; with ``clocks``, the parts clocked too (hooks on for this pass only)."""
        runner = self.split if clocks is not None and self.split is not None else self.runner
        with self.around(), hooked(runner.model, clocks) if clocks is not None else nullcontext():
            if clocks is not None:
                clocks.spent.clear()
                clocks.on = True
            started = CLOCK[0]()
            runner.feed_at(context, feed)
            took = CLOCK[0]() - started
            if clocks is not None:
                clocks.on = False
        return took

    def measure(self, context: int, feed: list[int], clocks: Clocks) -> None:
        """One pass without the clocks' counting, one with; both recorded."""
        m = len(feed)
        self.plain[m].append(self.timed_pass(context, feed, None) / 1e6)
        total = self.timed_pass(context, feed, clocks)
        self.hooked[m].append(total / 1e6)
        timed = sum(clocks.spent.values())
        for part in PARTS:
            ns = clocks.spent.get(part, 0) if part != "Python/other" else total - timed
            self.parts[m][part].append(ns / 1e6)

    def table(self) -> dict[int, dict[str, float]]:
        """Median ms per part and per pass, for each m."""
        result: dict[int, dict[str, float]] = {}
        for m, parts in self.parts.items():
            result[m] = {part: statistics.median(values) for part, values in parts.items()}
            result[m]["pass (hooked)"] = statistics.median(self.hooked[m])
            result[m]["pass (no hooks)"] = statistics.median(self.plain[m])
        return result


@contextmanager
def stock_rows() -> Iterator[None]:
    """The row-wise attention as it was before its rows called SDPA directly: each row (one-token
    decoding's too) through transformers' ``sdpa_attention_forward``, one ``torch.cat`` of rows."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    def one_row_at_a_time(module: nn.Module, query: Any, key: Any, value: Any, **kwargs: Any) -> Any:
        q_len, kv_len = query.shape[2], key.shape[2]
        rows = []
        for i in range(q_len):
            end = kv_len - q_len + i + 1
            row = query[:, :, i : i + 1]
            rows.append(sdpa_attention_forward(module, row, key[:, :, :end], value[:, :, :end], None, **kwargs)[0])
        return torch.cat(rows, dim=1)

    from app.engine.runners import lean

    saved = cpu_kernels.one_row_at_a_time
    cpu_kernels.one_row_at_a_time = lean.one_row_at_a_time = one_row_at_a_time  # the lean pass imported it
    try:
        yield
    finally:
        cpu_kernels.one_row_at_a_time = lean.one_row_at_a_time = saved


@contextmanager
def bf16_rows() -> Iterator[None]:
    """One-row attention in the model's dtype, as before ``rows_sdpa`` computed a bf16 block in
    fp32: each row's SDPA call on the bf16 query, keys and values."""
    from torch.nn import functional as F

    from app.engine.runners import lean

    def rows_sdpa(query: Any, key: Any, value: Any, scale: Any, gqa: bool) -> Any:
        q_len, kv_len = query.shape[2], key.shape[2]
        outs = [
            F.scaled_dot_product_attention(
                query[:, :, i : i + 1], key[:, :, : kv_len - q_len + i + 1], value[:, :, : kv_len - q_len + i + 1],
                scale=scale, enable_gqa=gqa,
            )
            for i in range(q_len)
        ]  # fmt: skip
        return outs[0] if q_len == 1 else torch.cat(outs, dim=2)

    saved = cpu_kernels.rows_sdpa
    cpu_kernels.rows_sdpa = lean.rows_sdpa = rows_sdpa
    try:
        yield
    finally:
        cpu_kernels.rows_sdpa = lean.rows_sdpa = saved


@contextmanager
def aten_rows() -> Iterator[None]:
    """One-row attention by ATen's SDPA in fp32 (``rows_sdpa`` before SpecChat's ``attend``)."""
    saved = cpu_kernels.native_attention
    cpu_kernels.native_attention = lambda *args: False
    try:
        yield
    finally:
        cpu_kernels.native_attention = saved


@contextmanager
def dynamic() -> Iterator[None]:
    """Caches made meanwhile are transformers' own ``DynamicCache`` (the cache before GrowingLayer)."""
    from transformers import DynamicCache

    saved = kv._new_cache
    kv._new_cache = lambda model: (DynamicCache(config=model.config), None)
    try:
        yield
    finally:
        kv._new_cache = saved


AGAINST = {
    "copy": "a second copy of the same model, run the same way (what the comparison itself gives)",
    "dynamic-cache": "transformers' DynamicCache (torch.cat of the whole cache every pass) for every layer",
    "before": "the pass as it was before issue 18: fp32 prepacked, transformers' path, the earlier attention rows, "
    "DynamicCache",
    "stock-rows": "row-wise attention through transformers' sdpa_attention_forward, row by row",
    "bf16-rows": "one-row attention computed in bf16 (before it was computed in fp32 on the CPU)",
    "transformers": "every pass through transformers' model code (the lean pass off)",
    "small-pages": "a second copy of the model whose weights stay in 4 KiB pages (no huge pages)",
    "aten-rows": "one-row attention by ATen's SDPA in fp32, the keys and values cast each pass (before "
    "SpecChat's attend kernel)",
    "attention-ops": "the lean pass's attention as torch ops (rotary, cache update, then the attend kernel's rows), "
    "not one attend_layer call",
    "separate-calls": "the lean pass calling q, k, v and gate, up one layer at a time (each quantizing its "
    "own copy of the input), not side by side in one kernel call (and so its attention as torch ops too)",
    "torch-kernels": "a second copy of the model whose int4 / int8 layers run torch's kernels (bf16 activations), "
    "not SpecChat's (int8 activations)",
}


def load(args: argparse.Namespace) -> LoadedModel:
    """The model as the app loads it (``--weights``: the form, as ``generate --weights``)."""
    source = str(bundled_model_path()) if args.source == "default" else args.source
    return load_model(source, device="cpu", dtype=args.dtype, weights=args.weights, draft=args.draft)


def variants(args: argparse.Namespace) -> list[Variant]:
    """What runs now, and (``--against``) what it is compared with."""
    current = load(args)
    now = CachedModel(current.model, current.vocab_size)
    # transformers' path over the very same parts (a cached GGUF loads as SpecChat's own classes)
    theirs = as_transformers(current.model)
    split = CachedModel(theirs, current.vocab_size, lean=False) if now.lean is not None else None
    made = [Variant("now", current, now, split=split)]
    if args.against == "copy":
        other = load(args)
        made.append(Variant(args.against, other, CachedModel(other.model, other.vocab_size)))
    elif args.against == "dynamic-cache":
        made.append(Variant(args.against, current, CachedModel(current.model, current.vocab_size), filling=dynamic))
    elif args.against == "stock-rows":
        made.append(Variant(args.against, current, CachedModel(current.model, current.vocab_size), stock_rows))
    elif args.against == "bf16-rows":
        made.append(Variant(args.against, current, CachedModel(current.model, current.vocab_size), bf16_rows))
    elif args.against == "small-pages":
        from app.engine.runners import huge_pages

        saved = huge_pages.why_not_huge
        huge_pages.why_not_huge = lambda mode=None: "switched off for the comparison"
        try:
            other = load(args)
        finally:
            huge_pages.why_not_huge = saved
        made.append(Variant(args.against, other, CachedModel(other.model, other.vocab_size)))
    elif args.against == "torch-kernels":
        from app.engine.runners import native

        saved_loaded = native._loaded
        native._loaded = lambda: (None, "switched off for the comparison")  # type: ignore[assignment]
        try:
            other = load(args)
        finally:
            native._loaded = saved_loaded
        made.append(Variant(args.against, other, CachedModel(other.model, other.vocab_size)))
    elif args.against == "aten-rows":
        made.append(Variant(args.against, current, CachedModel(current.model, current.vocab_size), aten_rows))
    elif args.against == "attention-ops":
        ops = CachedModel(current.model, current.vocab_size)
        for layer in ops.lean.layers if ops.lean is not None else ():
            layer.one_call = False
        made.append(Variant(args.against, current, ops))
    elif args.against == "separate-calls":
        apart = CachedModel(current.model, current.vocab_size)
        for layer in apart.lean.layers if apart.lean is not None else ():
            layer.qkv = layer.gate_up = None
        made.append(Variant(args.against, current, apart))
    elif args.against == "transformers":
        made.append(Variant(args.against, current, CachedModel(theirs, current.vocab_size, lean=False)))
    elif args.against == "before":
        other = load(argparse.Namespace(**{**vars(args), "dtype": "float32", "weights": "fp32"}))
        before = CachedModel(other.model, other.vocab_size, lean=False)  # transformers' path, as then
        made.append(Variant(args.against, other, before, stock_rows, dynamic))
    return made


def answer(args: argparse.Namespace) -> float:
    """CPU ms per decoded token of a whole greedy target-only answer (the engine's loop included)."""
    from app.engine import Engine, GenerationConfig

    source = str(bundled_model_path()) if args.source == "default" else args.source
    options = LoadOptions(device="cpu", dtype=args.dtype, weights=args.weights, threads=args.threads)
    engine = Engine.load(source, None, options)
    config = GenerationConfig(max_new_tokens=args.answer, speculative=False)
    engine.generate(PROMPT, GenerationConfig(max_new_tokens=4, speculative=False))
    per_token = []
    for _ in range(3):
        engine.reset()
        started = time.thread_time_ns()
        stats = engine.generate(PROMPT, config).stats
        took = time.thread_time_ns() - started
        share = stats.decode_s / max(stats.prefill_s + stats.decode_s, 1e-9)  # the prompt's pass left out
        per_token.append(took * share / 1e6 / max(stats.new_tokens - 1, 1))
    return statistics.median(per_token)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--source", default="default", help="a model (default: the bundled GGUF)")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--weights", default=None, help="the weights form: auto, int4, int8, bf16, fp32")
    parser.add_argument("--rows", default="1,2,4,8")
    parser.add_argument("--context", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--threads", default="1")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--draft", action="store_true", help="load it as a draft model is loaded (its own form)")
    parser.add_argument("--clock", choices=list(CLOCKS), default="cpu", help="this thread's CPU time, or wall time")
    parser.add_argument(
        "--against", choices=list(AGAINST), help="also run the pass another way, pass for pass interleaved: "
        + "; ".join(f"{k}: {v}" for k, v in AGAINST.items()),
    )  # fmt: skip
    parser.add_argument(
        "--answer", type=int, default=0, metavar="N",
        help="also answer the prompt target-only (N new tokens, 3 times, greedy) and give the CPU ms per "
        "decoded token of the whole answer: beside the pass over 1 token, what the loop around it costs",
    )  # fmt: skip
    args = parser.parse_args(argv)
    apply_threads(args.threads)
    CLOCK[0] = CLOCKS[args.clock]
    clocks = Clocks()
    rows = [int(r) for r in args.rows.split(",")]
    runs = variants(args)
    ids = runs[0].loaded.tokenizer(PROMPT * (4 + args.context // 40))["input_ids"]
    context, rest = ids[: args.context], ids[args.context :]
    for run in runs:
        with run.filling():
            for runner in (run.runner, run.split):
                if runner is not None:
                    runner.forward(context, keep=1)
    for m in rows:
        for run in runs:
            for _ in range(3):
                run.timed_pass(len(context), rest[:m], None)
        for _ in range(args.repeat):
            for run in runs:
                run.measure(len(context), rest[:m], clocks)
    answer_ms = answer(args) if args.answer else None
    report = {
        run.name: {"form": run.loaded.kernels.path if run.loaded.kernels else run.loaded.dtype, "ms": run.table()}
        for run in runs
    }
    if args.json:
        head = {"model": runs[0].loaded.name, "threads": args.threads, "clock": args.clock}
        print(json.dumps({**head, **report, "answer_cpu_ms_per_token": answer_ms}))
        return 0
    for run in runs:
        table = report[run.name]["ms"]
        print(
            f"{run.name}: {run.loaded.name} · {report[run.name]['form']} · {args.threads} thread(s) · "
            f"context {len(context)} · median of {args.repeat} · {args.clock} clock"
            + (f" · {AGAINST[run.name]}" if run.name in AGAINST else "")
        )
        print(f"{'ms per pass':<20}" + "".join(f"{f'm = {m}':>10}" for m in rows))
        for part in (*PARTS, "pass (hooked)", "pass (no hooks)"):
            print(f"{part:<20}" + "".join(f"{table[m][part]:>10.2f}" for m in rows))
        print()
    if answer_ms is not None:
        print(
            f"a whole target-only answer: {answer_ms:.2f} CPU ms per decoded token ({args.answer} tokens, median of 3)"
        )
    if len(runs) == 2:
        now, other = (report[r.name]["ms"] for r in runs)
        ratio = "".join(f"{now[m]['pass (no hooks)'] / other[m]['pass (no hooks)']:>10.3f}" for m in rows)
        print(f"{'now ÷ ' + runs[1].name:<20}{ratio}   (pass without hooks)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
