"""GGUF tensors onto the weight-only forms, block by block, without a float model in between.

The forms are those of ``runners/quant.py``:

- **int4**, groups of 32 inputs: ``w = (q − 8)·scale + zero``, q in 0..15 (``Int4Form``);
- **int8**, one scale per output row: ``w = q·scale``, q in −128..127 (``Int8Form``);
- **dense**: a float tensor (norms, biases, F32 / F16 / BF16 linears).

What each GGUF type becomes (``form_of``):

- Q4_0 (``w = d·(q − 8)``) → int4 with scale = d, zero = 0;
- Q4_1 (``w = d·q + m``) → int4 with scale = d, zero = m + 8d;
- Q4_K (super-blocks of 256 = 8 × 32, 6-bit sub-scales and mins: ``w = d·sc·q − dmin·mn``) →
  where SpecChat's kernels run, Q4_K as it is (``Q4KForm``: the file's integers, d and dmin
  exactly; ``quant.Q4KLinear``), else int4 with scale = d·sc, zero = 8·scale − dmin·mn;

  the int4 ones exact but for the bf16 rounding of scale and zero (what int4pack reads);
- Q6_K (super-blocks of 256 = 16 × 16, int8 sub-scales: ``w = d·sc·(q − 32)``, q 6-bit) → where
  SpecChat's kernels run, Q6_K as it is (``Q6KForm``: the file's integers, d exactly;
  ``quant.Q6KLinear``), int8 being the form that keeps it; else as the types below;
- Q5_0 / Q5_1 / Q5_K / Q6_K / Q8_0 and every other quantized type → int8 per row, rounded from
  the file's own dequantization against the bf16 scale the kernel reads (more bits than int4
  holds; per row, int8 keeps ~1/250 of the row's largest weight, which measured closer to the
  file than int4 groups of 32 — see the README table);
- F32 / F16 / BF16 → dense.

A draft model's int4 (``want="q4k"``, where SpecChat's kernels run) is Q4_K whatever the file's
type: a Q4_K tensor as it is, any other rounded to Q4_K from the file's dequantization, K padded
with zero weights to whole super-blocks (``Q4KForm.k``). A draft's numbers never change the answer
(the target decides every token), so its form is chosen for speed: Q4_K's one integer sum per 256
inputs is the cheapest pass the kernels have (a 0.5B draft's step 0.6–0.7× its int8 rows').

Rows are handled in chunks written into the form's own tensors, so a tensor's float copy never
exists whole and no list of chunks is concatenated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from gguf import GGMLQuantizationType as Q
from gguf import dequantize
from gguf.constants import GGML_QUANT_SIZES
from gguf.quants import Q4_K

from app.engine.runners.native.calls import super_blocks_k
from app.engine.runners.quant import q4k_weight, q6k_weight, quantize_q4k

GROUP = 32  # inputs per int4 group: the block size of Q4_0 / Q4_1 and a Q4_K sub-block
CHUNK_ELEMENTS = 1 << 20  # weights decoded at a time (4 MiB as fp32), whatever a row's length
INT4_TYPES = (Q.Q4_0, Q.Q4_1, Q.Q4_K)
DENSE_TYPES = (Q.F32, Q.F16, Q.BF16)
INT4_BLOCK_BYTES = {Q.Q4_0: 18, Q.Q4_1: 20, Q.Q4_K: 144}
Q6K_BLOCK_BYTES = 210  # ggml's block_q6_K: ql [128], qh [64], scales [16] int8, d fp16


@dataclass(frozen=True)
class Int4Form:
    q: torch.Tensor  # uint8 [N, K], 0..15
    scale: torch.Tensor  # float32 [N, K // 32]
    zero: torch.Tensor  # float32 [N, K // 32]

    def weight(self) -> torch.Tensor:
        """fp32 [N, K] as the kernel computes it: scale and zero rounded to bf16."""
        n, k = self.q.shape
        s, z = bf16(self.scale)[..., None], bf16(self.zero)[..., None]
        return ((self.q.reshape(n, -1, GROUP).float() - 8) * s + z).reshape(n, k)


@dataclass(frozen=True)
class Int8Form:
    q: torch.Tensor  # int8 [N, K]
    scale: torch.Tensor  # float32 [N], already a bf16 value

    def weight(self) -> torch.Tensor:
        return self.q.float() * bf16(self.scale)[:, None]


@dataclass(frozen=True)
class Q4KForm:
    """Q4_K's own parts, as ``quant.Q4KLinear.from_quantized`` takes them."""

    q: torch.Tensor  # uint8 [N, K], 0..15
    sc: torch.Tensor  # uint8 [N, K // 32], 0..63
    m: torch.Tensor  # uint8 [N, K // 32], 0..63
    d: torch.Tensor  # float32 [N, K // 256] (the file's fp16)
    dmin: torch.Tensor  # float32 [N, K // 256]
    k: int = 0  # the layer's inputs when fewer than q's (the rest zero padding to a whole super-block)

    def weight(self) -> torch.Tensor:
        """fp32 [N, K] as the kernel computes it: d·sc·q − dmin·m, nothing rounded."""
        return q4k_weight(self.q, self.sc, self.m, self.d, self.dmin)[:, : self.k or None]


