"""The KV cache grows in place: a pass writes only its own positions into buffers with room
(``GrowingLayer``) instead of concatenating the whole cache again, and every logit stays the
one transformers' ``DynamicCache`` gives, through verify blocks, rollbacks and growth."""

from __future__ import annotations

import pytest
import torch
from tiny_models import tiny_config
from transformers import AutoModelForCausalLM, DynamicCache
from transformers.cache_utils import DynamicSlidingWindowLayer

from app.engine.runners import kv
from app.engine.runners.cpu_kernels import apply_cpu_kernels
from app.engine.runners.growing import GrowingLayer
from app.engine.runners.kv import CachedModel

VOCAB = 384


def _model(arch: str = "llama", **config: object) -> AutoModelForCausalLM:
    torch.manual_seed(7)
    cfg = tiny_config(arch, VOCAB, layers=2, hidden=64, eos_id=2)
    for name, value in config.items():
        setattr(cfg, name, value)
    model = AutoModelForCausalLM.from_config(cfg).eval()
    apply_cpu_kernels(model)
    return model


def _steps(runner: CachedModel, ids: list[int]) -> torch.Tensor:
    """A prompt, then verify blocks of 5 with 3 rejected each time and a one-token step."""
    out = [runner.forward(ids[:20], keep=1)]
    position = 20
    while position + 5 < len(ids):
        out.append(runner.feed_at(position, ids[position : position + 5]))
        out.append(runner.feed_at(position + 2, ids[position + 2 : position + 3]))
        position += 3
    return torch.cat(out)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_growing_cache_gives_transformers_cache_logits_bit_for_bit(arch, monkeypatch):
    model = _model(arch)
    ids = torch.randint(0, VOCAB, (140,), generator=torch.Generator().manual_seed(1)).tolist()
    growing = CachedModel(model, VOCAB)
    ours = _steps(growing, ids)
    assert all(type(layer) is GrowingLayer for layer in growing._cache.layers)
    monkeypatch.setattr(kv, "_new_cache", lambda m: (DynamicCache(config=m.config), None))
    assert torch.equal(ours, _steps(CachedModel(model, VOCAB), ids))


def test_a_pass_writes_into_the_same_buffers_until_they_are_full():
    model = _model()
    runner = CachedModel(model, VOCAB)
    runner.forward(list(range(10, 40)), keep=1)
    layer = runner._cache.layers[0]
    buffer = layer._buffers[0]
    assert buffer.shape[-2] == 60  # twice the prompt
    for step in range(6):
        runner.feed_at(30 + step, [50 + step, 51, 52])  # rolls back two each time
    assert layer._buffers[0] is buffer and layer.keys.data_ptr() == buffer.data_ptr()
    assert layer.get_seq_length() == len(runner.tokens) == 38
    runner.reset()
    runner.forward(list(range(10, 14)), keep=1)
    assert runner._cache.layers[0].get_seq_length() == 4


def test_sliding_window_layers_keep_transformers_own_cache():
    model = _model("mistral", sliding_window=8)
    runner = CachedModel(model, VOCAB)
    runner.forward(list(range(10, 30)), keep=1)
    assert all(isinstance(layer, DynamicSlidingWindowLayer) for layer in runner._cache.layers)


def test_a_rollback_to_a_short_prefix_lets_the_long_buffers_go(monkeypatch):
    """A new conversation after a long one keeps no more than twice its own positions, and
    continues with the logits transformers' cache gives after the same rollback."""
    model = _model()
    runner = CachedModel(model, VOCAB)
    runner.forward(list(range(10, 200)), keep=1)
    layer = runner._cache.layers[0]
    runner.truncate(6)
    assert layer._buffers is None and layer.keys.untyped_storage().nbytes() == layer.keys.nbytes
    logits = runner.forward([7, 8, 9], keep=3)
    assert layer._buffers[0].shape[-2] == 18 and layer.get_seq_length() == 9
    monkeypatch.setattr(kv, "_new_cache", lambda m: (DynamicCache(config=m.config), None))
    stock = CachedModel(model, VOCAB)
    stock.forward(list(range(10, 200)), keep=1)
    stock.truncate(6)
    assert torch.equal(logits, stock.forward([7, 8, 9], keep=3))
