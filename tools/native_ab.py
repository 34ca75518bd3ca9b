"""SpecChat's linear kernels against another build of them, call for call interleaved in one
process: microseconds per call (median) at each form, shape, row count and thread count.

    python tools/native_ab.py                              # this tree's q8mm.c against main's
    python tools/native_ab.py --against REV --repeat 31    # against q8mm.c at a git revision
    python tools/native_ab.py --split                      # 1 against 2 threads, the threshold lifted
    python tools/native_ab.py --forms q4k q6k --rows 1 2 3 # the K-quants at a 1.5B's shapes
    python tools/native_ab.py --forms q4k-draft --rows 1 16 # Q4_K at a 0.5B draft's (K = 896: a tail)
    python tools/native_ab.py --forms q4k --from-memory 600 # each call's weights read from memory

By default a call's weights are in cache (the same weights call after call); ``--from-memory MB``
(the K-quants) rotates each call over copies of them filling MB, so each call reads its weights
from memory, as a pass of a model larger than the caches does. The other build is compiled from
``git show REV:app/engine/runners/native/q8mm.c`` into a temporary folder and loaded as a second
module; its calls are made with the argument order of that revision (before the seam: ``q4_mm(x, M,
K, rows, 0, 0, N, y, threads, vnni)``). ``--split`` builds this tree's source with ``THREAD_WORK``
0 (every call split) and times 1 and 2 threads over a range of widths: where two threads start to
pay is where ``THREAD_WORK`` belongs.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.engine.runners import native
from app.engine.runners.quant import Int4Linear, Int8Linear, Q4KLinear, Q6KLinear, q4k_parts

Call = Callable[[], None]


def built(source: str, tmp: Path, name: str, defines: tuple[str, ...] = ()) -> Any:
    """The module built from ``source`` (C text) with ``defines``."""
    path = tmp / f"{name}.c"
    path.write_text(source)
    target = tmp / name / "_q8mm.so"
    saved = native.SOURCE
    native.SOURCE = path
    try:
        native.build(target, defines)
    finally:
        native.SOURCE = saved
    return native._load(target)


Made = Int4Linear | Int8Linear | Q4KLinear | Q6KLinear
# each form's shapes: a 0.5B's MLP and a 1.5B's (Q6_K: its down and a fifth of its head, as a
# Q4_K_M file holds them); q4k-draft: the 0.5B draft's Q4_K gate | up, q | k | v and head (36,230
# rows, ``draft_head``), K = 896 no multiple of 256
SHAPES = {
    "int4": ((4864, 896), (896, 4864)),
    "int8": ((4864, 896), (896, 4864)),
    "q4k": ((8960, 1536), (1536, 8960)),
    "q4k-draft": ((9728, 896), (1152, 896), (36230, 896)),
    "q6k": ((1536, 8960), (32768, 1536)),
}


def layer(form: str, n: int, k: int) -> Made:
    weight = torch.randn(n, k, generator=torch.Generator().manual_seed(n + k)) * 0.05
    kinds = {"int4": Int4Linear, "int8": Int8Linear, "q4k": Q4KLinear, "q4k-draft": Q4KLinear, "q6k": Q6KLinear}
    return kinds[form].from_float(weight)


def old_call(module: Any, made: Made, x: torch.Tensor, y: torch.Tensor, threads: int) -> Call:
    """A call with the argument order before the seam (int4 and int8: Q4_K came after it)."""
    m, k, n = x.shape[0], made.in_features, made.out_features
    path = native.path()

    def tail() -> tuple[int, ...]:  # y's address read at each call: the call holds y (see new_call)
        return (n, y.data_ptr(), threads, path)

    if isinstance(made, Int4Linear):
        return lambda: module.q4_mm(x.data_ptr(), m, k, made.packed.data_ptr(), 0, 0, *tail())
    scales = made.scale.float().contiguous()
    return lambda: module.q8_mm(x.data_ptr(), m, k, made.q.data_ptr(), scales.data_ptr(), 0, *tail())


def new_call(
    module: Any, made: Made, x: torch.Tensor, y: torch.Tensor, threads: int, whole: bool = False, copies: int = 1
) -> Call:
    """A call with this tree's argument order (what ``calls.Matmul`` passes). A K-quant layer's rows
    are in this tree's layout: the times of another layout's kernel over the same bytes are what
    they would be over its own (the same loads and instructions), not its results. x's and y's
    addresses are read at each call, so the call holds them: addresses taken once outlived a y the
    caller had let go, and the kernel wrote into freed memory (glibc: "corrupted double-linked list").
    ``whole``: a build before Q4_K's partial last super-block, which reads a row over K = 896 as
    whole super-blocks (the same weights padded). ``copies``: a K-quant's rows copied that many
    times, the calls taking them in turn (``--from-memory``)."""
    m, k, n = x.shape[0], made.in_features, made.out_features
    path = native.path()

    def head() -> tuple[int, ...]:
        return (x.data_ptr(), m, k, y.data_ptr(), threads, path)

    if isinstance(made, Q4KLinear | Q6KLinear):
        call = module.q4k_mm if isinstance(made, Q4KLinear) else module.q6k_mm
        rows = made.rows
        if isinstance(made, Q4KLinear) and k % 256 and whole:
            rows = Q4KLinear.from_quantized(*q4k_parts(made.rows, k)).rows
        turn = itertools.cycle([rows] + [rows.clone() for _ in range(copies - 1)])
        return lambda: call(*head(), next(turn).data_ptr(), n)
    if isinstance(made, Int4Linear):
        return lambda: module.q4_mm(*head(), made.packed.data_ptr(), n)
    scales = made.scale.float().contiguous()
    return lambda: module.q8_mm(*head(), made.q.data_ptr(), scales.data_ptr(), n)


def interleaved(named: dict[str, Call], repeat: int) -> dict[str, list[float]]:
    """µs of each call of each, the calls taken in turn."""
    for call in named.values():
        call()  # warm: the weights in cache, the pool made
    samples: dict[str, list[float]] = {name: [] for name in named}
    for _ in range(repeat):
        for name, call in named.items():
            start = time.perf_counter_ns()
            call()
            samples[name].append((time.perf_counter_ns() - start) / 1000)
    return samples


def against(args: argparse.Namespace, tmp: Path) -> None:
    source = subprocess.run(
        ["git", "show", f"{args.against}:app/engine/runners/native/q8mm.c"], capture_output=True, text=True, check=True
    ).stdout
    before = built(source, tmp, "before")
    # the seam (x, M, K, y, threads, path, then the parts) is where the generic call says so
    before_call = new_call if "expects 6 arguments" in source else old_call
    whole = "Q4K_TAIL" not in source
    after = native.kernels()
    print(f"before: q8mm.c at {args.against}; after: this tree; median µs of {args.repeat} calls, interleaved")
    print(f"{'form':5} {'N x K':>11} {'rows':>4} {'thr':>3} {'before':>8} {'after':>8} {'after/before':>12}")
    for form in args.forms:
        for n, k in SHAPES[form]:
            made = layer(form, n, k)
            for m in args.rows:
                x = torch.randn(m, k).to(torch.bfloat16)
                y = torch.empty((m, n), dtype=torch.bfloat16)
                copies = 1
                if args.from_memory and isinstance(made, Q4KLinear | Q6KLinear):
                    copies = max(2, args.from_memory * 2**20 // made.rows.numel())
                for threads in (1, 2):
                    named = {
                        "before": (
                            new_call(before, made, x, y, threads, whole, copies) if before_call is new_call
                            else old_call(before, made, x, y, threads)
                        ),
                        "after": new_call(after, made, x, y, threads, copies=copies),
                    }
                    got = {name: statistics.median(t) for name, t in interleaved(named, args.repeat).items()}
                    ratio = got["after"] / got["before"]
                    shape = f"{form:5} {n:>5} x {k:<4} {m:>4} {threads:>3}"
                    print(f"{shape} {got['before']:8.1f} {got['after']:8.1f} {ratio:12.2f}")


def split(args: argparse.Namespace, tmp: Path) -> None:
    source = native.SOURCE.read_text()
    module = built(source, tmp, "split", ("THREAD_WORK=0",))
    print(f"this tree's kernels, every call split (THREAD_WORK 0); median µs of {args.repeat} calls, interleaved")
    print("(and the fastest call of each: what two threads give when the second core is free)")
    medians = f"{'1 thr':>8} {'2 thr':>8} {'2/1':>6}"
    print(f"{'form':5} {'N x K':>11} {'rows':>4} {'M·N·K':>9} {medians} {'min 1':>7} {'min 2':>7} {'2/1':>6}")
    for form in ("int4", "int8"):
        for n in (128, 256, 512, 1024, 2048, 4864):
            k = 896
            made = layer(form, n, k)
            for m in (1, 4):
                x = torch.randn(m, k).to(torch.bfloat16)
                y = torch.empty((m, n), dtype=torch.bfloat16)
                named = {"1": new_call(module, made, x, y, 1), "2": new_call(module, made, x, y, 2)}
                times = interleaved(named, args.repeat)
                got = {name: statistics.median(t) for name, t in times.items()}
                low = {name: min(t) for name, t in times.items()}
                shape = f"{form:5} {n:>5} x {k:<4} {m:>4} {m * n * k:>9}"
                medians = f"{got['1']:8.1f} {got['2']:8.1f} {got['2'] / got['1']:6.2f}"
                print(f"{shape} {medians} {low['1']:7.1f} {low['2']:7.1f} {low['2'] / low['1']:6.2f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", default="main", help="the git revision of q8mm.c to compare with")
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--split", action="store_true", help="1 against 2 threads, every call split")
    parser.add_argument("--forms", nargs="+", choices=sorted(SHAPES), default=["int4", "int8"])
    parser.add_argument("--rows", nargs="+", type=int, default=[1, 2, 4])
    parser.add_argument("--from-memory", type=int, default=0, metavar="MB",
                        help="K-quants: each call's weights from copies filling MB (read from memory)")
    args = parser.parse_args(argv)
    if native.kernels() is None:
        print(f"no kernels: {native.why_not()}", file=sys.stderr)
        return 1
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as folder:
        (split if args.split else against)(args, Path(folder))
    return 0


if __name__ == "__main__":
    sys.exit(main())