@dataclass(frozen=True)
class Q6KForm:
    """Q6_K's own parts, as ``quant.Q6KLinear.from_quantized`` takes them."""

    q: torch.Tensor  # uint8 [N, K], 0..63
    sc: torch.Tensor  # int8 [N, K // 16]
    d: torch.Tensor  # float32 [N, K // 256] (the file's fp16)

    def weight(self) -> torch.Tensor:
        """fp32 [N, K] as the kernel computes it: d·sc·(q − 32), nothing rounded."""
        return q6k_weight(self.q, self.sc, self.d)


Form = Int4Form | Int8Form | Q4KForm | Q6KForm | torch.Tensor


def bf16(x: torch.Tensor) -> torch.Tensor:
    return x.to(torch.bfloat16).float()


def chunk_rows(k: int) -> int:
    """Rows of K weights decoded at a time: ``CHUNK_ELEMENTS`` weights, at least one row."""
    return max(1, CHUNK_ELEMENTS // k)


def rows_of(raw: np.ndarray, qtype: Q, k: int) -> np.ndarray:
    """The raw bytes of a [N, K] tensor as [N, bytes per row], whatever shape the reader gave."""
    data = raw.view(np.uint8)
    block, size = GGML_QUANT_SIZES[qtype]
    n = data.size // size * block // k
    return data.reshape(n, -1)


def form_of(raw: np.ndarray, qtype: Q, k: int, want: str = "native", k_quants: bool = False) -> Form:
    """The form of one [N, K] tensor. ``want``: "native" (the table above), "int4" or "int8"
    (a forced form: other types are rounded to it from the file's dequantization), "q4k" (a
    draft's int4: Q4_K, needs ``k_quants``). ``k_quants`` (SpecChat's kernels run): Q4_K stays
    Q4_K (``Q4KForm``) where int4 is wanted, Q6_K stays Q6_K (``Q6KForm``) where int8 is."""
    rows = rows_of(raw, qtype, k)
    if qtype in DENSE_TYPES and want == "native":
        return torch.from_numpy(dequantize(rows, qtype).reshape(-1, k).copy())
    if want == "q4k":
        if not k_quants:
            raise ValueError("Q4_K forms run on SpecChat's kernels only")
        return q4k_of_blocks(rows) if qtype == Q.Q4_K else _chunked_q4k(rows, qtype, k)
    if k_quants and want in ("native", "int4") and qtype == Q.Q4_K:
        return q4k_of_blocks(rows)
    if k_quants and want in ("native", "int8") and qtype == Q.Q6_K:
        return q6k_of_blocks(rows)
    if want in ("native", "int4") and qtype in INT4_TYPES:
        return int4_of_blocks(rows, qtype)
    if want == "int4":
        return _chunked_int4(rows, qtype, k)
    return int8_of_rows(rows, qtype, k)


# ---------------------------------------------------------------- int4 straight from the blocks


def int4_of_blocks(rows: np.ndarray, qtype: Q) -> Int4Form:
    """Q4_0 / Q4_1 / Q4_K rows ([N, bytes]) as int4 groups of 32, chunk by chunk, each chunk
    written into the form's own tensors (no list of chunks to concatenate)."""
    form: Int4Form | None = None
    step = chunk_rows(rows.shape[1] * 2)  # a byte holds two weights
    for i in range(0, rows.shape[0], step):
        chunk = _int4_chunk(rows[i : i + step], qtype)
        form = form or _empty_int4(rows.shape[0], chunk)
        for whole, part in zip((form.q, form.scale, form.zero), chunk, strict=True):
            whole[i : i + step] = part
    assert form is not None, "a tensor with no rows"
    return form


def q4k_of_blocks(rows: np.ndarray) -> Q4KForm:
    """Q4_K rows ([N, bytes]) as their own parts, chunk by chunk."""
    n, k = rows.shape[0], rows.shape[1] // INT4_BLOCK_BYTES[Q.Q4_K] * 256
    form = Q4KForm(
        torch.empty((n, k), dtype=torch.uint8), torch.empty((n, k // GROUP), dtype=torch.uint8),
        torch.empty((n, k // GROUP), dtype=torch.uint8), torch.empty(n, k // 256), torch.empty(n, k // 256),
    )
    step = chunk_rows(k)
    for i in range(0, n, step):
        blocks = rows[i : i + step].reshape(-1, INT4_BLOCK_BYTES[Q.Q4_K])
        rows_here = blocks.shape[0] * 256 // k
        d = blocks[:, 0:2].view(np.float16).astype(np.float32)
        dmin = blocks[:, 2:4].view(np.float16).astype(np.float32)
        sc, mn = Q4_K.get_scale_min(blocks[:, 4:16])  # [B, 8] each, 6-bit
        qs = blocks[:, 16:].reshape(-1, 4, 1, 32) >> np.array([0, 4], dtype=np.uint8).reshape(1, 1, 2, 1)
        parts = ((qs & 0x0F).reshape(rows_here, k), sc.reshape(rows_here, -1), mn.reshape(rows_here, -1),
                 d.reshape(rows_here, -1), dmin.reshape(rows_here, -1))  # fmt: skip
        for whole, part in zip((form.q, form.sc, form.m, form.d, form.dmin), parts, strict=True):
            whole[i : i + step] = torch.from_numpy(np.ascontiguousarray(part).astype(whole.numpy().dtype))
    return form


def q6k_of_blocks(rows: np.ndarray) -> Q6KForm:
    """Q6_K rows ([N, bytes]) as their own parts, chunk by chunk (the bits as gguf's dequantizer
    reads them: per half of 128 inputs, ql's low nibbles then its high ones, qh's pairs of bits)."""
    n, k = rows.shape[0], rows.shape[1] // Q6K_BLOCK_BYTES * 256
    form = Q6KForm(torch.empty((n, k), dtype=torch.uint8), torch.empty((n, k // 16), dtype=torch.int8),
                   torch.empty(n, k // 256))  # fmt: skip
    step = chunk_rows(k)
    for i in range(0, n, step):
        blocks = rows[i : i + step].reshape(-1, Q6K_BLOCK_BYTES)
        rows_here = blocks.shape[0] * 256 // k
        ql = blocks[:, :128].reshape(-1, 2, 1, 64) >> np.array([0, 4], dtype=np.uint8).reshape(1, 1, 2, 1)
        qh = blocks[:, 128:192].reshape(-1, 2, 1, 32) >> np.array([0, 2, 4, 6], dtype=np.uint8).reshape(1, 1, 4, 1)
        q = (ql & 0x0F).reshape(-1, 2, 4, 32) | ((qh & 0x03) << 4)
        parts = (q.reshape(rows_here, k), blocks[:, 192:208].view(np.int8).reshape(rows_here, -1),
                 blocks[:, 208:210].view(np.float16).astype(np.float32).reshape(rows_here, -1))  # fmt: skip
        for whole, part in zip((form.q, form.sc, form.d), parts, strict=True):
            whole[i : i + step] = torch.from_numpy(np.ascontiguousarray(part))
    return form


def _empty_int4(n: int, like: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> Int4Form:
    return Int4Form(*(torch.empty((n, *t.shape[1:]), dtype=t.dtype) for t in like))


def _int4_chunk(rows: np.ndarray, qtype: Q) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    n = rows.shape[0]
    blocks = rows.reshape(-1, INT4_BLOCK_BYTES[qtype])
    if qtype == Q.Q4_K:
        q, scale, zero = _q4_k(blocks)
    else:
        d = blocks[:, 0:2].view(np.float16).astype(np.float32)  # [B, 1]
        m = blocks[:, 2:4].view(np.float16).astype(np.float32) if qtype == Q.Q4_1 else None
        q = _nibbles(blocks[:, 4 if m is not None else 2 :])  # [B, 32]
        scale = d
        zero = np.zeros_like(d) if m is None else m + 8 * d  # w = d·q + m = (q − 8)·d + (m + 8d)
    return (
        torch.from_numpy(q.reshape(n, -1)),
        torch.from_numpy(np.ascontiguousarray(scale.reshape(n, -1))),
        torch.from_numpy(np.ascontiguousarray(zero.reshape(n, -1))),
    )


def _nibbles(qs: np.ndarray) -> np.ndarray:
    """[B, 16] bytes → [B, 32] values: elements 0..15 are the low nibbles, 16..31 the high."""
    return np.concatenate([qs & 0x0F, qs >> 4], axis=-1)


def _q4_k(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q4_K super-blocks [B, 144] → q [B, 256], scale [B, 8], zero [B, 8]."""
    d = blocks[:, 0:2].view(np.float16).astype(np.float32)  # [B, 1]
    dmin = blocks[:, 2:4].view(np.float16).astype(np.float32)
    sc, mn = Q4_K.get_scale_min(blocks[:, 4:16])  # [B, 8] each, 6-bit
    scale = d * sc.astype(np.float32)  # the reference's d·sc, in fp32 as it computes it
    zero = 8 * scale - dmin * mn.astype(np.float32)  # w = scale·q − dmin·mn
    qs = blocks[:, 16:].reshape(-1, 4, 1, 32) >> np.array([0, 4], dtype=np.uint8).reshape(1, 1, 2, 1)
    return (qs & 0x0F).reshape(-1, 256), scale, zero


# ---------------------------------------------------------------- int8 per row, from the file's values


def int8_of_rows(rows: np.ndarray, qtype: Q, k: int) -> Int8Form:
    """Round the file's dequantized rows to int8 against the bf16 row scale (chunked)."""
    n = rows.shape[0]
    form = Int8Form(torch.empty((n, k), dtype=torch.int8), torch.empty(n))
    step = chunk_rows(k)
    for i in range(0, n, step):
        part = _int8_chunk(_dequantized(rows[i : i + step], qtype, k))
        form.q[i : i + step], form.scale[i : i + step] = part.q, part.scale
    return form


def _int8_chunk(w: torch.Tensor) -> Int8Form:
    scale = bf16((w.abs().amax(1) / 127).clamp(min=1e-8))
    q = (w / scale[:, None]).round().clamp(-128, 127).to(torch.int8)
    return Int8Form(q, scale)


def _chunked_int4(rows: np.ndarray, qtype: Q, k: int) -> Int4Form:
    """A forced int4 form of a type without int4 blocks: min/max per group, round to nearest."""
    n = rows.shape[0]
    form = Int4Form(torch.empty((n, k), dtype=torch.uint8), torch.empty(n, k // GROUP), torch.empty(n, k // GROUP))
    step = chunk_rows(k)
    for i in range(0, n, step):
        w = _dequantized(rows[i : i + step], qtype, k)
        g = w.reshape(w.shape[0], -1, GROUP)
        lo, hi = g.amin(-1), g.amax(-1)
        scale = ((hi - lo) / 15).clamp(min=1e-6)
        q = ((g - lo[..., None]) / scale[..., None]).round().clamp(0, 15).to(torch.uint8)
        form.q[i : i + step], form.scale[i : i + step] = q.reshape(w.shape), scale
        form.zero[i : i + step] = lo + 8 * scale
    return form


def _chunked_q4k(rows: np.ndarray, qtype: Q, k: int) -> Q4KForm:
    """Any type rounded to Q4_K from the file's dequantization (``quant.quantize_q4k``: each block's
    min/max range, sub-scales and mins to 6 bits), K padded to whole super-blocks, chunk by chunk."""
    n, kp = rows.shape[0], super_blocks_k(k)
    form = Q4KForm(
        torch.empty((n, kp), dtype=torch.uint8), torch.empty((n, kp // GROUP), dtype=torch.uint8),
        torch.empty((n, kp // GROUP), dtype=torch.uint8), torch.empty(n, kp // 256), torch.empty(n, kp // 256),
        k if kp != k else 0,
    )
    step = chunk_rows(kp)
    for i in range(0, n, step):
        parts = quantize_q4k(_dequantized(rows[i : i + step], qtype, k))
        for whole, part in zip((form.q, form.sc, form.m, form.d, form.dmin), parts, strict=True):
            whole[i : i + step] = part
    return form


def _dequantized(rows: np.ndarray, qtype: Q, k: int) -> torch.Tensor:
    return torch.from_numpy(dequantize(rows, qtype).reshape(-1, k))


def reference(raw: np.ndarray, qtype: Q, k: int) -> torch.Tensor:
    """The file's own dequantization (gguf's reference dequantizers), fp32 [N, K]."""
    return _dequantized(rows_of(raw, qtype, k), qtype, k)


def max_error(form: Form, raw: np.ndarray, qtype: Q, k: int) -> float:
    """Max abs weight error of ``form`` (as the kernel computes it) against the file's values."""
    weight = form if isinstance(form, torch.Tensor) else form.weight()
    return float((weight.float() - reference(raw, qtype, k)).abs().max())
