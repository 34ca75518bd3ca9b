"""CPU kernels that make verification cost flat in k and exact: a row's logits do not depend on
how many rows are computed together.

Two swaps, applied once at load to an fp32 or bf16 model on the CPU (``apply_cpu_kernels``):

- ``PrepackedLinear``: each ``nn.Linear`` runs on oneDNN with its weight reordered once
  (``_reorder_linear_weight`` with no batch-size hint; a hint of 1 is not batch invariant).
  Stock ``F.linear`` (MKL) blocks small M badly — a pass over 5 tokens cost 2.5–3× a pass over
  one — and its rows change by ~1e-6 with M; the prepacked rows are bit-identical for any M.
- ``rowwise_attention``: an attention function registered with transformers'
  ``AttentionInterface``. A short query block on a KV cache (≤ ``ROWWISE_MAX_ROWS`` rows) is
  computed one row at a time, each row as the very call single-token decoding makes (one query
  row, the keys of its causal prefix, no mask). The rows whose logits the caller keeps
  (``logits_to_keep``) are computed the same way inside a long block, so the prompt's pass gives
  the same logits whether it also verifies the first drafts or not.

Together, a position's logits are bit-identical whether verified in a block or decoded alone.
Sliding-window layers and batches > 1 keep plain SDPA (not exact, never worse than before).

``choose_threads`` / ``apply_threads`` pick torch's CPU thread count ("auto": physical cores
minus one): oversubscribed OpenMP threads collapse speed on a busy machine.
"""

from __future__ import annotations

import contextvars
import math
import os
import re
import statistics
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn
from transformers import AttentionInterface, PreTrainedModel
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

from app.engine.errors import InvalidSettingError

ROWWISE = "specchat_rowwise"
ROWWISE_MAX_ROWS = 16  # longer blocks (a prompt) run as one SDPA call
PACKED_DTYPES = (torch.float32, torch.bfloat16)

# rows at the end of the block being run whose logits the caller keeps (0: none singled out)
_kept_rows: contextvars.ContextVar[int] = contextvars.ContextVar("specchat_kept_rows", default=0)


# ---------------------------------------------------------------- linears


