"""Write a GGUF with random weights in the shape of a real model, to measure speed and memory at a
real model's size without its weights (decoding speed and memory depend on the shapes and the
quantization types, not on the weights' values). From the project's root:

    python tools/shaped_gguf.py --shape qwen2.5-1.5b --type Q4_K_M     # prints the file's path
    python tools/shaped_gguf.py --shape llama-7b --type Q4_0 --out F.gguf

Shapes (dims from the models' public configs): ``qwen2.5-1.5b``, ``qwen2.5-0.5b``, ``llama-7b`` and
``tiny`` (2 layers, hidden 64, for tests). Types: ``Q4_0``, ``Q4_1``, ``Q8_0`` (every linear; the
token embedding and an untied head Q8_0), ``Q4_K`` (every linear Q4_K, the head Q6_K) and
``Q4_K_M`` (llama.cpp's own mix: Q4_K, with attn_v / ffn_down of the layers llama.cpp's
``use_more_bits`` picks and the head in Q6_K, the embedding too when it is the head; a tensor
whose rows are not a multiple of 256 falls back as llama.cpp does, Q4_K → Q5_0, Q6_K → Q8_0).
Norms are F32 ones, Qwen2's q/k/v biases F32.

The vocabulary is SmolLM2's (the bundled model's tokenizer.* keys are copied: 49,152 tokens, its
chat template), not the real model's: the embedding and the LM head have 49,152 rows, not Qwen's
151,936 or Llama-2's 32,000. So a shaped Qwen2.5 reads less per token than the real file (its
head is a third of the real one's) and a shaped Llama-2-7B a little more.

The weights are blocks written directly (gguf-py quantizes Q4_0 / Q4_1 / Q5_x / Q8_0 but no
K-quant): random quantized levels, uniform, with scales chosen so each tensor's values have a
standard deviation of about 0.02 and mean about 0; every scale is a finite, normal float16. The
generator is seeded (``--seed``, per tensor), so a shape and type always give the same file.
Files go under ``~/.cache/specchat/shaped/`` by default; an existing file is kept (``--force``).
"""

from __future__ import annotations

import argparse
import functools
import shutil
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import gguf
from gguf import GGMLQuantizationType as Q

CACHE = Path.home() / ".cache/specchat/shaped"
STD = 0.02  # the standard deviation of every weight matrix's values


@dataclass(frozen=True)
class Shape:
    arch: str  # GGUF architecture: "qwen2" (q/k/v biases) or "llama"
    hidden: int
    layers: int
    ffn: int
    heads: int
    kv_heads: int
    tied: bool
    rope_theta: float
    eps: float
    context: int


SHAPES = {
    # Qwen/Qwen2.5-1.5B(-Instruct / Coder) config.json
    "qwen2.5-1.5b": Shape("qwen2", 1536, 28, 8960, 12, 2, True, 1e6, 1e-6, 32768),
    # Qwen/Qwen2.5-0.5B config.json
    "qwen2.5-0.5b": Shape("qwen2", 896, 24, 4864, 14, 2, True, 1e6, 1e-6, 32768),
    # meta-llama/Llama-2-7b-hf config.json
    "llama-7b": Shape("llama", 4096, 32, 11008, 32, 32, False, 1e4, 1e-5, 4096),
    "tiny": Shape("qwen2", 64, 2, 128, 4, 2, True, 1e4, 1e-6, 2048),
    # the smallest whose rows take K-quants (a multiple of 256): the tests' Q4_K model
    "small": Shape("qwen2", 256, 2, 512, 4, 2, True, 1e4, 1e-6, 2048),
}
TYPES = ("Q4_0", "Q4_1", "Q8_0", "Q4_K", "Q4_K_M")
FILE_TYPE = {"Q4_0": 2, "Q4_1": 3, "Q8_0": 7, "Q4_K": 14, "Q4_K_M": 15}  # llama_ftype (Q4_K: Q4_K_S)
FALLBACK = {Q.Q4_K: Q.Q5_0, Q.Q6_K: Q.Q8_0}  # llama.cpp's, for rows not a multiple of 256


def bundled_gguf() -> Path:
    from app.engine.models.loading import bundled_model_path

    return Path(bundled_model_path())


# ---------------------------------------------------------------- blocks


def _f16(values: np.ndarray) -> np.ndarray:
    """[n] float → [n, 2] bytes of float16."""
    return values.astype(np.float16).view(np.uint8).reshape(-1, 2)


def _jitter(rng: np.random.Generator, n: int) -> np.ndarray:
    return rng.uniform(0.75, 1.25, n)  # per-block scales vary a little, as in a real file


