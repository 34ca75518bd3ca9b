"""Load a target (and a draft) as the app does, each load in a fresh process, and say what it
costs: seconds, resident memory over the interpreter's own, against the files' size, and the
time until the first token of an answer. From the project's root:

    python tools/pair_load.py TARGET.gguf [DRAFT.gguf] [--cache DIR] [--fresh] [--tokens N]

The first load converts into the cache (``--cache``, default a folder beside the first file;
``--fresh`` empties it first), the second reads the cache. Each run prints one JSON line: ``load_s``
(``Engine.load(target, draft, LoadOptions(threads=1))``), ``first_token_s`` (from the start of the
load to the first answered token, imports excluded), ``decode_tok_s`` (the answer's decode rate, 1 thread,
target only), MiB: ``rss_base`` (after the imports), ``rss_after`` (after the answer), ``peak``
(VmHWM), ``rss_trimmed`` (after ``malloc_trim``: what the load freed but the C heap kept is the
difference) and ``files`` (the files' total size).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PROMPT = "Write a Python function is_prime(n) that returns True when n is a prime number."


def _status(key: str) -> float:  # MiB
    return int(Path("/proc/self/status").read_text().split(f"{key}:")[1].split()[0]) / 1024


def once(target: str, draft: str | None, tokens: int) -> dict[str, float]:
    """One load and one short target-only answer in this process."""
    from app.engine import Engine, GenerationConfig
    from app.engine.config import LoadOptions

    base = _status("VmRSS")
    start = time.perf_counter()
    engine = Engine.load(target, draft, LoadOptions(threads=1))
    loaded = time.perf_counter()
    first: float | None = None
    config = GenerationConfig(max_new_tokens=tokens, speculative=False)
    for step in engine.stream([{"role": "user", "content": PROMPT}], config):
        if first is None and (step.target is not None or step.accepted):
            first = time.perf_counter()
        last = step
    stats = last.stats
    files = sum(Path(p).stat().st_size for p in (target, draft) if p) / 2**20
    return {
        "load_s": loaded - start, "first_token_s": (first or loaded) - start,
        "decode_tok_s": (stats.new_tokens - 1) / stats.decode_s if stats.decode_s > 0 else 0.0,  # as bench --peer
        "new_tokens": stats.new_tokens, "weights": engine.target.weights_label,
        "draft_weights": engine.draft.weights_label if engine.draft is not None else "",
        "rss_base": base, "rss_after": _status("VmRSS"), "peak": _status("VmHWM"), "files": files,
        "rss_trimmed": _trimmed(),
    }


def _trimmed() -> float:
    """RSS once the C heap has given back what it holds free (glibc's ``malloc_trim``): what of
    ``rss_after`` is memory the load freed but the allocator kept. NaN without glibc."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        return float("nan")
    return _status("VmRSS")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("target")
    ap.add_argument("draft", nargs="?")
    ap.add_argument("--cache", type=Path)
    ap.add_argument("--fresh", action="store_true", help="empty the cache first (a first load)")
    ap.add_argument("--tokens", type=int, default=8)
    ap.add_argument("--once", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.once:
        print(json.dumps(once(a.target, a.draft, a.tokens)))
        return 0
    cache = a.cache or Path(a.target).with_suffix(".cache")
    if a.fresh:
        shutil.rmtree(cache, ignore_errors=True)
    env = {**os.environ, "SPECCHAT_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    cmd = [sys.executable, "-W", "ignore", __file__, a.target, *([a.draft] if a.draft else []),
           "--tokens", str(a.tokens), "--once"]
    start = time.perf_counter()
    run = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if run.returncode:
        print(run.stderr[-3000:], file=sys.stderr)
        return run.returncode
    result = json.loads(run.stdout.strip().splitlines()[-1])
    result["process_s"] = time.perf_counter() - start
    result["load_avg"] = os.getloadavg()[0]
    grown, peak = result["rss_after"] - result["rss_base"], result["peak"] - result["rss_base"]
    result["rss_x_files"], result["peak_x_files"] = grown / result["files"], peak / result["files"]
    result["trimmed_x_files"] = (result["rss_trimmed"] - result["rss_base"]) / result["files"]
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in result.items()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
