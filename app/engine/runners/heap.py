"""Handing freed memory back to the system while a model is built.

glibc's malloc raises its mmap threshold each time a large block it mapped is freed (up to 32 MiB):
after the first big temporary of a load (a shard's bytes, a tensor being converted), every later
temporary below that size is carved from the heap, and the holes they leave between the weights
that stay are kept by the process. Measured on the bundled model, the RSS after building its forms
then varied from +120 to +370 MiB between identical runs. ``give_back()`` (``malloc_trim``)
returns those free pages; it is called between a load's large steps (``spent``: after every
``TRIM_BYTES`` of tensors made). Elsewhere it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import sys
import threading
from collections.abc import Callable

TRIM_BYTES = 8 << 20  # of tensors made between two trims (each trim walks the heap: ~0.25 ms)
_spent = threading.local()


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim: Callable[[int], int] = libc.malloc_trim
    except (OSError, AttributeError):  # not glibc (musl has no malloc_trim)
        return None
    return trim


def give_back() -> bool:
    """Return the C heap's free pages to the system; whether anything could be asked."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def spent(nbytes: int) -> None:
    """Count ``nbytes`` of tensors just made or let go; every ``TRIM_BYTES``, ``give_back()``."""
    total = getattr(_spent, "bytes", 0) + nbytes
    if total >= TRIM_BYTES:
        give_back()
        total = 0
    _spent.bytes = total
