"""CPU kernels that make verification cost flat in k and exact: a row's logits do not depend on
how many rows are computed together.

Two swaps, applied once at load to an fp32 or bf16 model on the CPU (``apply_cpu_kernels``):

- ``PrepackedLinear``: each ``nn.Linear`` runs on oneDNN with its weight reordered once
  (``_reorder_linear_weight`` with no batch-size hint; a hint of 1 is not batch invariant).
  Stock ``F.linear`` (MKL) blocks small M badly — a pass over 5 tokens cost 2.5–3× a pass over
  one — and its rows change by ~1e-6 with M; the prepacked rows are bit-identical for any M.
- ``rowwise_attention``: an attention function registered with transformers'
  ``AttentionInterface``. Every query row of every pass — a prompt's, a verified block's, one
  decoded token's — is computed as the very call single-token decoding makes (one query row, the
  keys of its causal prefix, no mask; ``rows_sdpa``). So a row's numbers depend only on the
  tokens before it: not on how a prompt was split into passes, on a prefix reused from an
  earlier conversation's cache, or on how many drafts are verified with it.
- Linears are fed at most ``PACK_MAX_ROWS`` rows a call (``PrepackedLinear``): oneDNN's bf16
  GEMM takes another kernel above 32 rows on an AVX-512 + AMX CPU (rows differ from the same rows
  fed alone); in chunks every row is computed by the small-M kernel whatever the prompt's length.

Together, a position's logits are bit-identical whether verified in a block or decoded alone.
A sliding-window layer's row attends to its window's keys alone, as decoding that row does;
batches > 1 run plain SDPA (not exact, never worse than before). GPT-2's ``Conv1D`` layers are
packed like linears; an eager model with an SDPA form is switched to row-wise attention.

What the CPU can pack is asked once (``cpu_probe.probe``): bf16 weights on a CPU that cannot
pack bf16 (AVX2 only) are computed in fp32. ``apply_cpu_kernels`` leaves a ``CpuKernels`` on
the model saying what was applied, per part, with a note for whatever fell back.

Its neighbours: the prepacked linears (``runners/prepacked.py``), SpecChat's kernels
(``runners/native``), the weight-only forms (``runners/quant.py``), torch's CPU threads
(``runners/threads.py``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.nn import functional as F
from transformers.integrations.sdpa_attention import sdpa_attention_forward, use_gqa_in_sdpa
from transformers.pytorch_utils import Conv1D

from app.engine.runners import native
from app.engine.runners.cpu_probe import CpuProbe, probe
from app.engine.runners.native import calls
from app.engine.runners.native.calls import ATTEND_MAX_HEAD_DIM
from app.engine.runners.norms import RMSNorm
from app.engine.runners.prepacked import PrepackedLinear, weight_of
from app.engine.runners.quant import WeightOnlyLinear, quantized_layers
from app.engine.runners.threads import torch_threads

if TYPE_CHECKING:
    from transformers import PreTrainedModel

ROWWISE = "specchat_rowwise"
PACKED_DTYPES = (torch.float32, torch.bfloat16)
HALF_DTYPES = (torch.bfloat16, torch.float16)



# ---------------------------------------------------------------- norms


RMS_NORMS = ("LlamaRMSNorm", "Qwen2RMSNorm", "MistralRMSNorm")  # the one formula below, by class name


class NativeRMSNorm(nn.Module):
    """transformers' Llama RMSNorm — fp32 variance, ``x · rsqrt(mean(x²) + eps)`` rounded to the
    input's dtype, then the weight times it — as one call of SpecChat's kernel for bf16 rows on
    the CPU (2 µs where torch's ~10 small ops take 13–19 µs, 61 norms a pass of the bundled
    model). It replaces the model's norms, so the prompt's pass (transformers' path) and the lean
    pass compute every norm with the same kernel. Other inputs (fp32, another device) take the
    formula as transformers writes it."""

    weight: torch.Tensor

    def __init__(self, norm: nn.Module) -> None:
        super().__init__()
        self.weight = norm.weight  # type: ignore[assignment]  # the model's own Parameter
        self.variance_epsilon = float(norm.variance_epsilon)  # type: ignore[arg-type]
        self.replaced = type(norm).__name__

    def rows(self, x: torch.Tensor) -> torch.Tensor:
        """bf16 rows [T, H], contiguous (the lean pass's residual stream) → [T, H]"""
        return calls.rms_norm(x, self.weight, self.variance_epsilon)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weight = self.weight
        if x.dtype == weight.dtype == torch.bfloat16 and x.device.type == "cpu" and weight.is_contiguous():
            hidden = x.shape[-1]
            return self.rows(x.contiguous().view(-1, hidden)).view(x.shape)
        dtype = x.dtype  # transformers' own formula
        wide = x.to(torch.float32)
        variance = wide.pow(2).mean(-1, keepdim=True)
        return weight * (wide * torch.rsqrt(variance + self.variance_epsilon)).to(dtype)

    def extra_repr(self) -> str:
        return f"{tuple(self.weight.shape)}, eps={self.variance_epsilon}, replaces {self.replaced}"


def _is_rms_norm(module: nn.Module) -> bool:
    """A norm of the Llama formula: SpecChat's own (``norms.RMSNorm``) or one of transformers'
    (``RMS_NORMS``, by class name: importing their classes is importing their modeling code)."""
    return isinstance(module, RMSNorm) or type(module).__name__ in RMS_NORMS


def _native_norms(model: PreTrainedModel) -> int:
    """Swap a bf16 model's Llama-formula RMSNorms for ``NativeRMSNorm`` (where SpecChat's kernels
    run): how many."""
    if native.kernels() is None or model.dtype != torch.bfloat16:
        return 0
    swapped = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            weight = getattr(child, "weight", None)
            if _is_rms_norm(child) and isinstance(weight, torch.Tensor) and weight.dim() == 1:
                setattr(parent, name, NativeRMSNorm(child))
                swapped += 1
    return swapped


def _linear_layers(model: PreTrainedModel) -> list[tuple[nn.Module, str, nn.Module]]:
    """(parent, name, layer) for every plain ``nn.Linear`` and GPT-2 ``Conv1D`` on the CPU."""
    return [
        (parent, name, child)
        for parent in model.modules()
        for name, child in parent.named_children()
        if type(child) in (nn.Linear, Conv1D) and weight_of(child).device.type == "cpu"
    ]


def _compute_dtype(weight: torch.dtype, cpu: CpuProbe) -> torch.dtype | None:
    """The dtype a linear with ``weight`` is prepacked in here: its own, else fp32 (for bf16),
    else None (left stock)."""
    if weight not in PACKED_DTYPES:
        return None
    if cpu.can_pack(weight):
        return weight
    return torch.float32 if cpu.can_pack(torch.float32) else None


def _prepack_linears(model: PreTrainedModel, cpu: CpuProbe) -> tuple[int, int, set[torch.dtype]]:
    """Swap every fp32 / bf16 linear layer this CPU can prepack for a ``PrepackedLinear``;
    return (swapped, linear layers in all, the dtypes they compute in).

    A tied LM head keeps its weight for the embedding and gains a packed copy (the largest matrix
    once more in memory: 113 MB for SmolLM2-135M); an untied one gives its weight up."""
    layers = _linear_layers(model)
    computes: set[torch.dtype] = set()
    swapped = 0
    for parent, name, child in layers:
        compute = _compute_dtype(weight_of(child).dtype, cpu)
        if compute is None:
            continue
        setattr(parent, name, PrepackedLinear.of(child, compute))
        computes.add(compute)
        swapped += 1
    if swapped:
        _own_remaining_weights(model)
    return swapped, len(layers), computes


def _own_remaining_weights(model: PreTrainedModel) -> None:
    """Copy what was not packed (embeddings, norms) out of the checkpoint's memory map, so
    the map — the unpacked linears included — is released instead of lingering in RSS."""
    with torch.no_grad():
        for tensor in list(model.parameters()) + list(model.buffers()):
            if not tensor.is_mkldnn:
                tensor.data = tensor.data.clone()


# ---------------------------------------------------------------- attention


ASK = object()  # ``one_row_at_a_time``'s ``gqa`` when the caller has not asked ``direct_gqa``


def one_row_at_a_time(
    module: nn.Module, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, gqa: object = ASK, **kwargs: Any
) -> torch.Tensor:
    """Each of q's rows over its own causal prefix — the last ``window`` keys of it on a
    sliding-window layer — as single-token decoding computes it.
    query [1, H, q, D], key/value [1, Hkv, kv, D] (the last q keys are the rows' own) → [1, q, H, D]

    Each row is the SDPA call transformers' ``sdpa_attention_forward`` makes for one row with no
    mask, made directly (its Python costs 18 µs a row; a pass over 8 tokens makes 8 per layer),
    and the rows are put together once. ``gqa``: ``direct_gqa``'s answer when the caller
    already has it (it reads the environment on every call). A row whose window starts after the
    first key is one call over exactly the keys it may see, as decoding that row makes it."""
    q_len, kv_len = query.shape[2], key.shape[2]
    if gqa is ASK:
        gqa = direct_gqa(module, key, value, kwargs)
    window = _window(module, kwargs)
    spans = [(max(0, end - window) if window else 0, end) for end in range(kv_len - q_len + 1, kv_len + 1)]
    if gqa is None:  # a case transformers' function treats otherwise: let it
        rows = []
        with one_thread(query):
            for i, (start, end) in enumerate(spans):
                out, _ = sdpa_attention_forward(
                    module, query[:, :, i : i + 1], key[:, :, start:end], value[:, :, start:end], None, **kwargs
                )
                rows.append(out)  # [1, 1, H, D]
        return torch.cat(rows, dim=1)
    scale = kwargs.get("scaling")
    if spans[-1][0] == 0:  # every row sees its whole prefix
        return rows_sdpa(query, key, value, scale, bool(gqa)).transpose(1, 2).contiguous()
    rows = [
        rows_sdpa(query[:, :, i : i + 1], key[:, :, start:end], value[:, :, start:end], scale, bool(gqa))
        for i, (start, end) in enumerate(spans)
    ]  # [1, H, 1, D] each
    return torch.cat(rows, dim=2).transpose(1, 2).contiguous()


def rows_sdpa(
    query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, scale: float | None, gqa: bool
) -> torch.Tensor:
    """Each query row over its own causal prefix, one SDPA call a row with no mask: the call
    single-token decoding makes. query [1, H, q, D], key/value [1, Hkv, kv, D] → [1, H, q, D]

    On the CPU a half-precision block is computed in fp32 (keys and values cast once for all
    its rows) and the rows rounded back: ATen's bf16 SDPA for one query row is 2-8x slower
    than its fp32 one (87 vs 38 µs at 64 keys, 4.9 vs 1.0 ms at 3,700, SmolLM2-135M's heads,
    AMD EPYC, 1 thread), and fp32 is the more accurate. Every one-row attention goes through
    here, so a row's bits are the same whichever pass computes it.

    bf16 rows on the CPU with SpecChat's kernels built go to their ``attend`` instead (the same
    one-row formula in fp32, read straight from the bf16 cache, one fixed order; the output equals
    ATen's in all but ~0.05 % of values, by one bf16 step): 33.8 → 9.2 µs at 64 keys, 70.5 → 19.6
    at 160, SmolLM2-135M's heads, 1 thread. The choice is the same for every pass of a model
    (its dtype, this process's kernels), so block and single-token rows still share one formula."""
    dtype = query.dtype
    if native_attention(query, key, value, gqa):
        return _native_rows(query, key, value, scale)
    if query.device.type == "cpu" and dtype in HALF_DTYPES:
        query, key, value = query.float(), key.float(), value.float()
    q_len, kv_len = query.shape[2], key.shape[2]
    with one_thread(query):
        outs = [
            F.scaled_dot_product_attention(
                query[:, :, i : i + 1], key[:, :, : kv_len - q_len + i + 1], value[:, :, : kv_len - q_len + i + 1],
                scale=scale, enable_gqa=gqa,
            )  # [1, H, 1, D]
            for i in range(q_len)
        ]  # fmt: skip
    out = outs[0] if q_len == 1 else torch.cat(outs, dim=2)
    return out.to(dtype)


@contextmanager
def one_thread(query: torch.Tensor) -> Iterator[None]:
    """ATen's one-row SDPA on the CPU on one thread. Its result depends on the thread count: it
    splits a row's keys between threads (on an AMD EPYC with AVX-512, torch 2.13, 1, 2, 3 and 4
    threads gave four different results for the same row, from 8 keys up), and the thread count
    changes between answers (``auto`` threads) and between the target's and the drafter's
    threads, so a cache written at one count would be read by rows computed at another. One
    thread costs little: 33 µs a row over 100 keys either way, 2.2 against 1.2 ms over 4,000
    (12 heads of 128, fp32); a pass's linears keep their threads. 0.2 µs a call."""
    if query.device.type != "cpu":
        yield
        return
    with torch_threads(1):
        yield


def native_attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, gqa: bool) -> bool:
    """Whether ``rows_sdpa`` runs SpecChat's ``attend`` on these rows: bf16 on the CPU, batch 1,
    head dims a multiple of 8 (at most 256), each key and value row contiguous (the cache's
    buffers), query heads a whole multiple of the kv heads (equal without ``gqa``)."""
    if native.kernels() is None or query.device.type != "cpu":
        return False
    if not (query.dtype == key.dtype == value.dtype == torch.bfloat16):
        return False
    if query.dim() != 4 or key.dim() != 4 or value.dim() != 4 or query.shape[0] != 1 or key.shape[0] != 1:
        return False
    heads, rows, dim = query.shape[1], query.shape[2], query.shape[3]
    kv_heads, kv_len = key.shape[1], key.shape[2]
    if key.shape[3] != dim or value.shape[1:] != key.shape[1:] or kv_len < rows:
        return False
    if not attend_takes(heads, kv_heads, dim, gqa):
        return False
    return all(t.stride(3) == 1 and t.stride(2) == dim for t in (key, value))


def attend_takes(heads: int, kv_heads: int, dim: int, gqa: bool) -> bool:
    """The heads SpecChat's ``attend`` computes (also ``attend_layer``, runners/lean.py): head dims a
    multiple of 8, at most ATTEND_MAX_HEAD_DIM, query heads a whole multiple of the kv heads and
    equal to them unless the SDPA call would share them (``gqa``)."""
    if dim % 8 or dim > ATTEND_MAX_HEAD_DIM or heads % kv_heads:
        return False
    return gqa or heads == kv_heads


def _native_rows(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, scale: float | None) -> torch.Tensor:
    """``rows_sdpa`` by SpecChat's kernel (``native_attention`` said yes).  → [1, H, q, D] bf16"""
    dim = query.shape[3]
    return calls.attend(query.contiguous(), key, value, scale if scale is not None else 1 / math.sqrt(dim))


def direct_gqa(module: nn.Module, key: torch.Tensor, value: torch.Tensor, kwargs: dict[str, Any]) -> bool | None:
    """``enable_gqa`` of the SDPA call ``sdpa_attention_forward`` makes for one row with no mask
    (None: it would do something else there — pack the heads, add a bias, raise)."""
    if any(kwargs.get(name) is not None for name in ("softcap", "position_bias", "is_causal")):
        return None
    if kwargs.get("output_attentions"):
        return None
    if getattr(module, "num_key_value_groups", 1) <= 1:
        return False
    return True if use_gqa_in_sdpa(None, key, value) else None


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
    """transformers attention interface.  query [B, H, q, D], key/value [B, Hkv, kv, D] → [B, q, H, D]

    Batch 1 (SpecChat's caches): every row over its own causal prefix (its window's part of it on
    a sliding-window layer), one row at a time — a prompt's rows too, so a row's bits never depend
    on the pass that computed it. The mask transformers builds for such a pass is the causal (or
    sliding causal) one, which the rows' spans are. A batch or a dropout runs plain SDPA (not exact)."""
    if query.shape[0] != 1 or dropout:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout, scaling, **kwargs)
    return one_row_at_a_time(module, query, key, value, scaling=scaling, **kwargs), None


