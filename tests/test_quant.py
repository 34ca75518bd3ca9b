"""Weight-only int4 / int8 linears: they compute the weight their tensors describe, a row's
output does not depend on how many rows are fed with it (what exact block verification needs),
and ``quantize_model`` swaps every linear of the tiny architectures (GPT-2's Conv1D too)."""

from __future__ import annotations

import pytest
import torch
from test_native_kernels import quantized_rows
from tiny_models import build_model, build_tokenizer
from torch import nn
from transformers.pytorch_utils import Conv1D

from app.engine.runners import native
from app.engine.runners.quant import (
    Int4Linear,
    Int8Linear,
    Q4KLinear,
    batch_invariant,
    int4_fits,
    quantize_int4,
    quantize_model,
    quantized_layers,
)

FORMS = {"int4": Int4Linear, "int8": Int8Linear}


def _weight(n: int = 64, k: int = 256, seed: int = 0) -> torch.Tensor:
    return torch.randn(n, k, generator=torch.Generator().manual_seed(seed))


def as_computed(layer: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The activations the layer's kernel multiplies: int8 blocks (SpecChat's kernels) or bf16."""
    return quantized_rows(x).float() if layer.native else x.float()


def test_int4_from_quantized_computes_q_minus_8_times_scale_plus_zero():
    gen = torch.Generator().manual_seed(1)
    q = torch.randint(0, 16, (32, 64), generator=gen, dtype=torch.uint8)
    scale = torch.rand(32, 2, generator=gen).to(torch.bfloat16).float()  # exact in bf16
    zero = torch.randn(32, 2, generator=gen).to(torch.bfloat16).float()
    layer = Int4Linear.from_quantized(q, scale, zero, None)
    expected = (q.float() - 8) * scale.repeat_interleave(32, 1) + zero.repeat_interleave(32, 1)
    x = torch.randn(3, 64, generator=gen).to(torch.bfloat16)
    reference = (as_computed(layer, x) @ expected.t()).to(torch.bfloat16)
    assert torch.allclose(layer(x).float(), reference.float(), rtol=2e-2, atol=2e-2)


def test_int8_from_quantized_computes_q_times_scale():
    gen = torch.Generator().manual_seed(2)
    q = torch.randint(-127, 128, (24, 48), generator=gen, dtype=torch.int8)
    scale = torch.rand(24, generator=gen).to(torch.bfloat16).float()
    layer = Int8Linear.from_quantized(q, scale, torch.ones(24))
    assert torch.equal(layer.dequantized(), q.float() * scale[:, None])
    x = torch.randn(2, 48, generator=gen).to(torch.bfloat16)
    reference = as_computed(layer, x) @ (q.float() * scale[:, None]).t() + 1
    assert torch.allclose(layer(x).float(), reference, rtol=2e-2, atol=5e-2)


@pytest.mark.parametrize("form", list(FORMS))
def test_from_float_rounds_each_weight_to_its_nearest_level(form):
    weight = _weight()
    layer = FORMS[form].from_float(weight)
    if form == "int4":
        q, scale, zero = quantize_int4(weight)
        bf16 = [t.to(torch.bfloat16).float().repeat_interleave(32, 1) for t in (scale, zero)]
        stored = (q.float() - 8) * bf16[0] + bf16[1]  # scale and zero as the kernel reads them (bf16)
        step = scale.repeat_interleave(32, 1)
        assert ((stored - weight).abs() <= step * 0.5 + step * 0.05 + 0.01).all()  # half a level + bf16 rounding
        assert torch.allclose(layer.dequantized(), stored, rtol=1 / 128, atol=1e-2)  # bf16 output
    else:
        step = weight.abs().amax(1, keepdim=True) / 127
        # half a level, plus the bf16 rounding of the row's scale (2⁻⁹ of the weight, relative)
        assert ((layer.dequantized() - weight).abs() <= step * 0.5 + weight.abs() / 256 + 1e-6).all()


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("shape", [(64, 256), (384, 64), (96, 2048)])
def test_a_row_is_bit_identical_fed_alone_or_with_up_to_16_rows(form, shape):
    layer = FORMS[form].from_float(_weight(*shape), torch.randn(shape[0]))
    x = torch.randn(16, shape[1], generator=torch.Generator().manual_seed(3)).to(torch.bfloat16)
    alone = [layer(x[i : i + 1]) for i in range(16)]
    for m in range(2, 17):
        together = layer(x[:m])
        assert all(torch.equal(together[i], alone[i][0]) for i in range(m)), f"M = {m}"
    assert batch_invariant(form)


@pytest.mark.parametrize("form", list(FORMS))
def test_a_layer_takes_any_leading_shape_and_returns_the_input_dtype(form):
    layer = FORMS[form].from_float(_weight(32, 64))
    x = torch.randn(1, 5, 64).to(torch.bfloat16)
    y = layer(x)
    assert y.shape == (1, 5, 32) and y.dtype == torch.bfloat16
    assert torch.equal(y[0, 2], layer(x[0, 2:3])[0])


def test_int4_refuses_shapes_its_packing_cannot_take():
    assert int4_fits(64, 256) is None
    assert "multiple of 32" in int4_fits(64, 40)
    assert "multiple of 16" in int4_fits(40, 64)
    with pytest.raises(ValueError, match="multiple of 32"):
        Int4Linear.from_float(_weight(32, 40))


@pytest.mark.parametrize("arch", ["llama", "qwen2", "mistral", "gpt2"])
@pytest.mark.parametrize("form", list(FORMS))
def test_quantize_model_swaps_every_linear_and_conv1d(arch, form):
    tokenizer = build_tokenizer()
    model = build_model(arch, tokenizer, seed=1).to(torch.bfloat16)
    linears = sum(type(m) in (nn.Linear, Conv1D) for m in model.modules())
    report = quantize_model(model, form)
    assert report.total == linears == len(quantized_layers(model)) and not report.left
    assert not any(type(m) in (nn.Linear, Conv1D) for m in model.modules())
    if form == "int4":  # the LM head stays wider (int8), as llama.cpp's Q4 files keep it
        assert isinstance(model.get_output_embeddings(), Int8Linear) and report.swapped["int4"] == linears - 1
    ids = torch.tensor([[5, 6, 7]])
    assert torch.isfinite(model(ids).logits.float()).all()


@pytest.mark.skipif(native.kernels() is None, reason="Q4_K runs on SpecChat's kernels only")
@pytest.mark.parametrize("arch", ["llama", "qwen2", "gpt2"])
def test_a_draft_models_int4_is_q4k_where_the_kernels_run(arch):
    """``super_blocks`` (a draft model's): int4 linears are Q4_K, K padded to whole super-blocks
    (the tiny models' K = 64..128); GPT-2's Conv1D keeps int4 groups, the head int8."""
    tokenizer = build_tokenizer()
    model = build_model(arch, tokenizer, seed=1).to(torch.bfloat16)
    quantize_model(model, "int4", super_blocks=True)
    body = [m for m in quantized_layers(model) if m is not model.get_output_embeddings()]
    kinds = {type(m) for m in body}
    assert kinds == ({Int4Linear} if arch == "gpt2" else {Q4KLinear})
    assert isinstance(model.get_output_embeddings(), Int8Linear)
    assert all(m.in_features % 256 for m in body if isinstance(m, Q4KLinear))  # padded: none a whole super-block
    assert torch.isfinite(model(torch.tensor([[5, 6, 7]])).logits.float()).all()


def test_a_layer_int4_cannot_take_falls_back_to_int8_and_is_counted():
    model = nn.Sequential(nn.Linear(64, 32), nn.Linear(32, 40))  # N = 40 is not a multiple of 16
    report = quantize_model(model, "int4", head_form="int4")
    assert report.swapped == {"int4": 1, "int8": 1}
    assert isinstance(model[1], Int8Linear) and "int4: 1 layer, int8: 1 layer" == report.describe()


def test_a_layer_no_form_can_take_is_left_and_named():
    """int8's CPU kernel sums wrongly for K not a multiple of 16 (measured: K = 40)."""
    model = nn.Sequential(nn.Linear(40, 32), nn.Linear(32, 64))
    report = quantize_model(model, "int8")
    assert report.swapped == {"int8": 1} and type(model[0]) is nn.Linear
    assert report.left == ("0: K = 40 is not a multiple of 16",)
    with pytest.raises(ValueError, match="multiple of 16"):
        Int8Linear.from_float(_weight(32, 40))
