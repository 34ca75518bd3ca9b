"""Huge-page arenas faulted in while the app starts, for the weights a load will move into them.

A load moves a CPU model's weights into memory backed by 2 MiB pages (``huge_pages``). The move
itself is a copy; what costs is the first touch of each fresh 2 MiB page. On a virtual machine
whose host backs guest memory lazily that was ~12 ms a page: 0.6–1.3 s of the bundled model's
110 MB, a fifth of its warm launch, while the engine thread waits. The pages can be faulted in
long before they are filled, by another thread, while the engine thread imports torch and
transformers (seconds, one core): ``prefault`` does that, for the sizes the same load moved last
time (``finish`` says them; the window keeps them in the measured store), and ``take`` hands a
faulted arena to the move.

This module imports neither torch nor numpy: the window calls ``prefault`` as it asks for a
load. The faulting thread writes zeros with ``ctypes.memset``, which runs without the GIL, so
the imports on the engine thread are not held up; the memory is the arena the move would have
faulted in anyway, held a little earlier (a load larger than ``MAX_PREFAULT_BYTES`` or a
quarter of the memory free is not faulted ahead).
"""

from __future__ import annotations

import ctypes
import logging
import mmap
import os
import sys
import threading
import time
from collections.abc import Sequence

HUGE_PAGE = 2 << 20
THP_SETTING = "/sys/kernel/mm/transparent_hugepage/enabled"
MAX_PREFAULT_BYTES = 2 << 30
FIT_SLACK = 1.125  # an arena up to this much larger than asked is taken (a model's size moves little)
WAIT_S = 30.0  # the longest a move waits for arenas still being faulted in
log = logging.getLogger(__name__)


def thp_mode(path: str = THP_SETTING) -> str:
    """The system's transparent huge page mode ("always", "madvise", "never"; "" when unknown)."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return ""
    start, end = text.find("["), text.find("]")
    return text[start + 1 : end] if 0 <= start < end else ""


def why_not_huge(mode: str | None = None) -> str | None:
    """Why weights cannot be given huge pages here (None: they can)."""
    if not sys.platform.startswith("linux") or not hasattr(mmap, "MADV_HUGEPAGE"):
        return "this system offers no transparent huge pages"
    mode = thp_mode() if mode is None else mode
    if mode not in ("always", "madvise"):
        return f"transparent huge pages are {mode or 'not available'} on this system"
    return None


def new_arena(size: int, fault: bool = False) -> mmap.mmap:
    """An anonymous private mapping of ``size`` bytes asking for huge pages (before any page is
    touched: faults then take 2 MiB pages); ``fault``: every page touched now, without the GIL."""
    arena = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    arena.madvise(mmap.MADV_HUGEPAGE)
    if fault:
        view = (ctypes.c_char * size).from_buffer(arena)
        try:
            ctypes.memset(ctypes.addressof(view), 0, size)  # a foreign call: the GIL is released
        finally:
            del view  # the export, so the map can be closed
    return arena


class Arenas:
    """Arenas faulted in ahead of one load, and what that load moved (for the next launch)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # an arena faulted in, or the faulting ended
        self._ready: list[mmap.mmap] = []
        self._faulting: threading.Thread | None = None
        self._done = True  # no arena is being faulted in
        self._moved: list[int] | None = None  # the sizes the load under way asked for (None: none recorded)

    def prefault(self, sizes: object) -> bool:
        """Start faulting in arenas of ``sizes`` bytes (what ``finish`` said a load moved; anything
        but a list of positive sizes is ignored): True when started."""
        if not isinstance(sizes, list) or not all(isinstance(s, int) and s > 0 for s in sizes):
            return False
        if not sizes or why_not_huge() is not None or sum(sizes) > _prefault_limit():
            return False
        with self._lock:
            if self._faulting is not None or self._ready:
                return False  # one load's arenas at a time
            self._done = False
            self._faulting = threading.Thread(target=self._fault, args=(sizes,), name="specchat-arenas", daemon=True)
            self._faulting.start()
        return True

    def _fault(self, sizes: Sequence[int]) -> None:
        try:
            for size in sizes:
                try:
                    arena = new_arena(size, fault=True)
                except (OSError, ValueError):
                    log.debug("could not fault in a %d-byte arena", size, exc_info=True)
                    return
                with self._changed:
                    self._ready.append(arena)
                    self._changed.notify_all()
        finally:
            with self._changed:
                self._done = True
                self._changed.notify_all()

    def begin(self) -> None:
        """A load starts: the sizes it moves are recorded (``finish`` says them)."""
        with self._lock:
            self._moved = []

    def take(self, size: int) -> mmap.mmap | None:
        """An arena of at least ``size`` bytes faulted in ahead (waiting, while arenas are still
        being faulted in, for one that fits: a target's move does not wait for its draft's), or
        None; the size is recorded for the load under way either way."""
        deadline = time.monotonic() + WAIT_S
        with self._changed:
            if self._moved is not None:
                self._moved.append(size)
            while True:
                for arena in self._ready:
                    if size <= len(arena) <= size * FIT_SLACK + HUGE_PAGE:
                        self._ready.remove(arena)
                        return arena
                left = deadline - time.monotonic()
                if self._done or left <= 0:
                    return None
                self._changed.wait(left)

    def finish(self) -> list[int]:
        """The load ended: the sizes it moved (for the next launch's ``prefault``); the arenas it
        did not take are unmapped."""
        faulting = self._faulting
        if faulting is not None:
            faulting.join(WAIT_S)
        with self._lock:
            moved, self._moved = self._moved or [], None
            for arena in self._ready:
                arena.close()
            self._ready, self._faulting = [], None
        return moved


def _prefault_limit() -> int:
    """The most bytes faulted in ahead: ``MAX_PREFAULT_BYTES`` or a quarter of the free memory."""
    try:
        free = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return 0
    return min(MAX_PREFAULT_BYTES, free // 4)


ARENAS = Arenas()  # the process's: the window's loads prefault, ``huge_pages`` takes