def _window(module: nn.Module, kwargs: dict[str, Any]) -> int | None:
    """A sliding-window layer's window (None: the layer sees its whole prefix). Mistral-style
    layers pass it as a keyword on every layer, older ones as an attribute."""
    window = kwargs.get("sliding_window") or getattr(module, "sliding_window", None)
    return window if isinstance(window, int) and window > 0 else None


def _register_rowwise() -> None:
    # here, not at import: ``AttentionInterface`` comes with transformers' modeling code (a second of
    # a launch), which a model of SpecChat's own classes never imports (``llama_family``)
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

    if ROWWISE not in AttentionInterface._global_mapping:
        AttentionInterface.register(ROWWISE, rowwise_attention)
        # the same masks as SDPA: a prompt on a cache gets its causal mask, a short block none
        ALL_MASK_ATTENTION_FUNCTIONS.register(ROWWISE, sdpa_mask)


def use_rowwise_attention(model: PreTrainedModel) -> tuple[str, str | None]:
    """Switch the model's attention to ``ROWWISE``; (attention it runs now, why not if not).

    An eager model whose class supports SDPA is switched too (row-wise attention is SDPA, one
    row at a time); one with soft-capped logits (Gemma 2) or without SDPA keeps eager."""
    current = model.config._attn_implementation
    config = model.config.get_text_config()
    if current == ROWWISE:  # SpecChat's own classes (``llama_family``): their only attention
        return current, None
    if current not in ("sdpa", "eager"):
        return current, f"its {current} attention is kept (row-wise attention replaces only SDPA and eager)"
    if not model._can_set_attn_implementation() or not getattr(model, "_supports_sdpa", False):
        return current, f"its {current} attention is kept (this architecture cannot switch to row-wise attention)"
    if current == "eager" and getattr(config, "attn_logit_softcapping", None) is not None:
        return current, "its eager attention is kept (soft-capped attention logits have no SDPA form)"
    _register_rowwise()
    try:
        model.set_attn_implementation(ROWWISE)
    except (ValueError, ImportError) as exc:
        return current, f"its {current} attention is kept ({_first_line(exc)})"
    return ROWWISE, None


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return (lines[0] if lines else type(exc).__name__).rstrip(".")[:160]


