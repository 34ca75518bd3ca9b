"""SpecChat's own Llama-family causal LM: Llama, Qwen2 and Mistral with full attention, built
from a ``config.json`` without transformers' modeling code.

transformers' model classes import ``transformers.modeling_utils``, and with it ``torch._dynamo``,
``torch.distributed.tensor``, the quantizers and the hub's kernels: 1.0–1.4 s of a launch on a
Xeon core, more than a third of the bundled model's whole warm start, for classes whose forward
the lean pass (``lean.py``) replaces anyway. A model loaded from SpecChat's own cached forms
(``gguf_model.load_forms``) is built from these classes instead: the same modules under the same
names (``model.layers.0.self_attn.q_proj``, …), so the forms, the CPU kernels, the lean pass and
the draft head find what they find in transformers' model, and the same ops in the same order —
transformers' RMSNorm formula, its rotary embedding (``ROPE_INIT_FUNCTIONS`` for scaled rope
types), rotate-half, the cache layer's own ``update``, and the row-wise attention its path runs
with SpecChat's kernels applied (``cpu_kernels.rowwise_attention``) — so the logits are
transformers' bit for bit (tests/test_llama_family.py: every architecture, fp32 and bf16, a
prompt and blocks on a cache).

Only what the whole family shares is taken: SiLU MLPs, no sliding window on any layer, batch 1
with row-wise attention; ``why_not`` names what else a config asks for, and such a model is built
by transformers as before.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch
from torch import nn
from transformers.configuration_utils import PretrainedConfig

if TYPE_CHECKING:
    from transformers import PreTrainedModel

from app.engine.runners.cpu_kernels import ROWWISE, rowwise_attention, use_rowwise_attention
from app.engine.runners.norms import RMSNorm

FAMILY = ("llama", "qwen2", "mistral")  # model types whose decoder layer is Llama's
ATTENTION_BIAS = {"qwen2": True}  # q, k and v with a bias whatever the config says (o without)
FULL_ATTENTION = "full_attention"
# rope types whose frequencies are fixed at load (transformers' ``dynamic_rope_update`` changes those of
# "dynamic" and "longrope" with the sequence's length, which these classes do not reproduce)
STATIC_ROPE = ("default", "linear", "llama3", "yarn", "proportional")


def why_not(config: dict[str, Any]) -> str | None:
    """Why this ``config.json`` is not one these classes build (None: it is)."""
    kind = config.get("model_type")
    if kind not in FAMILY:
        return f"its model type {kind!r} is not one of {', '.join(FAMILY)}"
    if config.get("hidden_act", "silu") != "silu":
        return f"its activation is {config.get('hidden_act')}"
    layers = config.get("num_hidden_layers")
    types = config.get("layer_types")
    if not isinstance(layers, int) or layers <= 0:
        return "it does not say how many layers it has"
    if types is not None and (not isinstance(types, list) or any(t != FULL_ATTENTION for t in types)):
        return "a layer has a sliding window"
    if config.get("use_sliding_window") or (kind == "mistral" and config.get("sliding_window")):
        return "its attention has a sliding window"
    if kind == "llama" and config.get("pretraining_tp", 1) not in (1, None):
        return "it splits its linears (pretraining_tp)"
    rope = config.get("rope_parameters") or config.get("rope_scaling") or {}
    rope_type = rope.get("rope_type", rope.get("type", "default")) if isinstance(rope, dict) else None
    if rope_type not in STATIC_ROPE:
        return f"its rotary embedding ({rope_type}) changes with the sequence's length"
    return None


def read_config(folder: Path) -> PretrainedConfig | None:
    """The ``config.json`` in ``folder`` as a config these classes build, or None when it is not
    one (``why_not``) or cannot be read (transformers then reads it and says what is wrong)."""
    try:
        values = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(values, dict) or why_not(values) is not None:
        return None
    values["layer_types"] = [FULL_ATTENTION] * int(values["num_hidden_layers"])
    values["sliding_window"] = None
    config = PretrainedConfig(**values)
    config._attn_implementation = ROWWISE  # the only attention these classes run
    return config


class RotaryEmbedding(nn.Module):
    """transformers' ``LlamaRotaryEmbedding``: the inverse frequencies of the config's rope type,
    cos and sin in fp32 at each position (times the type's attention scaling), in x's dtype."""

    inv_freq: torch.Tensor

    def __init__(self, config: PretrainedConfig) -> None:
        super().__init__()
        rope = dict(getattr(config, "rope_parameters", None) or {})
        kind = rope.get("rope_type", "default")
        if kind == "default":
            dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
            base = rope.get("rope_theta", getattr(config, "rope_theta", 10000.0))
            inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float) / dim))
            self.attention_scaling = 1.0
        else:
            from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS  # no modeling code

            inv_freq, self.attention_scaling = ROPE_INIT_FUNCTIONS[kind](config)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        freqs = position_ids[..., None].float() * self.inv_freq.to(device=x.device, dtype=torch.float)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos() * self.attention_scaling
        sin = emb.sin() * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def _meta(*shape: int, dtype: torch.dtype) -> nn.Parameter:
    return nn.Parameter(torch.empty(*shape, device="meta", dtype=dtype), requires_grad=False)


def _linear(n_in: int, n_out: int, bias: bool, dtype: torch.dtype) -> nn.Linear:
    """An ``nn.Linear`` of meta tensors, made without its initialization: torch's random init on
    the meta device goes through its Python references, which import ``torch._dynamo`` (0.9 s)."""
    layer = nn.Linear.__new__(nn.Linear)
    nn.Module.__init__(layer)
    layer.in_features, layer.out_features = n_in, n_out
    layer.weight = _meta(n_out, n_in, dtype=dtype)
    layer.register_parameter("bias", _meta(n_out, dtype=dtype) if bias else None)
    return layer


def _embedding(count: int, dim: int, dtype: torch.dtype) -> nn.Embedding:
    """An ``nn.Embedding`` of a meta tensor (``_weight``: no initialization, as ``_linear``)."""
    return nn.Embedding(count, dim, _weight=_meta(count, dim, dtype=dtype), _freeze=True)


def _norm(config: PretrainedConfig, dtype: torch.dtype) -> RMSNorm:
    norm = RMSNorm(config.hidden_size, float(config.rms_norm_eps))
    norm.weight = _meta(config.hidden_size, dtype=dtype)
    return norm


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class Attention(nn.Module):
    """q, k, v, o; the rotary on q and k, the cache's update, each row over its own prefix."""

    def __init__(self, config: PretrainedConfig, layer_idx: int, dtype: torch.dtype) -> None:
        super().__init__()
        self.config = config
        self.layer_idx = layer_idx
        heads, kv_heads, hidden = config.num_attention_heads, config.num_key_value_heads, config.hidden_size
        self.head_dim = int(getattr(config, "head_dim", None) or hidden // heads)
        self.num_key_value_groups = heads // kv_heads
        self.scaling = self.head_dim**-0.5
        self.is_causal = True
        self.sliding_window = None
        bias = ATTENTION_BIAS.get(config.model_type, bool(getattr(config, "attention_bias", False)))
        o_bias = bias and config.model_type not in ATTENTION_BIAS
        self.q_proj = _linear(hidden, heads * self.head_dim, bias, dtype)
        self.k_proj = _linear(hidden, kv_heads * self.head_dim, bias, dtype)
        self.v_proj = _linear(hidden, kv_heads * self.head_dim, bias, dtype)
        self.o_proj = _linear(heads * self.head_dim, hidden, o_bias, dtype)

    def forward(self, h: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, cache: Any) -> torch.Tensor:
        rows = h.shape[:-1]
        shape = (*rows, -1, self.head_dim)
        q = self.q_proj(h).view(shape).transpose(1, 2)
        k = self.k_proj(h).view(shape).transpose(1, 2)
        v = self.v_proj(h).view(shape).transpose(1, 2)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q = (q * cos) + (_rotate_half(q) * sin)
        k = (k * cos) + (_rotate_half(k) * sin)
        if cache is not None:
            k, v = cache.update(k, v, self.layer_idx)
        out, _ = rowwise_attention(self, q, k, v, None, scaling=self.scaling)
        return self.o_proj(out.reshape(*rows, -1).contiguous())  # type: ignore[no-any-return]


class MLP(nn.Module):
    def __init__(self, config: PretrainedConfig, dtype: torch.dtype) -> None:
        super().__init__()
        hidden, inner = config.hidden_size, config.intermediate_size
        bias = bool(getattr(config, "mlp_bias", False))
        self.gate_proj = _linear(hidden, inner, bias, dtype)
        self.up_proj = _linear(hidden, inner, bias, dtype)
        self.down_proj = _linear(inner, hidden, bias, dtype)
        self.act_fn = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))  # type: ignore[no-any-return]


