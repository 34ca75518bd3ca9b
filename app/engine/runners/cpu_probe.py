"""What this CPU's oneDNN can prepack, asked once per process.

Not every x86 CPU runs every kernel: oneDNN reorders a **bf16** linear weight only on a CPU
with avx512bw + avx512vl + avx512dq or avx_ne_convert; on an AVX2-only CPU
``torch.ops.mkldnn._reorder_linear_weight`` raises ``RuntimeError: … bf16 path needs the cpu
support …``. fp32 prepacking works on both. Rather than guess from the flags, ``probe()`` tries
each dtype on a tiny weight and keeps the answer (the flags and torch's capability only describe
the CPU in notes).

The answer can be narrowed, never widened, so the fallbacks can be tested on any CPU:

- the environment variable ``SPECCHAT_CPU_PROBE``: ``native`` (what the CPU does), ``avx2`` (no
  bf16 prepacking: as on an AVX2-only CPU) or ``none`` (no oneDNN prepacking at all);
- ``force_probe(answer)`` from Python (tests), which wins over the variable until reset with None.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

import torch

from app.engine.errors import InvalidSettingError

PROBE_ENV = "SPECCHAT_CPU_PROBE"
NATIVE, AVX2, NONE = "native", "avx2", "none"
PROBE_ANSWERS = (NATIVE, AVX2, NONE)
# the dtypes each answer lets oneDNN prepack (intersected with what the CPU really does)
_ALLOWED = {NATIVE: ("float32", "bfloat16"), AVX2: ("float32",), NONE: ()}
_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
# /proc/cpuinfo flags worth naming: what oneDNN's bf16 path needs, and what speeds it up
NOTED_FLAGS = ("avx2", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_bf16", "avx_ne_convert", "amx_bf16")

_forced: str | None = None  # force_probe(); None: the environment decides


@dataclass(frozen=True)
class CpuProbe:
    """What this process may prepack, and the CPU it found."""

    capability: str  # torch.backends.cpu.get_cpu_capability(): "AVX512", "AVX2", "DEFAULT", ...
    flags: tuple[str, ...]  # the NOTED_FLAGS present in /proc/cpuinfo (empty where it cannot be read)
    packs: tuple[str, ...]  # dtypes oneDNN prepacks here: "float32", "bfloat16"
    forced: str | None = None  # the narrowing answer in force ("avx2", "none"), None when native

    def can_pack(self, dtype: torch.dtype | str) -> bool:
        name = dtype if isinstance(dtype, str) else str(dtype).removeprefix("torch.")
        return name in self.packs

    @property
    def bf16_packed(self) -> bool:
        return "bfloat16" in self.packs

    def describe(self) -> str:
        """ "AVX512 CPU (avx2, avx512bw, …, amx_bf16): oneDNN prepacks float32 and bfloat16"."""
        flags = f" ({', '.join(self.flags)})" if self.flags else ""
        packs = " and ".join(self.packs) if self.packs else "nothing"
        forced = f", narrowed by {PROBE_ENV}={self.forced}" if self.forced else ""
        return f"{self.capability} CPU{flags}: oneDNN prepacks {packs}{forced}"


def cpuinfo_flags(text: str | None = None) -> tuple[str, ...]:
    """The ``NOTED_FLAGS`` that ``/proc/cpuinfo`` (or ``text``) lists, in NOTED_FLAGS order."""
    if text is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            return ()
    present: set[str] = set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            present.update(value.split())
    return tuple(f for f in NOTED_FLAGS if f in present)


def _tries_prepack(dtype: torch.dtype) -> bool:
    """Whether oneDNN reorders and runs a tiny linear of ``dtype`` here."""
    if not torch.backends.mkldnn.is_available():
        return False
    weight = torch.linspace(-1, 1, 16 * 32).reshape(16, 32).to(dtype)
    x = torch.ones(2, 32, dtype=dtype)
    try:
        with torch.inference_mode():
            packed = torch.ops.mkldnn._reorder_linear_weight(weight, None)
            out = torch.ops.mkldnn._linear_pointwise(x, packed, None, "none", [], "")
    except (RuntimeError, NotImplementedError):
        return False
    return bool(out.shape == (2, 16) and torch.isfinite(out).all())


@functools.cache
def _measured() -> CpuProbe:
    """The CPU's own answer: tried once per process."""
    packs = tuple(name for name, dtype in _DTYPES.items() if _tries_prepack(dtype))
    return CpuProbe(torch.backends.cpu.get_cpu_capability(), cpuinfo_flags(), packs)


def _answer() -> str:
    asked = _forced if _forced is not None else os.environ.get(PROBE_ENV, "")
    answer = asked.strip().lower() or NATIVE
    if answer not in PROBE_ANSWERS:
        raise InvalidSettingError(
            f"{PROBE_ENV}={asked!r} is not a CPU probe answer; use {', '.join(PROBE_ANSWERS)} or leave it unset."
        )
    return answer


def probe() -> CpuProbe:
    """This CPU's answer, narrowed by ``force_probe`` or ``SPECCHAT_CPU_PROBE``."""
    measured, answer = _measured(), _answer()
    if answer == NATIVE:
        return measured
    packs = tuple(p for p in measured.packs if p in _ALLOWED[answer])
    return CpuProbe(measured.capability, measured.flags, packs, forced=answer)


def force_probe(answer: str | None) -> None:
    """Narrow the probe's answer for this process (``"avx2"``, ``"none"``, ``"native"``), or
    give the decision back to ``SPECCHAT_CPU_PROBE`` with None."""
    global _forced
    if answer is not None and answer not in PROBE_ANSWERS:
        raise InvalidSettingError(f"{answer!r} is not a CPU probe answer; use {', '.join(PROBE_ANSWERS)}.")
    _forced = answer
