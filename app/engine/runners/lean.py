"""A pass on a cache without transformers' generic model code, bit-identical to it, for the
llama family (Llama, Qwen2, Mistral): the verification pass, one-token decoding and a follow-up
turn's prompt, where the cost per token is the model's own work plus the Python around it.

With int4 weights the linears of the bundled model take ~11 ms of a ~25 ms pass, and what
transformers runs around them — module calls, keyword plumbing, the causal-mask builder,
output dataclasses, per-linear reshapes and casts — takes several more. ``LeanPass`` runs the
same arithmetic, op for op, in one function: the same RMSNorm formula (fp32 variance, weight
times the input-dtype result), the model's own rotary module, the same rotate-half rotary
arithmetic, the cache layer's own ``update``, and the row-wise attention rows
(``cpu_kernels.one_row_at_a_time``) that transformers' path calls for such a block. Its logits
are equal to ``model(...)``'s bit for bit (tests/test_lean.py checks every supported
architecture and weights form), so the exactness of block verification is the same property
as before; only the Python around the kernels is gone.

With SpecChat's kernels (runners/native) three steps of a layer are one call each: q | k | v
and gate | up side by side (the input quantized once), and the attention — the rotary on q and
k, the cache write, each row's attention over its own prefix — as ``attend_layer``, the same
bf16 roundings as transformers' ops (each product and sum rounded to bf16) and the same row
formula as ``rows_sdpa``'s kernel; ``pass_profile``-style interleaved timing: 0.82-0.92x the
pass with those ops in torch at 80 and 380 positions of context.

It takes a pass when transformers' path computes every row one row at a time — batch 1 with
row-wise attention applied (``cpu_kernels``: then every row of every pass is) — after at least one
cached position (a cache's layers exist only once a pass made them) and with no sliding-window
cache layer. Everything else (a first pass on an empty cache, a model of another architecture, a
sliding window) runs ``model(...)`` as before.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import torch
from torch import nn
from torch.nn import functional as F
from transformers.cache_utils import DynamicCache

from app.engine.runners import llama_family
from app.engine.runners.cpu_kernels import (
    ASK,
    ROWWISE,
    NativeRMSNorm,
    attend_takes,
    direct_gqa,
    one_row_at_a_time,
    rows_sdpa,
)
from app.engine.runners.growing import GrowingLayer
from app.engine.runners.native import calls
from app.engine.runners.norms import RMSNorm
from app.engine.runners.prepacked import PrepackedLinear
from app.engine.runners.quant import WeightOnlyLinear, side_by_side_kernel, side_by_side_runs, with_bias
from app.engine.runners.threads import torch_threads

if TYPE_CHECKING:
    from transformers import PreTrainedModel

# causal LMs whose decoder layer is Llama's: pre-norm attention + gated MLP, RMSNorm, rotary
# on q and k, no extra norms or scalings (the class names transformers gives them)
LAYERS = {
    "LlamaForCausalLM": ("LlamaDecoderLayer", "LlamaAttention", "LlamaMLP", "LlamaRMSNorm"),
    "Qwen2ForCausalLM": ("Qwen2DecoderLayer", "Qwen2Attention", "Qwen2MLP", "Qwen2RMSNorm"),
    "MistralForCausalLM": ("MistralDecoderLayer", "MistralAttention", "MistralMLP", "MistralRMSNorm"),
}
ATTENTION_LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj")
MLP_LINEARS = ("gate_proj", "up_proj", "down_proj")
Linear = Callable[[torch.Tensor], torch.Tensor]


class _Norm:
    """transformers' ``LlamaRMSNorm.forward`` in two calls: ``torch.rms_norm`` without a weight
    is its formula op for op on the CPU (the composite: fp32 upcast, ``pow(2)``, ``mean``, ``+ eps``,
    ``rsqrt``, multiply, back to the input's dtype), then the weight times that result as
    transformers multiplies it. Seven Python calls fewer per norm, 61 norms a pass; tests/test_lean.py
    checks the bits against ``model(...)``."""

    def __init__(self, norm: Any) -> None:  # a ``LlamaRMSNorm`` (or Qwen2's, Mistral's: the same)
        self.weight: torch.Tensor = norm.weight.detach()
        self.eps: float = float(norm.variance_epsilon)
        self.shape: tuple[int] = (int(self.weight.shape[-1]),)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        return self.weight * torch.rms_norm(x, self.shape, None, self.eps)


def _is_silu(act: object) -> bool:
    """Whether ``act`` is ``F.silu`` as a module: torch's ``nn.SiLU`` (SpecChat's own classes,
    ``llama_family``) or transformers' ``SiLUActivation`` — looked up where transformers' model
    classes were imported, never imported here (``transformers.activations`` brings its modeling
    code along, a second of a launch): without it no module is one."""
    if isinstance(act, nn.SiLU) and not act.inplace:
        return True
    activations = sys.modules.get("transformers.activations")
    return activations is not None and isinstance(act, activations.SiLUActivation)


def _norm(norm: Any) -> Callable[[torch.Tensor], torch.Tensor]:
    """A norm's forward on the pass's rows: SpecChat's kernel where the model's own pass calls it
    (``NativeRMSNorm`` over bf16 weights), else transformers' formula in two calls."""
    if isinstance(norm, NativeRMSNorm) and norm.weight.dtype == torch.bfloat16:
        return norm.rows
    return _Norm(norm)