def random_blocks(qtype: Q, rows: int, cols: int, rng: np.random.Generator) -> np.ndarray:
    """[rows, bytes] of ``qtype`` blocks whose dequantized values have std ≈ STD and mean ≈ 0."""
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    assert cols % block == 0, f"{qtype.name} needs rows of a multiple of {block}, got {cols}"
    n = rows * cols // block
    b = np.frombuffer(rng.bytes(n * size), dtype=np.uint8).reshape(n, size).copy()  # the levels
    uniform = {16: 4.61, 32: 9.23, 64: 18.47}  # std of uniform levels 0..k-1, k = 16 / 32 / 64
    if qtype == Q.Q4_0:  # d, qs[16]: w = d (q - 8)
        b[:, 0:2] = _f16(STD / uniform[16] * _jitter(rng, n))
    elif qtype == Q.Q4_1:  # d, m, qs[16]: w = d q + m
        d = STD / uniform[16] * _jitter(rng, n)
        b[:, 0:2], b[:, 2:4] = _f16(d), _f16(-7.5 * d)
    elif qtype == Q.Q5_0:  # d, qh[4], qs[16]: w = d (q - 16)
        b[:, 0:2] = _f16(STD / uniform[32] * _jitter(rng, n))
    elif qtype == Q.Q8_0:  # d, qs[32] int8: w = d q
        b[:, 2:] = np.clip(b[:, 2:].view(np.int8), -127, 127).view(np.uint8)
        b[:, 0:2] = _f16(STD / 73.6 * _jitter(rng, n))
    elif qtype == Q.Q4_K:
        _q4_k(b, rng, n)
    elif qtype == Q.Q6_K:  # ql[128], qh[64], scales[16] int8, d: w = d sc (q - 32)
        sc = rng.integers(4, 16, (n, 16))
        b[:, 192:208] = sc.astype(np.int8).view(np.uint8)
        b[:, 208:210] = _f16(STD / (sc.mean() * uniform[64]) * _jitter(rng, n))
    else:
        raise ValueError(f"no random blocks for {qtype.name}")
    return b.reshape(rows, cols // block * size)


def _q4_k(b: np.ndarray, rng: np.random.Generator, n: int) -> None:
    """d, dmin, scales[12] (eight 6-bit scales sc and mins m), qs[128]: w = d sc q − dmin m.
    m = sc and dmin = 7.5 d centre each sub-block on 0: w = d sc (q − 7.5)."""
    sc = rng.integers(16, 64, (n, 8)).astype(np.uint8)
    m = sc
    d = STD / (float(sc.mean()) * 4.61) * _jitter(rng, n)
    b[:, 0:2], b[:, 2:4] = _f16(d), _f16(7.5 * d)
    # ggml's get_scale_min_k4, inverted: j < 4 in the low 6 bits of bytes j / j + 4, j ≥ 4 split
    # into a low nibble (bytes 8..11) and two high bits (the top of bytes j − 4 / j).
    b[:, 4:8] = sc[:, :4] | ((sc[:, 4:] >> 4) << 6)
    b[:, 8:12] = m[:, :4] | ((m[:, 4:] >> 4) << 6)
    b[:, 12:16] = (sc[:, 4:] & 0xF) | ((m[:, 4:] & 0xF) << 4)


# ---------------------------------------------------------------- tensors


@dataclass(frozen=True)
class Tensor:
    name: str
    shape: tuple[int, ...]  # numpy order: [rows (out), cols (in)]
    qtype: Q


def _more_bits(i: int, n: int) -> bool:  # llama.cpp's use_more_bits (Q4_K_M)
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def _choose(qtype: Q, cols: int) -> Q:
    return FALLBACK.get(qtype, qtype) if qtype in FALLBACK and cols % 256 else qtype


def tensors(s: Shape, kind: str, vocab: int) -> list[Tensor]:
    """The tensors of shape ``s`` in ``kind``, in the order llama.cpp's converter writes them."""
    linear = Q.Q4_K if kind.startswith("Q4_K") else Q[kind]
    head = Q.Q6_K if kind.startswith("Q4_K") else Q.Q8_0
    # llama.cpp gives a K-quant file's head Q6_K, and the embedding too when it is the head (tied)
    embed = head if s.tied or not kind.startswith("Q4_K") else linear
    head_dim = s.hidden // s.heads
    kv = s.kv_heads * head_dim
    out = [Tensor("token_embd.weight", (vocab, s.hidden), _choose(embed, s.hidden))]
    for i in range(s.layers):
        more = Q.Q6_K if kind == "Q4_K_M" and _more_bits(i, s.layers) else linear
        p = f"blk.{i}."
        out.append(Tensor(p + "attn_norm.weight", (s.hidden,), Q.F32))
        for name, rows, cols, qtype in (
            ("attn_q", s.hidden, s.hidden, linear), ("attn_k", kv, s.hidden, linear),
            ("attn_v", kv, s.hidden, more), ("attn_output", s.hidden, s.hidden, linear),
            ("ffn_gate", s.ffn, s.hidden, linear), ("ffn_up", s.ffn, s.hidden, linear),
            ("ffn_down", s.hidden, s.ffn, more),
        ):
            out.append(Tensor(f"{p}{name}.weight", (rows, cols), _choose(qtype, cols)))
            if s.arch == "qwen2" and name in ("attn_q", "attn_k", "attn_v"):
                out.append(Tensor(f"{p}{name}.bias", (rows,), Q.F32))
        out.append(Tensor(p + "ffn_norm.weight", (s.hidden,), Q.F32))
    out.append(Tensor("output_norm.weight", (s.hidden,), Q.F32))
    if not s.tied:
        out.append(Tensor("output.weight", (vocab, s.hidden), _choose(head, s.hidden)))
    return out


def nbytes(t: Tensor) -> int:
    block, size = gguf.GGML_QUANT_SIZES[t.qtype]
    return int(np.prod(t.shape)) // block * size


def values(t: Tensor, rng: np.random.Generator) -> np.ndarray:
    if t.qtype == Q.F32:
        if t.name.endswith(".bias"):
            return rng.normal(0.0, STD, t.shape).astype(np.float32)
        return np.ones(t.shape, dtype=np.float32)
    return random_blocks(t.qtype, t.shape[0], t.shape[1], rng)


# ---------------------------------------------------------------- the file


def _copy_tokenizer(w: gguf.GGUFWriter, source: Path) -> int:
    """Every tokenizer.* key of ``source`` onto ``w``, with its own types; returns the vocabulary size."""
    vocab = 0
    for key, kind, sub, value in _tokenizer_fields(source):
        if key == "tokenizer.ggml.tokens":
            vocab = len(value)
        w.add_key_value(key, value, gguf.GGUFValueType(kind), None if sub is None else gguf.GGUFValueType(sub))
    return vocab


@functools.lru_cache(maxsize=2)
def _tokenizer_fields(source: Path) -> tuple[tuple[str, int, int | None, Any], ...]:
    """``source``'s tokenizer.* keys as (key, type, element type, value), parsed once a process by
    SpecChat's own header reader (gguf's ``GGUFReader`` took ~15 s over the bundled 49,152 tokens
    and merges, for every shaped file a test wrote)."""
    from app.engine.models.gguf_header import ARRAY, GgufHeader

    fields = []
    for key, (kind, value) in GgufHeader.read(source).fields.items():
        if key.startswith("tokenizer."):
            sub, value = value if kind == ARRAY else (None, value)
            fields.append((key, kind, sub, value))
    return tuple(fields)


def write(shape: str, kind: str, path: Path, seed: int = 0, arch: str | None = None) -> Path:
    s = SHAPES[shape]
    if arch is not None:
        s = Shape(arch, *[getattr(s, f) for f in ("hidden", "layers", "ffn", "heads", "kv_heads", "tied",
                                                   "rope_theta", "eps", "context")])
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    w = gguf.GGUFWriter(str(part), s.arch)
    w.add_name(f"shaped {shape} {kind} (random weights, SmolLM2 vocabulary)")
    vocab = _copy_tokenizer(w, bundled_gguf())
    w.add_context_length(s.context)
    w.add_embedding_length(s.hidden)
    w.add_block_count(s.layers)
    w.add_feed_forward_length(s.ffn)
    w.add_head_count(s.heads)
    w.add_head_count_kv(s.kv_heads)
    w.add_rope_dimension_count(s.hidden // s.heads)
    w.add_rope_freq_base(s.rope_theta)
    w.add_layer_norm_rms_eps(s.eps)
    w.add_vocab_size(vocab)
    w.add_file_type(FILE_TYPE[kind])
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    plan = tensors(s, kind, vocab)
    need = sum(nbytes(t) for t in plan)
    free = shutil.disk_usage(path.parent).free
    if need > free - (1 << 30):
        raise SystemExit(f"{path.parent}: {need / 2**30:.1f} GiB needed, {free / 2**30:.1f} GiB free")
    for t in plan:
        raw = t.qtype != Q.F32
        byte_shape = (t.shape[0], nbytes(t) // t.shape[0]) if raw else t.shape
        w.add_tensor_info(t.name, byte_shape, np.dtype(np.uint8 if raw else np.float32), nbytes(t),
                          raw_dtype=t.qtype if raw else None)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for i, data in enumerate(_generated(plan, seed)):
        w.write_tensor_data(data)
        if i % 50 == 0:
            print(f"  {i}/{len(plan)} tensors", file=sys.stderr)
    w.close()
    part.replace(path)
    return path


def _generated(plan: list[Tensor], seed: int) -> Iterator[np.ndarray]:
    for i, t in enumerate(plan):
        yield values(t, np.random.default_rng([seed, i]))


def default_path(shape: str, kind: str, arch: str | None, seed: int) -> Path:
    a = arch or SHAPES[shape].arch
    return CACHE / f"{shape}-{kind}-{a}-seed{seed}.gguf"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", choices=sorted(SHAPES), required=True)
    ap.add_argument("--type", dest="kind", choices=TYPES, default="Q4_K_M")
    ap.add_argument("--arch", choices=("llama", "qwen2"), help="GGUF architecture (default: the shape's)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, help=f"the file (default: under {CACHE})")
    ap.add_argument("--force", action="store_true", help="write it again if it exists")
    a = ap.parse_args(argv)
    path = a.out or default_path(a.shape, a.kind, a.arch, a.seed)
    if a.force or not path.exists():
        write(a.shape, a.kind, path, a.seed, a.arch)
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