# ---------------------------------------------------------------- applying

UNBOUNDED_CONTEXT = 1 << 30  # ``exact_up_to`` of a model whose context length is not known
SHORT = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "int8": "int8"}


@dataclass(frozen=True)
class CpuKernels:
    """What ``apply_cpu_kernels`` did to a model, per part (the model's marker)."""

    dtype: str  # the weights' dtype as loaded: "float32", "bfloat16"
    linears: int  # linear layers (nn.Linear, GPT-2 Conv1D) in the model
    packed: int  # of which prepacked for oneDNN
    compute: str  # the dtype the prepacked linears multiply in ("" when none is packed)
    attention: str  # what the attention layers run: "specchat_rowwise", "sdpa", "eager", ...
    notes: tuple[str, ...] = ()  # plain sentences: what fell back or was left out, and why
    cpu: str = ""  # CpuProbe.describe() of the CPU that decided
    window: int | None = None  # the attention's sliding window (None: it sees the whole context); exact too
    max_context: int = 0  # the longest context the model holds (0: not known)
    quantized: int = 0  # linear layers with weight-only int4 / int8 weights (runners/quant.py)
    form: str = ""  # the weight-only forms among them: "int4", "int8", "int4+int8" ("" when none)

    @property
    def applied(self) -> bool:
        return self.packed > 0 or self.quantized > 0

    @property
    def exact(self) -> bool:
        """Block logits = one-at-a-time at every context the model holds: every linear
        prepacked or weight-only and the attention row-wise (a sliding window too: each row attends
        to its window's keys as one row, the call decoding makes)."""
        return self.exact_up_to() > 0

    def exact_up_to(self) -> int:
        """The longest context at which a verified block's logits equal one-token decoding's:
        0 when no context is exact; else the model's whole context (``max_context``; a large
        number when that is not known)."""
        if self.packed + self.quantized != self.linears or self.attention != ROWWISE:
            return 0
        return self.max_context or UNBOUNDED_CONTEXT

    @property
    def path(self) -> str:
        """ "bf16 · oneDNN kernels", "bf16 weights, fp32 compute", "fp32 · stock kernels",
        "int4 · weight-only kernels"."""
        dtype = SHORT.get(self.dtype, self.dtype)
        if self.quantized:
            return f"{self.form} · weight-only kernels"
        if not self.applied:
            return f"{dtype} · stock kernels"
        if self.compute != self.dtype:
            return f"{dtype} weights, {SHORT.get(self.compute, self.compute)} compute"
        return f"{dtype} · oneDNN kernels"

    @property
    def note(self) -> str:
        """The notes as one line ("" when everything applied as designed)."""
        return " ".join(self.notes)