class PrepackedLinear(nn.Module):
    """``y = x Wᵀ + b`` on a weight reordered once for oneDNN.  x [..., in] → y [..., out]"""

    def __init__(self, linear: nn.Linear) -> None:
        super().__init__()
        self.in_features = linear.in_features
        self.out_features = linear.out_features
        weight = linear.weight.detach()
        self.register_buffer("packed_weight", torch.ops.mkldnn._reorder_linear_weight(weight, None), persistent=False)
        self.bias = None if linear.bias is None else nn.Parameter(linear.bias.detach(), requires_grad=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.numel() == self.in_features:
            # oneDNN takes a GEMV path for one row that sums K (> ~1k) in another order than its
            # GEMM; fed as two equal rows, a single token gets the GEMM's bits (~2% slower)
            pair = x.reshape(1, -1).expand(2, -1).contiguous()  # [2, in]
            y: torch.Tensor = torch.ops.mkldnn._linear_pointwise(pair, self.packed_weight, self.bias, "none", [], "")
            return y[:1].reshape(*x.shape[:-1], self.out_features)
        out: torch.Tensor = torch.ops.mkldnn._linear_pointwise(x, self.packed_weight, self.bias, "none", [], "")
        return out

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


def _prepack_linears(model: PreTrainedModel) -> int:
    """Swap every fp32 / bf16 ``nn.Linear`` for a ``PrepackedLinear``; return how many.

    A tied LM head keeps its weight for the embedding and gains a packed copy (the largest matrix
    once more in memory: 113 MB for SmolLM2-135M); an untied one gives its weight up."""
    swaps = [
        (parent, name, child)
        for parent in model.modules()
        for name, child in parent.named_children()
        if type(child) is nn.Linear and child.weight.dtype in PACKED_DTYPES and child.weight.device.type == "cpu"
    ]
    for parent, name, child in swaps:
        setattr(parent, name, PrepackedLinear(child))
    _own_remaining_weights(model)
    return len(swaps)


def _own_remaining_weights(model: PreTrainedModel) -> None:
    """Copy what was not packed (embeddings, norms) out of the checkpoint's memory map, so
    the map — the unpacked linears included — is released instead of lingering in RSS."""
    with torch.no_grad():
        for tensor in list(model.parameters()) + list(model.buffers()):
            if not tensor.is_mkldnn:
                tensor.data = tensor.data.clone()


# ---------------------------------------------------------------- attention


def _set_kept_rows(module: nn.Module, args: tuple[object, ...], kwargs: dict[str, object]) -> None:
    keep = kwargs.get("logits_to_keep", 0)
    _kept_rows.set(keep if isinstance(keep, int) else 0)


def _one_row_at_a_time(
    module: nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, **kwargs: Any
) -> torch.Tensor:
    """Each of q's rows over its own causal prefix, as single-token decoding computes it.
    query [1, H, q, D], key/value [1, Hkv, kv, D] (the last q keys are the rows' own) → [1, q, H, D]"""
    q_len, kv_len = query.shape[2], key.shape[2]
    rows = []
    for i in range(q_len):
        end = kv_len - q_len + i + 1
        row = query[:, :, i : i + 1]
        out, _ = sdpa_attention_forward(module, row, key[:, :, :end], value[:, :, :end], None, **kwargs)
        rows.append(out)  # [1, 1, H, D]
    return torch.cat(rows, dim=1)


def _attend(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    tail: int,
    **kwargs: Any,
) -> torch.Tensor:
    """Attention over a block whose last ``tail`` rows are computed one row at a time and whose
    head is computed exactly as a block of that length alone would be.  → [1, q, H, D]"""
    q_len, kv_len = query.shape[2], key.shape[2]
    tail = min(tail, q_len)
    if q_len == 1:
        attention_mask = None  # a one-row head: its whole causal prefix, as decoding sees it
    if q_len <= ROWWISE_MAX_ROWS and (kv_len > q_len or tail == q_len):
        tail = q_len if q_len > 1 else 0  # a single row takes the stock decoding call
    if tail <= 0:
        out, _ = sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
        return out
    head = q_len - tail
    tail_out = _one_row_at_a_time(module, query[:, :, head:], key, value, **kwargs)
    if head == 0:
        return tail_out
    mask = attention_mask[:, :, :head, : kv_len - tail] if attention_mask is not None else None
    k, v = key[:, :, : kv_len - tail], value[:, :, : kv_len - tail]
    head_out = _attend(module, query[:, :, :head], k, v, mask, 0, **kwargs)
    return torch.cat([head_out, tail_out], dim=1)


def rowwise_attention(
    module: nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """transformers attention interface.  query [B, H, q, D], key/value [B, Hkv, kv, D] → [B, q, H, D]"""
    # sliding-window layers (Mistral, Gemma) pass their window as a keyword, older ones as an attribute
    sliding = kwargs.get("sliding_window") or getattr(module, "sliding_window", None)
    plain = query.shape[0] != 1 or sliding or dropout or query.shape[2] == 1
    if plain:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout, scaling, **kwargs)
    out = _attend(module, query, key, value, attention_mask, _kept_rows.get(), scaling=scaling, **kwargs)
    return out, None


def _register_rowwise() -> None:
    if ROWWISE not in AttentionInterface._global_mapping:
        AttentionInterface.register(ROWWISE, rowwise_attention)
        # the same masks as SDPA: a prompt on a cache gets its causal mask, a short block none
        ALL_MASK_ATTENTION_FUNCTIONS.register(ROWWISE, sdpa_mask)


def _use_rowwise_attention(model: PreTrainedModel) -> bool:
    if model.config._attn_implementation != "sdpa" or not model._can_set_attn_implementation():
        return False  # eager / flash / a model with its own attention: left as it is
    _register_rowwise()
    model.set_attn_implementation(ROWWISE)
    model.register_forward_pre_hook(_set_kept_rows, with_kwargs=True)
    return True


# ---------------------------------------------------------------- applying


def cpu_kernels_apply(model: PreTrainedModel) -> bool:
    """Whether ``apply_cpu_kernels`` would change this model: fp32 / bf16 weights on the CPU,
    oneDNN present. (bf16 packed: ~15-40× faster than bf16 ``F.linear`` on an AVX2 CPU.)"""
    return (
        torch.backends.mkldnn.is_available()
        and model.device.type == "cpu"
        and model.dtype in PACKED_DTYPES
        and any(type(m) is nn.Linear for m in model.modules())
    )


def apply_cpu_kernels(model: PreTrainedModel, *, rowwise: bool = True) -> bool:
    """Prepacked linears and (``rowwise``) row-wise attention where they apply; True if the
    model changed. Without row-wise attention a block's logits still differ (~5e-5)."""
    if not cpu_kernels_apply(model):
        return False
    _prepack_linears(model)
    if rowwise:
        _use_rowwise_attention(model)
    setattr(model, "specchat_cpu_kernels", True)  # noqa: B010 - a marker transformers does not declare
    return True


def has_cpu_kernels(model: PreTrainedModel) -> bool:
    return bool(getattr(model, "specchat_cpu_kernels", False))


# ---------------------------------------------------------------- threads

AUTO = "auto"
_THREADS = re.compile(r"^\s*(auto|\d+)\s*$", re.IGNORECASE)


def physical_cores() -> int:
    """Physical cores this process may run on (hyper-threads counted once)."""
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    cores = set()
    for cpu in allowed:
        try:
            with open(f"/sys/devices/system/cpu/cpu{cpu}/topology/core_id") as f:
                core = f.read().strip()
            with open(f"/sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id") as f:
                package = f.read().strip()
        except OSError:
            core, package = str(cpu), "0"
        cores.add((package, core))
    return max(1, len(cores))


def parse_threads(value: str | int | None) -> int | None:
    """``"auto"`` / None → None (choose), a positive integer → itself; else InvalidSettingError."""
    if value is None:
        return None
    text = str(value)
    match = _THREADS.match(text)
    if match is None or match.group(1) == "0":
        raise InvalidSettingError(f"'{value}' is not a number of CPU threads; use auto or a whole number ≥ 1.")
    return None if match.group(1).lower() == AUTO else int(match.group(1))


def auto_threads() -> int:
    """Physical cores minus one (at least one): a core left for the GUI thread and whatever else
    runs. Oversubscribed OpenMP threads collapse: on 2 busy cores, 2 threads decoded the bundled
    model at 0.25 tok/s against 6.2 tok/s with 1 thread (tools/thread_speed.py)."""
    return max(1, physical_cores() - 1)


def choose_threads(value: str | int | None = AUTO) -> int:
    """The thread count to use: the number asked for, or ``auto_threads()``."""
    asked = parse_threads(value)
    return asked if asked is not None else auto_threads()


def apply_threads(value: str | int | None = AUTO) -> int:
    """Set torch's intra-op threads (and, before any parallel work, its inter-op threads)."""
    threads = choose_threads(value)
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:  # allowed once per process, before inter-op work has started
        pass
    return threads


# ------------------------------------------------- threads while answering (auto)

IDLE_SLACK = 0.25  # busy cores of other processes that still count as none (daemons, the GUI)
THREAD_SAMPLES = 7  # running median of plain passes per thread count
SLOWER = 1.05  # more threads must measure at least 5 % faster to be kept


class OtherLoad:
    """Cores kept busy by *other* processes since the previous call: the machine's busy time
    (/proc/stat) minus this process's own CPU time, over the wall time between the calls.
    None when it cannot be read (not Linux) or on the first call."""

    def __init__(
        self,
        stat_path: str = "/proc/stat",
        clock: Callable[[], float] = time.monotonic,
        own_cpu: Callable[[], float] = lambda: sum(os.times()[:2]),
    ) -> None:
        self.stat_path = stat_path
        self.clock, self.own_cpu = clock, own_cpu
        self.hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self.previous = self._read()

    def _read(self) -> tuple[float, float, float] | None:
        try:
            with open(self.stat_path) as f:
                fields = [float(v) for v in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)  # idle + iowait
        return (sum(fields[:8]) - idle) / self.hz, self.own_cpu(), self.clock()  # guest time is in user

    def __call__(self) -> float | None:
        now, before = self._read(), self.previous
        self.previous = now
        if now is None or before is None or now[2] - before[2] <= 0.05:
            return None
        others = (now[0] - before[0]) - (now[1] - before[1])
        return max(0.0, others / (now[2] - before[2]))


def threads_for_load(cores: int, others_busy: float) -> int:
    """The most threads that do not oversubscribe the machine: the cores other processes leave
    free (their busy cores rounded up, past a little slack), at least one."""
    return max(1, min(cores, cores - math.ceil(others_busy - IDLE_SLACK)))


@dataclass
class ThreadGovernor:
    """``auto`` threads while answering: all physical cores when other processes leave them
    idle, fewer as they get busy (never oversubscribed: 2 threads on 2 busy cores collapsed to
    0.25 tok/s against 6.2 with 1), and never more threads than the fewest that measured no
    slower on this machine's recent plain passes (``observe``). ``load()`` says how many cores
    other processes kept busy since it was last asked (``OtherLoad``; injected in tests); the
    engine chooses between answers."""

    cores: int
    load: Callable[[], float | None]
    costs: dict[int, deque[float]] = field(default_factory=dict)  # threads -> plain-pass seconds

    def observe(self, threads: int, seconds: float) -> None:
        if seconds > 0.0:
            self.costs.setdefault(threads, deque(maxlen=THREAD_SAMPLES)).append(seconds)

    def cost(self, threads: int) -> float | None:
        samples = self.costs.get(threads)
        return statistics.median(samples) if samples else None

    def choose(self, others: float | None) -> int:
        """Threads for the next answer, given the cores other processes keep busy (None:
        unknown, cores − 1)."""
        threads = max(1, self.cores - 1) if others is None else threads_for_load(self.cores, others)
        while threads > 1:  # measured: more threads must pay
            more, fewer = self.cost(threads), self.cost(threads - 1)
            if more is None or fewer is None or more < fewer * SLOWER:
                break
            threads -= 1
        return threads
