"""CPU kernels (prepacked linears, row-wise attention): a position's logits are bit-identical
whether verified in a block or decoded alone, the answers do not change, and the kernels apply
only to fp32 and bf16 models on the CPU unless turned off.

The exactness tests use models with a wide MLP (K = 2048 in ``down_proj``): that is where
oneDNN's one-row path sums in another order than its many-row path, as in real models.
"""

from __future__ import annotations

import pytest
import torch
from tiny_models import build_tokenizer, save
from torch import nn
from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

from app.engine import Engine, GenerationConfig
from app.engine.models.loading import load_model
from app.engine.runners.cpu_kernels import ROWWISE, PrepackedLinear, apply_cpu_kernels, has_cpu_kernels
from app.engine.runners.kv import CachedModel

PROMPT = "def add(a, b):\n    return a + b\nThe quick brown fox jumps over the lazy dog."
CONFIGS = {"llama": LlamaConfig, "qwen2": Qwen2Config}


def _wide_model(arch: str, vocab: int, tied: bool = False) -> AutoModelForCausalLM:
    torch.manual_seed(3)
    config = CONFIGS[arch](
        vocab_size=vocab, hidden_size=128, intermediate_size=2048, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=512,
        tie_word_embeddings=tied, pad_token_id=0,
    )
    return AutoModelForCausalLM.from_config(config).eval()


@pytest.fixture(scope="module")
def wide_models(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("wide")
    tokenizer = build_tokenizer()
    return {
        arch: str(save(_wide_model(arch, len(tokenizer)), tokenizer, root / arch)) for arch in CONFIGS
    }


def _random_ids(n: int, vocab: int, seed: int) -> list[int]:
    return torch.randint(0, vocab, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("block_size", [2, 5, 8, 16])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_block_logits_equal_one_at_a_time_logits_bit_for_bit(wide_models, arch, block_size, dtype):
    loaded = load_model(wide_models[arch], device="cpu", dtype=dtype)
    ids = _random_ids(40 + block_size, loaded.vocab_size, seed=block_size)
    context, block = ids[:40], ids[40:]
    together, alone = CachedModel(loaded.model, loaded.vocab_size), CachedModel(loaded.model, loaded.vocab_size)
    together.forward(context, keep=1)
    alone.forward(context, keep=1)
    block_logits = together.forward(block, keep=len(block))  # [block, V]
    single_logits = torch.cat([alone.forward([t], keep=1) for t in block])
    assert torch.equal(block_logits, single_logits)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_prompt_pass_with_folded_drafts_equals_prompt_then_single_steps(wide_models, arch):
    loaded = load_model(wide_models[arch], device="cpu", dtype="float32")
    ids = _random_ids(34, loaded.vocab_size, seed=11)
    prompt, drafts = ids[:30], ids[30:]
    folded = CachedModel(loaded.model, loaded.vocab_size).forward(prompt + drafts, keep=len(drafts) + 1)
    plain = CachedModel(loaded.model, loaded.vocab_size)
    first = plain.forward(prompt, keep=1)
    assert torch.equal(folded, torch.cat([first] + [plain.forward([t], keep=1) for t in drafts]))


def test_one_token_decoding_is_unchanged_by_rowwise_attention(wide_models):
    plain_attention = load_model(wide_models["llama"], device="cpu", dtype="float32", cpu_kernels=False)
    rowwise = load_model(wide_models["llama"], device="cpu", dtype="float32", cpu_kernels=False)
    apply_cpu_kernels(plain_attention.model, rowwise=False)
    apply_cpu_kernels(rowwise.model)
    ids = _random_ids(24, plain_attention.vocab_size, seed=5)
    runs = []
    for loaded in (plain_attention, rowwise):
        runner = CachedModel(loaded.model, loaded.vocab_size)
        runner.forward(ids[:20], keep=0)  # keep all: no row singled out, plain SDPA prefill
        runs.append(torch.cat([runner.forward([t], keep=1) for t in ids[20:]]))
    assert torch.equal(*runs)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("drafter", ["none", "lookup", "model"])
def test_prepacked_and_stock_paths_give_identical_greedy_answers(tiny_models, arch, drafter):
    answers = []
    for cpu_kernels in (True, False):
        draft = {"none": None, "lookup": "lookup", "model": str(tiny_models[f"{arch}-draft"])}[drafter]
        engine = Engine.load(str(tiny_models[arch]), draft, device="cpu", dtype="float32", cpu_kernels=cpu_kernels)
        assert has_cpu_kernels(engine.target.model) == cpu_kernels
        result = engine.generate(PROMPT, GenerationConfig(max_new_tokens=24, k=4, speculative=drafter != "none"))
        answers.append([t.id for t in result.tokens])
    assert answers[0] == answers[1]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_kernels_apply_to_float32_and_bfloat16_on_the_cpu_target_and_draft(tiny_models, dtype):
    engine = Engine.load(str(tiny_models["llama"]), str(tiny_models["llama-draft"]), device="cpu", dtype=dtype, draft_dtype=dtype)
    for model in (engine.target.model, engine.draft.model):
        assert not any(type(m) is nn.Linear for m in model.modules())
        assert any(isinstance(m, PrepackedLinear) for m in model.modules())
        assert model.config._attn_implementation == ROWWISE


@pytest.mark.parametrize("dtype", ["float16", "int8"])
def test_kernels_leave_other_dtypes_alone(tiny_models, dtype):
    loaded = load_model(str(tiny_models["llama"]), device="cpu", dtype=dtype)
    assert not has_cpu_kernels(loaded.model)
    assert not any(isinstance(m, PrepackedLinear) for m in loaded.model.modules())
    assert loaded.model.config._attn_implementation == "sdpa"


def test_turning_kernels_off_keeps_stock_linears_and_sdpa(tiny_models):
    loaded = load_model(str(tiny_models["qwen2"]), device="cpu", dtype="float32", cpu_kernels=False)
    assert not has_cpu_kernels(loaded.model)
    assert any(type(m) is nn.Linear for m in loaded.model.modules())
    assert loaded.model.config._attn_implementation == "sdpa"


def test_tied_head_is_packed_and_the_embedding_keeps_its_weight():
    model = _wide_model("llama", 384, tied=True)
    embedding = model.get_input_embeddings().weight.detach().clone()
    ids = torch.tensor([_random_ids(12, 384, seed=2)])
    with torch.inference_mode():
        stock = model(input_ids=ids).logits
    apply_cpu_kernels(model)
    assert isinstance(model.lm_head, PrepackedLinear)
    assert torch.equal(model.get_input_embeddings().weight, embedding)
    with torch.inference_mode():
        assert torch.allclose(model(input_ids=ids).logits, stock, atol=1e-4)
