"""Weights moved into huge-page memory (runners/huge_pages.py) are the same weights: the same
logits bit for bit, tied tensors still one tensor, the memory asked for huge pages and aligned to
one, nothing moved where the system has none; the freed heap handed back as the copy goes."""

from __future__ import annotations

import platform
import sys

import pytest
import torch
from tiny_models import build_tokenizer, tiny_config
from transformers import AutoModelForCausalLM

from app.engine.models import loading
from app.engine.models.loading import load_model
from app.engine.runners import arenas, heap, huge_pages
from app.engine.runners.arenas import thp_mode, why_not_huge
from app.engine.runners.huge_pages import back_with_huge_pages
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


def _smaps(address: int, field: str) -> list[str]:
    """The values of ``field`` (/proc/self/smaps: "VmFlags", "Rss", ...) of the mapping holding ``address``."""
    holding = False
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split(" ", 1)[0]
            if "-" in head and not head.endswith(":"):
                start, end = (int(part, 16) for part in head.split("-"))
                holding = start <= address < end
            elif holding and line.startswith(f"{field}:"):
                return line.split()[1:]
    raise AssertionError(f"no mapping holds {address:#x}")


def _vm_flags(address: int) -> list[str]:
    """The kernel's flags (smaps' "VmFlags") of the mapping holding ``address``."""
    return _smaps(address, "VmFlags")


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
def test_the_arena_is_advised_huge_pages_and_starts_on_one():
    """The arena is madvise(MADV_HUGEPAGE)d (smaps' "hg": the kernel may fault it in 2 MiB
    pages) and its first tensor starts on a 2 MiB boundary, so whole pages hold the weights."""
    model = _tied_llama()
    moved = back_with_huge_pages(model)
    arena = model.specchat_huge_pages
    start = min(t.data_ptr() for t in model.parameters() if _in(arena, t))
    assert start % huge_pages.HUGE_PAGE == 0
    assert "hg" in _vm_flags(start) and "hg" in _vm_flags(start + moved.moved_bytes - 1)


@pytest.mark.skipif(why_not_huge() is not None, reason=str(why_not_huge()))
def test_a_loaded_int4_model_runs_from_huge_pages(tiny_models, monkeypatch):
    loaded = load_model(str(tiny_models["llama"]), device="cpu", weights="int4")
    arena = getattr(loaded.model, "specchat_huge_pages", None)
    assert arena is not None
    tensors = [*loaded.model.parameters(), *loaded.model.buffers()]
    large = [t for t in tensors if t.numel() * t.element_size() >= huge_pages.MIN_TENSOR_BYTES]
    assert any(t is loaded.model.model.layers[0].mlp.down_proj.packed for t in large)
    assert large and all(_in(arena, t) for t in large)
    monkeypatch.setattr(loading, "back_with_huge_pages", lambda model: huge_pages.HugePages(0, 0, "off"))
    stays = load_model(str(tiny_models["llama"]), device="cpu", weights="int4")
    assert getattr(stays.model, "specchat_huge_pages", None) is None
    ids = torch.randint(3, stays.model.config.vocab_size, (14,), generator=torch.Generator().manual_seed(3)).tolist()
    assert torch.equal(_logits(loaded.model, ids), _logits(stays.model, ids))  # it runs, and computes the same


@pytest.mark.parametrize("mode", ["never", ""])
def test_without_transparent_huge_pages_nothing_moves_and_says_why(mode):
    model = _tied_llama()
    weight = model.model.layers[0].mlp.up_proj.weight
    moved = back_with_huge_pages(model, mode=mode)
    assert moved == huge_pages.HugePages(0, 0, f"transparent huge pages are {mode or 'not available'} on this system")
    assert model.model.layers[0].mlp.up_proj.weight is weight
    assert getattr(model, "specchat_huge_pages", None) is None


def test_the_mode_is_read_from_the_bracketed_choice(tmp_path, monkeypatch):
    setting = tmp_path / "enabled"
    setting.write_text("always [madvise] never\n")
    assert thp_mode(str(setting)) == "madvise"
    assert thp_mode(str(tmp_path / "missing")) == ""
    monkeypatch.setattr(arenas.sys, "platform", "darwin")
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


