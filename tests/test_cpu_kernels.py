"""CPU kernels (prepacked linears, row-wise attention): a position's logits are bit-identical
whether verified in a block or decoded alone, on every path this CPU has (bf16 natively, bf16
computed in fp32 where the CPU cannot pack bf16, fp32, and the weight-only int4 / int8 forms with
the rest of the model in bf16), the answers do not change, and the kernels apply only to fp32,
bf16 and weight-only models on the CPU unless turned off.

The exactness tests use models with a wide MLP (K = 2048 in ``down_proj``): that is where
oneDNN's one-row path sums in another order than its many-row path, as in real models. The
fallback path is forced with ``force_probe("avx2")`` so it is tested on every CPU.
"""

from __future__ import annotations

import os

import pytest
import torch
from tiny_models import build_tokenizer, save, tiny_config
from torch import nn
from transformers import AutoModelForCausalLM
from transformers.pytorch_utils import Conv1D

from app.engine import Engine, GenerationConfig
from app.engine.config import LoadOptions
from app.engine.errors import InvalidSettingError
from app.engine.models.loading import load_model
from app.engine.runners import cpu_probe
from app.engine.runners.cpu_kernels import ROWWISE, apply_cpu_kernels, cpu_kernels_of, has_cpu_kernels
from app.engine.runners.cpu_probe import PROBE_ENV, CpuProbe, cpuinfo_flags, force_probe, probe
from app.engine.runners.kv import CachedModel
from app.engine.runners.prepacked import PrepackedLinear
from app.engine.runners.quant import batch_invariant, quantized_layers

PROMPT = "def add(a, b):\n    return a + b\nThe quick brown fox jumps over the lazy dog."
ARCHS = ("llama", "qwen2", "mistral", "gpt2")
# (weights' dtype, the dtype the linears compute in, the probe answer that takes this path)
PATHS = {
    "fp32": ("float32", "float32", None),
    "bf16": ("bfloat16", "bfloat16", None),
    "bf16-in-fp32": ("bfloat16", "float32", cpu_probe.AVX2),
    # weight-only forms (issue 18): int linears, bf16 activations and the rest of the model in bf16
    "int4": ("int4", "bfloat16", None),
    "int8": ("int8", "bfloat16", None),
    "int4-no-bf16-packing": ("int4", "bfloat16", cpu_probe.AVX2),
    "int8-no-bf16-packing": ("int8", "bfloat16", cpu_probe.AVX2),
}
QUANTIZED = ("int4", "int8")


def _on_path(kernels, path: tuple[str, str]) -> bool:
    """Whether the kernels ``apply_cpu_kernels`` reported are the path's."""
    dtype, compute = path
    if dtype in QUANTIZED:  # every linear weight-only (int4 keeps its LM head in int8)
        return kernels.quantized == kernels.linears and kernels.form.split("+")[0] == dtype and kernels.dtype == compute
    return (kernels.dtype, kernels.compute) == path


def _wide_model(arch: str, vocab: int, tied: bool = False, **options: object) -> AutoModelForCausalLM:
    torch.manual_seed(3)
    config = tiny_config(arch, vocab, layers=2, hidden=128, eos_id=2, intermediate=2048)
    config.tie_word_embeddings = tied or arch == "gpt2"
    return AutoModelForCausalLM.from_config(config, **options).eval()


