"""SpecChat's own CPU kernels (app/engine/runners/native): int4 / int8 weights with int8
activations. What they promise: the arithmetic their header describes (checked against an fp64
emulation of it), rows that do not depend on the block they are computed in (exact block
verification), the same bits on the AVX-512 VNNI and AVX2 paths and on any thread split, and a
clear fallback to torch's kernels where they are not built."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest
import torch

from app.engine.runners import native
from app.engine.runners.cpu_kernels import native_attention, rows_sdpa
from app.engine.runners.native import calls
from app.engine.runners.quant import (
    NATIVE_LAYOUT,
    Int4Linear,
    Int8Linear,
    int4_layout,
    pack_native,
    quantize_int4,
    side_by_side,
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


def test_the_kernels_are_built_on_an_x86_cpu_with_a_compiler():
    if not X86 or native.compiler() is None:
        pytest.skip("not an x86-64 machine with a C compiler")
    assert native.kernels() is not None, native.why_not()
    assert int4_layout() == NATIVE_LAYOUT
    assert "int8 activations" in native.describe()


@needs_kernels
@pytest.mark.parametrize("k", [64, 96, 576])  # 96: an odd number of groups (a lone last group)
def test_int4_computes_int8_rows_times_d_q_plus_mn(k):
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
@pytest.mark.parametrize("form", ["int4", "int8"])
def test_rows_are_batch_invariant_and_the_same_on_every_path_and_thread_split(form):
    gen = torch.Generator().manual_seed(3)
    k, n = 96, 1040  # n: not a multiple of the thread split's chunks
    weight = torch.randn(n, k, generator=gen) * 0.05
    layer = Int4Linear.from_float(weight) if form == "int4" else Int8Linear.from_float(weight)
    paths = [True, False] if native.kernels().cpu()[1] else [False]
    x = (torch.randn(40, k, generator=gen) * 3).to(torch.bfloat16)
    x[7, :32] = 0  # an all-zero block
    x[9, 5] = 1000.0  # an outlier: its block's other values round to few levels
    kernels = {vnni: _matmul(layer, vnni) for vnni in paths}
    alone = [kernels[paths[0]](x[i : i + 1], threads=1)[0] for i in range(len(x))]
    for vnni in paths:
        for m in (1, 2, 3, 4, 5, 8, 9, 16, 40):
            block = kernels[vnni](x[:m], threads=1)
            for i in range(m):
                assert torch.equal(block[i], alone[i]), (form, vnni, m, i)


def _matmul(layer: Int4Linear | Int8Linear, vnni: bool) -> calls.Matmul:
    if isinstance(layer, Int4Linear):
        return calls.q4_mm([layer.packed], layer.in_features, vnni=vnni)
    return calls.q8_mm([(layer.q, layer.scale.float().contiguous())], layer.in_features, vnni=vnni)


@needs_kernels
@pytest.mark.parametrize("form", ["int4", "int8"])
@pytest.mark.parametrize("bias", [False, True])
def test_layers_side_by_side_give_each_layers_own_bits(form, bias):
    """q | k | v in one call (the rows quantized once): each part equals its layer's own call bit
    for bit, for every row count and on both paths, biases included (Qwen2's q, k, v)."""
    gen = torch.Generator().manual_seed(21)
    make = Int4Linear.from_float if form == "int4" else Int8Linear.from_float
    k = 96
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
    of the fp64 softmax, large logits included (the max is subtracted first)."""
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