class DecoderLayer(nn.Module):
    def __init__(self, config: PretrainedConfig, layer_idx: int, dtype: torch.dtype) -> None:
        super().__init__()
        self.self_attn = Attention(config, layer_idx, dtype)
        self.mlp = MLP(config, dtype)
        self.input_layernorm = _norm(config, dtype)
        self.post_attention_layernorm = _norm(config, dtype)

    def forward(self, h: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, cache: Any) -> torch.Tensor:
        h = h + self.self_attn(self.input_layernorm(h), cos, sin, cache)
        return h + self.mlp(self.post_attention_layernorm(h))  # type: ignore[no-any-return]


class DecoderModel(nn.Module):
    def __init__(self, config: PretrainedConfig, dtype: torch.dtype) -> None:
        super().__init__()
        self.embed_tokens = _embedding(config.vocab_size, config.hidden_size, dtype)
        self.layers = nn.ModuleList(DecoderLayer(config, i, dtype) for i in range(config.num_hidden_layers))
        self.norm = _norm(config, dtype)
        self.rotary_emb = RotaryEmbedding(config)


@dataclass(frozen=True)
class Output:
    logits: torch.Tensor


@dataclass(frozen=True)
class GenerationDefaults:
    eos_token_id: int | list[int] | None


class CausalLM(nn.Module):
    """The model: ``model`` (embeddings, layers, final norm, rotary) and ``lm_head``; ``forward``
    takes what ``kv.CachedModel`` passes transformers' models. Made with every parameter on the
    meta device in ``dtype`` (each is put in place by the load: ``load_state_dict(assign=True)``
    or ``gguf_model``'s forms), the rotary's buffer real (fp32)."""

    def __init__(self, config: PretrainedConfig, dtype: torch.dtype) -> None:
        super().__init__()
        self.config = config
        self.model = DecoderModel(config, dtype)
        self.lm_head: nn.Module = _linear(config.hidden_size, config.vocab_size, False, dtype)
        self.generation_config = GenerationDefaults(getattr(config, "eos_token_id", None))
        self._twin: list[PreTrainedModel] = []  # ``as_transformers``'s, once made (a list: not a submodule)

    @property
    def device(self) -> torch.device:
        """Where its tensors are (the rotary's buffer is real from the start; a parameter once placed)."""
        return next(t.device for t in itertools.chain(self.parameters(), self.buffers()) if not t.is_meta)

    @property
    def dtype(self) -> torch.dtype:
        """The first floating-point parameter's (transformers' rule)."""
        return next((p.dtype for p in self.parameters() if p.is_floating_point()), torch.float32)

    def get_input_embeddings(self) -> nn.Module:
        return self.model.embed_tokens

    def get_output_embeddings(self) -> nn.Module:
        return self.lm_head

    def set_output_embeddings(self, head: nn.Module) -> None:
        self.lm_head = head

    def forward(
        self, input_ids: torch.Tensor, cache: Any = None, use_cache: bool = True, logits_to_keep: int = 0
    ) -> Output:
        """Feed ``input_ids`` [1, T] after ``cache``'s positions; the logits of the last
        ``logits_to_keep`` (0: all).  → ``Output(logits [1, keep or T, V])``"""
        inner = self.model
        h = inner.embed_tokens(input_ids)
        start = cache.get_seq_length() if cache is not None else 0
        positions = torch.arange(start, start + input_ids.shape[1], device=h.device).unsqueeze(0)
        cos, sin = inner.rotary_emb(h, positions)
        for layer in inner.layers:
            h = layer(h, cos, sin, cache if use_cache else None)
        h = inner.norm(h)
        return Output(self.lm_head(h[:, -logits_to_keep:, :] if logits_to_keep else h))