@pytest.fixture(scope="module")
def wide_models(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("wide")
    tokenizer = build_tokenizer()
    return {arch: str(save(_wide_model(arch, len(tokenizer)), tokenizer, root / arch)) for arch in ARCHS}


@pytest.fixture(autouse=True)
def _probe_as_the_environment_says():
    yield
    force_probe(None)


@pytest.fixture(params=list(PATHS))
def path(request) -> tuple[str, str]:
    """(dtype, compute) of one kernel path, skipped where this CPU (or SPECCHAT_CPU_PROBE) has
    none; the fp32 fallback for bf16 is forced, so it runs everywhere fp32 packs."""
    dtype, compute, forced = PATHS[request.param]
    force_probe(forced)
    if dtype in QUANTIZED and not batch_invariant(dtype):
        pytest.skip(f"{dtype}'s kernel is not batch invariant on this CPU (not offered here)")
    if dtype not in QUANTIZED and not probe().can_pack(compute):
        pytest.skip(f"this CPU cannot prepack {compute} ({probe().describe()})")
    return dtype, compute


def _random_ids(n: int, vocab: int, seed: int) -> list[int]:
    return torch.randint(0, vocab, (n,), generator=torch.Generator().manual_seed(seed)).tolist()


def _block_and_single_logits(model, vocab: int, block_size: int, context: int = 40) -> tuple[torch.Tensor, ...]:
    """The logits of a block verified at once after ``context`` tokens, and of the same tokens
    decoded one at a time.  ([block, V], [block, V])"""
    ids = _random_ids(context + block_size, vocab, seed=block_size)
    together, alone = CachedModel(model, vocab), CachedModel(model, vocab)
    together.forward(ids[:context], keep=1)
    alone.forward(ids[:context], keep=1)
    block_logits = together.forward(ids[context:], keep=block_size)
    single_logits = torch.cat([alone.forward([t], keep=1) for t in ids[context:]])
    return block_logits, single_logits


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("block_size", [2, 5, 8, 16])
def test_block_logits_equal_one_at_a_time_logits_bit_for_bit(wide_models, arch, block_size, path):
    dtype, compute = path
    loaded = load_model(wide_models[arch], device="cpu", dtype=dtype)
    kernels = cpu_kernels_of(loaded.model)
    assert kernels is not None and _on_path(kernels, path) and kernels.exact
    assert torch.equal(*_block_and_single_logits(loaded.model, loaded.vocab_size, block_size))


@pytest.mark.parametrize("arch", ["mistral", "gpt2"])
def test_sliding_window_and_conv1d_models_are_exact_too(wide_models, arch, path):
    """Mistral passes its window (4096, longer than the context) to every layer; GPT-2's layers
    are Conv1D. Both used to fall back silently to stock kernels."""
    loaded = load_model(wide_models[arch], device="cpu", dtype=path[0])
    kernels = cpu_kernels_of(loaded.model)
    assert kernels is not None and _on_path(kernels, path) and kernels.exact and kernels.attention == ROWWISE
    assert not any(type(m) in (nn.Linear, Conv1D) for m in loaded.model.modules())
    assert torch.equal(*_block_and_single_logits(loaded.model, loaded.vocab_size, 5))


def test_a_window_shorter_than_the_context_is_honoured(tokenizer):
    """Where the window cuts, each row attends to its window's keys alone: the same logits (to
    rounding) as the stock model with its sliding mask, not attention over keys the window hides."""
    config = tiny_config("mistral", len(tokenizer), layers=2, hidden=64, eos_id=2)
    config.sliding_window = 8
    torch.manual_seed(5)
    stock = AutoModelForCausalLM.from_config(config).eval()
    kernels = AutoModelForCausalLM.from_config(config).eval()
    kernels.load_state_dict(stock.state_dict())
    assert apply_cpu_kernels(kernels).attention == ROWWISE
    for model in (stock, kernels):
        model.generation_config.pad_token_id = 0
    ids = _random_ids(40, len(tokenizer), seed=9)
    runs = []
    for model in (stock, kernels):
        runner = CachedModel(model, len(tokenizer))
        runner.forward(ids[:30], keep=1)
        runs.append(runner.forward(ids[30:], keep=10))
    assert torch.allclose(*runs, atol=1e-4)


def test_an_eager_model_is_switched_to_row_wise_attention_and_is_exact(wide_models):
    model = _wide_model("llama", 384, attn_implementation="eager")
    assert model.config._attn_implementation == "eager"
    kernels = apply_cpu_kernels(model)
    assert kernels.attention == ROWWISE and kernels.exact and not kernels.notes
    assert torch.equal(*_block_and_single_logits(model, 384, 5))


def test_an_eager_model_that_cannot_switch_is_named_in_the_load_note():
    model = _wide_model("llama", 384, attn_implementation="eager")
    model._supports_sdpa = False  # as an architecture without an SDPA form
    kernels = apply_cpu_kernels(model)
    assert kernels.attention == "eager" and not kernels.exact
    assert "eager attention is kept" in kernels.note and "not exact" in kernels.note
    assert kernels.packed == kernels.linears  # the linears are still prepacked


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int4", "int8"])
def test_prompt_pass_with_folded_drafts_equals_prompt_then_single_steps(wide_models, arch, dtype):
    """For every form: a row does not change with a prompt's 34 rows (oneDNN's bf16 GEMM would on
    an AVX-512 + AMX CPU above 32 rows a call: ``PrepackedLinear`` feeds it 32 at a time)."""
    loaded = load_model(wide_models[arch], device="cpu", dtype=dtype)
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
        # one token a pass from the start: the call plain SDPA makes for one row, in both models
        runs.append(torch.cat([runner.forward([t], keep=1) for t in ids]))
    assert torch.equal(*runs)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
@pytest.mark.parametrize("drafter", ["none", "lookup", "model"])
def test_prepacked_and_stock_paths_give_identical_greedy_answers(tiny_models, arch, drafter):
    answers = []
    for cpu_kernels in (True, False):
        draft = {"none": None, "lookup": "lookup", "model": str(tiny_models[f"{arch}-draft"])}[drafter]
        options = LoadOptions(device="cpu", dtype="float32", cpu_kernels=cpu_kernels)
        engine = Engine.load(str(tiny_models[arch]), draft, options)
        assert has_cpu_kernels(engine.target.model) == cpu_kernels
        result = engine.generate(PROMPT, GenerationConfig(max_new_tokens=24, k=4, speculative=drafter != "none"))
        answers.append([t.id for t in result.tokens])
    assert answers[0] == answers[1]


def test_kernels_apply_to_float32_and_bfloat16_on_the_cpu_target_and_draft(tiny_models, path):
    dtype, compute = path
    options = LoadOptions(device="cpu", dtype=dtype, draft_weights=dtype)
    engine = Engine.load(str(tiny_models["llama"]), str(tiny_models["llama-draft"]), options)
    for model in (engine.target.model, engine.draft.model):
        assert not any(type(m) is nn.Linear for m in model.modules())
        packed = [m for m in model.modules() if isinstance(m, PrepackedLinear)]
        if dtype in QUANTIZED:
            assert not packed and len(quantized_layers(model)) == cpu_kernels_of(model).linears
            assert model.get_input_embeddings().weight.dtype == torch.bfloat16  # the rest in bf16
        else:
            assert packed and {str(m.compute) for m in packed} == {f"torch.{compute}"}
        assert model.config._attn_implementation == ROWWISE


@pytest.mark.parametrize("dtype", ["float16"])
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


# ---------------------------------------------------------------- the probe and the fallback


def test_the_probe_finds_what_the_cpu_can_prepack_once_per_process(monkeypatch):
    tried: list[torch.dtype] = []
    monkeypatch.setattr(cpu_probe, "_tries_prepack", lambda dtype: tried.append(dtype) or dtype == torch.float32)
    cpu_probe._measured.cache_clear()
    try:
        monkeypatch.delenv(PROBE_ENV, raising=False)
        assert probe().packs == ("float32",) and not probe().bf16_packed
        assert probe().capability == torch.backends.cpu.get_cpu_capability()
        assert tried == [torch.float32, torch.bfloat16]  # asked once, however often probe() is called
    finally:
        cpu_probe._measured.cache_clear()


def test_the_probe_can_be_narrowed_by_the_environment_and_by_tests(monkeypatch):
    native = cpu_probe._measured()  # what the CPU does, whatever the environment says
    monkeypatch.setenv(PROBE_ENV, "avx2")
    assert not probe().can_pack(torch.bfloat16) and probe().forced == "avx2"
    assert probe().can_pack(torch.float32) == native.can_pack(torch.float32)
    assert "SPECCHAT_CPU_PROBE=avx2" in probe().describe()
    monkeypatch.setenv(PROBE_ENV, "none")
    assert probe().packs == ()
    force_probe("native")  # the Python override wins over the variable
    assert probe() == native
    force_probe(None)
    monkeypatch.setenv(PROBE_ENV, "sse4")
    with pytest.raises(InvalidSettingError, match="SPECCHAT_CPU_PROBE='sse4' is not a CPU probe answer"):
        probe()
    with pytest.raises(InvalidSettingError):
        force_probe("avx512")


def test_cpu_flags_are_read_from_cpuinfo():
    text = "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512bw avx512vl avx512dq amx_bf16 sse\n"
    assert cpuinfo_flags(text) == ("avx2", "avx512f", "avx512bw", "avx512vl", "avx512dq", "amx_bf16")
    assert cpuinfo_flags("Features\t: fp asimd bf16\n") == ()


def test_the_real_probe_agrees_with_the_cpu_flags():
    """oneDNN packs bf16 with avx512bw + avx512vl + avx512dq or with avx_ne_convert."""
    measured = cpu_probe._measured()
    flags = set(measured.flags)
    if not flags or not measured.can_pack(torch.float32):
        pytest.skip("no /proc/cpuinfo flags or no oneDNN here")
    if os.environ.get("ONEDNN_MAX_CPU_ISA") or os.environ.get("DNNL_MAX_CPU_ISA"):
        pytest.skip("oneDNN is limited to fewer instructions than the CPU lists")
    expected = {"avx512bw", "avx512vl", "avx512dq"} <= flags or "avx_ne_convert" in flags
    assert measured.bf16_packed == expected


def test_bf16_on_a_cpu_without_bf16_packing_is_computed_in_fp32_and_said_so(tiny_models):
    force_probe("avx2")
    loaded = load_model(str(tiny_models["llama"]), device="cpu", dtype="bfloat16")
    kernels = cpu_kernels_of(loaded.model)
    assert loaded.dtype == "bfloat16" and kernels is not None and kernels.path == "bf16 weights, fp32 compute"
    assert loaded.note == "bf16 weights computed in fp32: this CPU has no bf16 matrix instructions."
    packed = [m for m in loaded.model.modules() if isinstance(m, PrepackedLinear)]
    assert packed and all(m.compute == torch.float32 and m.packed_weight.dtype == torch.float32 for m in packed)
    assert loaded.model.get_input_embeddings().weight.dtype == torch.bfloat16  # the rest stays bf16


def test_bf16_answers_on_both_paths_and_speculation_stays_lossless(tiny_models, path):
    dtype, compute = path
    if dtype != "bfloat16":
        pytest.skip("a bf16 test")
    options = LoadOptions(device="cpu", dtype=dtype)
    engine = Engine.load(str(tiny_models["llama"]), str(tiny_models["llama-draft"]), options)
    assert cpu_kernels_of(engine.target.model).compute == compute
    config = GenerationConfig(max_new_tokens=16, k=4)
    spec = engine.generate(PROMPT, config)
    assert spec.stats.new_tokens == 16 and spec.stats.proposed > 0
    assert spec.token_ids == engine.generate(PROMPT, GenerationConfig(max_new_tokens=16, speculative=False)).token_ids


def test_with_no_prepacking_at_all_the_stock_kernels_run_and_the_note_says_so(tiny_models):
    force_probe("none")
    loaded = load_model(str(tiny_models["qwen2"]), device="cpu", dtype="float32")
    assert not has_cpu_kernels(loaded.model) and any(type(m) is nn.Linear for m in loaded.model.modules())
    assert loaded.kernels is not None and loaded.kernels.path == "fp32 · stock kernels"
    assert "cannot prepack float32" in loaded.note


def test_a_probe_answer_can_be_passed_in():
    model = _wide_model("llama", 384).to(torch.bfloat16)
    only_fp32 = CpuProbe("AVX2", ("avx2",), ("float32",))
    kernels = apply_cpu_kernels(model, cpu=only_fp32)
    assert kernels.compute == "float32" and kernels.cpu == "AVX2 CPU (avx2): oneDNN prepacks float32"


# ---------------------------------------------------------------- rows called directly


@pytest.mark.parametrize("groups", [1, 3])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_each_row_called_directly_equals_the_one_row_call_of_its_path(groups, dtype):
    """Row-wise attention makes each row's one-row call itself (no per-row Python of transformers'
    ``sdpa_attention_forward``), and every row of a block keeps the bits of that row's call made
    alone. Which call depends on the path, asserted here: bf16 rows on the CPU with SpecChat's
    kernels built run their ``attend`` (its own fixed fp32 order: within one bf16 step of ATen's
    fp32 SDPA, not equal to it on every CPU — an AMX Xeon differs in a few values); everything
    else is ATen's one-row SDPA, a bf16 block computed on fp32 inputs and rounded back."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    from app.engine.runners import native
    from app.engine.runners.cpu_kernels import native_attention, one_row_at_a_time

    module = nn.Module()
    module.num_key_value_groups, module.is_causal = groups, True
    gen = torch.Generator().manual_seed(groups)
    query = torch.randn(1, 3 * groups, 5, 64, generator=gen).to(dtype)
    key, value = (torch.randn(1, 3, 37, 64, generator=gen).to(dtype) for _ in range(2))
    k32, v32 = key.float(), value.float()
    kernel = native_attention(query, key, value, gqa=groups > 1)
    assert kernel == (dtype == torch.bfloat16 and native.kernels() is not None)  # the path this CPU takes
    for rows in (1, 2, 5):
        q = query[:, :, -rows:]
        got = one_row_at_a_time(module, q, key, value, scaling=0.125)
        stock = torch.cat([
            sdpa_attention_forward(module, q[:, :, i : i + 1].float(), k32[:, :, : 37 - rows + i + 1],
                                   v32[:, :, : 37 - rows + i + 1], None, scaling=0.125)[0].to(dtype)
            for i in range(rows)
        ], dim=1)  # fmt: skip
        alone = torch.cat([
            one_row_at_a_time(module, q[:, :, i : i + 1], key[:, :, : 37 - rows + i + 1],
                               value[:, :, : 37 - rows + i + 1], scaling=0.125)
            for i in range(rows)
        ], dim=1)  # fmt: skip
        assert got.dtype == dtype and torch.equal(got, alone)  # each row as if it were decoded alone
        if kernel:  # SpecChat's order: within one bf16 step (2^-8 relative) of ATen's fp32 call
            assert torch.allclose(got.float(), stock.float(), rtol=2**-7, atol=1e-6)
        else:
            assert torch.equal(got, stock)


@pytest.mark.parametrize("compute", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("in_features", [576, 2048])
def test_a_prepacked_linears_rows_do_not_depend_on_how_many_are_fed_together(compute, in_features):
    """Up to a long prompt's rows: each row equals the row fed alone (K = 576 is where oneDNN's bf16
    GEMM took another kernel above 32 rows on an AMX Xeon; the chunks of ``PACK_MAX_ROWS`` keep
    every row on the small-M kernel)."""
    from app.engine.runners.prepacked import PACK_MAX_ROWS

    if not probe().can_pack(compute):
        pytest.skip(f"this CPU cannot prepack {compute}")
    gen = torch.Generator().manual_seed(in_features)
    layer = PrepackedLinear(torch.randn(384, in_features, generator=gen).to(compute), None, compute)
    x = torch.randn(3 * PACK_MAX_ROWS + 5, in_features, generator=gen).to(compute)
    with torch.inference_mode():
        alone = torch.cat([layer(x[i : i + 1]) for i in range(len(x))])
        for m in (2, PACK_MAX_ROWS, PACK_MAX_ROWS + 1, 2 * PACK_MAX_ROWS + 1, len(x)):
            assert torch.equal(layer(x[:m]), alone[:m]), f"{m} rows"
