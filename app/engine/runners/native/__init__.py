"""SpecChat's own CPU kernels (``q8mm.c``): weight-only int4 / int8 linears computed with **int8
activations**, as llama.cpp computes its Q4 / Q8 files.

torch 2.13's weight-only kernels dequantize every weight to fp32 and multiply it by a bf16
activation: on a CPU without AMX they are compute-bound (SmolLM2's 49,152 × 576 int8 head takes
~5 ms a token, ~12 GB/s of the ~50 a core reads here). These kernels quantize each row of the
activations to int8 in blocks of 32, take each block's dot product as an exact int32 sum
(AVX-512 VNNI, or AVX2), and combine the blocks in float in one fixed order. That order is the
same whatever the number of rows, the column or the thread an output falls to, so the layers stay
batch invariant by construction (what exact block verification needs), and the VNNI and AVX2
paths give the same bits.

The module is compiled once with the system C compiler (``python -m app.engine.runners.native``;
``scripts/bootstrap.sh`` does it; an installed copy on first use) into ``build/`` beside the
source, or the user's cache where that folder is read-only; where it cannot be (no source, no
compiler, not x86-64, no AVX2) or is switched off (``SPECCHAT_KERNELS=torch``), the layers run
torch's kernels and ``why_not()`` says why. Everything calls them through ``calls`` (one typed
wrapper per kernel, tensors in, checked before a pointer is taken); their threads come from one
pool that lives with the process (``q8mm.c``, "the threads").
"""

from __future__ import annotations

import functools
import hashlib
import importlib.machinery
import importlib.util
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path
from typing import Any

KERNELS_ENV = "SPECCHAT_KERNELS"  # "torch": torch's own kernels, bf16 activations
SOURCE = Path(__file__).with_name("q8mm.c")
MODULE = "_q8mm"
FLAGS = ("-O3", "-ffp-contract=off", "-fPIC", "-shared", "-pthread")
BUILD_SECONDS = 120


def _built_path(root: Path | None = None) -> Path:
    """Where this source, for this Python, is built: a new source builds a new file.
    RuntimeError when the source is not there (a copy installed without it)."""
    if not SOURCE.is_file():
        raise RuntimeError(f"their source {SOURCE.name} is not in {SOURCE.parent}")
    digest = hashlib.sha256(SOURCE.read_bytes() + " ".join(FLAGS).encode()).hexdigest()[:12]
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    return (root or SOURCE.parent / "build") / f"{MODULE}-{digest}" / f"{MODULE}{suffix}"


def compiler() -> str | None:
    """The C compiler to build with: $CC, Python's own, or cc / gcc / clang on PATH."""
    names = [os.environ.get("CC", ""), (sysconfig.get_config_var("CC") or "").split(" ")[0], "cc", "gcc", "clang"]
    return next((found for name in names if name and (found := shutil.which(name))), None)


def _build_target() -> Path:
    """Where this process finds or builds the module: beside the source, or in the user's cache
    when the package's folder is read-only (an installed copy) and holds no build of it."""
    beside = _built_path()
    if beside.exists() or os.access(SOURCE.parent, os.W_OK):
        return beside
    return _built_path(_user_build_root())


def build(target: Path | None = None, defines: Sequence[str] = ()) -> Path:
    """Compile ``q8mm.c`` (once per source): the built module's path; RuntimeError with the
    compiler's message when it fails or the source is missing. ``defines`` (``NAME`` or
    ``NAME=VALUE``, each a ``-D``) are for a measurement or a test's mutant, built to a ``target``
    of its own."""
    target = target or _build_target()
    if target.exists():
        return target
    cc = compiler()
    if cc is None:
        raise RuntimeError("no C compiler found (set CC)")
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").exists():
        raise RuntimeError(f"Python's headers are missing ({include}/Python.h)")
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + f".{os.getpid()}.tmp")
    command = [cc, *FLAGS, *(f"-D{name}" for name in defines), f"-I{include}", str(SOURCE), "-o", str(partial)]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RuntimeError(f"{cc} failed: {e}") from e
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"{cc} failed: {(done.stderr or done.stdout).strip().splitlines()[-1:]}")
    partial.replace(target)  # atomic: a concurrent build or load sees all of it or nothing
    return target


