"""The Llama family's RMSNorm as SpecChat's own classes compute it (``llama_family``), in a module
of its own so that ``cpu_kernels`` can tell it (and swap in its kernel) without importing the
model classes, which import ``cpu_kernels``."""

from __future__ import annotations

import torch
from torch import nn


class RMSNorm(nn.Module):
    """transformers' ``LlamaRMSNorm``: fp32 variance, ``x · rsqrt(mean(x²) + eps)`` back to the
    input's dtype, then the weight times it."""

    def __init__(self, size: int, eps: float) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size))
        self.variance_epsilon = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        wide = x.to(torch.float32)
        variance = wide.pow(2).mean(-1, keepdim=True)
        return self.weight * (wide * torch.rsqrt(variance + self.variance_epsilon)).to(dtype)