def _rotary(x: torch.Tensor, cos: torch.Tensor, signed_sin: torch.Tensor) -> torch.Tensor:
    """transformers' ``x * cos + rotate_half(x) * sin`` with the same bits in fewer ops:
    ``rotate_half(x)`` is ``roll(x, half)`` with its first half negated, and a negated factor
    gives the negated product exactly, so the sign moves onto ``sin`` (``signed_sin``)."""
    half = x.shape[-1] // 2
    return (x * cos) + (torch.cat((x[..., half:], x[..., :half]), dim=-1) * signed_sin)


def _linear(layer: nn.Module, dtype: torch.dtype) -> Linear:
    """``layer``'s forward on 2-D rows: a weight-only layer fed the dtype it computes in is
    called straight (``rows_fn``: the casts and reshapes around it are no-ops there), any other
    as itself."""
    if isinstance(layer, WeightOnlyLinear) and dtype == torch.bfloat16:
        return layer.rows_fn()
    return layer


class _Layer:
    """One decoder layer's parts, looked up once."""

    def __init__(self, layer: Any, dtype: torch.dtype) -> None:  # a ``LlamaDecoderLayer`` (or …)
        attn, mlp = layer.self_attn, layer.mlp
        self.attn = attn
        self.input_norm, self.post_norm = _norm(layer.input_layernorm), _norm(layer.post_attention_layernorm)
        self.q, self.k, self.v, self.o = (_linear(attn.get_submodule(n), dtype) for n in ATTENTION_LINEARS)
        self.gate, self.up, self.down = (_linear(mlp.get_submodule(n), dtype) for n in MLP_LINEARS)
        # SpecChat's kernel as itself: told the pass's threads instead of asking for them every call
        self.down_kernel = self.down if isinstance(self.down, calls.Matmul) else None
        # q | k | v and gate | up in one kernel call each where the layers are SpecChat's kernels:
        # the input quantized once, one call instead of three and two, the same bits per part
        fused = dtype == torch.bfloat16
        # q | k | v as the fewest calls (two where the file mixes forms: Q4_K q and k, a Q6_K v)
        runs = side_by_side_runs([attn.get_submodule(n) for n in ATTENTION_LINEARS[:3]]) if fused else None
        qkv = runs[0] if runs is not None and len(runs) == 1 else None
        gate_up = side_by_side_kernel([mlp.get_submodule(n) for n in MLP_LINEARS[:2]]) if fused else None
        self.qkv, self.gate_up = with_bias(qkv), with_bias(gate_up)
        self.qk_width = int(attn.q_proj.out_features) + int(attn.k_proj.out_features)
        self.intermediate = int(mlp.gate_proj.out_features)
        # a SiLU module is ``F.silu``: called straight, without a module call
        self.silu = _is_silu(mlp.act_fn)
        self.act = F.silu if self.silu else mlp.act_fn
        self.head_dim = int(attn.head_dim)
        self.q_heads = int(attn.q_proj.out_features) // self.head_dim
        self.heads = [self.q_heads, int(attn.k_proj.out_features) // self.head_dim]  # q's, k's
        self.scaling = float(attn.scaling)
        self.gqa: object = ASK  # ``direct_gqa``'s answer, asked on the first pass
        # the rotary, the cache write and the attention rows in one kernel call (``attend_layer``):
        # with q | k | v from SpecChat's kernels (so bf16 rows) and heads the attention kernel takes
        qkv_native = runs is not None and len(runs) <= 2  # at most the two calls ``decoder_layer`` takes
        self.one_call = qkv_native and attend_takes(self.q_heads, self.heads[1], self.head_dim, gqa=True)
        # and where every part of it is SpecChat's kernel, the layer in one call: all of it where its
        # activation is SiLU computed with torch's bits (``_silu_in_c``), else up to its activation
        heads = (self.q_heads, self.heads[1])
        whole = self.silu and self.down_kernel is not None and _silu_in_c(self.intermediate)
        down = self.down_kernel if whole else None
        self.block = (
            _decoder_layer(layer, runs, gate_up, down, heads, self.head_dim, self.scaling) if self.one_call else None
        )

    def in_one_call(self, kv: Any) -> bool:
        """Whether this pass's attention runs as ``attend_layer``: the rows ``rows_sdpa`` would give
        SpecChat's ``attend`` (it takes GQA heads only where the SDPA call shares them)."""
        if not self.one_call:
            return False
        if self.gqa is ASK:
            self.gqa = direct_gqa(self.attn, kv.keys, kv.values, {})
        return self.gqa is not None and attend_takes(self.q_heads, self.heads[1], self.head_dim, bool(self.gqa))

    def attend_in_one_call(self, qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, kv: Any) -> torch.Tensor:
        """q | k | v rows [T, W] → the attention rows [T, Hq·D]: rotary, cache write, attention."""
        rows = qkv.shape[0]
        key_buffer, value_buffer, start = kv.extend(rows)
        heads = (self.q_heads, self.heads[1])
        return calls.attend_layer(qkv, cos, sin, key_buffer, value_buffer, start, heads, self.scaling)

    def attend(self, q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """The row-wise attention rows, as transformers' path calls them.  → [T, Hq·D]"""
        rows = q.shape[2]
        if self.gqa is ASK:
            self.gqa = direct_gqa(self.attn, keys, values, {})
        if rows == 1 and self.gqa is not None:  # one-token decoding: its one SDPA call, made here
            return rows_sdpa(q, keys, values, self.scaling, bool(self.gqa)).reshape(1, -1)  # [1, Hq, 1, D]: [1, Hq·D]
        attended = one_row_at_a_time(self.attn, q, keys, values, gqa=self.gqa, scaling=self.scaling)
        return attended.reshape(rows, -1)


class LeanPass:
    """``model(input_ids, cache, logits_to_keep)`` for a block on a cache, in one function."""

    def __init__(self, model: PreTrainedModel) -> None:
        inner: Any = model.model
        self.device = model.device
        self.embed = inner.embed_tokens
        self.rotary = inner.rotary_emb
        self.norm = _norm(inner.norm)
        self.head = _linear(model.lm_head, model.dtype)
        self.layers = [_Layer(layer, model.dtype) for layer in decoder_layers(model)]
        # every linear SpecChat's kernel: torch's own ops (the residual adds, the activation, the
        # rotary's few) then run on one thread while the linears split among the kernels' pool
        self.native = model.dtype == torch.bfloat16 and _all_native([model.lm_head, *decoder_layers(model)])

    @classmethod
    def of(cls, model: PreTrainedModel) -> LeanPass | None:
        """A lean pass for ``model``, or None when it is not one whose pass this reproduces."""
        return cls(model) if why_not(model) is None else None

    def takes(self, cache: DynamicCache, rows: int) -> bool:
        """Whether a pass of ``rows`` new tokens on ``cache`` is one transformers' path computes
        one row at a time (so this pass gives its bits)."""
        return (
            rows > 0
            and len(cache.layers) == len(self.layers)
            and cache.get_seq_length() > 0
            and all(isinstance(layer, GrowingLayer) for layer in cache.layers)
        )

    def __call__(self, ids: Sequence[int], cache: DynamicCache, keep: int) -> torch.Tensor:
        """Feed ``ids`` after the cached positions; logits of the last ``keep`` (0: all).  [1, keep or T, V]

        With SpecChat's kernels for every linear, the linears split among the kernels' pool as
        many ways as torch's thread count says, and torch's own small ops run on one thread
        meanwhile: its OpenMP workers and the kernels' workers spinning for the same cores made a
        5-row pass of a 1.5B 1.14x faster on 2 threads than on 1, against 1.6x this way (AMD
        EPYC, 2 cores). Element-wise ops give the same bits on any thread count."""
        with self.split_threads():
            return self._pass(ids, cache, keep)

    @contextmanager
    def split_threads(self) -> Iterator[None]:
        """Within it, with SpecChat's kernels for every linear and more than one torch thread, the
        linears split among the kernels' pool as many ways as torch's thread count says and torch's
        own ops run on one thread (``__call__``); otherwise nothing changes."""
        threads = torch.get_num_threads()
        if not self.native or threads == 1:
            yield
            return
        with calls.linear_threads(threads), torch_threads(1):
            yield

    def _pass(self, ids: Sequence[int], cache: DynamicCache, keep: int) -> torch.Tensor:
        rows = len(ids)
        start = cache.get_seq_length()
        input_ids = torch.tensor([list(ids)], dtype=torch.long, device=self.device)
        h = self.embed(input_ids)  # [1, T, H]
        if h._is_view():  # never the weight itself: the residual stream is added to in place
            h = h.clone()
        positions = torch.arange(start, start + rows, device=h.device).unsqueeze(0)
        cos, sin = self.rotary(h, positions)  # [1, T, D] each, the model's dtype
        half = cos.shape[-1] // 2
        cos = cos[:, :, None, :]  # [1, T, 1, D]: batch, rows, heads, head dims
        signed_sin = torch.cat((-sin[:, :, None, :half], sin[:, :, None, half:]), dim=-1)
        h = h[0]  # [T, H]: every op below is row-wise, so the rows' bits do not depend on the shape
        kv_layers: list[Any] = cache.layers  # ``GrowingLayer``s (``takes``)
        rows_cos = rows_sin = None  # [T, D] each, for ``attend_layer``
        threads = calls.thread_count()  # the linears' threads, the same for every call of this pass
        scratch: dict[int, torch.Tensor] = {}  # gate | up rows by width, reused layer after layer
        for layer, kv in zip(self.layers, kv_layers, strict=True):
            one_call = layer.in_one_call(kv)  # q | k | v SpecChat's kernels: bf16 rows, so cos and sin are too
            if one_call and (rows_cos is None or rows_sin is None):
                rows_cos, rows_sin = cos[0, :, 0].contiguous(), sin[0].contiguous()
            if one_call and layer.block is not None and rows_cos is not None and rows_sin is not None:
                key_buffer, value_buffer, start_at = kv.extend(rows)
                block = layer.block
                out = scratch.get(block.gate_up)
                if out is None:
                    out = scratch[block.gate_up] = torch.empty((rows, block.gate_up), dtype=torch.bfloat16)
                gate_up = block(h, rows_cos, rows_sin, key_buffer, value_buffer, start_at, threads, out)  # h += o rows
                if block.mlp:  # and h += the MLP's rows: the whole layer
                    continue
                gate, up = gate_up[:, : layer.intermediate], gate_up[:, layer.intermediate :]
                mixed = layer.act(gate).mul_(up)  # a tensor of its own: the scratch is free again
                h.add_(layer.down_kernel(mixed, threads) if layer.down_kernel is not None else layer.down(mixed))
                continue
            x = layer.input_norm(h)
            if one_call and rows_cos is not None and rows_sin is not None and layer.qkv is not None:
                attended = layer.attend_in_one_call(layer.qkv(x), rows_cos, rows_sin, kv)
            else:
                if layer.qkv is not None:  # [T, q | k | v]: q and k side by side already
                    qkv = layer.qkv(x)
                    qk_rows, v_rows = qkv[:, : layer.qk_width], qkv[:, layer.qk_width :]
                else:
                    qk_rows, v_rows = torch.cat((layer.q(x), layer.k(x)), dim=-1), layer.v(x)
                # q and k rotated together: [1, T, Hq + Hkv, D] → [1, Hq + Hkv, T, D]
                qk = _rotary(qk_rows.view(1, rows, -1, layer.head_dim), cos, signed_sin)
                q, k = qk.transpose(1, 2).split_with_sizes(layer.heads, dim=1)
                v = v_rows.view(1, rows, -1, layer.head_dim).transpose(1, 2)  # [1, Hkv, T, D]
                keys, values = kv.update(k, v)
                attended = layer.attend(q, keys, values)
            h.add_(layer.o(attended))  # h is the pass's own tensor: add in place
            x = layer.post_norm(h)
            if layer.gate_up is not None:
                gate_up = layer.gate_up(x)
                gate, up = gate_up[:, : layer.intermediate], gate_up[:, layer.intermediate :]
            else:
                gate, up = layer.gate(x), layer.up(x)
            h.add_(layer.down(layer.act(gate).mul_(up)))
        h = self.norm(h[-keep:] if keep else h)
        logits = self.head(h)
        return logits[None]


Kernel = tuple[calls.Matmul, torch.Tensor | None]  # ``side_by_side_kernel``'s call and bias
# torch's bf16 SiLU computes whole rows with its vectorized exp only where a row is a multiple of two
# of its vectors (32 bf16 lanes on AVX2, 64 on AVX-512): the rest of a row takes its scalar exp
SILU_ROW_MULTIPLE = 64


def _silu_in_c(intermediate: int) -> bool:
    """Whether ``silu_mul`` gives the bits ``F.silu(gate).mul_(up)`` gives on gate rows of this width."""
    return intermediate % SILU_ROW_MULTIPLE == 0 and calls.silu_mul_is_torchs()


def _decoder_layer(
    layer: Any,
    qkv: Sequence[Kernel] | None,
    gate_up: Kernel | None,
    down: calls.Matmul | None,
    heads: tuple[int, int],
    dim: int,
    scale: float,
) -> calls.DecoderLayer | None:
    """``calls.decoder_layer`` over a decoder layer whose norms and linears up to its activation
    are all SpecChat's kernels over bf16 (the norms ``NativeRMSNorm``, q | k | v in one or two calls,
    ``qkv``, gate | up in one, ``gate_up``, o without a bias), else None: the lean pass then makes
    those calls one at a time. ``down``: the layer's down kernel where the call may end the layer
    (``silu_mul`` for its activation), else None: the call stops at gate | up."""
    norms = (layer.input_layernorm, layer.post_attention_layernorm)
    native_norms = (isinstance(n, NativeRMSNorm) and n.weight.dtype == torch.bfloat16 for n in norms)
    if not all(native_norms) or not all(n.weight.is_contiguous() for n in norms):
        return None
    o = layer.self_attn.get_submodule(ATTENTION_LINEARS[3])
    o_kernel = o.rows_fn() if isinstance(o, WeightOnlyLinear) and o.native else None  # without a bias: the kernel
    if not qkv or gate_up is None or gate_up[1] is not None or not isinstance(o_kernel, calls.Matmul):
        return None
    biases = [bias for _, bias in qkv if bias is not None]  # all or none (``side_by_side_runs``)
    bias = biases[0] if len(biases) == 1 else torch.cat(biases) if biases else None  # each on its columns
    if bias is not None and (bias.dtype != torch.bfloat16 or bias.device.type != "cpu"):
        return None
    if down is not None and down.path != o_kernel.path:
        down = None
    return calls.decoder_layer(
        (norms[0].weight, norms[0].variance_epsilon), [kernel for kernel, _ in qkv], bias, o_kernel,
        (norms[1].weight, norms[1].variance_epsilon), gate_up[0], heads, dim, scale, down,
    )  # fmt: skip


def decoder_layers(model: PreTrainedModel) -> list[nn.Module]:
    """The decoder layers a pass runs."""
    return list(model.model.layers[: model.config.num_hidden_layers])


def _all_native(modules: Sequence[nn.Module]) -> bool:
    """Whether every linear inside ``modules`` (a draft's head over its likely tokens holds one)
    is SpecChat's kernel."""
    kinds = (nn.Linear, PrepackedLinear, WeightOnlyLinear)
    linears = [m for module in modules for m in module.modules() if isinstance(m, kinds)]
    return bool(linears) and all(isinstance(m, WeightOnlyLinear) and m.native for m in linears)


def why_not(model: PreTrainedModel) -> str | None:
    """Why ``LeanPass`` does not reproduce this model's pass (None: it does)."""
    if isinstance(model, llama_family.CausalLM):  # row-wise attention, Llama's layers (its norms maybe SpecChat's)
        layers = model.model.layers
        norms = [n for layer in layers for n in (layer.input_layernorm, layer.post_attention_layernorm)]
        odd = [n for n in [*norms, model.model.norm] if not isinstance(n, (RMSNorm, NativeRMSNorm))]
        return f"a norm is {type(odd[0]).__name__}" if odd else None
    name = type(model).__name__
    parts = LAYERS.get(name)
    if parts is None:
        return f"{name} is not one of {', '.join(sorted(LAYERS))}"
    if model.config._attn_implementation != ROWWISE:
        return "its attention is not row-wise"
    inner = getattr(model, "model", None)
    layers = getattr(inner, "layers", None)
    if inner is None or layers is None or not hasattr(inner, "rotary_emb"):
        return "its modules are not laid out as transformers' own"
    layer_name, attn_name, mlp_name, norm_name = parts
    for layer in layers:
        found = (type(layer).__name__, type(layer.self_attn).__name__, type(layer.mlp).__name__)
        if found != (layer_name, attn_name, mlp_name):
            return f"a decoder layer is {'/'.join(found)}"
        for norm in (layer.input_layernorm, layer.post_attention_layernorm):
            if not _is_norm(norm, norm_name):
                return f"a norm is {type(norm).__name__}"
    if not _is_norm(inner.norm, norm_name):
        return f"its final norm is {type(inner.norm).__name__}"
    return None


def _is_norm(norm: Any, name: str) -> bool:
    """The architecture's own RMSNorm, or SpecChat's kernel in its place."""
    return type(norm).__name__ == name or (isinstance(norm, NativeRMSNorm) and norm.replaced == name)
