"""The lean pass (runners/lean.py) gives transformers' logits bit for bit, on every architecture
and weights form it takes, and takes exactly the passes it reproduces."""

from __future__ import annotations

import pytest
import torch
from tiny_models import build_tokenizer, save, tiny_config
from transformers import AutoModelForCausalLM

from app.engine import Engine, GenerationConfig
from app.engine.models.loading import load_model
from app.engine.runners import cpu_probe, native
from app.engine.runners.cpu_probe import force_probe, probe
from app.engine.runners.kv import SPLIT_PROMPT_ROWS, CachedModel
from app.engine.runners.lean import LeanPass, why_not
from app.engine.runners.native import calls as native_calls
from app.engine.runners.quant import Int8Linear, batch_invariant

FORMS = {  # weights form -> the probe answer it runs under (None: this CPU's own)
    "fp32": None,
    "bf16": None,
    "int4": None,
    "int8": None,
    "int4-avx2": cpu_probe.AVX2,
    "bf16-in-fp32": cpu_probe.AVX2,
}
DTYPE = {
    "fp32": "float32", "bf16": "bfloat16", "int4": "int4", "int8": "int8",
    "int4-avx2": "int4", "bf16-in-fp32": "bfloat16",
}  # fmt: skip
LEAN_ARCHS = ("llama", "qwen2", "mistral-no-window")


def _model(arch: str, vocab: int, tied: bool) -> AutoModelForCausalLM:
    torch.manual_seed(11)
    config = tiny_config(arch.removesuffix("-no-window"), vocab, layers=2, hidden=128, eos_id=2, intermediate=512)
    if arch.endswith("-no-window"):
        config.sliding_window = None  # Mistral 7B v0.2 and later: full attention
    config.tie_word_embeddings = tied
    if arch == "qwen2":
        config.attention_bias = True  # Qwen2's q/k/v biases (its config has no switch; the model always has them)
    model = AutoModelForCausalLM.from_config(config).eval()
    with torch.no_grad():  # a trained model's norm weights are not all 1: how they are multiplied shows in the bits
        for name, weight in model.named_parameters():
            if "norm" in name:
                weight.copy_(1 + 0.3 * torch.randn_like(weight))
    return model


