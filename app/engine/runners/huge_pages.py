"""A CPU model's weights in memory backed by 2 MiB pages, where the kernel offers them.

Every token reads every weight once. With 4 KiB pages the bundled model's 95 MB of weights
span ~23,000 pages, and the TLB misses show: its int8 LM head (49,152 × 576) took 4.3 ms per
pass read cold with 4 KiB pages and 3.4 ms with 2 MiB pages; the whole one-token pass of the
int4 model went from 18.2 to 16.4 ms (``tools/pass_profile.py``-style interleaved timing, 1
thread). llama.cpp gets the same effect from mapping its file.

Linux backs anonymous memory with huge pages when asked (``madvise(MADV_HUGEPAGE)``) if
transparent huge pages are ``always`` or ``madvise`` (the usual default). ``back_with_huge_pages``
copies each weight tensor (buffers and parameters, not oneDNN's opaque packed weights) into
one such arena, tensor by tensor so the old copy is freed as the new one is filled (and the
freed heap handed back to the system every 8 MiB: glibc keeps it otherwise), and keeps
tensors that share storage shared (a tied embedding and LM head stay one tensor). The bits are
the same, so nothing about exactness changes. Where the system has no huge pages (macOS,
Windows, THP ``never``) nothing is moved and the reason is returned.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import torch
from torch import nn

from app.engine.runners import heap
from app.engine.runners.arenas import ARENAS, HUGE_PAGE, new_arena, why_not_huge

ALIGN = 64  # every tensor starts on a cache line
MIN_TENSOR_BYTES = 4096  # smaller tensors (norm weights, biases) stay where they are


@dataclass(frozen=True)
class HugePages:
    """What ``back_with_huge_pages`` did."""

    moved_bytes: int  # weight bytes now in the arena
    tensors: int  # distinct tensors moved
    note: str = ""  # why nothing was moved ("" when it was)


def _weights(model: nn.Module) -> Iterator[tuple[nn.Module, str, bool]]:
    """(module, name, is a parameter) of each plain CPU tensor worth moving. Names, not
    tensors: a tensor this does not hold is freed as soon as the module lets it go."""
    for module in model.modules():
        for table, is_param in ((module._parameters, True), (module._buffers, False)):
            for name in list(table):
                tensor = table[name]
                if tensor is None or tensor.device.type != "cpu" or tensor.is_mkldnn or tensor.is_sparse:
                    continue
                if tensor.numel() * tensor.element_size() < MIN_TENSOR_BYTES or not tensor.is_contiguous():
                    continue
                yield module, name, is_param


Key = tuple[int, int, torch.dtype, tuple[int, ...]]


def _key(tensor: torch.Tensor) -> Key:
    """Tensors with one key are one tensor (a tied embedding and head)."""
    return tensor.untyped_storage().data_ptr(), int(tensor.storage_offset()), tensor.dtype, tuple(tensor.shape)


def _table(module: nn.Module, is_param: bool) -> dict[str, torch.Tensor | None]:
    table: dict[str, torch.Tensor | None] = module._parameters if is_param else module._buffers  # type: ignore[assignment]
    return table


def _padded(nbytes: int) -> int:
    return -(-nbytes // ALIGN) * ALIGN


Places = list[tuple[nn.Module, str, bool]]


def _holders(model: nn.Module) -> tuple[dict[Key, Places], dict[Key, int]]:
    """Every place each weight tensor is held, and its padded size. Keys, not tensors: holding
    one here would keep its old copy alive through the whole move."""
    holders: dict[Key, Places] = {}
    sizes: dict[Key, int] = {}
    for module, name, is_param in _weights(model):
        tensor = _table(module, is_param)[name]
        assert tensor is not None
        key = _key(tensor)
        holders.setdefault(key, []).append((module, name, is_param))
        sizes.setdefault(key, _padded(tensor.numel() * tensor.element_size()))
    return holders, sizes


def back_with_huge_pages(model: nn.Module, mode: str | None = None) -> HugePages:
    """Move ``model``'s weight tensors into memory backed by huge pages (see the module doc).
    ``mode``: the THP mode to assume (None: read it from the system)."""
    if why := why_not_huge(mode):
        return HugePages(0, 0, why)
    holders, sizes = _holders(model)
    total = sum(sizes.values())
    if not total:
        return HugePages(0, 0, "no weight tensor to move")
    size = -(-total // HUGE_PAGE) * HUGE_PAGE + HUGE_PAGE  # room to start on a page boundary
    arena_map = ARENAS.take(size) or new_arena(size)  # faulted in ahead where the window asked (arenas.py)
    arena = torch.frombuffer(arena_map, dtype=torch.uint8)  # the tensor holds the map alive
    offset = (-arena.data_ptr()) % HUGE_PAGE
    with torch.no_grad():
        for places in holders.values():  # a shared tensor moved at once in all its places: its
            first, name, is_param = places[0]  # old copy is freed then, not when the last one is met
            old = _table(first, is_param)[name]
            assert old is not None
            nbytes = old.numel() * old.element_size()
            new = arena[offset : offset + nbytes].view(old.dtype).view(old.shape)
            new.copy_(old)
            offset += _padded(nbytes)
            param = nn.Parameter(new, requires_grad=old.requires_grad) if any(p for _, _, p in places) else None
            for module, name, is_param in places:
                _table(module, is_param)[name] = param if is_param else new  # one Parameter per shared weight
            del old  # the model's references were the last ones: its memory is freed now
            heap.spent(nbytes)  # and handed back as the copy goes (glibc keeps it): the peak stays ~1×
    heap.give_back()
    setattr(model, "specchat_huge_pages", arena_map)  # noqa: B010 - kept with the model it backs
    return HugePages(total, len(holders))
