"""SpecChat's own CPU kernels (app/engine/runners/native): int4 / int8 weights with int8
activations. What they promise: the arithmetic their header describes (checked against an fp64
emulation of it), rows that do not depend on the block they are computed in (exact block
verification), the same bits on the AVX-512 VNNI and AVX2 paths and on any thread split, and a
clear fallback to torch's kernels where they are not built."""

from __future__ import annotations

import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch.nn import functional as F

from app.engine.runners import native
from app.engine.runners.cpu_kernels import native_attention, rows_sdpa
from app.engine.runners.native import calls
from app.engine.runners.quant import (
    NATIVE_LAYOUT,
    Int4Linear,
    Int8Linear,
    Q4KLinear,
    Q6KLinear,
    SuperBlockLinear,
    int4_layout,
    pack_native,
    q4k_parts,
    q6k_parts,
    quantize_int4,
    side_by_side,
    side_by_side_kernel,
    side_by_side_runs,
    unpack_native,
)

X86 = platform.machine().lower() in ("x86_64", "amd64")
needs_kernels = pytest.mark.skipif(native.kernels() is None, reason=f"no native kernels: {native.why_not()}")


def quantized_rows(x: torch.Tensor) -> torch.Tensor:
    """The kernels' activation rounding, in fp64: per row, blocks of 32, scale max|x| / 127,
    round half to even, clamped to ±127; returned dequantized [M, K]."""
    m, k = x.shape
    blocks = x.float().reshape(m, k // 32, 32)
    amax = blocks.abs().amax(-1, keepdim=True)
    inverse = torch.where(amax > 0, 127.0 / amax, torch.zeros_like(amax))
    q = torch.round(blocks * inverse).clamp(-127, 127)  # torch.round: half to even, as nearbyintf
    return (q.double() * (amax.double() / 127)).reshape(m, k)


def reference(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return quantized_rows(x) @ weight.double().t()


def bf16_step(values: torch.Tensor) -> torch.Tensor:
    """One bf16 unit in the last place at each value (the output's rounding is half of it) plus
    the float accumulation's slack."""
    return values.abs() * 2.0**-7 + 1e-3


MAKE = {
    "int4": Int4Linear.from_float, "int8": Int8Linear.from_float, "q4k": Q4KLinear.from_float,
    "q6k": Q6KLinear.from_float,
}
FORMS = list(MAKE)
SUPER_BLOCK_FORMS = ("q4k", "q6k")  # their rows: over K rounded up to a multiple of 256


LINEAR_ORDER = """Each output's float order, on every path, row count, column and thread: two 8-lane
accumulators, E over the even blocks and O over the odd ones (a lone last block goes to E), lane l
of a block holding the exact integer sum of its bytes 4l..4l+3; per block acc += float(lane) ·
(weight scale · dx) (int4: the block's d times dx; int8: dx, the row scale s after the sum); then
one horizontal sum hsum8 (the two 128-bit halves added, then the upper pair onto the lower, then
lane 1 onto lane 0) of E + O for int8, times s, and of (E + O) + Z for int4, Z the zero term
sum_g mn_g · (dx·S)_g in 8 lanes (lane l: the groups g = l mod 8 in order); rounded to bf16 once.
Q4_K (q4k): rows quantized per 256 (one scale dk); per super-block s, 8 int32 lanes I (lane b: the
exact integer sum of its block b), A += (float(I) · (float(sc) · d)) · dk and Z += (float(m) · dmin) ·
(float(S) · dk), both in 8 lanes, S_b the block's sum of quantized x; y = hsum8(A) − hsum8(Z), rounded
to bf16 once.
Q6_K (q6k): rows quantized per 256 as for Q4_K, S_j the sum of each 16 quantized x; per super-block s,
8 int32 lanes J, lane l the sum over its 4 groups of 4 sub-blocks (4G..4G+3) of sc_j times the exact
sum of q·x over inputs 4(l mod 2)..4(l mod 2)+3 and 8 + those of sub-block j = 4G + l div 2, less
32 · (sc_2l·S_2l + sc_2l+1·S_2l+1); A += float(J) · (d · dk) in 8 lanes (float(J) exact below 2^24,
|J| < 2^26); y = hsum8(A), rounded to bf16 once."""


def quantized_rows_k(x: torch.Tensor) -> torch.Tensor:
    """The Q4_K kernel's activation rounding, in fp64: per row, blocks of 256 (x zero past its K,
    up to a whole block), scale max|x| / 127, x · (127 / max|x|) in fp32 rounded half to even,
    clamped to ±127; returned dequantized [M, K]."""
    m, k = x.shape
    padded = torch.nn.functional.pad(x.float(), (0, calls.super_blocks_k(k) - k))
    blocks = padded.reshape(m, -1, 256)
    amax = blocks.abs().amax(-1, keepdim=True)
    inverse = torch.where(amax > 0, torch.full_like(amax, 127.0) / amax, torch.zeros_like(amax))  # a true fp32 division
    q = torch.round(blocks * inverse).clamp(-127, 127)
    return (q.double() * (amax.double() / 127)).reshape(m, -1)[:, :k]


@needs_kernels
@pytest.mark.parametrize("k", [256, 512, 1536, 896, 32])
def test_q4k_computes_int8_rows_per_256_times_d_sc_q_minus_dmin_m(k):
    """Q4_K: within half a bf16 step of the fp64 sum over the same int8 rows (the integers are exact,
    the float slack is the fp32 sum's), the weight the file's: d·sc·q − dmin·m."""
    gen = torch.Generator().manual_seed(k)
    weight = torch.randn(48, k, generator=gen) * 0.05 + torch.rand(48, 1, generator=gen) * 0.1
    layer = Q4KLinear.from_float(weight)
    assert layer.in_features == k
    q, sc, m, d, dmin = q4k_parts(layer.rows, k)  # over K rounded up to 256: the padding's weights zero
    assert q.shape[1] == calls.super_blocks_k(k) and not q[:, k:].any()
    want = (q.float().reshape(48, -1, 32) * (d.repeat_interleave(8, 1) * sc.float())[..., None]
            - (dmin.repeat_interleave(8, 1) * m.float())[..., None]).reshape(48, -1)[:, :k]  # fmt: skip
    assert torch.equal(layer.dequantized(), want)
    assert float((want - weight).abs().max()) < 0.1 * float(weight.abs().max())  # a sane quantizer
    x = (torch.randn(6, k, generator=gen) * 2).to(torch.bfloat16)
    x[1, :256] = 0  # an all-zero super-block
    x[2, 7] = 500.0  # an outlier: its super-block's other values round to few levels
    got = layer(x).double()
    expected = quantized_rows_k(x) @ want.double().t()
    half_step = expected.abs() * 2.0**-8 + 1e-5
    assert ((got - expected).abs() <= half_step).all()


@needs_kernels
@pytest.mark.parametrize("form", SUPER_BLOCK_FORMS)
def test_a_super_block_rows_padding_adds_nothing_whatever_its_weights(form):
    """K = 896 (a 0.5B draft's width) runs over 1024: the kernel quantizes x past K to zero, so the
    padding's weights, whatever they are, add nothing (and the inputs' scale is their own)."""
    gen = torch.Generator().manual_seed(7)
    layer = MAKE[form](torch.randn(32, 896, generator=gen) * 0.05)
    if form == "q4k":
        q, sc, m, d, dmin = q4k_parts(layer.rows, 896)
        q[:, 896:] = torch.randint(0, 16, (32, 128), generator=gen, dtype=torch.uint8)
        sc[:, 28:], m[:, 28:] = 63, 17  # the padding's blocks of 32: their sub-scales and mins
        noisy = Q4KLinear.from_quantized(q, sc, m, d, dmin, k=896)
    else:
        q, sc6, d = q6k_parts(layer.rows, 896)
        q[:, 896:] = torch.randint(0, 64, (32, 128), generator=gen, dtype=torch.uint8)
        sc6[:, 56:] = -100  # the padding's sub-blocks of 16
        noisy = Q6KLinear.from_quantized(q, sc6, d, k=896)
    assert not torch.equal(noisy.rows, layer.rows)
    x = (torch.randn(5, 896, generator=gen) * 2).to(torch.bfloat16)
    assert torch.equal(noisy(x), layer(x))


@needs_kernels
@pytest.mark.parametrize("k", [896, 416, 32])
def test_a_q4k_rows_partial_last_super_block_computes_the_padded_rows_bits(k):
    """A Q4_K row over K inputs not a multiple of 256 stores its last super-block's nibbles only for
    the blocks of 32 it has (896: 3 · 152 + 24 + 4 · 16 bytes, not 4 · 152), and computes, on every
    path, row count (one-column tile, wide tile, AMX) and thread count, the bits of the same weights
    padded to a whole super-block over x padded with zeros."""
    gen = torch.Generator().manual_seed(k)
    n, kp, tail = 64, calls.super_blocks_k(k), k % 256 // 32
    layer = Q4KLinear.from_float(torch.randn(n, k, generator=gen) * 0.05)
    assert layer.rows.shape == (n, k // 256 * 152 + 24 + 16 * tail) == (n, calls.q4k_row_bytes(k))
    q, sc, m, d, dmin = q4k_parts(layer.rows, k)
    assert torch.equal(Q4KLinear.from_quantized(q, sc, m, d, dmin, k=k).rows, layer.rows)  # parts ↔ rows
    q[:, k:] = torch.randint(0, 16, (n, kp - k), generator=gen, dtype=torch.uint8)  # padding's nibbles: any
    padded = Q4KLinear.from_quantized(q, sc, m, d, dmin)
    assert padded.rows.shape == (n, kp // 256 * 152)
    avx2, vnni, amx = native.kernels().cpu()
    x = (torch.randn(20, k, generator=gen) * 3).to(torch.bfloat16)
    x[3, 5] = 300.0  # an outlier
    zeros = torch.nn.functional.pad(x, (0, kp - k))
    for path in [2, 1, 0] if amx else [1, 0] if vnni else [0]:
        short, whole = _matmul(layer, path), _matmul(padded, path)
        for rows in (1, 2, 3, 5, 8, 9, 12, 16, 20):  # AMX from AMX_ROWS (12)
            for threads in (1, 2):
                assert torch.equal(short(x[:rows], threads), whole(zeros[:rows], threads)), (path, rows, threads)


@needs_kernels
def test_q4k_sums_a_super_blocks_largest_products_without_overflow():
    """Every weight 15 and every sub-scale 63, against rows at +127 and -127 everywhere: a block's
    int16 lanes hold the most they ever hold (8 products pairs of 15 · 127: 30,480) and the sum is
    exact: y = K · d · 63 · 15 · (±1), rounded to bf16 once."""
    k = 512
    q = torch.full((4, k), 15, dtype=torch.uint8)
    sc = torch.full((4, k // 32), 63, dtype=torch.uint8)
    m = torch.zeros_like(sc)
    d = torch.full((4, k // 256), 2.0**-10)
    layer = Q4KLinear.from_quantized(q, sc, m, d, d.clone())
    x = torch.ones(3, k, dtype=torch.bfloat16)
    x[1] = -1
    x[2, ::2] = -1  # alternating signs: the exact sum 0
    want = torch.tensor([k * 2.0**-10 * 63 * 15, -k * 2.0**-10 * 63 * 15, 0.0]).to(torch.bfloat16)
    assert torch.equal(layer(x)[:, 0], want)


@needs_kernels
def test_q6k_sums_two_runs_largest_products_without_overflow():
    """Every weight 63 and every sub-scale 127, against rows at +127 and -127 everywhere: the int16
    lanes two runs share hold the most they ever hold (2 product pairs of 63 · 127: 32,004) and the
    sum is exact: y = K · d · 127 · (63 − 32) · (±1), rounded to bf16 once."""
    k = 512
    q = torch.full((4, k), 63, dtype=torch.uint8)
    sc = torch.full((4, k // 16), 127, dtype=torch.int8)
    layer = Q6KLinear.from_quantized(q, sc, torch.full((4, k // 256), 2.0**-10))
    x = torch.ones(3, k, dtype=torch.bfloat16)
    x[1] = -1
    x[2, ::2] = -1  # alternating signs: the exact sum 0
    want = torch.tensor([k * 2.0**-10 * 127 * 31, -k * 2.0**-10 * 127 * 31, 0.0]).to(torch.bfloat16)
    assert torch.equal(layer(x)[:, 0], want)


def random_q6k(n: int, k: int, gen: torch.Generator) -> Q6KLinear:
    """Q6_K over its whole range: q in 0..63 (q − 32 from −32 to 31), int8 sub-scales from −128
    to 127, d the fp16 values a file holds."""
    kp = calls.super_blocks_k(k)  # the padding past k: weights too, which x's zeros cancel
    q = torch.randint(0, 64, (n, kp), generator=gen, dtype=torch.uint8)
    sc = torch.randint(-128, 128, (n, kp // 16), generator=gen).to(torch.int8)
    d = (torch.rand(n, kp // 256, generator=gen) * 2e-3).half().float()
    return Q6KLinear.from_quantized(q, sc, d, k=k)


@needs_kernels
@pytest.mark.parametrize("k", [256, 512, 1536, 896])
def test_q6k_computes_int8_rows_per_256_times_d_sc_q_minus_32(k):
    """Q6_K: within half a bf16 step of the fp64 sum over the same int8 rows (the integers are exact,
    the float slack is the fp32 sum's), the weight the file's: d·sc·(q − 32), with the sub-scales
    and levels at their extremes too."""
    gen = torch.Generator().manual_seed(k)
    weight = torch.randn(48, k, generator=gen) * 0.05 + torch.rand(48, 1, generator=gen) * 0.1
    for layer in (Q6KLinear.from_float(weight), random_q6k(48, k, gen)):
        q, sc, d = q6k_parts(layer.rows, k)
        step = d.repeat_interleave(16, 1) * sc.float()  # d·sc per sub-block of 16
        want = ((q.float().reshape(48, -1, 16) - 32) * step[..., None]).reshape(48, -1)[:, :k]
        assert torch.equal(layer.dequantized(), want)
        x = (torch.randn(6, k, generator=gen) * 2).to(torch.bfloat16)
        x[1, :256] = 0  # an all-zero super-block
        x[2, 7] = 500.0  # an outlier: its super-block's other values round to few levels
        x[3, -256:] = 3.0  # one value all through: every S_j at 16 · 127, the offset's largest
        got = layer(x).double()
        expected = quantized_rows_k(x) @ want.double().t()
        half_step = expected.abs() * 2.0**-8 + 1e-5
        assert ((got - expected).abs() <= half_step).all()
    assert float((Q6KLinear.from_float(weight).dequantized() - weight).abs().max()) < 0.02 * float(weight.abs().max())


def test_q6k_rows_hold_each_weights_six_bits_where_the_kernel_reads_them():
    """Per half of 128 inputs, its weights in the kernel's order (run 2g + u of 32: weights 8u..8u+7
    of each sub-block 4g..4g+3 in turn, so input 16(4g + s) + 8u + t at 32(2g + u) + 8s + t); byte i of
    chunk c < 3 (32 bytes each) holds the weight at 32c + i in bits 0..5 and bits 2c, 2c + 1 of the
    one at 96 + i in bits 6, 7; then the 16 int8 sub-scales, then d in fp32."""
    gen = torch.Generator().manual_seed(6)
    q = torch.randint(0, 64, (2, 512), generator=gen, dtype=torch.uint8)
    sc = torch.randint(-128, 128, (2, 32), generator=gen).to(torch.int8)
    d = torch.rand(2, 2, generator=gen)
    rows = Q6KLinear.from_quantized(q, sc, d).rows
    assert rows.shape == (2, 2 * calls.Q6K_SUPER_BLOCK_BYTES)
    assert all(torch.equal(a, b) for a, b in zip(q6k_parts(rows, 512), (q, sc, d), strict=True))
    block = rows[1, calls.Q6K_SUPER_BLOCK_BYTES :]  # row 1's second super-block: inputs 256..511
    for i in (0, 37, 70, 101, 128 + 5, 128 + 127):
        half, natural = divmod(i, 128)
        sub, weight = divmod(natural, 16)
        j = 32 * (2 * (sub // 4) + weight // 8) + 8 * (sub % 4) + weight % 8  # where the kernel reads it
        if j < 96:
            assert int(block[96 * half + j]) & 0x3F == int(q[1, 256 + i]), i
        else:
            stored = [int(block[96 * half + 32 * c + j - 96]) >> 6 for c in range(3)]
            assert stored[0] | stored[1] << 2 | stored[2] << 4 == int(q[1, 256 + i]), i
    assert torch.equal(block[192:208].view(torch.int8), sc[1, 16:])
    assert float(block[208:].view(torch.float32)) == float(d[1, 1])


def test_the_kernels_are_built_on_an_x86_cpu_with_a_compiler():
    if not X86 or native.compiler() is None:
        pytest.skip("not an x86-64 machine with a C compiler")
    assert native.kernels() is not None, native.why_not()
    assert int4_layout() == NATIVE_LAYOUT
    assert "int8 activations" in native.describe()


@needs_kernels
@pytest.mark.parametrize("k", [64, 96, 576])  # 96: an odd number of groups (a lone last group)
def test_int4_computes_int8_rows_times_d_q_plus_mn(k):
    """int4: y = sum_g (d·dx)_g · I_g + sum_g mn_g · (dx·S)_g in ``LINEAR_ORDER``, within a bf16
    step of the fp64 sum over the same int8 rows."""
    gen = torch.Generator().manual_seed(k)
    weight = torch.randn(48, k, generator=gen) * 0.05
    q, scale, zero = quantize_int4(weight)
    layer = Int4Linear.from_quantized(q, scale, zero)
    assert layer.native
    exact_weight = layer.dequantized()  # d·q + mn, the bf16 scale and zero as the layer keeps them
    want = (q.float() - 8) * scale.to(torch.bfloat16).float().repeat_interleave(32, 1) + zero.to(
        torch.bfloat16
    ).float().repeat_interleave(32, 1)
    assert torch.allclose(exact_weight, want, atol=1e-6)
    x = torch.randn(5, k, generator=gen).to(torch.bfloat16)
    got = layer(x).double()
    expected = reference(x, exact_weight)
    assert ((got - expected).abs() <= bf16_step(expected)).all()
    # and the activations' rounding is small against bf16 activations: a sanity bound
    plain = x.double() @ exact_weight.double().t()
    assert (got - plain).abs().max() < 0.02 * plain.abs().max()


@needs_kernels
@pytest.mark.parametrize("k", [32, 96, 576])
def test_int8_computes_int8_rows_times_q_scale(k):
    """int8: y = s · sum_g dx_g · I_g in ``LINEAR_ORDER``, within a bf16 step of the fp64 sum."""
    gen = torch.Generator().manual_seed(k)
    layer = Int8Linear.from_float(torch.randn(40, k, generator=gen) * 0.05)
    assert layer.native
    x = torch.randn(3, k, generator=gen).to(torch.bfloat16)
    got = layer(x).double()
    expected = reference(x, layer.dequantized())
    assert ((got - expected).abs() <= bf16_step(expected)).all()


@needs_kernels
@pytest.mark.parametrize("form", ["int4", "int8"])
def test_a_layer_cast_after_it_was_built_computes_the_same(form):
    """A model is cast (``.to(dtype)``) after its layers are swapped: what the kernel reads is
    made from the layer's own buffers, never a float buffer the cast rewrote underneath it."""
    weight = torch.randn(64, 96, generator=torch.Generator().manual_seed(5))
    layer = Int4Linear.from_float(weight) if form == "int4" else Int8Linear.from_float(weight)
    x = torch.randn(3, 96).to(torch.bfloat16)
    before = layer(x)
    layer.to(torch.float32)  # the bf16 scales become fp32: the same values
    layer._native_fn = None  # and the kernel's view of them is made again
    assert torch.equal(layer(x), before)


def test_pack_native_round_trips_every_group_count():
    gen = torch.Generator().manual_seed(0)
    for k in (32, 64, 96, 160, 576):
        q = torch.randint(0, 16, (16, k), generator=gen, dtype=torch.uint8)
        packed = pack_native(q)
        assert packed.shape == (16, k // 2) and packed.dtype == torch.uint8
        assert torch.equal(unpack_native(packed), q)
    # the documented layout: byte j of a pair holds weight j of each group
    q = torch.arange(64, dtype=torch.uint8).remainder(16).reshape(1, 64)
    assert int(pack_native(q)[0, 3]) == (q[0, 3] | (q[0, 35] << 4))


@needs_kernels
@pytest.mark.parametrize("form", FORMS)
def test_rows_are_batch_invariant_and_the_same_on_every_path_and_thread_split(form):
    gen = torch.Generator().manual_seed(3)
    k, n = (416 if form in SUPER_BLOCK_FORMS else 96), 1040  # n: not a multiple of the thread split's chunks
    # (416: a whole super-block and one padded)
    weight = torch.randn(n, k, generator=gen) * 0.05
    layer = MAKE[form](weight)
    avx2, vnni, amx = native.kernels().cpu()
    paths = [2, 1, 0] if amx else [1, 0] if vnni else [0]  # AMX: q4k calls of AMX_ROWS rows and more
    x = (torch.randn(40, k, generator=gen) * 3).to(torch.bfloat16)
    x[7, :32] = 0  # an all-zero block
    x[9, 5] = 1000.0  # an outlier: its block's other values round to few levels
    kernels = {path: _matmul(layer, path) for path in paths}
    alone = [kernels[paths[0]](x[i : i + 1], threads=1)[0] for i in range(len(x))]
    for path in paths:
        for m in (1, 2, 3, 4, 5, 8, 9, 16, 40):
            block = kernels[path](x[:m], threads=1)
            for i in range(m):
                assert torch.equal(block[i], alone[i]), (form, path, m, i)


def _matmul(layer: Int4Linear | Int8Linear | SuperBlockLinear, path: int) -> calls.Matmul:
    if isinstance(layer, Q4KLinear):
        return calls.q4k_mm([layer.rows], layer.in_features, path=path)
    if isinstance(layer, Q6KLinear):
        return calls.q6k_mm([layer.rows], layer.in_features, path=path)
    if isinstance(layer, Int4Linear):
        return calls.q4_mm([layer.packed], layer.in_features, path=path)
    return calls.q8_mm([(layer.q, layer.scale.float().contiguous())], layer.in_features, path=path)


needs_amx = pytest.mark.skipif(
    native.kernels() is None or not native.kernels().cpu()[2], reason="a CPU without AMX-INT8 (or Linux refused it)"
)


@needs_amx
@pytest.mark.parametrize("n", [1040, 1044])  # whole tiles of 16 columns (AMX), and not (the VNNI tile)
def test_wide_q4k_calls_on_amx_have_the_bits_of_each_row_alone(n):
    """Q4_K calls of AMX_ROWS rows and more run on the tile unit when every part's columns are
    whole tiles of 16: each row equals the row fed alone (one row: the VNNI tile), over more rows
    than the accumulators' span (70 > AMX_SPAN) and with a part beside it (q | k | v)."""
    gen = torch.Generator().manual_seed(11)
    k = 1536 + 160  # six super-blocks and one padded
    first, second = (Q4KLinear.from_float(torch.randn(cols, k, generator=gen) * 0.05) for cols in (n, 256))
    both = calls.q4k_mm([first.rows, second.rows], k, path=2)
    alone = calls.q4k_mm([first.rows, second.rows], k, path=1)
    x = (torch.randn(70, k, generator=gen) * 3).to(torch.bfloat16)
    x[13, 256:512] = 0  # an all-zero super-block
    rows = [alone(x[i : i + 1], threads=1)[0] for i in range(len(x))]
    assert native.kernels().AMX_ROWS <= 16
    for m in (native.kernels().AMX_ROWS, 16, 17, 40, 70):
        block = both(x[:m], threads=1)
        for i in range(m):
            assert torch.equal(block[i], rows[i]), (n, m, i)


def _split_against_one_thread(form: str, seconds: float = 10.0, m: int = 4) -> tuple[bool, int]:
    """(every 2-thread call equals the 1-thread call bit for bit, the most threads one ran on)
    over calls 8 times the size below which one thread does a call. Each try feeds new rows and
    makes the 2-thread call first, so no output buffer held the right answer before it (a
    worker that writes nothing leaves what the allocator last kept there). A worker the
    scheduler wakes late takes no chunk (one thread did that call; on a machine whose other
    cores are busy, most calls): the tries go on until three calls ran on two threads, or for
    ``seconds`` at most."""
    gen = torch.Generator().manual_seed(31)
    k = 256
    # 44: a short last chunk; 48 for int4 (pairs of blocks) and for AMX's whole tiles of 16 columns
    n = 8 * calls.thread_work() // (m * k) + (48 if form == "int4" or m >= 12 else 44)
    weight = torch.randn(n, k, generator=gen) * 0.05
    kernel = _matmul(MAKE[form](weight), native.path())
    same, most, split_calls = True, 0, 0
    deadline = time.monotonic() + seconds
    while split_calls < 3 and time.monotonic() < deadline:
        x = torch.randn(m, k, generator=gen).to(torch.bfloat16)
        split = kernel(x, threads=2)
        used = calls.threads_used()
        same = same and torch.equal(split, kernel(x, threads=1))
        most, split_calls = max(most, used), split_calls + (used > 1)
    return same, most


@needs_kernels
@pytest.mark.parametrize("form", FORMS)
def test_a_call_split_over_two_threads_has_the_bits_of_one_thread(form):
    same, most = _split_against_one_thread(form)
    assert most == 2, "no call over the threshold ran on two threads"
    assert same


@needs_amx
def test_a_wide_q4k_call_on_amx_split_over_two_threads_has_the_bits_of_one_thread():
    """AMX's chunks of the thread split are whole tiles of 16 columns (16 rows: the tile path)."""
    assert native.kernels().AMX_ROWS <= 16
    same, most = _split_against_one_thread("q4k", m=16)
    assert most == 2, "no call over the threshold ran on two threads"
    assert same


@pytest.fixture(scope="module")
def idle_worker_build(tmp_path_factory):
    """q8mm.c built with Q8MM_IDLE_WORKER, once for the forms (a build is ~10 s of a 2-core CI)."""
    return native.build(tmp_path_factory.mktemp("mutant") / "_q8mm.so", ["Q8MM_IDLE_WORKER"])


@needs_kernels
@pytest.mark.skipif(native.compiler() is None, reason="no C compiler")
@pytest.mark.parametrize("form", FORMS)
def test_a_worker_that_computes_nothing_is_caught(form, idle_worker_build, monkeypatch):
    """The thread-split check fails on a kernel whose worker threads take their columns and
    compute none (q8mm.c built with Q8MM_IDLE_WORKER)."""
    mutant = native._load(idle_worker_build)
    monkeypatch.setattr(native, "_loaded", lambda: (mutant, ""))
    same, most = _split_against_one_thread(form)
    assert most == 2 and not same


def _attention_split_against_one_thread(seconds: float = 30.0) -> tuple[bool, int]:
    """A layer's attention above the kernels' thread_work (2 rows, 8 heads after 1,500 positions)
    on 2 threads against 1, as ``_split_against_one_thread`` does a linear's: each try new rows, the
    2-thread call first (no output buffer held the right answer before it), until three calls ran
    on two threads or for ``seconds``: (every 2-thread call had one thread's bits, the most threads
    one ran on)."""
    gen = torch.Generator().manual_seed(41)
    heads, kv_heads, dim, rows, start = 8, 2, 64, 2, 1500
    keys, values = (torch.randn(1, kv_heads, start + rows, dim, generator=gen).to(torch.bfloat16) for _ in range(2))
    assert rows * heads * 2 * (start + rows) * dim >= calls.thread_work()
    same, most, split_calls, deadline = True, 0, 0, time.monotonic() + seconds
    while split_calls < 3 and time.monotonic() < deadline:
        qkv = torch.randn(rows, (heads + 2 * kv_heads) * dim, generator=gen).to(torch.bfloat16)
        cos, sin = (torch.randn(rows, dim, generator=gen).to(torch.bfloat16) for _ in range(2))
        split = calls.attend_layer(qkv, cos, sin, keys, values, start, (heads, kv_heads), 0.125, 2)
        used = calls.threads_used()
        alone = calls.attend_layer(qkv, cos, sin, keys, values, start, (heads, kv_heads), 0.125, 1)
        same = same and torch.equal(split.view(torch.int16), alone.view(torch.int16))
        most, split_calls = max(most, used), split_calls + (used > 1)
    return same, most


@needs_kernels
def test_a_layers_attention_splits_its_heads_between_threads_with_the_bits_of_one():
    """Above the kernels' thread_work a layer's attention splits its heads among the pool's threads
    (a long context's attention is most of a pass's work outside the linears): each head computed
    alone, in its order, with its own scratch, so the rows are one thread's bits."""
    assert _attention_split_against_one_thread() == (True, 2)


@needs_kernels
@pytest.mark.skipif(native.compiler() is None, reason="no C compiler")
def test_a_worker_that_attends_to_nothing_is_caught(idle_worker_build, monkeypatch):
    """The attention's split check fails on a build whose workers take heads and compute none."""
    mutant = native._load(idle_worker_build)
    monkeypatch.setattr(native, "_loaded", lambda: (mutant, ""))
    same, used = _attention_split_against_one_thread()
    assert used == 2 and not same


@needs_kernels
def test_a_child_after_fork_makes_its_own_threads():
    """A child forked after the pool was made has none of its workers: its calls neither hang
    nor lose columns, and it makes a pool of its own (SIGALRM turns a deadlock into a failure).
    Under xdist the process is pinned to one core, where the caller often takes every chunk
    before its worker wakes: the child tries for up to 30 s, on calls 8 times the threshold."""
    code = """if True:
        import os, signal, time, torch
        from app.engine.runners.native import calls
        from app.engine.runners.quant import Int8Linear
        torch.set_num_threads(1)
        layer = Int8Linear.from_float(torch.randn(8 * calls.thread_work() // 1024 + 40, 256))
        kernel = calls.q8_mm([(layer.q, layer.scale.float().contiguous())], 256)
        x = torch.randn(4, 256).to(torch.bfloat16)
        want = kernel(x, threads=1)
        for _ in range(20):
            kernel(x, threads=2)
        pid = os.fork()
        if pid == 0:
            signal.alarm(60)
            used, same, deadline = 1, True, time.monotonic() + 30
            while time.monotonic() < deadline:
                same = same and torch.equal(kernel(x, threads=2), want)
                used = max(used, calls.threads_used())
                if used == 2:
                    break
            os._exit(0 if same and used == 2 else 3)
        print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
    """
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.stdout.strip() == "0", done.stdout + done.stderr


def test_the_seams_constants_are_the_kernels():
    if native.kernels() is None:
        pytest.skip(native.why_not())
    module = native.kernels()
    assert (calls.QK, calls.MAX_PARTS, calls.ATTEND_MAX_HEAD_DIM) == (module.QK, module.MAX_PARTS, module.ATTEND_MAX_D)
    assert (calls.QK_K, calls.Q4K_SUPER_BLOCK_BYTES) == (module.QKK, module.Q4K_SB_BYTES)
    assert calls.Q6K_SUPER_BLOCK_BYTES == module.Q6K_SB_BYTES


def _bf16(*shape: int) -> torch.Tensor:
    return torch.randn(*shape).to(torch.bfloat16)


def _wrong_calls() -> dict[str, tuple[type[Exception], str, Callable[[], object]]]:
    """name → (the error, a part of its message, a call that must raise it, not reach C)."""
    int8 = Int8Linear.from_float(torch.randn(32, 64))
    int4 = Int4Linear.from_float(torch.randn(32, 64))
    q4k = Q4KLinear.from_float(torch.randn(32, 256))
    q6k = Q6KLinear.from_float(torch.randn(32, 256))
    signed_rows = q6k.rows.view(torch.int8)
    q, s = int8.q, int8.scale.float().contiguous()
    matmul = calls.q8_mm([(q, s)], 64)
    rows, weight = _bf16(2, 64), _bf16(64)
    buf = _bf16(1, 2, 16, 64)  # a cache's buffer: 2 heads, 16 positions of 64
    strided_rows = buf.transpose(2, 3).contiguous().transpose(2, 3)
    overlapping = buf.as_strided((1, 2, 16, 64), (2048, 64, 64, 1))  # the heads 1 row apart
    qkv, cos = _bf16(3, 6 * 64), _bf16(3, 64)
    attend, layer = calls.attend, calls.attend_layer
    # an attention block: W = 64, 2 and 2 heads of 32 (q | k | v 192 wide), gate | up 128 wide
    width, block_weight = 64, _bf16(64)
    qkv_mm = calls.q8_mm([(torch.randint(-127, 128, (192, 64), dtype=torch.int8), torch.rand(192))], 64)
    o_mm = calls.q8_mm([(torch.randint(-127, 128, (64, 64), dtype=torch.int8), torch.rand(64))], 64)
    gu_mm = calls.q8_mm([(torch.randint(-127, 128, (128, 64), dtype=torch.int8), torch.rand(128))], 64)

    def int8_mm(n: int, k: int) -> calls.Matmul:  # a down of n outputs over k inputs (the block's: 64 over 64)
        return calls.q8_mm([(torch.randint(-127, 128, (n, k), dtype=torch.int8), torch.rand(n))], k)

    def block(**changed: object) -> calls.DecoderLayer:
        made: dict[str, Any] = dict(
            input_norm=(block_weight, 1e-5), qkv=[qkv_mm], bias=None, o=o_mm, post_norm=(block_weight, 1e-5),
            gate_up=gu_mm, heads=(2, 2), dim=32, scale=1.0,
        )  # fmt: skip
        made.update(changed)
        return calls.decoder_layer(**made)

    block_buf, block_cos = _bf16(1, 2, 16, 32), _bf16(3, 32)
    return {
        "decoder_layer: a short norm weight": (
            ValueError,
            "one value per column",
            lambda: block(input_norm=(block_weight[:32], 1e-5)),
        ),
        "decoder_layer: heads that do not make q | k | v": (ValueError, "do not chain", lambda: block(heads=(4, 2))),
        "decoder_layer: o and gate | up swapped": (ValueError, "do not chain", lambda: block(o=gu_mm, gate_up=o_mm)),
        "decoder_layer: a bias of another width": (ValueError, "bias", lambda: block(bias=_bf16(64))),
        "decoder_layer: a callable for a linear": (TypeError, "Matmul", lambda: block(o=lambda x: x)),
        "decoder_layer: rows of another width": (
            ValueError,
            f"[T ≥ 1, {width}]",
            lambda: block()(_bf16(3, 32), block_cos, block_cos, block_buf, block_buf, 0),
        ),
        "decoder_layer: no room in the cache": (
            ValueError,
            "at least 17",
            lambda: block()(_bf16(3, 64), block_cos, block_cos, block_buf, block_buf, 14),
        ),
        "decoder_layer: an out of other rows": (
            ValueError,
            "out must be [3, 128]",
            lambda: block()(_bf16(3, 64), block_cos, block_cos, block_buf, block_buf, 0, 1, _bf16(2, 128)),
        ),
        "decoder_layer: a Matmul for q | k | v, not a sequence": (TypeError, "one or two", lambda: block(qkv=qkv_mm)),
        "decoder_layer: q | k | v in three calls": (TypeError, "one or two", lambda: block(qkv=[qkv_mm] * 3)),
        "decoder_layer: q | k | v's calls over another input": (
            ValueError,
            "do not chain",
            lambda: block(qkv=[qkv_mm, int8_mm(64, 128)]),
        ),
        "decoder_layer: a down that does not take gate's half": (
            ValueError,
            "down must take",
            lambda: block(down=int8_mm(64, 128)),
        ),
        "decoder_layer: a down of another width": (
            ValueError,
            "down must take",
            lambda: block(down=int8_mm(32, 64)),
        ),
        "silu_mul: rows of an odd width": (ValueError, "2·I", lambda: calls.silu_mul(_bf16(2, 24))),
        "silu_mul: fp32 rows": (ValueError, "bfloat16", lambda: calls.silu_mul(torch.zeros(2, 32))),
        "decoder_layer: cos of other rows": (
            ValueError,
            "cos, sin",
            lambda: block()(_bf16(3, 64), block_cos[:2], block_cos, block_buf, block_buf, 0),
        ),
        "q8_mm: q and scales swapped": (ValueError, "int8 weight 0", lambda: calls.q8_mm([(s, q)], 64)),
        "q8_mm: short scales": (ValueError, "scales", lambda: calls.q8_mm([(q, s[:31])], 64)),
        "q8_mm: K not its weight's": (ValueError, "over 96 inputs", lambda: calls.q8_mm([(q, s)], 96)),
        "q8_mm: K not a multiple of 32": (ValueError, "multiple of 32", lambda: calls.q8_mm([(q[:, :48], s)], 48)),
        "q8_mm: transposed weight": (ValueError, "not contiguous", lambda: calls.q8_mm([(q.t(), s)], 32)),
        "q8_mm: no weights": (ValueError, "1 to 8", lambda: calls.q8_mm([], 64)),
        "q8_mm: a pointer for a weight": (TypeError, "tensor", lambda: calls.q8_mm([(q.data_ptr(), s)], 64)),
        "q4_mm: int8 bytes for int4 rows": (ValueError, "torch.uint8", lambda: calls.q4_mm([q], 64)),
        "q4_mm: rows of another K": (ValueError, "int4 weight 0", lambda: calls.q4_mm([int4.packed], 96)),
        "q4_mm: nine parts": (ValueError, "1 to 8", lambda: calls.q4_mm([int4.packed] * 9, 64)),
        "q4k_mm: int4 rows for Q4_K rows": (ValueError, "Q4_K weight 0", lambda: calls.q4k_mm([int4.packed], 256)),
        "q4k_mm: K not a multiple of 32": (ValueError, "multiple of 32", lambda: calls.q4k_mm([q4k.rows], 48)),
        "q4k_mm: a path that is none": (ValueError, "kernel path", lambda: calls.q4k_mm([q4k.rows], 256, path=3)),
        "q4k_mm: a yes for a path": (ValueError, "kernel path", lambda: calls.q4k_mm([q4k.rows], 256, path=True)),
        "q4k_mm: rows of another K": (ValueError, "over 512 inputs", lambda: calls.q4k_mm([q4k.rows], 512)),
        "q4k_mm: nine parts": (ValueError, "1 to 8", lambda: calls.q4k_mm([q4k.rows] * 9, 256)),
        "q6k_mm: Q4_K rows for Q6_K rows": (ValueError, "Q6_K weight 0", lambda: calls.q6k_mm([q4k.rows], 256)),
        "q6k_mm: K not a multiple of 32": (ValueError, "multiple of 32", lambda: calls.q6k_mm([q6k.rows], 48)),
        "q6k_mm: rows of another K": (ValueError, "over 512 inputs", lambda: calls.q6k_mm([q6k.rows], 512)),
        "q6k_mm: int8 bytes for Q6_K rows": (ValueError, "torch.uint8", lambda: calls.q6k_mm([signed_rows], 256)),
        "q6k_mm: nine parts": (ValueError, "1 to 8", lambda: calls.q6k_mm([q6k.rows] * 9, 256)),
        "a linear's fp32 rows": (ValueError, "bf16 rows", lambda: matmul(rows.float())),
        "a linear's rows of another K": (ValueError, "bf16 rows", lambda: matmul(_bf16(2, 32))),
        "a linear's 1-D row": (ValueError, "bf16 rows", lambda: matmul(rows[0])),
        "a linear's rows on the meta device": (ValueError, "bf16 rows", lambda: matmul(rows.to("meta"))),
        "rms_norm: a short weight": (ValueError, "one value per column", lambda: calls.rms_norm(rows, weight[:63], 1)),
        "rms_norm: an fp32 weight": (ValueError, "torch.bfloat16", lambda: calls.rms_norm(rows, weight.float(), 1)),
        "rms_norm: weight and rows swapped": (ValueError, "2 dimensions", lambda: calls.rms_norm(weight, rows, 1)),
        "rms_norm: non-contiguous rows": (ValueError, "not contiguous", lambda: calls.rms_norm(rows.t(), weight, 1)),
        "attend: key and query swapped": (
            ValueError,
            "attention heads",
            lambda: attend(buf, _bf16(1, 4, 2, 64), buf, 1),
        ),
        "attend: heads that do not share": (
            ValueError,
            "whole multiple",
            lambda: attend(_bf16(1, 3, 2, 64), buf, buf, 1),
        ),
        "attend: head dim 12": (ValueError, "multiple of 8", lambda: attend(_bf16(1, 2, 1, 12), buf[..., :12], buf, 1)),
        "attend: keys shorter than the rows": (
            ValueError,
            "at least 3",
            lambda: attend(_bf16(1, 4, 3, 64), buf[:, :, :2], buf, 1),
        ),
        "attend: rows not contiguous": (
            ValueError,
            "contiguous rows",
            lambda: attend(_bf16(1, 4, 1, 64), strided_rows, buf, 1),
        ),
        "attend: value shorter than key": (
            ValueError,
            "at least 16",
            lambda: attend(_bf16(1, 4, 1, 64), buf, buf[:, :, :8], 1),
        ),
        "attend_layer: no room in the cache": (
            ValueError,
            "at least 17",
            lambda: layer(qkv, cos, cos, buf, buf, 14, (2, 2), 1),
        ),
        "attend_layer: qkv of other heads": (ValueError, "qkv", lambda: layer(qkv, cos, cos, buf, buf, 0, (4, 2), 1)),
        "attend_layer: sin of other rows": (
            ValueError,
            "cos, sin",
            lambda: layer(qkv, cos, cos[:2], buf, buf, 0, (2, 2), 1),
        ),
        "attend_layer: heads that overlap": (
            ValueError,
            "contiguous rows",
            lambda: layer(qkv, cos, cos, buf, overlapping, 0, (2, 2), 1),
        ),
        "attend_layer: a value buffer of 1 head": (
            ValueError,
            "[1, 2, L, D]",
            lambda: layer(qkv, cos, cos, buf, buf[:, :1], 0, (2, 2), 1),
        ),
        "attend_layer: a negative start": (ValueError, "≥ 0", lambda: layer(qkv, cos, cos, buf, buf, -1, (2, 2), 1)),
    }


WRONG_CALLS = list(_wrong_calls()) if native.kernels() is not None else []


@needs_kernels
@pytest.mark.parametrize("wrong", WRONG_CALLS)
def test_a_wrong_call_raises_instead_of_reaching_the_kernel(wrong):
    error, message, call = _wrong_calls()[wrong]
    with pytest.raises(error, match=re.escape(message)):
        call()


@needs_kernels
def test_every_wrapper_has_its_wrong_calls():
    wrappers = {"q4_mm", "q4k_mm", "q6k_mm", "q8_mm", "a linear", "rms_norm", "attend", "attend_layer"}
    wrappers |= {"decoder_layer", "silu_mul"}
    assert wrappers == {name.split(":")[0].split("'")[0] for name in WRONG_CALLS}


@needs_kernels
@pytest.mark.parametrize("rows", [1, 3])
def test_attend_layer_is_the_rotary_the_cache_write_and_attend(rows):
    """attend_layer = transformers' rotary in bf16 ops, the new keys and values written into the
    cache's buffers, then ``attend`` over them, bit for bit. The rotary's roundings: x·cos +
    rotate_half(x)·sin with each product and the sum rounded to bf16, rotate_half(x) =
    (−x[half:], x[:half])."""
    gen = torch.Generator().manual_seed(rows)
    heads, kv_heads, dim, start = 4, 2, 64, 5
    qkv = torch.randn(rows, (heads + 2 * kv_heads) * dim, generator=gen).to(torch.bfloat16)
    cos, sin = (torch.randn(rows, dim, generator=gen).to(torch.bfloat16) for _ in range(2))
    keys, values = (torch.randn(1, kv_heads, 16, dim, generator=gen).to(torch.bfloat16) for _ in range(2))
    mine_k, mine_v = keys.clone(), values.clone()
    got = calls.attend_layer(qkv, cos, sin, mine_k, mine_v, start, (heads, kv_heads), 0.125)

    def rotated(x: torch.Tensor) -> torch.Tensor:  # [1, h, T, D]
        half = dim // 2
        return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin

    q, k, v = qkv.view(rows, -1, dim).transpose(0, 1)[None].split_with_sizes([heads, kv_heads, kv_heads], dim=1)
    keys[:, :, start : start + rows], values[:, :, start : start + rows] = rotated(k), v
    end = start + rows
    want = calls.attend(rotated(q).contiguous(), keys[:, :, :end], values[:, :, :end], 0.125)
    assert torch.equal(mine_k.view(torch.int16), keys.view(torch.int16))
    assert torch.equal(mine_v.view(torch.int16), values.view(torch.int16))
    assert torch.equal(got.view(torch.int16), want[0].transpose(0, 1).reshape(rows, -1).view(torch.int16))


@needs_kernels
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("mlp", [False, True], ids=["to-gate-up", "whole-layer"])
@pytest.mark.parametrize("split", [False, True], ids=["qkv-one-call", "v-another-form"])
def test_a_decoder_layer_is_the_lean_passs_calls_one_at_a_time(form, bias, mlp, split):
    """``decoder_layer`` = rms_norm, q | k | v (+ its bias), attend_layer, o, the residual add,
    rms_norm and gate | up, then (given down) SiLU(gate) · up, down and the residual add, called
    one at a time as the lean pass calls them (torch's ``F.silu(gate).mul_(up)``): the residual
    stream, the cache's new keys and values and the gate | up rows bit for bit, for 1 and 3 rows,
    a form for q | k | v and another for o and down (a Q4_K_M file mixes them), q | k | v in one
    call or as q | k then a v of another form (two calls), and on 2 threads, also after a context
    long enough that the attention's heads split between them (``attend_layer`` alone: one thread)."""
    gen = torch.Generator().manual_seed(31)
    make = MAKE[form]
    width, heads, kv_heads, dim, start = (256, 4, 2, 64, 5) if form in SUPER_BLOCK_FORMS else (128, 4, 2, 32, 5)
    other = MAKE["int8" if form != "int8" else "int4"]
    qkv_layers = [
        (other if split and i == 2 else make)(
            torch.randn(n * dim, width, generator=gen) * 0.05, torch.randn(n * dim, generator=gen) if bias else None
        )
        for i, n in enumerate((heads, kv_heads, kv_heads))
    ]
    o_layer = other(torch.randn(width, heads * dim, generator=gen) * 0.05, None)
    gu_layers = [make(torch.randn(2 * width, width, generator=gen) * 0.05, None) for _ in range(2)]
    runs, fused_gu = side_by_side_runs(qkv_layers), side_by_side_kernel(gu_layers)
    assert runs is not None and len(runs) == 1 + split and fused_gu is not None
    qkv_bias = torch.cat([b for _, b in runs if b is not None]) if bias else None
    in_w, post_w = ((1 + 0.3 * torch.randn(width, generator=gen)).to(torch.bfloat16) for _ in range(2))
    down_layer = other(torch.randn(width, 2 * width, generator=gen) * 0.05, None)
    down = down_layer._native_kernel() if mlp else None
    block = calls.decoder_layer(
        (in_w, 1e-5), [kernel for kernel, _ in runs], qkv_bias, o_layer._native_kernel(), (post_w, 1e-6), fused_gu[0],
        (heads, kv_heads), dim, 0.125, down,
    )  # fmt: skip
    assert block.mlp is mlp
    threaded = torch.get_num_threads()
    try:
        # (3 rows, 4 heads, 2 · 1,003 positions · dim) is above the kernels' THREAD_WORK: the heads split
        for rows, threads, at, room in ((1, 1, start, 16), (3, 1, start, 16), (3, 2, start, 16), (3, 2, 1000, 1024)):
            torch.set_num_threads(threads)
            h = (torch.randn(rows, width, generator=gen) * 2).to(torch.bfloat16)
            cos, sin = (torch.randn(rows, dim, generator=gen).to(torch.bfloat16) for _ in range(2))
            keys, values = (torch.randn(1, kv_heads, room, dim, generator=gen).to(torch.bfloat16) for _ in range(2))
            mine = [h.clone(), keys.clone(), values.clone()]
            gate_up = block(mine[0], cos, sin, mine[1], mine[2], at, threads)
            x = calls.rms_norm(h, in_w, 1e-5)
            qkv = torch.cat([layer.rows_fn()(x) for layer in qkv_layers], dim=1)  # each layer's own call
            attended = calls.attend_layer(qkv, cos, sin, keys, values, at, (heads, kv_heads), 0.125)
            h.add_(o_layer.rows_fn()(attended))
            want = fused_gu[0](calls.rms_norm(h, post_w, 1e-6))
            if mlp:  # the lean pass's own calls after gate | up
                h.add_(down_layer.rows_fn()(F.silu(want[:, : 2 * width]).mul_(want[:, 2 * width :])))
            for got, expected in ((mine[0], h), (mine[1], keys), (mine[2], values), (gate_up, want)):
                assert torch.equal(got.view(torch.int16), expected.view(torch.int16)), (rows, threads)
    finally:
        torch.set_num_threads(threaded)


@needs_kernels
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("bias", [False, True])
def test_layers_side_by_side_give_each_layers_own_bits(form, bias):
    """q | k | v in one call (the rows quantized once): each part equals its layer's own call bit
    for bit, for every row count and on both paths, biases included (Qwen2's q, k, v)."""
    gen = torch.Generator().manual_seed(21)
    make = MAKE[form]
    k = 256 if form in SUPER_BLOCK_FORMS else 96
    layers = [
        make(torch.randn(n, k, generator=gen) * 0.05, torch.randn(n, generator=gen) if bias else None)
        for n in (64, 32, 704)  # 704: 64 rows of it are over the threads' threshold (M·N·K ≥ 4M)
    ]
    x = (torch.randn(9, k, generator=gen) * 2).to(torch.bfloat16)
    fused = side_by_side(layers)
    assert fused is not None
    for m in (1, 2, 3, 4, 9):
        want = torch.cat([layer.rows_fn()(x[:m]) for layer in layers], dim=1)
        assert torch.equal(fused(x[:m]).view(torch.int16), want.view(torch.int16)), m
    threaded = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        big = (torch.randn(64, k, generator=gen)).to(torch.bfloat16)
        want = torch.cat([layer.rows_fn()(big) for layer in layers], dim=1)
        assert torch.equal(fused(big).view(torch.int16), want.view(torch.int16))
    finally:
        torch.set_num_threads(threaded)


@needs_kernels
def test_layers_that_cannot_share_a_call_stay_apart():
    gen = torch.Generator().manual_seed(22)
    w = torch.randn(32, 64, generator=gen)
    assert side_by_side([Int4Linear.from_float(w), Int8Linear.from_float(w)]) is None  # two forms
    assert side_by_side([Int4Linear.from_float(w), Int4Linear.from_float(torch.randn(32, 96, generator=gen))]) is None
    assert side_by_side([Int4Linear.from_float(w, torch.ones(32)), Int4Linear.from_float(w)]) is None  # one bias
    assert side_by_side([Int4Linear.from_float(w)]) is None
    wide = torch.randn(32, 256, generator=gen)
    assert side_by_side([Q4KLinear.from_float(wide), Int4Linear.from_float(wide)]) is None  # Q4_K is not int4's rows
    # a Q4_K_M file's q | k | v with a Q6_K v: separate calls (each its own kernel)
    assert side_by_side([Q4KLinear.from_float(wide), Q4KLinear.from_float(wide), Q6KLinear.from_float(wide)]) is None
    assert side_by_side([Q6KLinear.from_float(wide), Int8Linear.from_float(wide)]) is None  # Q6_K is not int8's rows


def _attention_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float) -> torch.Tensor:
    """Each row of q over its own causal prefix, in fp64.  q [1, H, T, D], k / v [1, Hkv, L, D]"""
    heads, rows, kv_len = q.shape[1], q.shape[2], k.shape[2]
    group = heads // k.shape[1]
    out = torch.empty(q.shape, dtype=torch.float64)
    for h in range(heads):
        for i in range(rows):
            end = kv_len - rows + i + 1
            keys, values = k[0, h // group, :end].double(), v[0, h // group, :end].double()
            weights = torch.softmax(keys @ q[0, h, i].double() * scale, dim=0)
            out[0, h, i] = weights @ values
    return out


@needs_kernels
@pytest.mark.parametrize("kv_len", [1, 5, 9, 64, 300])
def test_one_row_attention_is_softmax_over_each_rows_own_prefix(kv_len):
    """SpecChat's attend: every query row over its own causal prefix, GQA heads shared as
    ``enable_gqa`` shares them, read from a cache buffer with room to spare; within a bf16 step
    of the fp64 softmax, large logits included (the max is subtracted first).

    Its float order, in fp32, the same for every row: s_j = (q · k_j in 8 partial sums, hsum8) ·
    scale; m = max_j s_j; p_j = exp(s_j − m), 8 at a time from j = 0 (Cephes' expf; past the
    prefix a lane is exp(−inf) = 0); l = the p in 8 partial sums, hsum8; out = (sum_j p_j · v_j,
    j in order) / l, rounded to bf16. A row's arithmetic depends on its own prefix only, so a
    block's rows are the rows decoded one at a time."""
    gen = torch.Generator().manual_seed(kv_len)
    rows = min(kv_len, 4)
    q = (torch.randn(1, 6, rows, 64, generator=gen) * 4).to(torch.bfloat16)
    q[0, 1] *= 40  # scores in the hundreds: exp would overflow without the max taken out
    buffer_k = torch.randn(1, 2, 2 * kv_len + 3, 64, generator=gen).to(torch.bfloat16)
    buffer_v = torch.randn(1, 2, 2 * kv_len + 3, 64, generator=gen).to(torch.bfloat16)
    k, v = buffer_k[:, :, :kv_len], buffer_v[:, :, :kv_len]  # the cache's views: heads 2·L+3 rows apart
    assert native_attention(q, k, v, True)
    got = rows_sdpa(q, k, v, 0.125, True)
    want = _attention_reference(q, k, v, 0.125)
    assert got.dtype == torch.bfloat16 and torch.isfinite(got).all()
    assert ((got.double() - want).abs() <= bf16_step(want)).all()
    for i in range(rows):  # a block's rows are the rows decoded one at a time, bit for bit
        end = kv_len - rows + i + 1
        alone = rows_sdpa(q[:, :, i : i + 1], k[:, :, :end], v[:, :, :end], 0.125, True)
        assert torch.equal(alone[:, :, 0].view(torch.int16), got[:, :, i].view(torch.int16)), i


@needs_kernels
def test_attention_the_kernel_cannot_take_is_atens():
    gen = torch.Generator().manual_seed(2)

    def bf16(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen).to(torch.bfloat16)

    q, k = bf16(1, 2, 1, 12), bf16(1, 2, 7, 12)
    assert not native_attention(q, k, k, False)  # head dim 12: not a multiple of 8
    assert not native_attention(q.float(), k.float(), k.float(), False)  # fp32 rows: ATen's
    assert not native_attention(q, k.transpose(2, 3).contiguous().transpose(2, 3), k, False)  # rows not contiguous
    q64, k64 = bf16(1, 4, 1, 64), bf16(1, 2, 7, 64)
    assert native_attention(q64, k64, k64, True) and not native_attention(q64, k64, k64, False)
    want = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), k.float()).to(torch.bfloat16)
    assert torch.equal(rows_sdpa(q, k, k, None, False), want)


@needs_kernels
def test_a_layer_refuses_rows_it_cannot_read():
    layer = Int8Linear.from_float(torch.randn(32, 64))
    run = layer.rows_fn()
    with pytest.raises(ValueError, match="bf16 rows"):
        run(torch.randn(2, 64))  # fp32: the kernel reads bf16 bits
    with pytest.raises(ValueError, match="bf16 rows"):
        run(torch.randn(2, 32).to(torch.bfloat16))
    assert layer(torch.randn(2, 64)).shape == (2, 32)  # forward casts, as every weight-only layer does


@pytest.mark.skipif(not X86, reason="x86-64 only")
def test_switched_off_the_layers_run_torchs_kernels_and_say_why():
    code = (
        "from app.engine.runners import native; from app.engine.runners.quant import int4_layout, Int4Linear;"
        "import torch; l = Int4Linear.from_float(torch.randn(32, 64));"
        "print(native.describe()); print(int4_layout()); print(l.native)"
    )
    env = {**os.environ, native.KERNELS_ENV: "torch"}
    command = [sys.executable, "-c", code]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=True, timeout=120)
    described, layout, is_native = done.stdout.strip().splitlines()
    assert described == "bf16 activations (torch's kernels: SPECCHAT_KERNELS=torch)"
    assert layout.startswith("torch") and is_native == "False"


def test_a_failed_build_is_a_message_not_a_crash(tmp_path, monkeypatch):
    monkeypatch.setattr(native, "SOURCE", tmp_path / "broken.c")
    (tmp_path / "broken.c").write_text("this is not C\n")
    if native.compiler() is None:
        with pytest.raises(RuntimeError, match="no C compiler"):
            native.build(tmp_path / "out" / "m.so")
        return
    with pytest.raises(RuntimeError, match="failed"):
        native.build(tmp_path / "out" / "m.so")
    assert not list((tmp_path / "out").glob("*"))  # no half-written module left to load


@needs_kernels
def test_rms_norm_is_llamas_formula_and_replaces_the_norms_of_a_bf16_model(load_tiny):
    """Its float order, per row: y = bf16(w · bf16(x · r)), r = 1 / sqrt(mean(x²) + eps) in fp32,
    the squares summed in 8 partial sums (element i into sum i mod 8, a tail into sum 0) combined as
    ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7)): Llama's formula (fp32 variance, the weight
    times the input-dtype result), the same bits for a row whatever else is in the call."""
    from transformers.models.llama.modeling_llama import LlamaRMSNorm

    from app.engine.runners.cpu_kernels import NativeRMSNorm

    stock = LlamaRMSNorm(96, eps=1e-5)
    with torch.no_grad():
        stock.weight.copy_(torch.rand(96) + 0.5)
    stock = stock.to(torch.bfloat16)
    mine = NativeRMSNorm(stock)
    x = (torch.randn(2, 7, 96) * 4).to(torch.bfloat16)
    got, want = mine(x), stock(x)
    assert got.shape == want.shape and got.dtype == torch.bfloat16
    assert ((got.float() - want.float()).abs() <= want.float().abs() * 2.0**-7 + 1e-6).all()  # a bf16 step at most
    assert torch.equal(mine(x[:, 3:4]), got[:, 3:4])  # a row's bits do not depend on the rows beside it
    assert torch.equal(mine(x.float()), stock(x.float()))  # fp32 input: transformers' own formula
    model = load_tiny("llama", "int4").model
    norms = [m for m in model.modules() if isinstance(m, NativeRMSNorm)]
    assert len(norms) == 2 * model.config.num_hidden_layers + 1
    assert not any(type(m).__name__ == "LlamaRMSNorm" for m in model.modules())


@needs_kernels
def test_linear_threads_set_a_calls_split_whatever_torchs_thread_count():
    """``calls.linear_threads(n)``: this thread's linear calls split n ways while torch runs on
    one thread (the lean pass); outside it they follow torch's count again. A woken worker may
    come late (xdist pins each worker to one core): tried until a call ran on two threads."""
    from app.engine.runners.quant import Int8Linear

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        layer = Int8Linear.from_float(torch.randn(8 * calls.thread_work() // 1024 + 40, 256))
        kernel = calls.q8_mm([(layer.q, layer.scale.float().contiguous())], 256)
        x = torch.randn(4, 256).to(torch.bfloat16)
        most, deadline = 0, time.monotonic() + 30
        with calls.linear_threads(2):
            assert calls.thread_count() == 2 and torch.get_num_threads() == 1
            while most < 2 and time.monotonic() < deadline:
                kernel(x)
                most = max(most, calls.threads_used())
        assert most == 2
        assert calls.thread_count() == 1
        kernel(x)
        assert calls.threads_used() == 1
        with pytest.raises(ValueError, match="at least one thread"), calls.linear_threads(0):
            pass
    finally:
        torch.set_num_threads(before)


@needs_kernels
def test_silu_mul_is_torchs_silu_times_up_on_every_bf16_value():
    """``silu_mul`` = ``F.silu(gate).mul_(up)`` bit for bit on all 65,536 bf16 gate values (NaNs as
    NaNs), as the run-time check finds on this CPU and build of torch; and rows of gate | up taken
    from a wider tensor's view, as the lean pass's."""
    assert calls.silu_mul_is_torchs(), "SpecChat's SiLU no longer gives torch's bits: the lean pass falls back"
    gen = torch.Generator().manual_seed(41)
    gate_up = (torch.randn(3, 2 * 1536, generator=gen) * 4).to(torch.bfloat16)
    want = F.silu(gate_up[:, :1536]).mul_(gate_up[:, 1536:])
    assert torch.equal(calls.silu_mul(gate_up).view(torch.int16), want.view(torch.int16))


@needs_kernels
def test_the_silu_check_fails_on_one_wrong_bit(monkeypatch):
    """The run-time check is not a formality: a ``silu_mul`` one ulp off on a single value makes it
    say no (and the lean pass then stops each layer's call at gate | up)."""
    real = calls.silu_mul

    def one_off(gate_up: torch.Tensor) -> torch.Tensor:
        out = real(gate_up)
        out.view(torch.int16).view(-1)[12345] += 1
        return out

    monkeypatch.setattr(calls, "silu_mul", one_off)
    calls.silu_mul_is_torchs.cache_clear()
    try:
        assert calls.silu_mul_is_torchs() is False
    finally:
        calls.silu_mul_is_torchs.cache_clear()


def test_without_the_kernels_the_silu_check_says_no_instead_of_raising(monkeypatch):
    """A machine without a C compiler (``SPECCHAT_KERNELS=torch``) builds lean passes too: asked
    there, the check answers False."""
    monkeypatch.setattr(native, "kernels", lambda: None)
    calls.silu_mul_is_torchs.cache_clear()
    try:
        assert calls.silu_mul_is_torchs() is False
    finally:
        calls.silu_mul_is_torchs.cache_clear()


def _ties_and_tails(gen: torch.Generator, dtype: torch.dtype) -> torch.Tensor:
    """Rows of logits as a decoding step reads them: a vocabulary no multiple of 8 (the kernel's
    tail), the highest value tied within a row (bf16 ties often), in the tail, at id 0, once."""
    rows = (torch.randn(6, 1003, generator=gen) * 4).to(dtype)
    rows[0, [17, 400, 999]] = rows[0].max() + 1  # tied three times: the lowest id, top2 = top1
    rows[1, 1001] = rows[1].max() + 1  # the highest in the tail (V % 8 = 3)
    rows[2, 0] = rows[2].max() + 1  # at id 0
    rows[3, [5, 6]] = torch.tensor([9.0, 8.5]).to(dtype) + rows[3].max()  # the top two apart, side by side
    rows[4, :] = -1.0e4  # a row all equal (a draft head's left-out logits)
    return rows


@needs_kernels
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_row_stats_gives_argmax_topk_and_the_softmax_of_each_row(dtype):
    """``row_stats``: per row the greedy token by torch.argmax's rule (the lowest id among ties,
    ``greedy_token``), the top two values as torch.topk(row, 2) gives them, and Σ exp(v − top1) so
    that exp(v − top1) / Σ is torch's softmax (to float32's rounding of a sum over the row)."""
    gen = torch.Generator().manual_seed(43)
    for rows in (_ties_and_tails(gen, dtype), (torch.randn(3, 151936, generator=gen) * 3).to(dtype)):
        stats = calls.row_stats(rows)
        assert stats is not None
        wide = rows.float()
        top = torch.topk(wide, 2, dim=-1).values
        assert stats.ids == wide.argmax(dim=-1).tolist()
        assert stats.top1 == top[:, 0].tolist() and stats.top2 == top[:, 1].tolist()
        p = torch.exp(wide - torch.tensor(stats.top1)[:, None]) / torch.tensor(stats.sums)[:, None]
        torch.testing.assert_close(p, wide.softmax(dim=-1), rtol=1e-5, atol=1e-9)
        only = calls.row_stats(rows, sums=False)
        assert only is not None and only.ids == stats.ids and only.top1 == []


@needs_kernels
def test_row_stats_leaves_a_row_with_a_nan_to_torch():
    """A NaN anywhere in the rows: None, and ``greedy_token`` answers by torch's argmax (the
    first NaN), not by the kernel's comparisons, which a NaN falsifies."""
    from app.engine.decoding.sampling import greedy_token

    rows = torch.zeros(2, 21)
    rows[1, 13] = float("nan")
    rows[1, 15] = float("nan")
    assert calls.row_stats(rows) is None and calls.row_stats(rows, sums=False) is None
    assert greedy_token(rows).tolist() == [0, 13] == rows.argmax(dim=-1).tolist()


@needs_kernels
def test_row_stats_checks_what_it_reads():
    with pytest.raises(ValueError, match="bf16 or fp32"):
        calls.row_stats(torch.zeros(2, 8, dtype=torch.float16))
    with pytest.raises(ValueError, match="contiguous"):
        calls.row_stats(torch.zeros(8, 2).t())
    with pytest.raises(ValueError, match="R ≥ 1"):
        calls.row_stats(torch.zeros(0, 8))
    with pytest.raises(TypeError):
        calls.row_stats([1.0, 2.0])  # type: ignore[arg-type]
