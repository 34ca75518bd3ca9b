"""Measure a GGUF at its own size: weight error per GGUF type, load time and memory, greedy
agreement with llama.cpp, the LM head's cost per form. From the project's root:

    python tools/gguf_forms_check.py errors [GGUF]        # max abs weight error per type vs the file
    python tools/gguf_forms_check.py load [GGUF] [ROUNDS] # first / second load, RSS; forms vs fp32
    python tools/gguf_forms_check.py pair [TARGET DRAFT] [ROUNDS]  # Engine.load of a pair: peak, first token
    python tools/gguf_forms_check.py agree [GGUF]         # greedy tokens vs llama-server (if built)
    python tools/gguf_forms_check.py head                 # LM head ms per call, bf16 / int8 / int4

GGUF defaults to the bundled SmolLM2-135M Q4_1. Each load runs in a fresh process, 1 thread.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.servers import llama_cpp_bin  # where scripts/build-llama-cpp.sh builds (one definition)

PROMPTS = [
    "What is the capital of France?",
    "Write a Python function that reverses a string.",
    "Explain in two sentences why the sky is blue.",
    "List three prime numbers and say why they are prime.",
]


def _gguf(argv: list[str]) -> Path:
    from app.engine.models.loading import bundled_model_path

    return Path(argv[0]) if argv and argv[0].endswith(".gguf") else bundled_model_path()


def _status(key: str) -> int:  # MB
    return int(Path("/proc/self/status").read_text().split(f"{key}:")[1].split()[0]) // 1024


# ---------------------------------------------------------------- errors


def errors(path: Path) -> None:
    import numpy as np
    import torch
    from gguf import GGMLQuantizationType as Q
    from gguf import GGUFReader

    from app.engine.models.gguf_forms import DENSE_TYPES, Int4Form, Q4KForm, Q6KForm, form_of, reference
    from app.engine.runners import native

    k_quants = native.kernels() is not None  # Q4_K / Q6_K kept as they are where SpecChat's kernels run, as a load does

    def row(name: str, raw: np.ndarray, qtype: Q, k: int, wants: tuple[str, ...]) -> None:
        ref = reference(raw, qtype, k)
        cells = []
        for want in wants:
            form = form_of(raw, qtype, k, want, k_quants=k_quants)
            err = float((form.weight() - ref).abs().max())  # type: ignore[union-attr]
            kinds = {Q4KForm: "q4k", Q6KForm: "q6k", Int4Form: "int4"}
            kind = kinds.get(type(form), "int8")
            cells.append(f"{want}->{kind} {err:.2e} ({err / float(ref.abs().max()):.1e} of max|w|)")
        print(f"{name:34s} {qtype.name:5s} max|w| {float(ref.abs().max()):.3f}  " + "  ".join(cells))

    reader = GGUFReader(path)
    worst: dict[str, tuple[float, str]] = {}
    for t in reader.tensors:
        if len(t.shape) != 2 or t.tensor_type in DENSE_TYPES:
            continue
        k, qtype = int(t.shape[0]), Q(t.tensor_type)
        ref = reference(t.data, qtype, k)
        err = float((form_of(t.data, qtype, k, k_quants=k_quants).weight() - ref).abs().max())  # type: ignore[union-attr]
        rel = err / float(ref.abs().max())
        if rel > worst.get(qtype.name, (0.0, ""))[0]:
            worst[qtype.name] = (rel, f"{t.name}: {err:.2e}, max|w| {float(ref.abs().max()):.3f}")
    print(f"{path.name}: worst tensor per type (native form), error relative to the tensor's max|w|")
    for name, (rel, where) in worst.items():
        print(f"  {name}: {rel:.1e}  ({where})")
    print("\nsynthetic [256, 1024] tensors (gguf's quantizers; random blocks for the K-quants):")
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((256, 1024)) * 0.02).astype(np.float32)
    import gguf

    for qtype in (Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q8_0):
        row("normal(0, 0.02)", gguf.quants.quantize(w, qtype), qtype, 1024, ("native", "int4", "int8"))
    for qtype in (Q.Q4_K, Q.Q5_K, Q.Q6_K):
        row("random blocks", _random_blocks(rng, qtype, 256, 1024), qtype, 1024, ("native", "int4", "int8"))
    del torch


def _random_blocks(rng, qtype, n: int, k: int):  # type: ignore[no-untyped-def]
    import numpy as np
    from gguf.constants import GGML_QUANT_SIZES

    block, size = GGML_QUANT_SIZES[qtype]
    blocks = rng.integers(0, 256, (n * k // block, size), dtype=np.uint8)
    scales = rng.uniform(1e-4, 2e-3, (blocks.shape[0], 2)).astype(np.float16).view(np.uint8)
    if qtype.name == "Q6_K":
        blocks[:, -2:] = scales[:, :2]
    else:
        blocks[:, :4] = scales
    return blocks.reshape(n, -1)


# ---------------------------------------------------------------- load time and memory


def load_once(path: str, weights: str) -> None:
    """One load in this process: prints JSON (seconds, RSS before / after, peak)."""
    import torch

    torch.set_num_threads(1)
    from app.engine.models.loading import load_model

    before = _status("VmRSS")
    start = time.perf_counter()
    loaded = load_model(path, device="cpu", weights=weights)
    seconds = time.perf_counter() - start
    ids = torch.tensor([loaded.tokenizer.encode("The capital of France is")])
    with torch.no_grad():
        loaded.model(ids)
    print(json.dumps({"s": seconds, "rss_before": before, "rss_after": _status("VmRSS"), "peak": _status("VmHWM")}))


def load(path: Path, rounds: int) -> None:
    size = path.stat().st_size / 2**20
    print(f"{path.name}: {size:.0f} MiB; fresh process per load, 1 thread; MiB (RSS after imports -> after load, peak)")
    results: dict[str, list[dict[str, float]]] = {}
    for _ in range(rounds):
        for weights in ("auto", "fp32"):
            cache = tempfile.mkdtemp(prefix="specchat-cache-")
            try:
                for which in ("first", "second"):
                    env = {**os.environ, "SPECCHAT_CACHE_DIR": cache, "HF_HUB_OFFLINE": "1"}
                    out = subprocess.run(
                        [sys.executable, "-W", "ignore", __file__, "load-once", str(path), weights],
                        env=env, capture_output=True, text=True, check=True,
                    ).stdout.strip().splitlines()[-1]
                    results.setdefault(f"{weights} {which}", []).append(json.loads(out))
                cached = sum(f.stat().st_size for f in Path(cache).rglob("*.safetensors")) / 2**20
                results.setdefault(f"{weights} cache MiB", []).append({"s": cached})
            finally:
                shutil.rmtree(cache, ignore_errors=True)
    for key, runs in results.items():
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        if "cache" in key:
            print(f"  {key:14s} {med['s']:.0f} ({med['s'] / size:.2f}x the file)")
            continue
        grown = med["rss_after"] - med["rss_before"]
        print(
            f"  {key:14s} {med['s']:6.1f} s  RSS {med['rss_before']:.0f} -> {med['rss_after']:.0f} "
            f"(+{grown:.0f}, {grown / size:.2f}x the file), peak {med['peak']:.0f} "
            f"(+{med['peak'] - med['rss_before']:.0f}, {(med['peak'] - med['rss_before']) / size:.2f}x)  "
            f"[{len(runs)} runs: {', '.join(format(r['s'], '.1f') for r in runs)} s]"
        )


def pair_once(target: str, draft: str) -> None:
    """``Engine.load(target, draft)`` and one answered token in this process: prints JSON (seconds
    to the loaded engine and to the first token, RSS before, peak)."""
    import torch

    torch.set_num_threads(1)
    from app.engine import Engine, GenerationConfig
    from app.engine.config import LoadOptions

    before = _status("VmRSS")
    start = time.perf_counter()
    engine = Engine.load(target=target, draft=draft, options=LoadOptions(device="cpu", threads=1))
    loaded = time.perf_counter() - start
    tokens = []
    engine.generate("What is the capital of France?", GenerationConfig(max_new_tokens=1),
                    on_step=lambda step: tokens.append(step))
    first = time.perf_counter() - start
    print(json.dumps({"load_s": loaded, "s": first, "rss_before": before, "peak": _status("VmHWM")}))


def pair(target: Path, draft: Path, rounds: int) -> None:
    size = (target.stat().st_size + draft.stat().st_size) / 2**20
    same = " (the same file as both: no other GGUF here)" if target.resolve() == draft.resolve() else ""
    print(f"{target.name} + {draft.name}{same}: {size:.0f} MiB together; fresh process per load, 1 thread")
    results: dict[str, list[dict[str, float]]] = {}
    for _ in range(rounds):
        cache = tempfile.mkdtemp(prefix="specchat-cache-")
        try:
            for which in ("first", "second"):
                env = {**os.environ, "SPECCHAT_CACHE_DIR": cache, "HF_HUB_OFFLINE": "1"}
                out = subprocess.run(
                    [sys.executable, "-W", "ignore", __file__, "pair-once", str(target), str(draft)],
                    env=env, capture_output=True, text=True, check=True,
                ).stdout.strip().splitlines()[-1]
                results.setdefault(which, []).append(json.loads(out))
        finally:
            shutil.rmtree(cache, ignore_errors=True)
    for which, runs in results.items():
        med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        grown = med["peak"] - med["rss_before"]
        print(
            f"  {which:7s} load {med['load_s']:5.1f} s, first answered token {med['s']:5.1f} s; peak "
            f"+{grown:.0f} MiB ({grown / size:.2f}x the files)  [{len(runs)} runs: "
            f"{', '.join(format(r['s'], '.1f') for r in runs)} s; "
            f"{', '.join(str(r['peak'] - r['rss_before']) for r in runs)} MiB]"
        )


# ---------------------------------------------------------------- greedy agreement with llama.cpp


def _ours(path: Path, weights: str, prompts: list[list[int]], n: int) -> list[list[int]]:
    import torch

    from app.engine.models.loading import load_model

    loaded = load_model(str(path), device="cpu", weights=weights)
    answers = []
    for ids in prompts:
        seq = torch.tensor([ids])
        out: list[int] = []
        with torch.no_grad():
            for _ in range(n):
                nxt = int(loaded.model(seq).logits[0, -1].argmax())
                out.append(nxt)
                seq = torch.cat([seq, torch.tensor([[nxt]])], 1)
        answers.append(out)
    return answers


def _llama_cpp(path: Path, prompts: list[list[int]], n: int) -> list[list[int]] | None:
    bin_dir = llama_cpp_bin()
    server = bin_dir / "llama-server"
    if not server.is_file():
        print(f"no llama-server under {bin_dir}: agreement not measured")
        return None
    port = 18000 + os.getpid() % 1000
    proc = subprocess.Popen(
        [str(server), "-m", str(path), "--host", "127.0.0.1", "--port", str(port), "-t", "1", "-tb", "1",
         "-c", "2048", "-np", "1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(240):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        answers = []
        for ids in prompts:
            body = {"prompt": [ids], "n_predict": n, "temperature": 0, "top_k": 1, "cache_prompt": False,
                    "return_tokens": True, "ignore_eos": True}
            request = urllib.request.Request(
                f"http://127.0.0.1:{port}/completion", json.dumps(body).encode(), {"Content-Type": "application/json"}
            )
            reply = json.loads(urllib.request.urlopen(request, timeout=300).read())
            answers.append((reply[0] if isinstance(reply, list) else reply)["tokens"])
        return answers
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def agree(path: Path, n: int = 32) -> None:
    import torch

    torch.set_num_threads(1)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    prompts: list[list[int]] = []
    for text in PROMPTS:
        encoded = tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True)
        prompts.append(list(encoded if isinstance(encoded, list) else encoded["input_ids"]))
    theirs = _llama_cpp(path, prompts, n)
    runs = {w: _ours(path, w, prompts, n) for w in ("auto", "fp32")}
    for i, text in enumerate(PROMPTS):
        line = [f"{text[:40]!r:44s}"]
        for w, ours in runs.items():
            if theirs is not None:
                same = next((j for j, (a, b) in enumerate(zip(ours[i], theirs[i], strict=False)) if a != b), n)
                line.append(f"{w} = llama.cpp for {same}/{n}")
        same = next((j for j, (a, b) in enumerate(zip(runs["auto"][i], runs["fp32"][i], strict=False)) if a != b), n)
        line.append(f"forms = fp32 for {same}/{n}")
        print("  ".join(line))


# ---------------------------------------------------------------- the LM head


def head() -> None:
    import torch

    from app.engine.runners.prepacked import PrepackedLinear
    from app.engine.runners.quant import Int4Linear, Int8Linear

    torch.set_num_threads(1)
    for k, n in ((576, 49152), (1536, 151936)):
        w = torch.randn(n, k) * 0.02
        forms = {
            "bf16 prepacked": PrepackedLinear(w.to(torch.bfloat16), None, torch.bfloat16),
            "int8": Int8Linear.from_float(w),
            "int4": Int4Linear.from_float(w),
        }
        x = torch.randn(4, k).to(torch.bfloat16)
        print(f"[{k} -> {n}] ms per call, M = 1 / 4 (medians of 5 interleaved rounds of 5 calls)")
        times: dict[str, list[list[float]]] = {name: [[], []] for name in forms}
        with torch.inference_mode():
            for _ in range(5):
                for name, layer in forms.items():
                    for j, m in enumerate((1, 4)):
                        layer(x[:m])
                        start = time.perf_counter()
                        for _ in range(5):
                            layer(x[:m])
                        times[name][j].append((time.perf_counter() - start) / 5 * 1000)
        for name, (one, four) in times.items():
            print(f"  {name:15s} {statistics.median(one):7.2f} / {statistics.median(four):7.2f}")


def main(argv: list[str]) -> None:
    command, rest = (argv[0], argv[1:]) if argv else ("errors", [])
    if command == "load-once":
        load_once(rest[0], rest[1])
    elif command == "pair-once":
        pair_once(rest[0], rest[1])
    elif command == "pair":
        files = [Path(a) for a in rest if a.endswith(".gguf")]
        target, draft = (files + [_gguf([])] * 2)[:2] if len(files) != 1 else (files[0], files[0])
        pair(target, draft, int(rest[-1]) if rest and rest[-1].isdigit() else 3)
    elif command == "errors":
        errors(_gguf(rest))
    elif command == "load":
        load(_gguf(rest), int(rest[-1]) if rest and rest[-1].isdigit() else 3)
    elif command == "agree":
        agree(_gguf(rest))
    elif command == "head":
        head()
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
