"""SpecChat's own Llama-family classes (runners/llama_family.py) give transformers' logits bit for
bit — a prompt on an empty cache, then blocks and single tokens on it, every architecture they
take, fp32 and bf16, as they are and with SpecChat's CPU kernels applied to both — and a warm
load of a GGUF's cached forms builds them without importing transformers' modeling code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from gguf import GGMLQuantizationType as Q
from tiny_gguf import write_gguf
from tiny_models import build_tokenizer, tiny_config
from transformers import AutoModelForCausalLM

from app.engine.models.loading import load_model
from app.engine.runners import cpu_kernels, llama_family
from app.engine.runners.kv import CachedModel
from app.engine.runners.lean import why_not

ARCHS = ("llama", "qwen2", "mistral-no-window", "llama-rope-llama3", "qwen2-rope-yarn")
ROPE = {  # a scaled rotary's parameters (Llama 3.1's; a YaRN-extended Qwen2.5's)
    "llama3": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 64},
    "yarn": {"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 4.0, "original_max_position_embeddings": 128},
}  # fmt: skip
ROOT = Path(__file__).resolve().parent.parent
VARIES = "changes with the sequence's length"
HEAVY = ("transformers.modeling_utils", "transformers.activations", "transformers.masking_utils", "torch._dynamo")


def _transformers_model(arch: str, tied: bool = False) -> AutoModelForCausalLM:
    torch.manual_seed(5)
    arch, _, rope = arch.partition("-rope-")
    config = tiny_config(arch.removesuffix("-no-window"), 384, layers=2, hidden=128, eos_id=2, intermediate=512)
    if rope:
        config.rope_parameters = ROPE[rope]
    if arch.endswith("-no-window"):
        config.sliding_window = None
    config.tie_word_embeddings = tied
    if arch == "llama":
        config.attention_bias = True  # o's bias too: Llama's switch covers all four
    model = AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad():  # norms and biases not all 1 and 0: how each is applied shows in the bits
        for name, weight in model.named_parameters():
            if "norm" in name:
                weight.copy_(1 + 0.3 * torch.randn_like(weight))
            elif name.endswith("bias"):
                weight.copy_(0.1 * torch.randn_like(weight))
    return model


def _in(dtype: torch.dtype, model: AutoModelForCausalLM) -> AutoModelForCausalLM:
    """``model`` in ``dtype`` with its rotary's frequencies in fp32, as SpecChat loads models
    (``gguf_model.skeleton`` makes the rotary module anew; ``.to`` would round them)."""
    model.to(dtype)
    model.model.rotary_emb = type(model.model.rotary_emb)(config=model.config)
    return model


def _own_model(model: AutoModelForCausalLM, folder: Path, dtype: torch.dtype) -> llama_family.CausalLM:
    model.config.save_pretrained(folder)
    config = llama_family.read_config(folder)
    assert config is not None
    own = llama_family.CausalLM(config, dtype)
    own.load_state_dict(model.state_dict(), strict=True, assign=True)
    return own.eval().requires_grad_(False)


def _passes(model: torch.nn.Module, lean: bool) -> list[torch.Tensor]:
    """A prompt on an empty cache, a 5-token block, one token, a 3-token block: every row's logits."""
    ids = torch.randint(3, 384, (19,), generator=torch.Generator().manual_seed(2)).tolist()
    runner = CachedModel(model, 384, lean=lean)
    return [runner.forward(ids[:10]), runner.forward(ids[10:15]), runner.forward(ids[15:16]), runner.forward(ids[16:])]


def _rowwise(model: AutoModelForCausalLM) -> None:
    attention, why = cpu_kernels.use_rowwise_attention(model)
    assert attention == cpu_kernels.ROWWISE, why


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("arch", ARCHS)
def test_the_own_classes_give_transformers_logits_bit_for_bit(arch, dtype, tmp_path):
    theirs = _in(dtype, _transformers_model(arch, tied=arch == "llama"))
    _rowwise(theirs)  # the attention SpecChat runs transformers' models with
    ours = _own_model(theirs, tmp_path, dtype)
    assert theirs.model.rotary_emb.rope_type == (arch.partition("-rope-")[2] or "default")
    assert ours.dtype == dtype and [p.is_meta for p in ours.parameters()].count(True) == 0
    expected = _passes(theirs, lean=False)
    for lean in (False, True):  # its own forward, then the lean pass on its cache
        for mine, theirs_rows in zip(_passes(ours, lean=lean), expected, strict=True):
            assert torch.equal(mine, theirs_rows)


