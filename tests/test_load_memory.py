"""What a load lets go of, and when (issue 18: peak memory after loading ≤ 2× the file): a weight
moved into huge pages frees its old copy as soon as it is moved, a tied one too, and the C
heap's freed pages are handed back on a byte budget. Counted, not timed: RSS itself varies."""

from __future__ import annotations

import weakref

import pytest
import torch
from tiny_models import build_tokenizer, tiny_config
from transformers import AutoModelForCausalLM

from app.engine.runners import heap
from app.engine.runners.huge_pages import back_with_huge_pages


def _tied_llama() -> AutoModelForCausalLM:
    torch.manual_seed(2)
    config = tiny_config("llama", len(build_tokenizer()), layers=2, hidden=128, eos_id=2, intermediate=512)
    config.tie_word_embeddings = True
    return AutoModelForCausalLM.from_config(config).eval()


def test_a_tied_weight_is_freed_as_soon_as_it_is_moved_not_when_the_head_is_met(monkeypatch):
    """The tied embedding / head is the largest tensor of a small model: while its old copy
    waited for the head (the last module), the move held the model's largest tensor twice."""
    model = _tied_llama()
    assert model.get_input_embeddings().weight is model.get_output_embeddings().weight
    old = weakref.ref(model.get_input_embeddings().weight)
    gone_at_trim: list[bool] = []
    monkeypatch.setattr(heap, "TRIM_BYTES", 1)  # a trim after every tensor moved
    monkeypatch.setattr(heap, "give_back", lambda: gone_at_trim.append(old() is None) or True)
    moved = back_with_huge_pages(model, mode="madvise")
    assert moved.tensors >= 2 and gone_at_trim[0]  # moved first (the embedding), freed at once
    assert model.get_input_embeddings().weight is model.get_output_embeddings().weight


def test_freed_tensors_are_handed_back_once_per_budget(monkeypatch):
    calls: list[int] = []
    monkeypatch.setattr(heap, "give_back", lambda: calls.append(1) or True)
    monkeypatch.setattr(heap, "_spent", type(heap._spent)())  # a fresh count
    for _ in range(10):
        heap.spent(heap.TRIM_BYTES // 4)
    assert len(calls) == 2  # after 4 and 8 quarters, not after each


@pytest.mark.skipif(not heap.give_back(), reason="no malloc_trim here (not glibc)")
def test_give_back_returns_a_freed_heap_block_to_the_system():
    def rss() -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096

    heap.give_back()
    blocks = [bytearray(1 << 16) for _ in range(512)]  # 32 MiB in blocks below the mmap threshold
    keep = bytearray(1 << 16)  # allocated last: pins the heap's top, so freeing cannot shrink it
    del blocks
    held = rss()
    heap.give_back()
    assert rss() < held - (16 << 20)
    del keep
