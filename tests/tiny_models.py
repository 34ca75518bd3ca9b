"""Tiny random models and a real byte-level BPE tokenizer, built in the tests (no weights,
no network). Models are saved to folders and loaded back through the app's own loading code.
"""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import (
    AutoModelForCausalLM,
    GPT2Config,
    LlamaConfig,
    MistralConfig,
    PreTrainedModel,
    PreTrainedTokenizerFast,
    Qwen2Config,
)

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CORPUS = (
    "The quick brown fox jumps over the lazy dog. Speculative decoding drafts tokens and the "
    "target verifies them in one pass. Hello world! Café, naïve, déjà vu, 東京, 日本語, 🙂 🚀. "
    "def add(a, b):\n    return a + b\n"
) * 20


def build_tokenizer(vocab_size: int = 384) -> PreTrainedTokenizerFast:
    """A byte-level BPE tokenizer (like GPT-2 / SmolLM2): multi-byte characters split across
    tokens, which is what the incremental detokeniser has to survive."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator([CORPUS], trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token="<|endoftext|>",
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def tiny_config(arch: str, vocab_size: int, layers: int, hidden: int, eos_id: int, intermediate: int | None = None):
    """A config of ``arch``: llama, qwen2, mistral (sliding window) or gpt2 (Conv1D layers)."""
    common = dict(
        vocab_size=vocab_size,
        hidden_size=hidden,
        intermediate_size=intermediate or hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        eos_token_id=eos_id,
        bos_token_id=eos_id - 1,
        pad_token_id=0,
        tie_word_embeddings=False,
    )
    if arch == "llama":
        return LlamaConfig(**common)
    if arch == "qwen2":
        return Qwen2Config(**common)
    if arch == "mistral":  # a sliding window on every layer, longer than the tests' contexts
        return MistralConfig(**common, sliding_window=4096)
    if arch == "gpt2":  # Conv1D layers (weights [in, out]), learned positions, a tied head
        return GPT2Config(
            vocab_size=vocab_size, n_embd=hidden, n_inner=common["intermediate_size"], n_layer=layers,
            n_head=4, n_positions=512, eos_token_id=eos_id, bos_token_id=eos_id - 1, pad_token_id=0,
        )
    raise ValueError(arch)


def build_model(
    arch: str,
    tokenizer: PreTrainedTokenizerFast,
    seed: int,
    layers: int = 2,
    hidden: int = 64,
    scale: float = 1.0,
) -> PreTrainedModel:
    """A random model. ``scale`` > 1 sharpens the output distribution (random models are
    otherwise nearly uniform, and every argmax a near-tie)."""
    torch.manual_seed(seed)
    config = tiny_config(arch, len(tokenizer), layers, hidden, tokenizer.eos_token_id)
    model = AutoModelForCausalLM.from_config(config)
    with torch.no_grad():
        model.lm_head.weight.mul_(scale)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model.eval()


def perturbed_copy(model: PreTrainedModel, noise: float, seed: int) -> PreTrainedModel:
    """A draft that mostly agrees with ``model``: its weights plus a little noise."""
    torch.manual_seed(seed)
    copy = AutoModelForCausalLM.from_config(model.config)
    copy.load_state_dict(model.state_dict())
    with torch.no_grad():
        for p in copy.parameters():
            p.add_(torch.randn_like(p) * noise * p.std().clamp(min=1e-3))
    copy.generation_config = model.generation_config
    return copy.eval()


def save(model: PreTrainedModel, tokenizer: PreTrainedTokenizerFast, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


_REFERENCES: dict[tuple[str, str], PreTrainedModel] = {}


def hf_reference_model(source: str, dtype: str = "float32") -> PreTrainedModel:
    """The same weights loaded fresh by Hugging Face alone: none of the app's loading code and
    none of its CPU kernels (prepacked linears, row-wise attention), so "equals HF" compares the
    engine with an independent implementation, not with itself. Cached per folder and dtype."""
    key = (str(source), dtype)
    if key not in _REFERENCES:
        model = AutoModelForCausalLM.from_pretrained(str(source), dtype=getattr(torch, dtype), local_files_only=True)
        assert not any(type(m).__name__ == "PrepackedLinear" for m in model.modules())
        assert model.config._attn_implementation != "specchat_rowwise"
        _REFERENCES[key] = model.eval()
    return _REFERENCES[key]


def hf_greedy(engine, prompt: str, max_new_tokens: int, **options: object) -> list[int]:  # type: ignore[no-untyped-def]
    """The reference: Hugging Face ``generate(do_sample=False)`` on an unpatched copy of the
    engine's target (``hf_reference_model``), on the engine's prompt ids. ``options`` go to
    ``generate`` (e.g. ``repetition_penalty``, ``eos_token_id``)."""
    ids = torch.tensor([engine.prompt_ids(prompt)])
    settings: dict[str, object] = {
        "eos_token_id": list(engine.target.eos_token_ids),
        "pad_token_id": engine.target.tokenizer.pad_token_id,
    }
    model = hf_reference_model(engine.target.source, engine.target.dtype)
    assert model is not engine.target.model
    out = model.generate(
        ids,
        attention_mask=torch.ones_like(ids),
        do_sample=False,
        max_new_tokens=max_new_tokens,
        **(settings | options),
    )
    return out[0, ids.shape[1] :].tolist()
