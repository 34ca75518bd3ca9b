"""The one door to ``q8mm.c``: a typed wrapper per C kernel, taking tensors, not pointers.

Each wrapper checks what the kernel will read and write — dtype, device, shape, strides,
contiguity, lengths — before any pointer is taken, raises ``ValueError`` (``TypeError`` for
something that is not a tensor) with what it wanted and what it got, and passes the pointers
on in one place. A misordered or mis-shaped call raises; it never reaches C. The linears check
their weights once, where the callable is made (``q4_mm`` / ``q8_mm`` → ``Matmul``), and each
call checks only its rows (~0.1 µs); the other kernels' tensors change every call and are checked
every call (~0.9 µs for ``rms_norm``, ~1.9 for ``attend``, ~2.5 for ``attend_layer`` here, against
the same kernel called with bare pointers).

Each kernel's fixed float order is stated once, beside its test (tests/test_native_kernels.py).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch.nn import functional as F

from app.engine.runners import native
from app.engine.runners.threads import torch_threads

BF16 = torch.bfloat16
QK = 32  # q8mm.c's QK: inputs per block of quantized activations (and per int4 group)
QK_K = 256  # q8mm.c's QKK: inputs per Q4_K / Q6_K super-block (and per block of their quantized activations)
Q4K_SUPER_BLOCK_BYTES = 152  # q8mm.c's Q4K_SB_BYTES: d, dmin (fp32), sc [8], m [8], 128 bytes of nibbles
Q6K_SUPER_BLOCK_BYTES = 212  # q8mm.c's Q6K_SB_BYTES: ql [128], qh [64], sc [16] int8, d (fp32)
MAX_PARTS = 8  # q8mm.c's MAX_PARTS: weights side by side in one linear call
ATTEND_MAX_HEAD_DIM = 256  # q8mm.c's ATTEND_MAX_D


_local = threading.local()  # .threads: this thread's linears' threads (``linear_threads``)


def thread_count() -> int:
    """Threads this thread's linear calls split into: ``linear_threads``' count while one is
    active here, else torch's intra-op thread count."""
    count: int | None = getattr(_local, "threads", None)
    return torch.get_num_threads() if count is None else count


@contextmanager
def linear_threads(count: int) -> Iterator[None]:
    """Within it, this thread's linear calls split into ``count`` threads of the kernels' pool,
    whatever torch's own thread count is (a lean pass runs torch's small ops on one thread
    meanwhile: two pools spinning for the same cores slowed a 5-row pass 1.4x on 2 cores)."""
    if count < 1:
        raise ValueError(f"a linear call runs on at least one thread; got {count}")
    before = getattr(_local, "threads", None)
    _local.threads = count
    try:
        yield
    finally:
        _local.threads = before


def _module() -> Any:
    module = native.kernels()
    if module is None:
        raise RuntimeError(f"SpecChat's kernels are not built here: {native.why_not()}")
    return module


