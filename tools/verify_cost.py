"""What a target pass costs against the number of tokens it verifies, and whether a block's
logits equal one-at-a-time decoding, for stock and CPU-kernel variants of one model.

    python tools/verify_cost.py [--source default] [--reps 7] [--threads 1] [--bf16]
    python tools/verify_cost.py --weights int4,int8,bf16,fp32 [--reps 3] [--threads 1]

``--weights``: the weights forms instead (each as the app loads it: its kernels, row-wise
attention), passes over 1 / 2 / 4 / 8 tokens, and the RSS of a fresh process per form.

Prints one markdown table: ms per pass (median, warm cache, variants interleaved so a busy
machine affects all alike), the max abs logit difference block vs one-at-a-time (8-token
blocks after 3 random contexts, and the prompt's pass with 4 drafts folded in), and the RSS of
a process with and without the kernels. Timing lives here, never in a test.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.engine.models.loading import LoadedModel, load_model
from app.engine.runners.cpu_kernels import PACKED_DTYPES, apply_cpu_kernels
from app.engine.runners.kv import CachedModel
from app.engine.runners.threads import apply_threads

BLOCKS = (1, 2, 4, 6, 8)
CONTEXT = 100


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        line = next(line for line in f if line.startswith("VmRSS:"))
    return int(line.split()[1]) / 1024


def load_variant(source: str, dtype: str, kernels: str) -> LoadedModel:
    """kernels: "stock", "prepacked" (SDPA attention) or "rowwise" (prepacked + row-wise);
    "form": ``dtype`` is a weights form, loaded as the app loads it."""
    if kernels == "form":
        return load_model(source, device="cpu", weights=dtype)
    loaded = load_model(source, device="cpu", dtype=dtype, cpu_kernels=False)
    if kernels != "stock":
        apply_cpu_kernels(loaded.model, rowwise=kernels == "rowwise")
    return loaded


def process_rss_mb(source: str, cpu_kernels: bool, form: str = "fp32") -> float:
    """VmRSS of a fresh process that loaded the model (in ``form``) and ran it once (weights paged in)."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); from tools.verify_cost import rss_mb;"
        "from app.engine.models.loading import load_model; from app.engine.runners.kv import CachedModel;"
        "m = load_model(sys.argv[2], device='cpu', weights=sys.argv[4], cpu_kernels=sys.argv[3] == '1');"
        "CachedModel(m.model, m.vocab_size).forward(list(range(40)), keep=1); print(rss_mb())"
    )
    root = str(Path(__file__).resolve().parents[1])
    out = subprocess.run([sys.executable, "-c", code, root, source, str(int(cpu_kernels)), form],
                         capture_output=True, text=True, check=True).stdout
    return float(out.split()[-1])


def pass_ms(runner: CachedModel, context: list[int], block: list[int]) -> float:
    runner.truncate(len(context))
    started = time.perf_counter()
    runner.forward(block, keep=len(block))
    return (time.perf_counter() - started) * 1000


def max_logit_difference(loaded: LoadedModel, seed: int = 0) -> tuple[float, float]:
    """(8-token block vs one at a time, prompt + 4 folded drafts vs prompt then singles)."""
    g = torch.Generator().manual_seed(seed)
    block_diff = fold_diff = 0.0
    for length in (30, 90, 180):
        ids = torch.randint(0, loaded.vocab_size, (length + 8,), generator=g).tolist()
        prompt, block = ids[:length], ids[length:]
        a, b = CachedModel(loaded.model, loaded.vocab_size), CachedModel(loaded.model, loaded.vocab_size)
        a.forward(prompt, keep=1)
        b_first = b.forward(prompt, keep=1)
        together = a.forward(block, keep=len(block))
        alone = torch.cat([b.forward([t], keep=1) for t in block])
        block_diff = max(block_diff, (together - alone).abs().max().item())
        folded = CachedModel(loaded.model, loaded.vocab_size).forward(prompt + block[:4], keep=5)
        fold_diff = max(fold_diff, (folded - torch.cat([b_first, alone[:4]])).abs().max().item())
    return block_diff, fold_diff


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default="default")
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--threads", default="auto")
    parser.add_argument("--bf16", action="store_true", help="also bfloat16, stock and with the kernels")
    parser.add_argument("--weights", default="", metavar="FORMS", help="weights forms, e.g. int4,int8,bf16,fp32")
    args = parser.parse_args()
    threads = apply_threads(args.threads)
    global BLOCKS
    variants = [("float32", "stock"), ("float32", "prepacked"), ("float32", "rowwise")]
    if args.weights:
        BLOCKS = (1, 2, 4, 8)
        variants = [(form.strip(), "form") for form in args.weights.split(",") if form.strip()]
    elif args.bf16:
        variants += [("bfloat16", "stock"), ("bfloat16", "rowwise")]
    loaded = {v: load_variant(args.source, *v) for v in variants}
    g = torch.Generator().manual_seed(1)
    context = torch.randint(0, 1000, (CONTEXT,), generator=g).tolist()
    block = torch.randint(0, 1000, (max(BLOCKS),), generator=g).tolist()
    runners = {v: CachedModel(m.model, m.vocab_size) for v, m in loaded.items()}
    for runner in runners.values():
        runner.forward(context, keep=1)
        for n in BLOCKS:  # warm-up: one-off kernel set-up per shape
            pass_ms(runner, context, block[:n])
    times: dict[tuple[str, str], dict[int, list[float]]] = {v: {n: [] for n in BLOCKS} for v in variants}
    for _ in range(args.reps):
        for n in BLOCKS:
            for v in variants:
                times[v][n].append(pass_ms(runners[v], context, block[:n]))
    print(f"{loaded[variants[0]].name}, {CONTEXT}-token context, {threads} thread(s), median of {args.reps}\n")
    print("| dtype | linears + attention | " + " | ".join(f"{n} tok" for n in BLOCKS)
          + " | max abs Δlogit, block | same, prompt pass |")
    print("|---" * (len(BLOCKS) + 4) + "|")
    for v in variants:
        medians = " | ".join(f"{statistics.median(times[v][n]):.0f}" for n in BLOCKS)
        block_diff, fold_diff = max_logit_difference(loaded[v])
        print(f"| {v[0]} | {v[1]} | {medians} | {block_diff:.1e} | {fold_diff:.1e} |")
    if args.weights:
        print("\n(ms per target pass; each form as the app loads it)")
        for form, _ in variants:
            print(f"RSS after loading {form} and one pass: {process_rss_mb(args.source, True, form):.0f} MB")
        return
    packed = [str(d).removeprefix("torch.") for d in PACKED_DTYPES]
    print(f"\n(ms per target pass; kernels apply to {', '.join(packed)} on the CPU)")
    stock, kernels = (process_rss_mb(args.source, k) for k in (False, True))
    print(
        f"RSS after loading and one pass: stock {stock:.0f} MB, "
        f"CPU kernels {kernels:.0f} MB ({kernels - stock:+.0f} MB)"
    )


if __name__ == "__main__":
    main()