@pytest.mark.parametrize("arch", ARCHS)
def test_with_the_cpu_kernels_applied_the_own_classes_and_their_lean_pass_give_transformers_bits(arch, tmp_path):
    theirs = _in(torch.bfloat16, _transformers_model(arch))
    ours = _own_model(theirs, tmp_path, torch.bfloat16)
    applied = [cpu_kernels.apply_cpu_kernels(m) for m in (theirs, ours)]
    assert applied[0] is not None and applied[1] is not None
    assert applied[1].attention == cpu_kernels.ROWWISE and applied[1].exact  # nothing left out on ours
    assert (applied[0].linears, applied[0].packed) == (applied[1].linears, applied[1].packed)
    assert why_not(ours) is None
    expected = _passes(theirs, lean=False)
    for lean in (False, True):
        for mine, theirs_rows in zip(_passes(ours, lean=lean), expected, strict=True):
            assert torch.equal(mine, theirs_rows)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"model_type": "gemma2"}, "its model type 'gemma2' is not one of llama, qwen2, mistral"),
        ({"hidden_act": "gelu"}, "its activation is gelu"),
        ({"layer_types": ["full_attention", "sliding_attention"]}, "a layer has a sliding window"),
        ({"use_sliding_window": True}, "its attention has a sliding window"),
        ({"model_type": "mistral", "sliding_window": 4096}, "its attention has a sliding window"),
        ({"pretraining_tp": 2}, "it splits its linears (pretraining_tp)"),
        ({"rope_parameters": {"rope_type": "dynamic"}}, f"its rotary embedding (dynamic) {VARIES}"),
        ({"rope_scaling": {"type": "longrope"}}, f"its rotary embedding (longrope) {VARIES}"),
    ],
)
def test_a_config_the_classes_do_not_build_says_why_and_is_left_to_transformers(change, reason, tmp_path):
    config = {"model_type": "llama", "hidden_act": "silu", "num_hidden_layers": 2, **change}
    assert llama_family.why_not(config) == reason
    (tmp_path / "config.json").write_text(json.dumps(config))
    assert llama_family.read_config(tmp_path) is None
    assert llama_family.why_not({"model_type": "qwen2", "hidden_act": "silu", "num_hidden_layers": 2}) is None


WARM_LOAD = """
import sys, torch
from app.engine.startup import import_engine
import_engine()
from app.engine.models.loading import load_model
from app.engine.runners.kv import CachedModel
loaded = load_model(sys.argv[1], device="cpu")
logits = CachedModel(loaded.model, loaded.vocab_size).forward([5, 6, 7, 8], keep=1)
torch.save(logits, sys.argv[2])
print(type(loaded.model).__module__, [m for m in sys.argv[3].split(",") if m in sys.modules])
"""


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_a_warm_load_of_cached_forms_builds_the_own_classes_without_transformers_modeling_code(
    arch, tmp_path, isolated_cache
):
    """The first load converts a quantized GGUF to its forms (transformers reads the header); a
    later process loads them with SpecChat's classes, imports none of ``HEAVY``, and computes what
    the first load's model does."""
    tokenizer = build_tokenizer()
    gguf_file = write_gguf(_transformers_model(arch), tokenizer, tmp_path / f"{arch}.gguf", qtype=Q.Q8_0)
    first = load_model(str(gguf_file), device="cpu")
    expected = CachedModel(first.model, first.vocab_size).forward([5, 6, 7, 8], keep=1)
    out = tmp_path / "logits.pt"
    env = dict(os.environ, SPECCHAT_CACHE_DIR=str(isolated_cache))
    done = subprocess.run(
        [sys.executable, "-c", WARM_LOAD, str(gguf_file), str(out), ",".join(HEAVY)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[-2] == "app.engine.runners.llama_family []"
    assert torch.equal(torch.load(out), expected)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_as_transformers_shares_every_tensor_and_computes_the_same_logits_and_greedy_answer(arch, tmp_path):
    """What only transformers does with a model (its ``generate``: the bench's Hugging Face
    baseline) runs on a twin made of the very same parts."""
    ours = _own_model(_in(torch.bfloat16, _transformers_model(arch)), tmp_path, torch.bfloat16)
    ours.to(torch.bfloat16)  # as ``forms.settle`` leaves a model: the rotary's frequencies in bf16 too
    assert cpu_kernels.apply_cpu_kernels(ours) is not None
    twin = llama_family.as_transformers(ours)
    assert type(twin).__module__.startswith("transformers.models.")
    assert llama_family.as_transformers(ours) is twin and llama_family.as_transformers(twin) is twin
    def tensors(model: torch.nn.Module) -> set[int]:  # the rotary's small buffers are the twin's own
        return {id(t) for t in [*model.parameters(), *model.buffers()] if t.numel() > 64}

    assert tensors(twin) == tensors(ours)  # the same tensors (oneDNN's packed ones too): nothing copied
    for mine, its in zip(_passes(ours, lean=True), _passes(twin, lean=False), strict=True):
        assert torch.equal(mine, its)
    prompt = [5, 9, 11, 40, 7, 3]
    with torch.inference_mode():
        made = twin.generate(torch.tensor([prompt]), max_new_tokens=6, do_sample=False, eos_token_id=None)
    runner, ids = CachedModel(ours, 384), list(prompt)
    for _ in range(6):
        ids.append(int(runner.continue_from(ids)[-1].argmax()))
    assert made[0].tolist() == ids