def test_the_heap_is_trimmed_each_time_the_bytes_spent_reach_the_threshold(monkeypatch):
    trims: list[int] = []
    monkeypatch.setattr(heap, "give_back", lambda: trims.append(1) or True)
    monkeypatch.setattr(heap, "TRIM_BYTES", 100)
    monkeypatch.setattr(heap._spent, "bytes", 0, raising=False)
    counts = []
    for nbytes in (60, 39, 1, 99, 250, 0):
        heap.spent(nbytes)
        counts.append(len(trims))
    assert counts == [0, 0, 1, 1, 2, 2]  # 60 + 39 < 100; + 1 = 100 trims; 99 < 100; 99 + 250 trims once


def test_giving_back_the_heap_asks_glibc_where_there_is_one():
    """``give_back`` says whether it could ask: glibc's malloc_trim on Linux, nothing elsewhere."""
    has_trim = heap._malloc_trim() is not None
    assert heap.give_back() is has_trim
    if sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc":
        assert has_trim


def _rss_kib(address: int) -> int:
    """The resident KiB (smaps' "Rss") of the mapping holding ``address``."""
    return int(_smaps(address, "Rss")[0])


def _address(arena_map) -> int:
    return torch.frombuffer(arena_map, dtype=torch.uint8).data_ptr()


@pytest.mark.skipif(why_not_huge() is not None, reason=str(why_not_huge()))
def test_a_load_moves_into_the_arena_faulted_in_from_the_size_it_moved_last_time(tiny_models, monkeypatch):
    """The first load says the size it moved; the next launch's ``prefault`` of that size faults
    an arena in (resident before the load touches it) and the load's move takes it."""
    ahead = arenas.Arenas()
    monkeypatch.setattr(huge_pages, "ARENAS", ahead)
    assert not ahead.prefault(None)  # nothing kept yet
    ahead.begin()
    first = load_model(str(tiny_models["llama"]), device="cpu", weights="int4")
    said = ahead.finish()
    moved = len(first.model.specchat_huge_pages)
    assert said == [moved]

    assert ahead.prefault(said)
    ahead._faulting.join(10)
    (faulted,) = ahead._ready
    assert len(faulted) == moved and _rss_kib(_address(faulted)) * 1024 >= moved  # every page touched
    ahead.begin()
    second = load_model(str(tiny_models["llama"]), device="cpu", weights="int4")
    ahead.finish()
    assert second.model.specchat_huge_pages is faulted and not faulted.closed
    ids = torch.randint(3, second.model.config.vocab_size, (14,), generator=torch.Generator().manual_seed(4)).tolist()
    assert torch.equal(_logits(first.model, ids), _logits(second.model, ids))


@pytest.mark.skipif(why_not_huge() is not None, reason=str(why_not_huge()))
def test_only_an_arena_that_fits_is_taken_and_the_rest_are_unmapped_when_the_load_ends():
    ahead = arenas.Arenas()
    assert ahead.prefault([4 << 20, 16 << 20])
    assert not ahead.prefault([4 << 20, 16 << 20])  # one load's arenas at a time
    ahead.begin()
    assert ahead.take(8 << 20) is None  # 4 MiB too small, 16 MiB too large for 8
    small = ahead.take(4 << 20)
    assert small is not None and len(small) == 4 << 20
    (large,) = ahead._ready
    said = ahead.finish()
    assert large.closed and not small.closed
    assert said == [8 << 20, 4 << 20]  # what this load asked


def test_nothing_is_faulted_in_ahead_past_the_limit_or_without_huge_pages_or_from_what_is_not_sizes(monkeypatch):
    ahead = arenas.Arenas()
    assert not ahead.prefault([arenas.MAX_PREFAULT_BYTES + 1])
    for not_sizes in ("not json", {"k": [4 << 20]}, [4 << 20, "x"], [0], []):
        assert not ahead.prefault(not_sizes)
    monkeypatch.setattr(arenas, "why_not_huge", lambda mode=None: "no")
    assert not ahead.prefault([4 << 20])
