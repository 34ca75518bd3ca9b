"""Tiny GGUF files written with the ``gguf`` package: real headers; float32 or quantized tensors."""

from __future__ import annotations

import json
from pathlib import Path

import gguf
import numpy as np
from gguf import GGMLQuantizationType as Q
from transformers import PreTrainedTokenizerFast

GGUF_SHAPES = {"token_embd.weight": (40, 8), "blk.0.attn_norm.weight": (8,), "output.weight": (40, 8)}
GGUF_PARAMETERS = sum(int(np.prod(s)) for s in GGUF_SHAPES.values())  # 648


def write_tiny_gguf(path: Path, context_length: int = 1024, vocab: int = 40) -> Path:
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny-gguf")
    writer.add_context_length(context_length)
    writer.add_block_count(1)
    writer.add_embedding_length(8)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("tiny")
    writer.add_token_list([f"t{i}" for i in range(vocab)])
    writer.add_eos_token_id(2)
    for name, shape in GGUF_SHAPES.items():
        writer.add_tensor(name, np.ones(shape, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def _permute(w, n_head: int):
    # HF rotary layout -> GGUF interleaved layout (transformers undoes this on load)
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def write_gguf(
    model, tok: PreTrainedTokenizerFast, path: Path, qtype: Q = Q.F32, embedding: Q | None = None, tied: bool = False
) -> Path:
    """A real llama (or qwen2: Q/K/V biases, no Q/K row permutation) GGUF with a gpt2-style BPE
    tokenizer: float32, or its matrices quantized to ``qtype`` (the embedding to ``embedding``,
    default ``qtype``) with gguf's own quantizers. ``tied``: no output.weight (the head is the
    embedding)."""
    c = model.config
    arch = c.model_type
    w = gguf.GGUFWriter(str(path), arch)
    w.add_context_length(c.max_position_embeddings)
    w.add_embedding_length(c.hidden_size)
    w.add_block_count(c.num_hidden_layers)
    w.add_feed_forward_length(c.intermediate_size)
    w.add_head_count(c.num_attention_heads)
    w.add_head_count_kv(c.num_key_value_heads)
    w.add_layer_norm_rms_eps(c.rms_norm_eps)
    w.add_rope_freq_base(10000.0)
    w.add_vocab_size(c.vocab_size)
    spec = json.loads(tok.backend_tokenizer.to_str())["model"]
    w.add_tokenizer_model("gpt2")
    w.add_token_list([t for t, _ in sorted(spec["vocab"].items(), key=lambda kv: kv[1])])
    w.add_token_types([3 if i in tok.all_special_ids else 1 for i in range(len(spec["vocab"]))])
    w.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in spec["merges"]])
    w.add_bos_token_id(tok.bos_token_id)
    w.add_eos_token_id(tok.eos_token_id)
    w.add_pad_token_id(tok.pad_token_id)
    w.add_chat_template(tok.chat_template)
    sd = {k: v.float().numpy() for k, v in model.state_dict().items()}

    def add(name: str, values: np.ndarray, as_type: Q) -> None:
        if as_type == Q.F32 or values.ndim == 1:
            w.add_tensor(name, values)
        else:
            w.add_tensor(name, gguf.quants.quantize(values, as_type), raw_dtype=as_type)

    add("token_embd.weight", sd["model.embed_tokens.weight"], embedding or qtype)
    w.add_tensor("output_norm.weight", sd["model.norm.weight"])
    if not tied:
        add("output.weight", sd["lm_head.weight"], qtype)
    names = {
        "attn_norm": "input_layernorm", "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
        "ffn_norm": "post_attention_layernorm", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
        "ffn_down": "mlp.down_proj",
    }
    for i in range(c.num_hidden_layers):
        p = f"model.layers.{i}."
        q, k = sd[p + "self_attn.q_proj.weight"], sd[p + "self_attn.k_proj.weight"]
        if arch == "llama":
            q, k = _permute(q, c.num_attention_heads), _permute(k, c.num_key_value_heads)
        add(f"blk.{i}.attn_q.weight", q, qtype)
        add(f"blk.{i}.attn_k.weight", k, qtype)
        for g, h in names.items():
            add(f"blk.{i}.{g}.weight", sd[f"{p}{h}.weight"], qtype)
        for g in ("q", "k", "v"):
            if f"{p}self_attn.{g}_proj.bias" in sd:
                w.add_tensor(f"blk.{i}.attn_{g}.bias", sd[f"{p}self_attn.{g}_proj.bias"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path