def as_transformers(model: nn.Module) -> PreTrainedModel:
    """``model`` as transformers' own class, for what only transformers does with a model (its
    ``generate``: the bench's Hugging Face baseline): SpecChat's classes' parts put into
    transformers' skeleton under the same names, sharing every tensor (nothing copied), its
    attention switched to the row-wise attention SpecChat's classes run, so it computes the same
    logits (tests/test_llama_family.py). A transformers model is returned as it is. Imports
    transformers' modeling code (a second), once, where this is asked."""
    if not isinstance(model, CausalLM):
        return cast("PreTrainedModel", model)
    if model._twin:
        return model._twin[0]
    from transformers import AutoConfig, AutoModelForCausalLM

    values = {k: v for k, v in model.config.to_dict().items() if k not in ("model_type", "_attn_implementation")}
    config = AutoConfig.for_model(model.config.model_type, **values)
    with torch.device("meta"):
        twin: PreTrainedModel = AutoModelForCausalLM.from_config(config, dtype=model.dtype)  # type: ignore[no-untyped-call]
    rotary = twin.model.rotary_emb = type(twin.model.rotary_emb)(config=config)
    for name in ("inv_freq", "original_inv_freq"):  # ours, in whatever dtype the load left them (forms: bf16)
        rotary.register_buffer(name, model.model.rotary_emb.inv_freq, persistent=False)
    for name, part in model.named_modules():
        holds = next(iter(part.parameters(recurse=False)), None) is not None or any(True for _ in part.buffers(False))
        if name and holds and not isinstance(part, RotaryEmbedding):
            parent, _, leaf = name.rpartition(".")
            setattr(twin.get_submodule(parent) if parent else twin, leaf, part)
    left = [n for n, t in [*twin.named_parameters(), *twin.named_buffers()] if t.is_meta]
    if left:
        raise RuntimeError(f"transformers' {type(twin).__name__} has parts SpecChat's model lacks: {left[:3]}")
    attention, why = use_rowwise_attention(twin)
    if attention != ROWWISE:
        raise RuntimeError(f"transformers' {type(twin).__name__} cannot run row-wise attention: {why}")
    twin.generation_config.eos_token_id = model.generation_config.eos_token_id
    twin.eval()  # type: ignore[no-untyped-call]  # transformers leaves it unannotated
    twin.requires_grad_(False)
    model._twin.append(twin)
    return twin