def cpu_kernels_apply(model: PreTrainedModel) -> bool:
    """Whether ``apply_cpu_kernels`` looks at this model: fp32 / bf16 weights on the CPU, with
    linear layers. (bf16 packed: ~15-40× faster than bf16 ``F.linear`` on an AVX2 CPU.)"""
    return (
        model.device.type == "cpu"
        and model.dtype in PACKED_DTYPES
        and any(type(m) in (nn.Linear, Conv1D) or isinstance(m, WeightOnlyLinear) for m in model.modules())
    )


def apply_cpu_kernels(
    model: PreTrainedModel, *, rowwise: bool = True, cpu: CpuProbe | None = None
) -> CpuKernels | None:
    """Prepacked linears and (``rowwise``) row-wise attention where this CPU (``cpu``: the
    probe's answer, asked when None) allows; what was applied (also left on the model, see
    ``cpu_kernels_of``), or None when the model is not an fp32 / bf16 CPU model. Without
    row-wise attention a block's logits still differ (~5e-5)."""
    if not cpu_kernels_apply(model):
        return None
    cpu = cpu or probe()
    dtype = str(model.dtype).removeprefix("torch.")
    weight_only = quantized_layers(model)
    packed, linears, computes = _prepack_linears(model, cpu)
    _native_norms(model)
    if weight_only:
        computes.add(torch.bfloat16)
    linears += len(weight_only)
    forms = "+".join(sorted({layer.form for layer in weight_only}, key=lambda f: f != "int4"))
    compute = str(max(computes, key=lambda d: d.itemsize)).removeprefix("torch.") if computes else ""
    notes: list[str] = []
    attention = model.config._attn_implementation
    if not packed and not weight_only:
        notes.append(
            f"This CPU's oneDNN cannot prepack {dtype} linears, so the stock kernels run: a verified block's "
            "logits can differ from one-token decoding in the last bits."
        )
    else:
        if compute != dtype and not weight_only:
            notes.append(
                f"{SHORT[dtype]} weights computed in {SHORT[compute]}: "
                f"this CPU has no {SHORT[dtype]} matrix instructions."
            )
        if weight_only and native.kernels() is None:  # 3-4x slower: never silently (issue 31)
            why = native.why_not()
            notes.append(f"Its {forms} layers run torch's kernels (bf16 activations), not SpecChat's: {why}.")
        if packed + len(weight_only) < linears:
            missing = linears - packed - len(weight_only)
            notes.append(f"{missing} of {linears} linear layers are not prepacked (not exact in a block).")
        if rowwise:
            attention, why_not = use_rowwise_attention(model)
            if why_not:
                notes.append(f"Attention is not row-wise: {why_not}, so a verified block is not exact.")
    text = model.config.get_text_config()
    window = getattr(text, "sliding_window", None) if attention == ROWWISE else None
    report = CpuKernels(
        dtype,
        linears,
        packed,
        compute,
        attention,
        tuple(notes),
        cpu.describe(),
        window=window if isinstance(window, int) and window > 0 else None,
        max_context=int(getattr(text, "max_position_embeddings", 0) or 0),
        quantized=len(weight_only),
        form=forms,
    )
    setattr(model, "specchat_cpu_kernels", report)  # noqa: B010 - a marker transformers does not declare
    return report


def cpu_kernels_of(model: PreTrainedModel) -> CpuKernels | None:
    """The marker ``apply_cpu_kernels`` left on ``model`` (None: never applied)."""
    report = getattr(model, "specchat_cpu_kernels", None)
    return report if isinstance(report, CpuKernels) else None


def has_cpu_kernels(model: PreTrainedModel) -> bool:
    """Whether prepacked linears run in ``model``."""
    report = cpu_kernels_of(model)
    return report is not None and report.applied
