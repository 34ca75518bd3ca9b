"""Time an LM head [vocab x hidden] in the forms tried for it, read from cold memory, 1 thread.

    python tools/head_forms.py                    # SmolLM2-135M's head: 49,152 x 576
    python tools/head_forms.py --shape 151936,1536 # Qwen2.5-1.5B's

Forms: the int8 weight-only kernel (what a Q8_0 head computes in), int4 groups of 32 (a lossy
requantization), and the int8 weights split exactly into two int4 matrices, q8 = 16·hi + lo with
hi = floor(q8 / 16) in [-8, 7] and lo in [0, 15]: hi's scale 16·s with zero 0, lo's scale s with
zero 8·s reproduce q8·s exactly, at the price of a second bf16 rounding of the output (each
kernel call returns bf16). Before each timed call 128 MB are written, so the head is read from
memory, as in a pass where the rest of the model's weights went through the caches first.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch


def cold_ms(fn, evict: torch.Tensor, n: int = 15) -> float:
    times = []
    for _ in range(n):
        evict.add_(1.0)
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def int4_pack(q: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """q [N, K] in 0..15, per-group scale / zero [N, K/32] → the CPU kernel's packed weight and scales."""
    packed = torch.ops.aten._convert_weight_to_int4pack_for_cpu(q.to(torch.int32).contiguous(), 1)
    scales_zeros = torch.stack([scale, zero], -1).transpose(0, 1).contiguous().to(torch.bfloat16)
    return packed, scales_zeros


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", default="49152,576")
    args = ap.parse_args()
    n, k = (int(v) for v in args.shape.split(","))
    torch.set_num_threads(1)
    torch.manual_seed(0)
    w = torch.randn(n, k) * 0.02
    s8 = (w.abs().amax(1) / 127).clamp(min=1e-8)
    q8 = (w / s8[:, None]).round().clamp(-127, 127).to(torch.int8)
    groups = k // 32
    g = w.reshape(n, groups, 32)
    lo_w, hi_w = g.amin(-1), g.amax(-1)
    scale4 = ((hi_w - lo_w) / 15).clamp(min=1e-6)
    q4 = ((g - lo_w[..., None]) / scale4[..., None]).round().clamp(0, 15).reshape(n, k)
    p4, sz4 = int4_pack(q4, scale4, lo_w + 8 * scale4)
    wide = q8.to(torch.int32)
    hi = torch.div(wide, 16, rounding_mode="floor")
    lo = wide - 16 * hi
    s = s8[:, None].expand(n, groups)
    p_hi, sz_hi = int4_pack(hi + 8, 16 * s, torch.zeros_like(s))
    p_lo, sz_lo = int4_pack(lo, s, 8 * s)
    evict = torch.zeros(128 * 1024 * 1024 // 4)
    mm4 = torch.ops.aten._weight_int4pack_mm_for_cpu
    print(f"head {n} x {k}, ms from cold memory, median of 15, 1 thread ({torch.backends.cpu.get_cpu_capability()})")
    for rows in (1, 2, 4):
        x = torch.randn(rows, k).to(torch.bfloat16)
        forms = {
            "int8": lambda x=x: torch.ops.aten._weight_int8pack_mm(x, q8, s8.to(torch.bfloat16)),
            "int4 (requantized)": lambda x=x: mm4(x, p4, 32, sz4),
            "int8 as two int4": lambda x=x: mm4(x, p_hi, 32, sz_hi) + mm4(x, p_lo, 32, sz_lo),
        }
        print(f"  m = {rows}: " + "   ".join(f"{name} {cold_ms(f, evict):.2f}" for name, f in forms.items()))
    x = torch.randn(1, k).to(torch.bfloat16)
    exact = x.float() @ (q8.float() * s8.to(torch.bfloat16).float()[:, None]).t()
    split = (mm4(x, p_hi, 32, sz_hi) + mm4(x, p_lo, 32, sz_lo)).float()
    one = torch.ops.aten._weight_int8pack_mm(x, q8, s8.to(torch.bfloat16)).float()
    print(f"  max |logit error| against the exact int8 product: int8 {(one - exact).abs().max():.4f}, "
          f"two int4 {(split - exact).abs().max():.4f} (largest logit {exact.abs().max():.2f})")


if __name__ == "__main__":
    main()