def _tensor(name: str, t: object, dtype: torch.dtype, dims: int) -> torch.Tensor:
    """``t`` as a kernel reads it: a CPU tensor of ``dtype`` with ``dims`` dimensions, contiguous."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a tensor; got {type(t).__name__}")
    if t.dtype is not dtype or t.ndim != dims or not t.is_cpu or not t.is_contiguous():
        raise ValueError(
            f"{name} must be a contiguous CPU {dtype} tensor of {dims} dimensions; "
            f"got {t.dtype} {tuple(t.shape)} on {t.device}{'' if t.is_contiguous() else ', not contiguous'}"
        )
    return t


def q4_row_bytes(k: int) -> int:
    """Bytes of one int4 weight row over k inputs: its k / 2 nibbles, then d and mn in fp32."""
    return k // 2 + 8 * (k // QK)


def super_blocks_k(k: int) -> int:
    """The inputs a Q4_K / Q6_K row runs over: k rounded up to a whole super-block (q8mm.c's KQ;
    the kernel quantizes x's inputs past k to zero, so the padding adds nothing; a Q4_K row does
    not store its padding's nibbles, ``q4k_row_bytes``)."""
    return -(-k // QK_K) * QK_K


def q4k_tail(k: int) -> int:
    """Blocks of 32 in the last, partial super-block of a Q4_K row over k inputs (0: none)."""
    return k % QK_K // QK


def q4k_row_bytes(k: int) -> int:
    """Bytes of one Q4_K weight row over k inputs (q8mm.c's Q4K_ROW_BYTES): ⌊k / 256⌋ super-blocks
    of 152 bytes, then a partial one's 24 bytes of d, dmin, sc and m and 16 bytes a block of 32 it
    has (``quant.q4k_rows``)."""
    tail = q4k_tail(k)
    return k // QK_K * Q4K_SUPER_BLOCK_BYTES + (24 + 16 * tail if tail else 0)


def q6k_row_bytes(k: int) -> int:
    """Bytes of one Q6_K weight row over k inputs: ⌈k / 256⌉ super-blocks of 212 bytes."""
    return super_blocks_k(k) // QK_K * Q6K_SUPER_BLOCK_BYTES


@dataclass(frozen=True, slots=True, eq=False)
class Matmul:
    """``q4_mm`` / ``q8_mm`` over checked weights: bf16 rows x [M, K] → y [M, N] bf16, N the
    parts' outputs side by side. ``weights`` holds the tensors the pointers point into."""

    call: Any  # the module's q4_mm, q4k_mm, q6k_mm or q8_mm
    k: int
    n: int
    parts: tuple[int, ...]  # (w, N) per int4 / Q4_K / Q6_K part, (w, s, N) per int8 part
    weights: tuple[torch.Tensor, ...]
    path: int  # the kernels' path (_path)

    def __call__(self, x: torch.Tensor, threads: int | None = None) -> torch.Tensor:
        """bf16 rows [M, K] (a non-contiguous view is copied) → [M, N]; ``threads``: this
        thread's linear threads (``thread_count()``) unless given."""
        if (
            not isinstance(x, torch.Tensor)
            or x.dtype is not BF16
            or x.ndim != 2
            or x.shape[1] != self.k
            or not x.is_cpu
        ):
            got = f"{x.dtype} {tuple(x.shape)} on {x.device}" if isinstance(x, torch.Tensor) else type(x).__name__
            raise ValueError(f"this linear wants CPU bf16 rows [M, {self.k}]; got {got}")
        if not x.is_contiguous():
            x = x.contiguous()
        rows = x.shape[0]
        y = torch.empty((rows, self.n), dtype=BF16)
        if rows:
            use = thread_count() if threads is None else threads
            self.call(x.data_ptr(), rows, self.k, y.data_ptr(), use, self.path, *self.parts)
        return y


def _parts_count(count: int) -> None:
    if not 1 <= count <= MAX_PARTS:
        raise ValueError(f"a linear call takes 1 to {MAX_PARTS} weights side by side; got {count}")


def _input_size(k: int) -> None:
    if k <= 0 or k % QK:
        raise ValueError(f"the kernels take an input size that is a positive multiple of {QK}; got {k}")


def _path(path: int | None) -> int:
    if path is None:
        return native.path()
    if path not in (0, 1, 2) or isinstance(path, bool):
        raise ValueError(f"a kernel path is 0 (AVX2), 1 (AVX-512 VNNI) or 2 (VNNI with AMX); got {path!r}")
    return path


def _byte_rows(
    call: Any, name: str, rows: Sequence[torch.Tensor], k: int, row_bytes: int, path: int | None
) -> Matmul:
    """A ``Matmul`` over weights each kept as uint8 rows of ``row_bytes`` over k inputs (int4, Q4_K, Q6_K)."""
    _parts_count(len(rows))
    parts: list[int] = []
    for i, w in enumerate(rows):
        w = _tensor(f"{name} weight {i}", w, torch.uint8, 2)
        if w.shape[1] != row_bytes or w.shape[0] == 0:
            raise ValueError(f"{name} weight {i} over {k} inputs is [N, {row_bytes}] bytes; got {tuple(w.shape)}")
        parts += [w.data_ptr(), w.shape[0]]
    return Matmul(call, k, sum(parts[1::2]), tuple(parts), tuple(rows), _path(path))


def q4_mm(rows: Sequence[torch.Tensor], k: int, path: int | None = None) -> Matmul:
    """int4 weights side by side, each SpecChat's rows (``quant.native_rows``: uint8
    [N, K / 2 + 8·K / 32]) over the same k inputs. ``path``: the kernels' path, 0 AVX2, 1 AVX-512
    VNNI, 2 VNNI with Q4_K's wide calls on AMX (all the same bits), as ``native.path()`` says
    unless given."""
    module = _module()
    _input_size(k)
    return _byte_rows(module.q4_mm, "int4", rows, k, q4_row_bytes(k), path)


def _super_block_size(name: str, k: int) -> None:
    if k <= 0 or k % QK:
        raise ValueError(f"{name} takes an input size that is a positive multiple of {QK}; got {k}")


def q4k_mm(rows: Sequence[torch.Tensor], k: int, path: int | None = None) -> Matmul:
    """Q4_K weights side by side, each SpecChat's rows (``quant.q4k_rows``: uint8
    [N, ``q4k_row_bytes(k)``]) over the same k inputs, k a multiple of 32; ``path`` as in ``q4_mm``."""
    module = _module()
    _super_block_size("Q4_K", k)
    return _byte_rows(module.q4k_mm, "Q4_K", rows, k, q4k_row_bytes(k), path)


def q6k_mm(rows: Sequence[torch.Tensor], k: int, path: int | None = None) -> Matmul:
    """Q6_K weights side by side, each SpecChat's rows (``quant.q6k_rows``: uint8
    [N, ⌈K / 256⌉ · 212]) over the same k inputs, k a multiple of 32 (as ``q4k_mm``);
    ``path`` as in ``q4_mm``."""
    module = _module()
    _super_block_size("Q6_K", k)
    return _byte_rows(module.q6k_mm, "Q6_K", rows, k, q6k_row_bytes(k), path)


def q8_mm(weights: Sequence[tuple[torch.Tensor, torch.Tensor]], k: int, path: int | None = None) -> Matmul:
    """int8 weights side by side, each (q int8 [N, k], its fp32 row scales [N]) over the same k
    inputs; ``path`` as in ``q4_mm``."""
    module = _module()
    _parts_count(len(weights))
    _input_size(k)
    parts: list[int] = []
    kept: list[torch.Tensor] = []
    for i, (q, scales) in enumerate(weights):
        q = _tensor(f"int8 weight {i}", q, torch.int8, 2)
        scales = _tensor(f"int8 scales {i}", scales, torch.float32, 1)
        if q.shape[1] != k or q.shape[0] == 0 or scales.shape[0] != q.shape[0]:
            shapes = f"{tuple(q.shape)} and {tuple(scales.shape)}"
            raise ValueError(f"int8 weight {i} over {k} inputs is [N, {k}] with scales [N]; got {shapes}")
        parts += [q.data_ptr(), scales.data_ptr(), q.shape[0]]
        kept += [q, scales]
    return Matmul(module.q8_mm, k, sum(parts[2::3]), tuple(parts), tuple(kept), _path(path))


def threads_used() -> int:
    """Threads that computed columns of this thread's last linear call (1 below
    the kernel's ``THREAD_WORK`` multiply-adds, or while another thread's call has the pool)."""
    return int(_module().threads_used())


def thread_work() -> int:
    """Multiply-adds (M·N·K) below which one thread does a whole linear call."""
    return int(_module().THREAD_WORK)


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """Llama's RMSNorm over bf16 rows x [T, H] with a bf16 weight [H].  → [T, H] bf16"""
    module = _module()
    rows, width = _tensor("rms_norm's rows", x, BF16, 2).shape
    if _tensor("rms_norm's weight", weight, BF16, 1).shape[0] != width or width == 0:
        raise ValueError(
            f"rms_norm's weight must have one value per column of its rows [T, {width}]; got {weight.shape[0]}"
        )
    y = torch.empty_like(x)
    module.rms_norm(x.data_ptr(), rows, width, weight.data_ptr(), float(eps), y.data_ptr())
    return y


def _heads(heads: int, kv_heads: int, dim: int) -> None:
    if dim <= 0 or dim % 8 or dim > ATTEND_MAX_HEAD_DIM or heads <= 0 or kv_heads <= 0 or heads % kv_heads:
        raise ValueError(
            f"attention heads: a head dim that is a multiple of 8 up to {ATTEND_MAX_HEAD_DIM} and query "
            f"heads a whole multiple of the kv heads; got dim {dim}, {heads} and {kv_heads} heads"
        )


def _cache_buffer(name: str, t: object, kv_heads: int, dim: int, length: int) -> int:
    """A cache's key or value buffer [1, Hkv, ≥ length, D] bf16 on the CPU whose rows are
    contiguous (heads any distance apart): the heads' stride, in elements."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a tensor; got {type(t).__name__}")
    shape = t.shape
    if t.dtype != BF16 or not t.is_cpu or len(shape) != 4 or shape[0] != 1 or shape[1] != kv_heads:
        raise ValueError(f"{name} must be a CPU bf16 [1, {kv_heads}, L, D] tensor; got {t.dtype} {tuple(shape)}")
    stride = t.stride()
    if shape[3] != dim or shape[2] < length or stride[3] != 1 or stride[2] != dim or stride[1] < shape[2] * dim:
        raise ValueError(
            f"{name} must hold at least {length} contiguous rows of {dim} per head; "
            f"got {tuple(shape)} with strides {stride}"
        )
    return stride[1]


def attend(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, scale: float) -> torch.Tensor:
    """One-row attention for each query row over its own causal prefix: query [1, H, T, D] bf16,
    key / value [1, Hkv, L, D] (the cache's views: rows contiguous, heads any distance apart),
    L ≥ T; query head h reads kv head h / (H / Hkv).  → [1, H, T, D] bf16"""
    module = _module()
    batch, heads, rows, dim = _tensor("attend's query", query, BF16, 4).shape
    if batch != 1 or rows == 0:
        raise ValueError(f"attend's query must be [1, H, T ≥ 1, D]; got {tuple(query.shape)}")
    key_shape = key.shape if isinstance(key, torch.Tensor) and key.ndim == 4 else (0, 0, 0, 0)
    kv_heads, length = key_shape[1], key_shape[2]
    _heads(heads, kv_heads, dim)
    ks = _cache_buffer("attend's key", key, kv_heads, dim, rows)
    vs = _cache_buffer("attend's value", value, kv_heads, dim, length)
    if value.shape[2] != length:
        raise ValueError(f"attend's key and value must be as long; got {tuple(key_shape)} and {tuple(value.shape)}")
    out = torch.empty_like(query)
    module.attend(query.data_ptr(), heads, rows, dim, key.data_ptr(), value.data_ptr(), kv_heads, length, ks, vs,
                  float(scale), out.data_ptr())  # fmt: skip
    return out


def attend_layer(
    qkv: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    key_buffer: torch.Tensor,
    value_buffer: torch.Tensor,
    start: int,
    heads: tuple[int, int],
    scale: float,
    threads: int = 1,
) -> torch.Tensor:
    """A decoder layer's attention for T new rows in one call: q | k | v rows qkv [T, (H + 2·Hkv)·D]
    bf16, the rotary's cos and sin [T, D] bf16, the cache's key and value buffers [1, Hkv, capacity, D]
    (rows contiguous, room for start + T positions; the new keys and values are written at
    positions start..start + T − 1), ``heads`` (H, Hkv); the heads split among ``threads`` of the
    kernels' pool above its ``thread_work`` (the same bits).  → the attention rows [T, H·D] bf16"""
    module = _module()
    rows, dim = shape = _tensor("attend_layer's cos", cos, BF16, 2).shape
    q_heads, kv_heads = heads
    _heads(q_heads, kv_heads, dim)
    sin_shape = _tensor("attend_layer's sin", sin, BF16, 2).shape
    qkv_shape = _tensor("attend_layer's qkv", qkv, BF16, 2).shape
    if rows == 0 or sin_shape != shape or qkv_shape != (rows, (q_heads + 2 * kv_heads) * dim):
        raise ValueError(
            f"attend_layer wants qkv [T, {(q_heads + 2 * kv_heads) * dim}] and cos, sin [T, {dim}] for the same T ≥ 1; "
            f"got {tuple(qkv_shape)}, {tuple(shape)}, {tuple(sin_shape)}"
        )
    if start < 0:
        raise ValueError(f"attend_layer's first new position must be ≥ 0; got {start}")
    ks = _cache_buffer("attend_layer's key buffer", key_buffer, kv_heads, dim, start + rows)
    vs = _cache_buffer("attend_layer's value buffer", value_buffer, kv_heads, dim, start + rows)
    out = torch.empty((rows, q_heads * dim), dtype=BF16)
    module.attend_layer(qkv.data_ptr(), rows, q_heads, kv_heads, dim, cos.data_ptr(), sin.data_ptr(),
                        key_buffer.data_ptr(), value_buffer.data_ptr(), ks, vs, start, float(scale),
                        out.data_ptr(), max(1, int(threads)))  # fmt: skip
    return out


def _form_parts(name: str, matmul: Matmul) -> tuple[int, tuple[int, ...]]:
    """A checked linear's form code (q8mm.c's FORM_*, by the kernel its ``Matmul`` calls) and its
    parts as (w, s, N) triples (s = 0 but for int8)."""
    if not isinstance(matmul, Matmul):
        raise TypeError(f"{name} must be a Matmul (calls.q4_mm, q8_mm, q4k_mm, q6k_mm); got {type(matmul).__name__}")
    module = _module()
    codes = {module.q8_mm: module.FORM_Q8, module.q4_mm: module.FORM_Q4, module.q4k_mm: module.FORM_Q4K,
             module.q6k_mm: module.FORM_Q6K}  # fmt: skip
    form = int(codes[matmul.call])
    if form == module.FORM_Q8:
        return form, matmul.parts
    pairs = matmul.parts
    return form, tuple(v for i in range(0, len(pairs), 2) for v in (pairs[i], 0, pairs[i + 1]))


def _norm_weight(name: str, weight: object, width: int) -> torch.Tensor:
    w = _tensor(name, weight, BF16, 1)
    if w.shape[0] != width:
        raise ValueError(f"{name} must have one value per column of the residual stream ({width}); got {w.shape[0]}")
    return w


@dataclass(frozen=True, slots=True)
class RowStats:
    """``row_stats``' answer per row of logits, on the host."""

    ids: list[int]  # the greedy token: the highest logit, the lowest id among ties
    top1: list[float]  # the highest logit (empty without ``sums``)
    top2: list[float]  # the second highest, as ``torch.topk(row, 2)`` gives it (the highest where it occurs twice)
    sums: list[float]  # Σ exp(logit − top1) over the row: p(logit) = exp(logit − top1) / sum


def row_stats(logits: torch.Tensor, sums: bool = True) -> RowStats | None:
    """What the decoding loop reads from each row of logits [R, V] (bf16 or fp32, contiguous, on
    the CPU), each row read twice in C, nothing allocated per row: the greedy token and, with
    ``sums``, the top two logits and the softmax's sum (see ``q8mm.c``'s row_stats). None where a
    row holds a NaN (torch's argmax decides those)."""
    module = _module()
    if not isinstance(logits, torch.Tensor):
        raise TypeError(f"row_stats' logits must be a tensor; got {type(logits).__name__}")
    if logits.dtype not in (BF16, torch.float32):
        raise ValueError(f"row_stats' logits must be bf16 or fp32; got {logits.dtype}")
    rows, vocab = _tensor("row_stats' logits", logits, logits.dtype, 2).shape
    if rows == 0 or vocab == 0:
        raise ValueError(f"row_stats wants logits [R ≥ 1, V ≥ 1]; got {tuple(logits.shape)}")
    ids = torch.empty(rows, dtype=torch.int64)
    vals = torch.empty((rows, 3), dtype=torch.float32) if sums else None
    module.row_stats(logits.data_ptr(), rows, vocab, int(logits.dtype is BF16), int(sums), ids.data_ptr(),
                     vals.data_ptr() if vals is not None else 0)  # fmt: skip
    found = ids.tolist()
    if -1 in found:
        return None
    if vals is None:
        return RowStats(found, [], [], [])
    top1, top2, total = (list(column) for column in zip(*vals.tolist()))
    return RowStats(found, top1, top2, total)


def silu_mul(gate_up: torch.Tensor) -> torch.Tensor:
    """bf16 rows gate | up [T, 2·I] → bf16(bf16(silu(gate)) · up) [T, I], I a multiple of 8: the
    lean pass's ``F.silu(gate).mul_(up)`` in one call, where ``silu_mul_is_torchs`` says the bits
    are torch's."""
    module = _module()
    rows, width = _tensor("silu_mul's rows", gate_up, BF16, 2).shape
    if rows == 0 or width == 0 or width % 16:
        raise ValueError(
            f"silu_mul wants rows gate | up [T ≥ 1, 2·I] with I a multiple of 8; got {tuple(gate_up.shape)}"
        )
    out = torch.empty((rows, width // 2), dtype=BF16)
    module.silu_mul(gate_up.data_ptr(), rows, width // 2, out.data_ptr())
    return out


@functools.cache
def silu_mul_is_torchs() -> bool:
    """Whether ``silu_mul`` gives torch's own bits here: SiLU of every one of the 65,536 bf16 values
    (NaNs as NaNs), each times an up value, against ``F.silu(gate).mul_(up)`` on one torch thread
    (the lean pass's own call). Asked once per process: torch's SiLU is its vectorized exp, which
    a build of torch could change. False where SpecChat's kernels are not built."""
    if native.kernels() is None:
        return False
    every = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(BF16).reshape(256, 256)
    up = torch.linspace(-3.0, 3.0, 256, dtype=torch.float32).to(BF16).expand(256, 256)
    with torch.inference_mode(), torch_threads(1):
        want = F.silu(every).mul_(up)
        got = silu_mul(torch.cat((every, up), dim=1))
    nan = torch.isnan(want)
    same_nans = torch.equal(nan, torch.isnan(got))
    return bool(same_nans and torch.equal(want[~nan].view(torch.int16), got[~nan].view(torch.int16)))


@dataclass(frozen=True, slots=True, eq=False)
class DecoderLayer:
    """``decoder_layer`` over one decoder layer's checked weights: the lean pass's steps from the
    layer's input norm to its gate | up rows in one C call, each step the call the lean pass makes
    one at a time (``rms_norm``, the q | k | v ``Matmul`` and its bias, ``attend_layer``, the o
    ``Matmul``, the residual add, ``rms_norm``, the gate | up ``Matmul``), so the same bits; with
    ``mlp``, the rest of the layer too (``silu_mul``, the down ``Matmul``, the residual add). Per
    call only the rows, the rotary and the cache's buffers are checked."""

    width: int  # the residual stream's columns
    heads: tuple[int, int]  # (H, Hkv)
    dim: int
    gate_up: int  # gate | up's columns
    mlp: bool  # the call ends the layer: SiLU · up, down and the residual add (else it stops at gate | up)
    floats: tuple[float, float, float]  # the input norm's eps, the post norm's, the attention's scale
    norms: tuple[int, int]  # the input and post-attention norms' weights (pointers)
    bias: int  # q | k | v's bias (a pointer; 0: none)
    # the five linears' forms (q | k | v, its rest, o, gate | up, down), their part counts, (w, s, N) per part
    linears: tuple[int, ...]
    kept: tuple[torch.Tensor, ...]  # the tensors the pointers point into
    path: int  # the kernels' path (_path)

    def __call__(
        self,
        h: torch.Tensor,
        cos: torch.Tensor,
        sin: torch.Tensor,
        key_buffer: torch.Tensor,
        value_buffer: torch.Tensor,
        start: int,
        threads: int | None = None,
        out: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """h [T, W] bf16, the residual stream, gets the attention's o rows added in place (and,
        with ``mlp``, the MLP's down rows); the rotary's cos, sin [T, D]; the cache's buffers as
        ``attend_layer`` takes them (the new keys and values written at start..start + T − 1);
        ``out``: where to write the gate | up rows (the pass's scratch, reused layer after layer),
        else a new tensor.  → the gate | up rows [T, Ng] bf16"""
        module = _module()
        rows, width = _tensor("decoder_layer's rows", h, BF16, 2).shape
        q_heads, kv_heads = self.heads
        shape = _tensor("decoder_layer's cos", cos, BF16, 2).shape
        if (
            width != self.width
            or rows == 0
            or shape != (rows, self.dim)
            or _tensor("decoder_layer's sin", sin, BF16, 2).shape != shape
        ):
            raise ValueError(
                f"decoder_layer wants rows [T ≥ 1, {self.width}] and cos, sin [T, {self.dim}]; "
                f"got {tuple(h.shape)}, {tuple(shape)}, {tuple(sin.shape)}"
            )
        if start < 0:
            raise ValueError(f"decoder_layer's first new position must be ≥ 0; got {start}")
        ks = _cache_buffer("decoder_layer's key buffer", key_buffer, kv_heads, self.dim, start + rows)
        vs = _cache_buffer("decoder_layer's value buffer", value_buffer, kv_heads, self.dim, start + rows)
        if out is None:
            gate_up = torch.empty((rows, self.gate_up), dtype=BF16)
        elif _tensor("decoder_layer's out", out, BF16, 2).shape != (rows, self.gate_up):
            raise ValueError(f"decoder_layer's out must be [{rows}, {self.gate_up}]; got {tuple(out.shape)}")
        else:
            gate_up = out
        use = thread_count() if threads is None else threads
        module.decoder_layer(*self.floats, h.data_ptr(), rows, width, *self.norms, cos.data_ptr(),
                             sin.data_ptr(), key_buffer.data_ptr(), value_buffer.data_ptr(), ks, vs, self.path,
                             start, q_heads, kv_heads, self.dim, self.bias, gate_up.data_ptr(), use,
                             *self.linears)  # fmt: skip
        return gate_up


def decoder_layer(
    input_norm: tuple[torch.Tensor, float],
    qkv: Sequence[Matmul],
    bias: torch.Tensor | None,
    o: Matmul,
    post_norm: tuple[torch.Tensor, float],
    gate_up: Matmul,
    heads: tuple[int, int],
    dim: int,
    scale: float,
    down: Matmul | None = None,
) -> DecoderLayer:
    """One decoder layer's ``DecoderLayer``: its norms (bf16 weight [W], eps); q | k | v as one
    ``Matmul`` over W inputs with (H + 2·Hkv)·D outputs, or two whose columns follow each other (a
    Q4_K_M file's Q4_K q and k, then its Q6_K v), and its bias ([those] bf16, or None); o's over
    H·D inputs with W outputs, gate | up's over W inputs; ``heads`` (H, Hkv) of ``dim``; ``down``:
    the MLP's down ``Matmul`` over gate's I columns with W outputs, for a call that ends the layer
    with ``silu_mul`` (a caller takes it only where ``silu_mul_is_torchs``), or None: the call
    stops at gate | up."""
    _module()
    q_heads, kv_heads = heads
    _heads(q_heads, kv_heads, dim)
    if isinstance(qkv, Matmul) or not 1 <= len(qkv) <= 2:
        raise TypeError(f"q | k | v must be one or two Matmuls in a sequence; got {type(qkv).__name__}")
    width = qkv[0].k if isinstance(qkv[0], Matmul) else 0
    in_w = _norm_weight("the input norm's weight", input_norm[0], width)
    post_w = _norm_weight("the post-attention norm's weight", post_norm[0], width)
    named = [
        *(("q | k | v", m) for m in qkv), ("o", o), ("gate | up", gate_up),
        *([("down", down)] if down is not None else []),
    ]  # fmt: skip
    found = [_form_parts(name, m) for name, m in named]
    qkv_n = sum(m.n for m in qkv)
    if any(m.k != width for m in qkv) or qkv_n != (q_heads + 2 * kv_heads) * dim or o.k != q_heads * dim:
        raise ValueError(
            f"decoder_layer's linears do not chain: q | k | v [{' + '.join(f'{m.k} → {m.n}' for m in qkv)}], "
            f"o [{o.k} → {o.n}] for {q_heads} and {kv_heads} heads of {dim}"
        )
    if o.n != width or gate_up.k != width:
        raise ValueError(
            f"decoder_layer's linears do not chain: o [{o.k} → {o.n}], gate | up [{gate_up.k} → {gate_up.n}] "
            f"for a residual stream of {width}"
        )
    if down is not None and (gate_up.n % 2 or down.k != gate_up.n // 2 or down.n != width):
        raise ValueError(
            f"decoder_layer's down must take gate's half of gate | up to the width: gate | up "
            f"[{gate_up.k} → {gate_up.n}], down [{down.k} → {down.n}], width {width}"
        )
    if len({m.path for _, m in named}) != 1:
        raise ValueError("decoder_layer's linears must all take the same path (AVX2, VNNI or VNNI with AMX)")
    kept = [in_w, post_w, *(w for _, m in named for w in m.weights)]
    bias_ptr = 0
    if bias is not None:
        if _tensor("the q | k | v bias", bias, BF16, 1).shape[0] != qkv_n:
            raise ValueError(f"the q | k | v bias must have {qkv_n} values; got {bias.shape[0]}")
        bias_ptr = bias.data_ptr()
        kept.append(bias)
    absent = (found[0][0], ())  # a linear the call goes without: its count 0 (its form unread)
    slots = [found[0], found[1] if len(qkv) == 2 else absent, *found[len(qkv) :]]  # q|k|v, rest, o, gate|up, down
    if down is None:
        slots.append(absent)
    linears = (
        *(form for form, _ in slots), *(len(parts) // 3 for _, parts in slots),
        *(value for _, parts in slots for value in parts),
    )  # fmt: skip
    floats = (float(input_norm[1]), float(post_norm[1]), float(scale))
    norms = (in_w.data_ptr(), post_w.data_ptr())
    return DecoderLayer(
        width, heads, dim, gate_up.n, down is not None, floats, norms, bias_ptr, linears, tuple(kept), qkv[0].path
    )
