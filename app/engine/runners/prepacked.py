"""``PrepackedLinear``: ``nn.Linear`` (or GPT-2's ``Conv1D``) on oneDNN with its weight reordered
once, batch invariant: a row's bits do not depend on how many rows are computed with it
(``_reorder_linear_weight`` with no batch-size hint — a hint of 1 is not batch invariant — a lone
row fed as two equal rows, and at most ``PACK_MAX_ROWS`` rows a call)."""

from __future__ import annotations

import torch
from torch import nn
from transformers.pytorch_utils import Conv1D

# rows per oneDNN call: a prepacked linear's rows are bit-identical for M = 1 (fed as 2) .. 32 on
# every CPU measured; bf16 on an AVX-512 + AMX CPU takes another kernel from M = 33 (a prompt)
PACK_MAX_ROWS = 32


class PrepackedLinear(nn.Module):
    """``y = x Wᵀ + b`` on a weight reordered once for oneDNN.  x [..., in] → y [..., out]

    ``compute``: the dtype oneDNN multiplies in. A bf16 weight on a CPU that cannot prepack bf16
    is upcast once to fp32 (exactly: every bf16 is an fp32) and its bf16 inputs with it; the
    output is rounded back to the input's dtype, so the rest of the model still runs in bf16."""

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None, compute: torch.dtype) -> None:
        super().__init__()
        self.out_features, self.in_features = weight.shape
        self.compute = compute
        packed = torch.ops.mkldnn._reorder_linear_weight(weight.detach().to(compute), None)
        self.register_buffer("packed_weight", packed, persistent=False)
        self.bias = None if bias is None else nn.Parameter(bias.detach().to(compute), requires_grad=False)

    @classmethod
    def of(cls, layer: nn.Module, compute: torch.dtype) -> PrepackedLinear:
        """From an ``nn.Linear`` (weight [out, in]) or a GPT-2 ``Conv1D`` (weight [in, out])."""
        weight, bias = weight_of(layer), layer.bias
        assert bias is None or isinstance(bias, torch.Tensor)
        return cls(weight.t().contiguous() if isinstance(layer, Conv1D) else weight, bias, compute)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        rows = x.to(self.compute).reshape(-1, self.in_features)  # [M, in]
        if rows.shape[0] > PACK_MAX_ROWS:
            out = torch.cat([self._rows(chunk) for chunk in torch.split(rows, PACK_MAX_ROWS)])
        else:
            out = self._rows(rows)
        return out.reshape(*x.shape[:-1], self.out_features).to(dtype)

    def _rows(self, x: torch.Tensor) -> torch.Tensor:
        """One oneDNN call over at most ``PACK_MAX_ROWS`` rows.  [M, in] → [M, out]

        oneDNN takes a GEMV path for one row that sums K (> ~1k) in another order than its GEMM;
        fed as two equal rows, a lone row (a token, or a prompt's last chunk) gets the GEMM's bits
        (~2% slower)."""
        alone = x.shape[0] == 1
        if alone:
            x = x.expand(2, -1).contiguous()  # [2, in]
        out: torch.Tensor = torch.ops.mkldnn._linear_pointwise(x, self.packed_weight, self.bias, "none", [], "")
        return out[:1] if alone else out

    def extra_repr(self) -> str:
        compute = str(self.compute).removeprefix("torch.")
        shape = f"in_features={self.in_features}, out_features={self.out_features}"
        return f"{shape}, bias={self.bias is not None}, compute={compute}"


def weight_of(layer: nn.Module) -> torch.Tensor:
    weight = layer.weight
    assert isinstance(weight, torch.Tensor)
    return weight.detach()
