"""Weights moved into huge-page memory (runners/huge_pages.py) are the same weights: the same
logits bit for bit, tied tensors still one tensor, nothing moved where the system has none."""

from __future__ import annotations

import pytest
import torch
from tiny_models import build_tokenizer, tiny_config
from transformers import AutoModelForCausalLM

from app.engine.models.loading import load_model
from app.engine.runners import heap, huge_pages
from app.engine.runners.huge_pages import back_with_huge_pages, thp_mode, why_not_huge
from app.engine.runners.kv import CachedModel


def _tied_llama() -> AutoModelForCausalLM:
    torch.manual_seed(2)
    config = tiny_config("llama", len(build_tokenizer()), layers=2, hidden=128, eos_id=2, intermediate=512)
    config.tie_word_embeddings = True
    return AutoModelForCausalLM.from_config(config).eval()


def _logits(model, ids: list[int]) -> torch.Tensor:
    runner = CachedModel(model, model.config.vocab_size, lean=False)
    return torch.cat([runner.forward(ids[:10], keep=10), runner.forward(ids[10:], keep=0)])


def _in(arena_map, tensor: torch.Tensor) -> bool:
    start = torch.frombuffer(arena_map, dtype=torch.uint8).data_ptr()
    return start <= tensor.data_ptr() < start + len(arena_map)


@pytest.mark.skipif(why_not_huge() is not None, reason=str(why_not_huge()))
def test_moved_weights_give_the_same_logits_and_stay_tied():
    model = _tied_llama()
    ids = torch.randint(3, model.config.vocab_size, (14,), generator=torch.Generator().manual_seed(1)).tolist()
    before = _logits(model, ids)
    grads = {name: p.requires_grad for name, p in model.named_parameters()}
    moved = back_with_huge_pages(model)
    assert moved.note == "" and moved.tensors > 0 and moved.moved_bytes > 0
    arena = model.specchat_huge_pages
    assert model.lm_head.weight is model.model.embed_tokens.weight  # tied: one Parameter still
    assert _in(arena, model.lm_head.weight) and _in(arena, model.model.layers[0].mlp.up_proj.weight)
    assert {name: p.requires_grad for name, p in model.named_parameters()} == grads
    assert torch.equal(before, _logits(model, ids))


@pytest.mark.skipif(why_not_huge() is not None, reason=str(why_not_huge()))
def test_a_loaded_int4_model_runs_from_huge_pages(tiny_models):
    loaded = load_model(str(tiny_models["llama"]), device="cpu", weights="int4")
    arena = getattr(loaded.model, "specchat_huge_pages", None)
    assert arena is not None
    tensors = [*loaded.model.parameters(), *loaded.model.buffers()]
    large = [t for t in tensors if t.numel() * t.element_size() >= huge_pages.MIN_TENSOR_BYTES]
    assert any(t is loaded.model.model.layers[0].mlp.down_proj.packed for t in large)
    assert large and all(_in(arena, t) for t in large)


@pytest.mark.parametrize("mode", ["never", ""])
def test_without_transparent_huge_pages_nothing_moves_and_says_why(mode):
    model = _tied_llama()
    weight = model.model.layers[0].mlp.up_proj.weight
    moved = back_with_huge_pages(model, mode=mode)
    assert moved.moved_bytes == 0 and "huge pages are" in moved.note
    assert model.model.layers[0].mlp.up_proj.weight is weight


def test_the_mode_is_read_from_the_bracketed_choice(tmp_path, monkeypatch):
    setting = tmp_path / "enabled"
    setting.write_text("always [madvise] never\n")
    assert thp_mode(str(setting)) == "madvise"
    assert thp_mode(str(tmp_path / "missing")) == ""
    monkeypatch.setattr(huge_pages.sys, "platform", "darwin")
    assert why_not_huge("always") == "this system offers no transparent huge pages"


@pytest.mark.skipif(why_not_huge() is not None, reason=str(why_not_huge()))
def test_the_freed_heap_is_handed_back_as_the_copy_goes(monkeypatch):
    """glibc keeps freed heap: without trimming, RSS after the copy was ~2x the weights (the old
    tensors' memory kept beside the arena)."""
    trims: list[int] = []
    monkeypatch.setattr(heap, "give_back", lambda: trims.append(1) or True)
    monkeypatch.setattr(heap, "TRIM_BYTES", 64 << 10)
    model = _tied_llama()
    moved = back_with_huge_pages(model)
    assert len(trims) >= moved.tensors // 2 >= 2  # every few tensors, not once at the end


def test_trimming_the_heap_is_safe_to_call():
    heap.give_back()  # glibc's malloc_trim, or nothing where there is none