@pytest.fixture(scope="module")
def lean_models(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("lean")
    tokenizer = build_tokenizer()
    made = {arch: _model(arch, len(tokenizer), tied=arch == "llama") for arch in (*LEAN_ARCHS, "mistral", "gpt2")}
    return {arch: str(save(model, tokenizer, root / arch)) for arch, model in made.items()}


@pytest.fixture(autouse=True)
def _probe_as_the_environment_says():
    yield
    force_probe(None)


@pytest.fixture(params=list(FORMS))
def form(request) -> str:
    force_probe(FORMS[request.param])
    dtype = DTYPE[request.param]
    if dtype in ("int4", "int8") and not batch_invariant(dtype):
        pytest.skip(f"{dtype} is not offered on this CPU")
    compute = "float32" if request.param == "bf16-in-fp32" else dtype
    if compute in ("float32", "bfloat16") and not probe().can_pack(getattr(torch, compute)):
        pytest.skip(f"this CPU cannot prepack {compute}")
    return dtype


def _ids(n: int, vocab: int, seed: int) -> list[int]:
    return torch.randint(3, vocab, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def _passes(runner: CachedModel, ids: list[int]) -> list[torch.Tensor]:
    """A prompt, then decoding and verification as the loop makes them: single tokens, blocks
    of 2..16, a longer block (a follow-up turn's prompt after a cached conversation), rollbacks into
    the block just fed."""
    out = [runner.forward(ids[:30], keep=1)]
    position = 30
    for size, keep_back in ((1, 0), (5, 2), (1, 0), (16, 7), (3, 3), (1, 0), (8, 0), (21, 4)):
        block = ids[position : position + size]
        logits = runner.feed_at(position, block)
        assert logits is not None
        out.append(logits)
        position += size - keep_back  # the caller keeps what it accepted
    return out


@pytest.mark.parametrize("arch", LEAN_ARCHS)
def test_the_lean_pass_gives_transformers_logits_bit_for_bit(lean_models, arch, form, monkeypatch):
    loaded = load_model(lean_models[arch], device="cpu", dtype=form)
    taken: list[int] = []
    original = LeanPass.__call__

    def counting(self, ids, cache, keep):
        taken.append(len(ids))
        return original(self, ids, cache, keep)

    monkeypatch.setattr(LeanPass, "__call__", counting)
    ids = _ids(80, loaded.vocab_size, seed=5)
    runner = CachedModel(loaded.model, loaded.vocab_size)
    if form in ("int4", "int8") and native.kernels() is not None:  # the side-by-side calls are what is checked
        assert runner.lean is not None  # and each whole layer in one call (``decoder_layer``, SiLU · up in C)
        for layer in runner.lean.layers:
            assert layer.qkv is not None and layer.gate_up is not None and layer.one_call and layer.block is not None
            assert layer.block.mlp
    lean = _passes(runner, ids)
    assert taken == [1, 5, 1, 16, 3, 1, 8, 21]  # every pass after the prompt's
    plain = _passes(CachedModel(loaded.model, loaded.vocab_size, lean=False), ids)
    assert len(taken) == 8  # the reference never took it
    for mine, theirs in zip(lean, plain, strict=True):
        assert mine.dtype == theirs.dtype and torch.equal(mine, theirs)


def test_greedy_speculation_on_the_lean_pass_equals_target_only(lean_models):
    loaded = load_model(lean_models["qwen2"], device="cpu", dtype="int4" if batch_invariant("int4") else "float32")
    engine = Engine(loaded, lookup=True)
    prompt = "the cat sat on the mat. the cat sat on the mat. the cat"
    config = GenerationConfig(max_new_tokens=40, k=4, auto_k=False)
    speculative = engine.generate(prompt, config)
    plain = engine.generate(prompt, GenerationConfig(max_new_tokens=40, speculative=False))
    assert engine._target_kv.lean is not None
    assert speculative.stats.accepted > 0
    assert [t.id for t in speculative.tokens] == [t.id for t in plain.tokens]


def test_models_whose_pass_it_does_not_reproduce_keep_transformers_path(lean_models):
    gpt2 = load_model(lean_models["gpt2"], device="cpu", dtype="float32").model
    assert LeanPass.of(gpt2) is None and "GPT2LMHeadModel" in (why_not(gpt2) or "")
    stock = load_model(lean_models["llama"], device="cpu", dtype="float32", cpu_kernels=False).model
    assert why_not(stock) == "its attention is not row-wise"


def test_a_sliding_window_cache_is_left_to_transformers_and_any_block_on_a_full_cache_is_taken(lean_models):
    windowed = load_model(lean_models["mistral"], device="cpu", dtype="float32")
    runner = CachedModel(windowed.model, windowed.vocab_size)
    assert runner.lean is not None  # Mistral's layers, but its cache layers slide
    runner.forward(_ids(20, windowed.vocab_size, seed=1), keep=1)
    assert runner._cache is not None and not runner.lean.takes(runner._cache, 1)
    full = load_model(lean_models["llama"], device="cpu", dtype="float32")
    runner = CachedModel(full.model, full.vocab_size)
    runner.forward(_ids(20, full.vocab_size, seed=1), keep=1)
    assert runner._cache is not None
    assert runner.lean is not None and runner.lean.takes(runner._cache, 1) and runner.lean.takes(runner._cache, 500)
    assert not runner.lean.takes(runner._cache, 0)


@pytest.mark.parametrize("dtype", ["int4", "float32"])
def test_a_pass_on_spec_chats_kernels_runs_torchs_ops_on_one_thread_and_splits_its_linears(lean_models, dtype):
    """With every linear SpecChat's kernel, torch's own ops in a lean pass run on one thread while
    the linears split as many ways as torch's thread count said (two pools spinning for the same
    cores slowed multi-row passes); with torch's linears (fp32 prepacked) nothing changes."""
    if dtype == "int4" and (native.kernels() is None or not batch_invariant("int4")):
        pytest.skip("SpecChat's int4 kernels are not built here")
    loaded = load_model(lean_models["qwen2"], device="cpu", dtype=dtype)
    runner = CachedModel(loaded.model, loaded.vocab_size)
    runner.forward(_ids(20, loaded.vocab_size, seed=3), keep=1)
    assert runner.lean is not None
    seen: list[tuple[int, int]] = []
    rotary = runner.lean.rotary  # torch's ops (a native layer is one C call: its activation too)

    def recording(*args: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        seen.append((torch.get_num_threads(), native_calls.thread_count()))
        return rotary(*args)

    runner.lean.rotary = recording
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        fed = runner.forward([5, 6, 7], keep=3)
        after = torch.get_num_threads()
    finally:
        torch.set_num_threads(before)
    assert fed.shape[0] == 3 and after == 2
    assert seen == ([(1, 2)] if dtype == "int4" else [(2, 2)])
    assert runner.lean.native is (dtype == "int4")


@pytest.mark.parametrize("dtype", ["int4", "float32"])
def test_a_short_prompt_on_an_empty_cache_splits_the_threads_as_a_lean_pass_does(lean_models, dtype):
    """A prompt on an empty cache runs transformers' pass: with every linear SpecChat's kernel and
    up to ``SPLIT_PROMPT_ROWS`` tokens, torch's ops run on one thread while the linears split as
    many ways as torch's thread count says (the same bits as on one thread); a longer prompt, or
    torch's linears, keep torch's thread count."""
    if dtype == "int4" and (native.kernels() is None or not batch_invariant("int4")):
        pytest.skip("SpecChat's int4 kernels are not built here")
    loaded = load_model(lean_models["qwen2"], device="cpu", dtype=dtype)
    runner = CachedModel(loaded.model, loaded.vocab_size)
    seen: list[tuple[int, int]] = []
    act = loaded.model.model.layers[0].mlp.act_fn  # one of torch's ops in transformers' pass
    act.register_forward_hook(lambda *_: seen.append((torch.get_num_threads(), native_calls.thread_count())))
    ids = _ids(SPLIT_PROMPT_ROWS + 1, loaded.vocab_size, seed=5)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        alone = runner.forward(ids[:20], keep=1)
        runner.reset()
        torch.set_num_threads(2)
        split = runner.forward(ids[:20], keep=1)
        runner.reset()
        runner.forward(ids, keep=1)
        after = torch.get_num_threads()
    finally:
        torch.set_num_threads(before)
    assert after == 2
    assert seen == [(1, 1), (1, 2) if dtype == "int4" else (2, 2), (2, 2)]
    assert torch.equal(alone, split)


def test_without_torchs_silu_bits_a_layers_call_stops_at_its_activation(lean_models, monkeypatch):
    """Where SpecChat's SiLU does not give torch's bits (``calls.silu_mul_is_torchs``), each layer's
    one call ends at gate | up and the activation, down and residual add are torch's and the
    kernel's own calls again: the same logits as transformers' path either way."""
    if native.kernels() is None or not batch_invariant("int4"):
        pytest.skip("SpecChat's int4 kernels are not built here")
    monkeypatch.setattr(native_calls, "silu_mul_is_torchs", lambda: False)
    loaded = load_model(lean_models["llama"], device="cpu", dtype="int4")
    runner = CachedModel(loaded.model, loaded.vocab_size)
    assert runner.lean is not None
    assert all(layer.block is not None and not layer.block.mlp for layer in runner.lean.layers)
    ids = _ids(80, loaded.vocab_size, seed=9)
    plain = _passes(CachedModel(loaded.model, loaded.vocab_size, lean=False), ids)
    for mine, theirs in zip(_passes(runner, ids), plain, strict=True):
        assert torch.equal(mine, theirs)


@pytest.mark.parametrize("arch", ["qwen2", "llama"])
def test_a_layer_whose_v_is_another_form_is_one_call_and_the_same_bits(lean_models, arch):
    """A Q4_K_M file keeps half its layers' v in Q6_K beside Q4_K q and k: q | k | v is then two
    kernel calls inside the layer's one call (``side_by_side_runs``). Here each layer's v is int8
    beside int4 q and k (Qwen2 with its biases): every layer still one call, and the logits
    transformers' path gives, bit for bit."""
    if native.kernels() is None or not batch_invariant("int4"):
        pytest.skip("SpecChat's int4 kernels are not built here")
    loaded = load_model(lean_models[arch], device="cpu", dtype="int4")
    for layer in loaded.model.model.layers:
        v = layer.self_attn.v_proj
        layer.self_attn.v_proj = Int8Linear.from_float(v.dequantized(), v.bias)
    runner = CachedModel(loaded.model, loaded.vocab_size)
    assert runner.lean is not None
    for layer in runner.lean.layers:
        assert layer.qkv is None and layer.block is not None and layer.block.mlp  # two calls, inside one
    ids = _ids(80, loaded.vocab_size, seed=13)
    plain = _passes(CachedModel(loaded.model, loaded.vocab_size, lean=False), ids)
    for mine, theirs in zip(_passes(runner, ids), plain, strict=True):
        assert torch.equal(mine, theirs)
