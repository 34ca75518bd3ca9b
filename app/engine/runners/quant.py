"""Weight-only quantized linears: int4 (asymmetric, groups of 32 inputs) and int8 (per output
channel), computed as they are by torch's own kernels, with **bf16 activations**.

- ``Int4Linear`` runs ``torch.ops.aten._weight_int4pack_mm_for_cpu`` (CUDA: tinygemm's
  ``_weight_int4pack_mm``); its weight is ``w = (q − 8)·scale + zero`` per group of 32 inputs.
- ``Int8Linear`` runs ``torch.ops.aten._weight_int8pack_mm``; its weight is ``w = q·scale`` per
  output row.

Both kernels have vector paths (AVX-512, AVX2) for bf16 activations only: fed fp32 they take a
scalar loop 20–30× slower, so a layer casts whatever it is given to bf16. On an x86-64 CPU with
AVX2 both forms run SpecChat's own kernels instead (``runners/native``): the same weights, the
activations quantized to int8 per block of 32 as llama.cpp does, exact integer block sums — 3–4×
faster than torch's one-row kernels here and batch invariant by construction. On the CPU both are
batch invariant — row i of an M-row call is bit-identical to the row fed alone (measured for M up
to 16, AVX-512 and ATen's AVX2 kernels; ``batch_invariant`` asks it again at run time) — which
is what exact block verification needs.

Build them from plain tensors (``from_quantized``: a GGUF reader maps its blocks straight onto
them) or from a float weight (``from_float``: round to nearest, min/max per group for int4,
absmax per row for int8). ``quantize_model`` swaps every eligible ``nn.Linear`` and GPT-2
``Conv1D`` of a model and says what it swapped and what it left.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
from torch import nn
from transformers.pytorch_utils import Conv1D

from app.engine.runners import native
from app.engine.runners.native import calls
from app.engine.runners.prepacked import PrepackedLinear

GROUP = 32  # inputs per int4 group (scale, zero)
INT4_N_MULTIPLE = 16  # the CPU int4 packing wants out_features divisible by 16
INT8_K_MULTIPLE = 16  # the CPU int8 kernel computes wrong sums (or crashes) for other K
QUANT_FORMS = ("int4", "int8")
ACTIVATIONS = torch.bfloat16


class WeightOnlyLinear(nn.Module):
    """A linear layer with quantized weights and bf16 activations.  x [..., in] → y [..., out]"""

    form = ""  # "int4" | "int8"
    bias: torch.Tensor | None

    def __init__(self, in_features: int, out_features: int, bias: torch.Tensor | None) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        if bias is not None:
            self.register_buffer("bias", bias.detach().to(ACTIVATIONS).contiguous())
        else:
            self.bias = None

    def _matmul(self, x: torch.Tensor) -> torch.Tensor:  # x [M, in] bf16 → [M, out] bf16
        raise NotImplementedError

    def _kernel(self) -> Callable[[torch.Tensor], torch.Tensor]:
        raise NotImplementedError

    def _native_kernel(self) -> calls.Matmul:
        """SpecChat's kernel over this layer's tensors (a native layer only), made again after a
        buffer swap: the tensors it holds outlive any later swap, and ``side_by_side`` reads them."""
        raise NotImplementedError

    def rows_fn(self) -> Callable[[torch.Tensor], torch.Tensor]:
        """``forward`` on bf16 rows [M, in] → [M, out], as a closure over this layer's tensors:
        the same kernel call and bias add, without the casts and reshapes (no-ops on such rows)
        or the buffer lookups (``nn.Module.__getattr__``, ~1 µs each) of every call. For a
        caller that calls it many times per pass (runners/lean.py); a later swap of this
        layer's tensors is not seen by a closure made before it."""
        kernel, bias = self._kernel(), self.bias
        if bias is None:
            return kernel
        return lambda x: kernel(x) + bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        rows = x.reshape(-1, self.in_features).to(ACTIVATIONS)
        y = self._matmul(rows)
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*x.shape[:-1], self.out_features).to(dtype)

    def weight_bytes(self) -> int:
        return sum(b.numel() * b.element_size() for b in self.buffers())

    @property
    def native(self) -> bool:
        """Whether this layer runs SpecChat's kernels (int8 activations) rather than torch's."""
        return False

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Int4Linear(WeightOnlyLinear):
    """int4 weights in groups of ``GROUP`` inputs: ``w = (q − 8)·scale + zero``; scale and zero
    are kept in bf16 (what torch's kernel reads). Under SpecChat's kernel (``native``) the layer
    keeps one buffer instead: each output row's nibbles (``pack_native``) followed by its
    d = scale and mn = zero − 8·scale in fp32 (the same weights), so a row is one stream from memory."""

    form = "int4"
    packed: torch.Tensor
    scales_zeros: torch.Tensor | None

    def __init__(
        self, packed: torch.Tensor, scales_zeros: torch.Tensor, in_features: int, bias: torch.Tensor | None
    ) -> None:
        super().__init__(in_features, scales_zeros.shape[1], bias)
        self.layout = int4_layout() if packed.device.type == "cpu" else "cuda"  # how ``packed`` is packed
        if self.layout == NATIVE_LAYOUT:
            self.register_buffer("packed", native_rows(packed, scales_zeros))  # [out, in / 2 + 8 · in / GROUP]
            self.register_buffer("scales_zeros", None)
        else:
            self.register_buffer("packed", packed)
            self.register_buffer("scales_zeros", scales_zeros)  # [in / GROUP, out, 2] bf16
        self._native_fn: tuple[torch.Tensor, calls.Matmul] | None = None

    @property
    def native(self) -> bool:
        return self.layout == NATIVE_LAYOUT

    @classmethod
    def from_quantized(
        cls, q: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor, bias: torch.Tensor | None = None
    ) -> Int4Linear:
        """q: uint8 [N, K], values 0..15; scale, zero: float32 [N, K // 32]; bias [N] or None."""
        n, k = q.shape
        if k % GROUP or scale.shape != (n, k // GROUP) or zero.shape != scale.shape:
            raise ValueError(
                f"int4 needs K a multiple of {GROUP} and scale, zero of [N, K/{GROUP}]; got {tuple(q.shape)}"
            )
        if q.device.type == "cpu" and n % INT4_N_MULTIPLE:
            raise ValueError(f"int4 on the CPU needs out_features divisible by {INT4_N_MULTIPLE}; got {n}")
        return cls(_pack_int4(q), _scales_zeros(scale, zero), k, bias)

    @classmethod
    def from_packed(
        cls, packed: torch.Tensor, scale: torch.Tensor, zero: torch.Tensor, bias: torch.Tensor | None = None
    ) -> Int4Linear:
        """A layer from the CPU kernel's own packing (``pack_int4`` in a process of the same
        ``int4_layout``), as a cache keeps it: packed uint8 [N, K / 2]; scale, zero [N, K / 32]."""
        n, k = packed.shape[0], packed.shape[1] * 2
        if packed.dtype != torch.uint8 or k % GROUP or scale.shape != (n, k // GROUP) or zero.shape != scale.shape:
            raise ValueError(
                f"packed int4 of {tuple(packed.shape)} {packed.dtype} does not match its scales {tuple(scale.shape)}"
            )
        return cls(packed, _scales_zeros(scale, zero), k, bias)

    @classmethod
    def from_float(cls, weight: torch.Tensor, bias: torch.Tensor | None = None) -> Int4Linear:
        """Round to nearest on each group's min/max range: 16 levels from min to max."""
        if why := int4_fits(*weight.shape):
            raise ValueError(f"int4 cannot take this layer: {why}")
        q, scale, zero = quantize_int4(weight)
        return cls.from_quantized(q, scale, zero, bias)

    def _matmul(self, x: torch.Tensor) -> torch.Tensor:
        if self.native:
            return self._kernel()(x)
        if x.device.type == "cuda":  # tinygemm; untested here (see the README)
            out: torch.Tensor = torch.ops.aten._weight_int4pack_mm(x, self.packed, GROUP, self.scales_zeros)
            return out
        y: torch.Tensor = torch.ops.aten._weight_int4pack_mm_for_cpu(x, self.packed, GROUP, self.scales_zeros)
        return y

    def _kernel(self) -> Callable[[torch.Tensor], torch.Tensor]:
        packed, scales_zeros = self.packed, self.scales_zeros
        assert scales_zeros is not None or self.native
        if self.native:
            return self._native_kernel()
        if packed.device.type == "cuda":
            cuda = torch.ops.aten._weight_int4pack_mm.default
            return lambda x: cuda(x, packed, GROUP, scales_zeros)
        cpu = torch.ops.aten._weight_int4pack_mm_for_cpu.default
        return lambda x: cpu(x, packed, GROUP, scales_zeros)

    def _native_kernel(self) -> calls.Matmul:
        packed = self.packed
        if self._native_fn is None or self._native_fn[0] is not packed:
            self._native_fn = (packed, calls.q4_mm([packed], self.in_features))
        return self._native_fn[1]

    def _d_mn(self) -> tuple[torch.Tensor, torch.Tensor]:
        """A native layer's d and mn, fp32 [out, in / GROUP] each, read from its rows."""
        half, groups = self.in_features // 2, self.in_features // GROUP
        floats = self.packed[:, half:].contiguous().view(torch.float32)  # [out, 2 · groups]
        return floats[:, :groups], floats[:, groups:]

    def dequantized(self) -> torch.Tensor:
        """The weight the kernel computes with, as fp32 [N, K] (an identity matrix through it)."""
        if self.native:
            d, mn = self._d_mn()
            q = unpack_native(self.packed[:, : self.in_features // 2]).float()
            return q * d.repeat_interleave(GROUP, 1) + mn.repeat_interleave(GROUP, 1)
        eye = torch.eye(self.in_features, dtype=ACTIVATIONS, device=self.packed.device)
        return self._matmul(eye).t().float()


Q4KParts = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]  # q, sc, m, d, dmin
Q6KParts = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # q, sc, d


class SuperBlockLinear(WeightOnlyLinear):
    """A llama.cpp K-quant as the file holds it, under SpecChat's kernel only: one buffer, each
    output row's super-blocks of 256 inputs (uint8 [N, bytes a row]: ``calls.q4k_row_bytes``,
    ``q6k_row_bytes``), so that a row is one stream from memory and any rows can be taken
    (``of_rows``: a draft's head over some tokens)."""

    rows: torch.Tensor

    def __init__(self, rows: torch.Tensor, in_features: int, bias: torch.Tensor | None) -> None:
        super().__init__(in_features, rows.shape[0], bias)
        self.register_buffer("rows", rows.contiguous())
        self._native_fn: tuple[torch.Tensor, calls.Matmul] | None = None

    @staticmethod
    def matmul(rows: Sequence[torch.Tensor], k: int) -> calls.Matmul:
        """The kernel's wrapper over such rows side by side (``calls.q4k_mm`` / ``q6k_mm``)."""
        raise NotImplementedError

    @property
    def native(self) -> bool:
        return True

    def of_rows(self, keep: torch.Tensor) -> SuperBlockLinear:
        """A layer of the output rows ``keep`` only, computed as this one computes them."""
        return type(self)(self.rows[keep], self.in_features, None if self.bias is None else self.bias[keep])

    def _matmul(self, x: torch.Tensor) -> torch.Tensor:
        return self._kernel()(x)

    def _kernel(self) -> Callable[[torch.Tensor], torch.Tensor]:
        return self._native_kernel()

    def _native_kernel(self) -> calls.Matmul:
        rows = self.rows
        if self._native_fn is None or self._native_fn[0] is not rows:
            self._native_fn = (rows, self.matmul([rows], self.in_features))
        return self._native_fn[1]


class Q4KLinear(SuperBlockLinear):
    """llama.cpp's Q4_K as the file holds it, under SpecChat's kernel only (``q4k_mm``): super-blocks
    of 256 inputs, 8 blocks of 32, ``w = d·sc_b·q − dmin·m_b`` with d, dmin per super-block (the
    file's fp16, kept exactly as fp32) and 6-bit integer sc_b, m_b. The activations are quantized
    per 256 (one int8 scale, as llama.cpp's Q8_K) so that a super-block's dot product is one exact
    integer sum: about half the arithmetic of ``Int4Linear``'s per-32 float scales, and 4.75 bits a
    weight read instead of 6. One buffer: each row's super-blocks (``q4k_rows``)."""

    form = "int4"

    matmul = staticmethod(calls.q4k_mm)

    @classmethod
    def from_quantized(
        cls,
        q: torch.Tensor,
        sc: torch.Tensor,
        m: torch.Tensor,
        d: torch.Tensor,
        dmin: torch.Tensor,
        bias: torch.Tensor | None = None,
        k: int | None = None,
    ) -> Q4KLinear:
        """q uint8 [N, K'] in 0..15; sc, m uint8 [N, K' / 32] in 0..63; d, dmin fp32 [N, K' / 256],
        K' = ``calls.super_blocks_k(k)``: a layer over k inputs (default K'), the parts' padding past k
        not kept (``q4k_rows``)."""
        inputs = _inputs(q, k)
        return cls(q4k_rows(q, sc, m, d, dmin, inputs), inputs, bias)

    @classmethod
    def from_float(cls, weight: torch.Tensor, bias: torch.Tensor | None = None) -> Q4KLinear:
        """Round to nearest as Q4_K: each block's min/max range, its scale and min then rounded to
        6 bits of the super-block's largest (a simple quantizer, for tests and measurements; a GGUF's
        Q4_K tensors are taken as they are)."""
        return cls.from_quantized(*quantize_q4k(weight), bias=bias, k=weight.shape[1])

    def dequantized(self) -> torch.Tensor:
        """The weight the kernel computes with, fp32 [N, K]: d·sc·q − dmin·m."""
        return q4k_weight(*q4k_parts(self.rows, self.in_features))[:, : self.in_features]


class Q6KLinear(SuperBlockLinear):
    """llama.cpp's Q6_K as the file holds it, under SpecChat's kernel only (``q6k_mm``): super-blocks
    of 256 inputs, 16 sub-blocks of 16, ``w = d·sc_j·(q − 32)``, q in 0..63, with d per super-block
    (the file's fp16, kept exactly as fp32) and int8 sc_j. The activations are quantized per 256 as
    for Q4_K, with the sums of each 16 for the offset 32, so that a super-block's dot product is one
    exact integer sum and one float multiply-add: 6.6 bits a weight read instead of int8 rows' 8,
    and no float convert and multiply-add per 32. One buffer: each row's super-blocks (``q6k_rows``).
    Its ``form`` is int8's, the weights form that keeps it (a file's Q6_K was rounded to int8 rows)."""

    form = "int8"

    matmul = staticmethod(calls.q6k_mm)

    @classmethod
    def from_quantized(
        cls, q: torch.Tensor, sc: torch.Tensor, d: torch.Tensor, bias: torch.Tensor | None = None, k: int | None = None
    ) -> Q6KLinear:
        """q uint8 [N, K'] in 0..63; sc int8 [N, K' / 16]; d fp32 [N, K' / 256]; ``k`` as in ``Q4KLinear``."""
        return cls(q6k_rows(q, sc, d), _inputs(q, k), bias)

    @classmethod
    def from_float(cls, weight: torch.Tensor, bias: torch.Tensor | None = None) -> Q6KLinear:
        """Round to nearest as Q6_K: each sub-block's absmax over 31 levels, its scale rounded to 8
        bits of the super-block's largest (a simple quantizer, for tests and measurements; a GGUF's
        Q6_K tensors are taken as they are)."""
        return cls.from_quantized(*quantize_q6k(weight), bias=bias, k=weight.shape[1])

    def dequantized(self) -> torch.Tensor:
        """The weight the kernel computes with, fp32 [N, K]: d·sc·(q − 32)."""
        return q6k_weight(*q6k_parts(self.rows, self.in_features))[:, : self.in_features]


def _inputs(q: torch.Tensor, k: int | None) -> int:
    """The inputs of a super-block layer whose parts are over q's width (k: fewer, the rest padding)."""
    width = q.shape[1]
    if k is None:
        return width
    if k <= 0 or k % GROUP or calls.super_blocks_k(k) != width:
        raise ValueError(f"parts over {width} inputs do not pad {k} inputs to whole super-blocks of {calls.QK_K}")
    return k


def q4k_weight(q: torch.Tensor, sc: torch.Tensor, m: torch.Tensor, d: torch.Tensor, dmin: torch.Tensor) -> torch.Tensor:
    """Q4_K's parts as the weight, fp32 [N, K]: (d·sc)·q − dmin·m per block of 32, in fp32 as gguf
    dequantizes it (every product exact: an fp16 times a 6-bit integer, then a 4-bit one)."""
    n, k = q.shape
    per = calls.QK_K // GROUP
    step = d.repeat_interleave(per, 1) * sc.float()
    low = dmin.repeat_interleave(per, 1) * m.float()
    return (q.reshape(n, -1, GROUP).float() * step[..., None] - low[..., None]).reshape(n, k)


def q4k_rows(
    q: torch.Tensor, sc: torch.Tensor, m: torch.Tensor, d: torch.Tensor, dmin: torch.Tensor, inputs: int | None = None
) -> torch.Tensor:
    """SpecChat's Q4_K rows: per super-block of 256 inputs, d and dmin (fp32 bytes), sc [8] and
    m [8] (uint8), then its 128 bytes of nibbles (``pack_native``'s block pairs of its weights
    in the kernel's order, ``q4k_interleaved``: four chunks of 32 bytes, byte 4b + t of each
    holding weights of block b). ``inputs``: the layer's (fewer than q's K, a multiple of 32): the
    last super-block then keeps of each chunk only the bytes of the T = inputs mod 256 / 32 blocks
    it has (its first 4T: the kernel reads the rest as zeros, and x is zero there), its d, dmin,
    sc and m whole. → uint8 [N, ``calls.q4k_row_bytes(inputs or K)``]"""
    n, k = q.shape
    if k % calls.QK_K or sc.shape != (n, k // GROUP) or m.shape != sc.shape or d.shape != (n, k // calls.QK_K):
        raise ValueError(
            f"Q4_K needs K a multiple of {calls.QK_K} and parts of [N, K/32], [N, K/256]; got {tuple(q.shape)}"
        )
    if dmin.shape != d.shape or int(sc.max()) > 63 or int(m.max()) > 63 or int(q.max()) > 15:
        raise ValueError("Q4_K's sub-scales and mins are 6-bit and its weights 4-bit")
    s = k // calls.QK_K

    def as_bytes(t: torch.Tensor) -> torch.Tensor:
        return t.to(torch.float32).contiguous().view(torch.uint8).reshape(n, s, 4)

    nibbles = pack_native(q4k_interleaved(q)).reshape(n, s, calls.QK_K // 2)
    small = [t.to(torch.uint8).reshape(n, s, 8) for t in (sc, m)]
    parts = (as_bytes(d), as_bytes(dmin), *small, nibbles)
    rows = torch.cat(parts, 2)
    if inputs is None or inputs == k:
        return rows.reshape(n, s * calls.Q4K_SUPER_BLOCK_BYTES).contiguous()
    if inputs <= 0 or inputs % GROUP or calls.super_blocks_k(inputs) != k:
        raise ValueError(f"Q4_K parts over {k} inputs do not pad {inputs} inputs to whole super-blocks")
    tail = calls.q4k_tail(inputs)
    last = rows[:, -1]
    kept = last[:, 24:].reshape(n, 4, 32)[:, :, : 4 * tail].reshape(n, -1)
    whole = rows[:, :-1].reshape(n, -1)
    return torch.cat((whole, last[:, :24], kept), 1).contiguous()


def _q4k_whole(rows: torch.Tensor, k: int) -> torch.Tensor:
    """Rows over k inputs (``q4k_rows``) with a tail made a whole super-block (its missing nibbles
    0). → uint8 [N, ⌈k / 256⌉, 152]"""
    n, tail = rows.shape[0], calls.q4k_tail(k)
    whole = rows[:, : k // calls.QK_K * calls.Q4K_SUPER_BLOCK_BYTES].reshape(n, -1, calls.Q4K_SUPER_BLOCK_BYTES)
    if not tail:
        return whole
    last = rows[:, whole.shape[1] * calls.Q4K_SUPER_BLOCK_BYTES :]
    chunks = torch.zeros((n, 4, 32), dtype=torch.uint8)
    chunks[:, :, : 4 * tail] = last[:, 24:].reshape(n, 4, 4 * tail)
    return torch.cat((whole, torch.cat((last[:, :24], chunks.reshape(n, -1)), 1)[:, None]), 1)


def q4k_parts(rows: torch.Tensor, k: int) -> Q4KParts:
    """``q4k_rows``' inverse: (q [N, K], sc [N, K / 32], m [N, K / 32], d [N, K / 256], dmin) over
    the rows' K = ``calls.super_blocks_k(k)`` (a layer over k inputs: past them q is 0)."""
    blocks = _q4k_whole(rows, k)
    k = calls.super_blocks_k(k)
    n, s = rows.shape[0], k // calls.QK_K
    d = blocks[..., 0:4].contiguous().view(torch.float32).reshape(n, s)
    dmin = blocks[..., 4:8].contiguous().view(torch.float32).reshape(n, s)
    sc, m = blocks[..., 8:16].reshape(n, -1), blocks[..., 16:24].reshape(n, -1)
    q = q4k_interleaved(unpack_native(blocks[..., 24:].reshape(n, k // 2)))
    return q, sc, m, d, dmin


def q4k_interleaved(q: torch.Tensor) -> torch.Tensor:
    """q [N, K] with each super-block's 256 weights in the order the Q4_K kernel reads them: 8 runs
    of 32, run r holding weights 4r..4r+3 of each block of 32 in turn (so that int16 lanes 2b and
    2b + 1 of every run's products belong to block b: q8mm.c's q4k tile). Its own inverse (a
    transpose of 8 x 8 groups of 4)."""
    n, k = q.shape
    return q.reshape(n, k // calls.QK_K, 8, 8, 4).transpose(2, 3).reshape(n, k)


def quantize_q4k(weight: torch.Tensor) -> Q4KParts:
    """A float weight [N, K] (K a multiple of 32) as Q4_K's parts (q, sc, m, d, dmin),
    ``from_quantized``'s, over K rounded up to 256 (``_padded``: zero weights past K)."""
    w = _padded(weight)
    n, k = w.shape
    blocks = w.reshape(n, k // GROUP, GROUP)
    lo = blocks.amin(-1).clamp(max=0)  # w = scale·q − min with min ≥ 0, as Q4_K
    scale = (blocks.amax(-1) - lo) / 15
    per = calls.QK_K // GROUP
    d = (scale.reshape(n, -1, per).amax(-1) / 63).clamp(min=1e-10)
    dmin = ((-lo).reshape(n, -1, per).amax(-1) / 63).clamp(min=1e-10)
    sc = (scale / d.repeat_interleave(per, 1)).round().clamp(0, 63)
    m = (-lo / dmin.repeat_interleave(per, 1)).round().clamp(0, 63)
    step = (d.repeat_interleave(per, 1) * sc).clamp(min=1e-10)
    low = dmin.repeat_interleave(per, 1) * m
    q = ((blocks + low[..., None]) / step[..., None]).round().clamp(0, 15).to(torch.uint8).reshape(n, k)
    return q, sc.to(torch.uint8), m.to(torch.uint8), d, dmin


def _padded(weight: torch.Tensor) -> torch.Tensor:
    """fp32 [N, K] → [N, ``calls.super_blocks_k(K)``], zero past K (K a multiple of 32)."""
    w = weight.detach().float()
    k = w.shape[1]
    if k <= 0 or k % GROUP:
        raise ValueError(f"a super-block form needs K a multiple of {GROUP}; got {k}")
    return torch.nn.functional.pad(w, (0, calls.super_blocks_k(k) - k))


Q6K_SUB_BLOCK = 16  # Q6_K's inputs per sub-scale
Q6K_QUANTS = calls.QK_K * 6 // 8  # bytes of a super-block's 6-bit q (two halves of 3 chunks of 32)
Q6K_LAST_SHIFTS = torch.tensor([0, 2, 4], dtype=torch.uint8).reshape(3, 1)  # where chunk c holds the last's bits


def q6k_weight(q: torch.Tensor, sc: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    """Q6_K's parts as the weight, fp32 [N, K]: (d·sc)·(q − 32) per sub-block of 16, in fp32 as gguf
    dequantizes it (every product exact: an fp16 times an 8-bit integer, then a 6-bit one)."""
    n, k = q.shape
    step = d.repeat_interleave(calls.QK_K // Q6K_SUB_BLOCK, 1) * sc.float()
    return ((q.reshape(n, -1, Q6K_SUB_BLOCK).float() - 32) * step[..., None]).reshape(n, k)


def q6k_rows(q: torch.Tensor, sc: torch.Tensor, d: torch.Tensor) -> torch.Tensor:
    """SpecChat's Q6_K rows: per super-block of 256 inputs, per half of 128 its 6-bit q in 3 chunks of
    32 bytes (byte i of chunk c: q[32c + i] in bits 0..5, bits 2c, 2c + 1 of q[96 + i] in bits 6, 7:
    a chunk's weights are one AND away, the last chunk's a few shifts), then sc [16] (int8) and d
    (fp32 bytes).  → uint8 [N, K / 256 · 212]"""
    n, k = q.shape
    if k % calls.QK_K or sc.shape != (n, k // Q6K_SUB_BLOCK) or d.shape != (n, k // calls.QK_K):
        raise ValueError(
            f"Q6_K needs K a multiple of {calls.QK_K} and parts of [N, K/16], [N, K/256]; got {tuple(q.shape)}"
        )
    if sc.dtype != torch.int8 or int(q.max()) > 63:
        raise ValueError("Q6_K's sub-scales are int8 and its weights 6-bit")
    s = k // calls.QK_K
    chunks = q6k_paired(q.to(torch.uint8)).reshape(n, s, 2, 4, 32)  # super-block, half, chunk of 32, weight
    last = (chunks[:, :, :, 3:] >> Q6K_LAST_SHIFTS) & 0x03  # the last chunk's bits, two for each other chunk
    stored = (chunks[:, :, :, :3] | (last << 6)).reshape(n, s, Q6K_QUANTS)
    scales = sc.contiguous().view(torch.uint8).reshape(n, s, Q6K_SUB_BLOCK)
    d_bytes = d.to(torch.float32).contiguous().view(torch.uint8).reshape(n, s, 4)
    return torch.cat((stored, scales, d_bytes), 2).reshape(n, s * calls.Q6K_SUPER_BLOCK_BYTES).contiguous()


def q6k_paired(q: torch.Tensor, inverse: bool = False) -> torch.Tensor:
    """q [N, K] with each half super-block's 128 weights in the order the Q6_K kernel reads them: 4
    runs of 32, run 2g + u holding weights 8u..8u+7 of each of the half's sub-blocks 4g..4g+3 in
    turn (so that int16 lanes 4s..4s+3 of runs 2g and 2g + 1 belong to one sub-block: q8mm.c's
    q6k tile). ``inverse``: that order back to the inputs'."""
    n, k = q.shape
    # a half: (g, sub-block of the four, u, t) in the inputs' order, (g, u, sub-block, t) in the runs'
    dims = (n, k // 128, 2, 2, 4, 8) if inverse else (n, k // 128, 2, 4, 2, 8)
    return q.reshape(dims).transpose(3, 4).reshape(n, k)


def q6k_parts(rows: torch.Tensor, k: int) -> Q6KParts:
    """``q6k_rows``' inverse: (q uint8 [N, K], sc int8 [N, K / 16], d fp32 [N, K / 256]) over the
    rows' K, as ``q4k_parts``."""
    k = calls.super_blocks_k(k)
    n, s = rows.shape[0], k // calls.QK_K
    blocks = rows.reshape(n, s, calls.Q6K_SUPER_BLOCK_BYTES)
    stored = blocks[..., :Q6K_QUANTS].reshape(n, s, 2, 3, 32)
    last = ((stored >> 6) << Q6K_LAST_SHIFTS).sum(3, keepdim=True, dtype=torch.uint8)  # disjoint bits: + is |
    q = q6k_paired(torch.cat((stored & 0x3F, last), 3).reshape(n, k), inverse=True)
    sc = blocks[..., Q6K_QUANTS : Q6K_QUANTS + Q6K_SUB_BLOCK].contiguous().view(torch.int8).reshape(n, -1)
    d = blocks[..., Q6K_QUANTS + Q6K_SUB_BLOCK :].contiguous().view(torch.float32).reshape(n, s)
    return q, sc, d


def quantize_q6k(weight: torch.Tensor) -> Q6KParts:
    """A float weight [N, K] (K a multiple of 32) as Q6_K's parts (q, sc, d), ``from_quantized``'s,
    over K rounded up to 256 as ``quantize_q4k``."""
    w = _padded(weight)
    n, k = w.shape
    per = calls.QK_K // Q6K_SUB_BLOCK
    blocks = w.reshape(n, k // Q6K_SUB_BLOCK, Q6K_SUB_BLOCK)
    scale = blocks.abs().amax(-1) / 31  # q − 32 in −31..31
    d = (scale.reshape(n, -1, per).amax(-1) / 127).clamp(min=1e-10)
    sc = (scale / d.repeat_interleave(per, 1)).round().clamp(0, 127)
    step = (d.repeat_interleave(per, 1) * sc).clamp(min=1e-10)
    q = ((blocks / step[..., None]).round().clamp(-32, 31) + 32).to(torch.uint8).reshape(n, k)
    return q, sc.to(torch.int8), d


class Int8Linear(WeightOnlyLinear):
    """int8 weights with one scale per output row: ``w = q·scale`` (scale kept in bf16)."""

    form = "int8"
    q: torch.Tensor
    scale: torch.Tensor

    def __init__(self, q: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor | None) -> None:
        super().__init__(q.shape[1], q.shape[0], bias)
        self.register_buffer("q", q.contiguous())
        self.register_buffer("scale", scale.to(ACTIVATIONS).contiguous())
        # decided once, as an int4 layer's layout is: SpecChat's kernel on the CPU where it is built
        self._native = q.device.type == "cpu" and self.in_features % GROUP == 0 and native.kernels() is not None
        self._native_fn: tuple[torch.Tensor, calls.Matmul] | None = None

    @property
    def native(self) -> bool:
        return self._native

    @classmethod
    def from_quantized(cls, q: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor | None = None) -> Int8Linear:
        """q: int8 [N, K]; scale: float32 [N]; bias [N] or None."""
        if q.dtype != torch.int8 or q.dim() != 2 or scale.shape != (q.shape[0],):
            shapes = f"{q.dtype} {tuple(q.shape)}, {tuple(scale.shape)}"
            raise ValueError(f"int8 needs q int8 [N, K] and scale [N]; got {shapes}")
        if why := int8_fits(*q.shape):
            raise ValueError(f"int8 cannot take this layer: {why}")
        return cls(q, scale, bias)

    @classmethod
    def from_float(cls, weight: torch.Tensor, bias: torch.Tensor | None = None) -> Int8Linear:
        """Round to nearest on each row's absmax: q in −127..127."""
        w = weight.detach().float()
        scale = (w.abs().amax(1) / 127).clamp(min=1e-8)
        q = (w / scale[:, None]).round().clamp(-127, 127).to(torch.int8)
        return cls.from_quantized(q, scale, bias)

    def _matmul(self, x: torch.Tensor) -> torch.Tensor:
        if self.native:
            return self._kernel()(x)
        y: torch.Tensor = torch.ops.aten._weight_int8pack_mm(x, self.q, self.scale)
        return y

    def _kernel(self) -> Callable[[torch.Tensor], torch.Tensor]:
        q, scale, op = self.q, self.scale, torch.ops.aten._weight_int8pack_mm.default
        if self.native:
            return self._native_kernel()
        return lambda x: op(x, q, scale)

    def _native_kernel(self) -> calls.Matmul:
        q = self.q
        if self._native_fn is None or self._native_fn[0] is not q:
            self._native_fn = (q, calls.q8_mm([(q, self.scale.float().contiguous())], self.in_features))
        return self._native_fn[1]

    def dequantized(self) -> torch.Tensor:
        return self.q.float() * self.scale.float()[:, None]


def quantize_int4(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(q uint8 [N, K] in 0..15, scale [N, K/32], zero [N, K/32]) with w ≈ (q − 8)·scale + zero."""
    w = weight.detach().float()
    n, k = w.shape
    groups = w.reshape(n, k // GROUP, GROUP)
    lo, hi = groups.amin(-1), groups.amax(-1)
    scale = ((hi - lo) / 15).clamp(min=1e-6)
    q = ((groups - lo[..., None]) / scale[..., None]).round().clamp(0, 15).to(torch.uint8).reshape(n, k)
    return q, scale, lo + 8 * scale


def _scales_zeros(scale: torch.Tensor, zero: torch.Tensor) -> torch.Tensor:
    """[N, K / 32] each → the kernel's [K / 32, N, 2] bf16."""
    return torch.stack([scale.float(), zero.float()], -1).transpose(0, 1).contiguous().to(ACTIVATIONS)


NATIVE_LAYOUT = "specchat-q8mm1"  # SpecChat's kernel: nibbles of block pairs (``pack_native``)


def int4_layout() -> str:
    """What the CPU int4 packing depends on: SpecChat's kernel's own layout where it runs
    (``NATIVE_LAYOUT``, the same on every x86-64 CPU), else torch's version and the kernels ATen
    dispatches to (its blocks are 64 outputs wide under AVX-512, 32 under AVX2 or none), so that
    bytes packed in one process are used only by a process that would have packed them the same."""
    if native.kernels() is not None:
        return NATIVE_LAYOUT
    return f"torch{torch.__version__}-{torch.backends.cpu.get_cpu_capability()}"


def pack_int4(q: torch.Tensor) -> torch.Tensor:
    """q: uint8 [N, K], values 0..15 → the int4 kernel's packed weight (on q's device)."""
    return _pack_int4(q)


def pack_native(q: torch.Tensor) -> torch.Tensor:
    """q: uint8 [N, K] in 0..15 → SpecChat's int4 layout, [N, K / 2] uint8: each pair of groups
    (2p, 2p + 1) is 32 bytes, byte j holding weight j of the even group (low nibble) and weight j
    of the odd one (high nibble); a lone last group is 16 bytes, byte j holding its weights j (low)
    and j + 16 (high)."""
    n, k = q.shape
    groups = k // GROUP
    pairs = groups // 2
    q = q.to(torch.uint8)
    parts = []
    if pairs:
        b = q[:, : pairs * 2 * GROUP].reshape(n, pairs, 2, GROUP)
        parts.append((b[:, :, 0] | (b[:, :, 1] << 4)).reshape(n, pairs * GROUP))
    if groups % 2:
        t = q[:, pairs * 2 * GROUP :].reshape(n, 2, GROUP // 2)
        parts.append(t[:, 0] | (t[:, 1] << 4))
    return torch.cat(parts, 1).contiguous()


def unpack_native(packed: torch.Tensor) -> torch.Tensor:
    """``pack_native``'s inverse: [N, K / 2] → q uint8 [N, K]."""
    n, half = packed.shape
    groups = 2 * half // GROUP
    pairs = groups // 2
    low, high = packed & 0x0F, packed >> 4
    parts = []
    if pairs:
        span = pairs * GROUP  # pair p's bytes: its even group's weights low, its odd group's high
        both = torch.stack((low[:, :span].reshape(n, pairs, GROUP), high[:, :span].reshape(n, pairs, GROUP)), 2)
        parts.append(both.reshape(n, -1))
    if groups % 2:
        parts.append(torch.cat((low[:, pairs * GROUP :], high[:, pairs * GROUP :]), 1))
    return torch.cat(parts, 1)


def native_rows(nibbles: torch.Tensor, scales_zeros: torch.Tensor) -> torch.Tensor:
    """SpecChat's int4 rows: each row's nibbles [K / 2] (``pack_native``), then its d = scale
    [K / 32] and mn = zero − 8·scale [K / 32] as fp32 bytes.  → uint8 [N, K / 2 + 8 · K / 32]"""
    scale, zero = scales_zeros.float().unbind(-1)  # [K / 32, N] each
    d, mn = scale.t().contiguous(), (zero - 8 * scale).t().contiguous()
    n = nibbles.shape[0]
    return torch.cat((nibbles, d.view(torch.uint8).reshape(n, -1), mn.view(torch.uint8).reshape(n, -1)), 1)


def side_by_side(layers: Sequence[nn.Module]) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """One call for several native layers over the same input (q | k | v, gate | up): bf16 rows
    [M, K] → [M, N0 + N1 + …] bf16, the layers' outputs side by side. The rows are quantized once
    and the kernel runs each layer's columns as its own call would, so each part is bit-identical
    to that layer's ``rows_fn`` (tests/test_native_kernels.py); one call, one quantization and
    one output tensor instead of one each. None when the layers are not all SpecChat's kernels of
    one form over one input size."""
    return with_bias(side_by_side_kernel(layers))


def with_bias(found: tuple[calls.Matmul, torch.Tensor | None] | None) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """``side_by_side_kernel``'s call with its bias added after it (bf16), as one callable."""
    if found is None:
        return None
    call, bias = found
    if bias is None:
        return call
    return lambda x: call(x) + bias


def side_by_side_kernel(layers: Sequence[nn.Module]) -> tuple[calls.Matmul, torch.Tensor | None] | None:
    """``side_by_side``'s parts: the kernel's one call over the layers' weights side by side, and
    their biases together (added after it, in bf16), or None where ``side_by_side`` gives None."""
    if len(layers) < 2 or not all(isinstance(layer, WeightOnlyLinear) and layer.native for layer in layers):
        return None
    weight_only = [layer for layer in layers if isinstance(layer, WeightOnlyLinear)]
    first = weight_only[0]
    if any(type(layer) is not type(first) or layer.in_features != first.in_features for layer in weight_only):
        return None
    biases = [layer.bias for layer in weight_only]
    if any(b is None for b in biases) and any(b is not None for b in biases):
        return None  # y + 0 is not y for a -0.0: mixed biases stay separate calls
    given = [b for b in biases if b is not None]
    bias = torch.cat(given) if given else None  # each part's bias on its own columns: the same adds
    own = [layer._native_kernel().weights for layer in weight_only]  # what each layer's own call reads
    k = first.in_features
    if isinstance(first, Int4Linear):
        call = calls.q4_mm([weights[0] for weights in own], k)
    elif isinstance(first, SuperBlockLinear):
        call = first.matmul([weights[0] for weights in own], k)
    else:
        call = calls.q8_mm([(weights[0], weights[1]) for weights in own], k)
    return call, bias


def side_by_side_runs(layers: Sequence[nn.Module]) -> list[tuple[calls.Matmul, torch.Tensor | None]] | None:
    """Layers over one input (q | k | v) as the fewest kernel calls, in order: each run of
    consecutive layers of one form side by side (``side_by_side_kernel``), a lone layer as its own
    kernel (a Q4_K_M file's Q4_K q and k, then its Q6_K v: two calls); each with its bias. None
    where a layer is not SpecChat's kernel, or the runs' biases are not all given or all absent."""
    if not all(isinstance(layer, WeightOnlyLinear) and layer.native for layer in layers):
        return None
    weight_only = [layer for layer in layers if isinstance(layer, WeightOnlyLinear)]
    runs: list[list[WeightOnlyLinear]] = []
    for layer in weight_only:
        if runs and type(layer) is type(runs[-1][0]) and layer.in_features == runs[-1][0].in_features:
            runs[-1].append(layer)
        else:
            runs.append([layer])
    # a lone layer: the kernel its own ``rows_fn`` calls, and the bias it adds
    found = [side_by_side_kernel(run) if len(run) > 1 else (run[0]._native_kernel(), run[0].bias) for run in runs]
    kernels = [kernel for kernel in found if kernel is not None]
    if len(kernels) != len(runs) or len({bias is None for _, bias in kernels}) > 1:
        return None  # y + 0 is not y for a -0.0: mixed biases stay separate calls
    return kernels


def _pack_int4(q: torch.Tensor) -> torch.Tensor:
    if q.device.type == "cpu" and native.kernels() is not None:
        return pack_native(q)
    if q.device.type == "cuda":  # tinygemm packs two values per byte first; untested here
        pairs = (q[:, ::2].to(torch.uint8) << 4) | q[:, 1::2].to(torch.uint8)
        packed_cuda: torch.Tensor = torch.ops.aten._convert_weight_to_int4pack(pairs.contiguous(), 8)
        return packed_cuda
    packed: torch.Tensor = torch.ops.aten._convert_weight_to_int4pack_for_cpu(q.to(torch.int32).contiguous(), 1)
    return packed


# ---------------------------------------------------------------- whole models


@dataclass(frozen=True)
class QuantReport:
    """What ``quantize_model`` did: layers swapped per form, and those left, with why."""

    form: str  # the form asked: "int4" | "int8"
    swapped: dict[str, int] = field(default_factory=dict)  # form -> layers swapped to it
    left: tuple[str, ...] = ()  # "model.layers.0.mlp.up_proj: K = 40 is not a multiple of 32"

    @property
    def total(self) -> int:
        return sum(self.swapped.values())

    def describe(self) -> str:
        """ "int4: 210 layers, int8: 1 layer; 2 left (…)" """
        parts = [f"{form}: {n} layer{'s' if n != 1 else ''}" for form, n in self.swapped.items() if n]
        if self.left:
            parts.append(f"{len(self.left)} left ({'; '.join(self.left[:3])}{'; …' if len(self.left) > 3 else ''})")
        return ", ".join(parts) or "nothing swapped"


def int4_fits(out_features: int, in_features: int) -> str | None:
    """Why a [in → out] linear cannot be int4 here (None: it can)."""
    if in_features % GROUP:
        return f"K = {in_features} is not a multiple of {GROUP}"
    if out_features % INT4_N_MULTIPLE:
        return f"N = {out_features} is not a multiple of {INT4_N_MULTIPLE}"
    return None


def int8_fits(out_features: int, in_features: int) -> str | None:
    """Why a [in → out] linear cannot be int8 here (None: it can)."""
    if in_features % INT8_K_MULTIPLE:
        return f"K = {in_features} is not a multiple of {INT8_K_MULTIPLE}"
    return None


def _is_head(model: nn.Module, layer: nn.Module) -> bool:
    get = getattr(model, "get_output_embeddings", None)
    return callable(get) and get() is layer


def quantize_model(
    model: nn.Module, form: str, head_form: str | None = None, super_blocks: bool = False
) -> QuantReport:
    """Swap every ``nn.Linear`` and GPT-2 ``Conv1D`` for the weight-only ``form`` ("int4" or
    "int8"); the LM head takes ``head_form`` (default: int8 for int4 — the head is the last
    matrix before the logits and llama.cpp's own Q4 files keep it wider — else ``form``).
    ``super_blocks`` (a draft model, where SpecChat's kernels run): int4 is Q4_K (``Q4KLinear``,
    K padded to whole super-blocks), the cheapest pass the kernels have; a target's int4 keeps
    ``Int4Linear``'s per-32 scales, closer to its float weights.

    An int4 layer whose shape does not fit (K not a multiple of 32, N not of 16) becomes int8;
    a layer no form fits (K not a multiple of 16) is left as it was and named: prepack it
    (``cpu_kernels``) so that it stays exact too. The model's other weights (embeddings, norms) are
    left as they are: convert the model to bf16 first, as the layers compute in bf16."""
    if form not in QUANT_FORMS:
        raise ValueError(f"{form!r} is not a weight-only form ({', '.join(QUANT_FORMS)})")
    head_form = head_form or ("int8" if form == "int4" else form)
    swapped: dict[str, int] = {}
    left: list[str] = []
    layers = [
        (f"{prefix}.{name}".lstrip("."), parent, name, child)
        for prefix, parent in model.named_modules()
        for name, child in parent.named_children()
        if type(child) in (nn.Linear, Conv1D)
    ]
    for path, parent, name, child in layers:
        weight = child.weight.detach()
        if isinstance(child, Conv1D):
            weight = weight.t()
        bias = child.bias.detach() if child.bias is not None else None
        want = head_form if _is_head(model, child) else form
        if want == "int4" and int4_fits(*weight.shape) is not None:
            want = "int8"
        if want == "int8" and (why := int8_fits(*weight.shape)) is not None:
            left.append(f"{path}: {why}")
            continue
        layer: WeightOnlyLinear
        if want == "int4" and super_blocks and native.kernels() is not None and not isinstance(child, Conv1D):
            layer = Q4KLinear.from_float(weight, bias)
        elif want == "int4":
            layer = Int4Linear.from_float(weight, bias)
        else:
            layer = Int8Linear.from_float(weight, bias)
        setattr(parent, name, layer)
        swapped[want] = swapped.get(want, 0) + 1
    return QuantReport(form, swapped, tuple(left))


def quantized_layers(model: nn.Module) -> list[WeightOnlyLinear]:
    return [m for m in model.modules() if isinstance(m, WeightOnlyLinear)]


# ---------------------------------------------------------------- exactness on this CPU


# block sizes asked: a verified block, a prompt's pass with drafts folded in, a prompt of several
# chunks (a prepacked linear is fed at most ``prepacked.PACK_MAX_ROWS`` rows a call)
INVARIANCE_ROWS = (5, 34, 70)


@functools.cache
def batch_invariant(form: str, in_features: int = 1024) -> bool:
    """Whether a ``form`` layer over ``in_features`` inputs gives bit-identical rows fed together
    (M in ``INVARIANCE_ROWS``) or alone, on this CPU with the kernels torch picked: asked once
    per process and K on a small random layer. ``form``: "int4", "int8", or "prepacked-bf16" /
    "prepacked-fp32" (oneDNN). Measured on an AVX-512 + AMX CPU: oneDNN's bf16 GEMM with K = 576
    changes a row's bits from 33 rows a call (so ``PrepackedLinear`` feeds at most 32); int4 /
    int8 and fp32 are invariant at any M measured (up to 200)."""
    gen = torch.Generator().manual_seed(0)
    weight = torch.randn(512, in_features, generator=gen)
    x = torch.randn(max(INVARIANCE_ROWS), in_features, generator=gen)
    try:
        layer = _probe_layer(form, weight)
        x = x.to(torch.float32 if form == "prepacked-fp32" else ACTIVATIONS)
        with torch.inference_mode():
            alone = [layer(x[i : i + 1])[0] for i in range(len(x))]
            return all(torch.equal(layer(x[:m])[i], alone[i]) for m in INVARIANCE_ROWS for i in range(m))
    except (RuntimeError, NotImplementedError, ValueError):
        return False


def _probe_layer(form: str, weight: torch.Tensor) -> nn.Module:
    if form == "int4":
        return Int4Linear.from_float(weight)
    if form == "int8":
        return Int8Linear.from_float(weight)
    dtype = torch.bfloat16 if form == "prepacked-bf16" else torch.float32
    return PrepackedLinear(weight.to(dtype), None, dtype)


def input_sizes(model: nn.Module) -> tuple[int, ...]:
    """The distinct K (inputs) of a model's linear layers (nn.Linear, Conv1D, weight-only)."""
    sizes = set()
    for module in model.modules():
        if isinstance(module, WeightOnlyLinear):
            sizes.add(module.in_features)
        elif type(module) is nn.Linear:
            sizes.add(module.in_features)
        elif type(module) is Conv1D:
            sizes.add(int(module.weight.shape[0]))
    return tuple(sorted(sizes))