def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location(MODULE, path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@functools.cache
def _loaded() -> tuple[Any, str]:
    """(the module, "") or (None, why not): asked once per process."""
    if os.environ.get(KERNELS_ENV, "").strip().lower() == "torch":
        return None, f"{KERNELS_ENV}=torch"
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return None, f"they are written for x86-64 (this is {platform.machine()})"
    try:
        module = _load(build())
    except (OSError, RuntimeError, ImportError) as e:
        return None, f"they could not be built: {e}"
    avx2 = module.cpu()[0]
    if not avx2:
        return None, "this CPU has no AVX2 and FMA"
    return module, ""


def _user_build_root() -> Path:
    """Where an installed copy whose own folder is read-only builds: the user's cache (not the
    model cache, which tests and ``SPECCHAT_CACHE_DIR`` move around)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "specchat" / "native"


def kernels() -> Any:
    """The compiled module, or None (``why_not()`` says why)."""
    return _loaded()[0]


def why_not() -> str:
    """Why these kernels are not used here ("" when they are)."""
    return _loaded()[1]


def build_id() -> str:
    """Which build of the kernels runs ("torch" when none does): a new source is a new id, so
    timings kept for one build are not taken for another's."""
    if kernels() is None:
        return "torch"
    try:
        return _built_path().parent.name
    except RuntimeError:  # a bundle that ships the built module alone
        return "built"


def vnni() -> bool:
    """Whether the AVX-512 VNNI path runs: the CPU has it and the CPU probe is not narrowed to
    AVX2 (``SPECCHAT_CPU_PROBE``; the two paths give the same bits, so this is speed only)."""
    module = kernels()
    if module is None:
        return False
    from app.engine.runners.cpu_probe import AVX2, NONE, PROBE_ENV

    narrowed = os.environ.get(PROBE_ENV, "").strip().lower() in (AVX2, NONE)
    return bool(module.cpu()[1]) and not narrowed


def amx() -> bool:
    """Whether Q4_K calls of ``AMX_ROWS`` rows or more (a prompt, a draft model's catch-up) run on
    the AMX tile unit: the VNNI path runs and the CPU has AMX-INT8 that Linux lets this process
    use (the same bits as the other paths)."""
    module = kernels()
    return module is not None and vnni() and bool(module.cpu()[2])


def path() -> int:
    """The kernels' path, as the linear calls take it: 0 AVX2, 1 AVX-512 VNNI, 2 VNNI with AMX."""
    return 2 if amx() else int(vnni())


def describe() -> str:
    """ "int8 activations (SpecChat's AVX-512 VNNI kernels)" or "bf16 activations (torch's kernels: …)"."""
    if kernels() is None:
        return f"bf16 activations (torch's kernels: {why_not()})"
    kind = {2: "AVX-512 VNNI + AMX", 1: "AVX-512 VNNI", 0: "AVX2"}[path()]
    return f"int8 activations (SpecChat's {kind} kernels)"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args not in ([], ["--build"]):
        print("usage: python -m app.engine.runners.native [--build]", file=sys.stderr)
        return 2
    try:
        path = build()
    except (OSError, RuntimeError) as e:  # OSError: a folder it may not write, a disk full
        print(f"specchat: SpecChat's kernels were not built: {e}; torch's kernels run (bf16 activations)",
              file=sys.stderr)
        return 0  # not an error: the app runs without them
    print(path)
    if kernels() is None:  # built, but this CPU or SPECCHAT_KERNELS says no (run.sh stays quiet when they run)
        print(f"specchat: {describe()}", file=sys.stderr)
    return 0
