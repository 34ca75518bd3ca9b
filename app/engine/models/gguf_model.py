"""A quantized GGUF as a model at its own size, through a cache of its forms.

``write_forms`` reads a GGUF tensor by tensor and writes each one's form (``gguf_forms``) into a
folder: safetensors shards of ``q`` / ``scale`` / ``zero`` per linear (int4's ``q`` as the CPU
kernel packs it, so a load reads it as it is) and the small tensors as they are, plus
``forms.json`` (a manifest with a format version and the int4 packing's ``int4_layout``) — no
float copy of a linear, on disk or in memory. ``load_forms`` builds the Hugging Face model from
that folder: the skeleton from the config transformers derives from the GGUF, made on the meta
device, then each linear replaced by an ``Int4Linear`` / ``Int8Linear`` and each small tensor
put in place, layer by layer. GGUF → HF names and the llama-family Q/K row permutation are transformers' own
(``get_gguf_hf_weights_map`` and the architecture's ``TensorProcessor``), applied to row indices.

The embedding is a lookup: a quantized one is kept as int8 per row (``Int8Embedding``, rows
dequantized when looked up), or as Q6_K where the file's is and SpecChat's kernels run
(``Q6KEmbedding``); a tied LM head is an ``Int8Linear`` / ``Q6KLinear`` over the very same tensor.
Everything computes with bf16 activations (what the quantized kernels are fast with).
"""

from __future__ import annotations

import functools
import json
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

import gguf
import numpy as np
import torch
from gguf import GGMLQuantizationType as Q
from safetensors.torch import save_file
from torch import nn
from transformers.pytorch_utils import Conv1D

from app.engine.models.gguf_forms import DENSE_TYPES, Int4Form, Int8Form, Q4KForm, Q6KForm, form_of
from app.engine.models.gguf_header import GgufHeader, GgufTensor
from app.engine.runners import heap, llama_family, native
from app.engine.runners.heap import give_back
from app.engine.runners.quant import (
    GROUP,
    INT4_N_MULTIPLE,
    Int4Linear,
    Int8Linear,
    Q4KLinear,
    Q6KLinear,
    int4_layout,
    pack_int4,
    q4k_rows,
    q6k_parts,
    q6k_rows,
    q6k_weight,
)

if TYPE_CHECKING:
    from transformers import PretrainedConfig, PreTrainedModel
    from transformers.modeling_gguf_pytorch_utils import TensorProcessor

# of the cached forms; another number is converted again. 2: int4 kept as the CPU kernel packs
# it (``int4_layout`` in the manifest), not as nibbles to pack again at every load; 3: Q4_K kept
# as Q4_K (``q4k``) where SpecChat's kernels run; 4: Q6_K kept as Q6_K (``q6k``) there, the
# embedding too (a tied head computes with its rows); 5: Q4_K's nibbles in the order its kernel
# reads them (``quant.q4k_interleaved``); 6: Q6_K's too (``quant.q6k_paired``); 7: a Q4_K row over
# inputs not a multiple of 256 (a draft's 896) without its last super-block's padding
FORMAT = 7
MANIFEST = "forms.json"
SHARD_BYTES = 64 << 20  # a shard is read whole on load: its bytes and its tensors are the transient
COMPUTE = torch.bfloat16
WANTS = ("native", "int4", "int8", "q4k")  # q4k: a draft's int4 (``gguf_forms``)


class DamagedForms(Exception):
    """The cached forms cannot be used (missing, truncated, another format): convert again."""


@dataclass(frozen=True)
class FormsSummary:
    """What a GGUF became: layers per form and GGUF type, and the bytes kept."""

    layers: dict[str, int]  # "int4 from Q4_1" -> count
    weight_bytes: int

    def describe(self) -> str:
        """ "int4 from Q4_1 ×210, int8 from Q8_0 ×1 · 97 MB" """
        parts = ", ".join(f"{k} ×{n}" for k, n in sorted(self.layers.items(), key=lambda kv: -kv[1]))
        return f"{parts} · {self.weight_bytes / 1e6:.0f} MB"


class Int8Embedding(nn.Module):
    """An embedding kept as int8 rows with one bf16 scale per row; looked-up rows are
    dequantized (``q·scale``) to bf16. ids [...] → [..., dim]"""

    def __init__(self, q: torch.Tensor, scale: torch.Tensor) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = q.shape
        self.register_buffer("q", q.contiguous())
        self.register_buffer("scale", scale.to(COMPUTE).contiguous())

    q: torch.Tensor
    scale: torch.Tensor

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        rows = self.q[ids].float() * self.scale[ids].float()[..., None]
        return rows.to(COMPUTE)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}, int8"


class Q6KEmbedding(nn.Module):
    """An embedding kept as the file's Q6_K rows (``quant.q6k_rows``); looked-up rows are
    dequantized (d·sc·(q − 32), exact in fp32) to bf16, and a tied LM head computes with the
    very same rows (``Q6KLinear``). ids [...] → [..., dim]"""

    rows: torch.Tensor

    def __init__(self, rows: torch.Tensor, dim: int) -> None:
        super().__init__()
        self.num_embeddings, self.embedding_dim = rows.shape[0], dim
        self.register_buffer("rows", rows.contiguous())

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        looked_up = q6k_weight(*q6k_parts(self.rows[ids.reshape(-1)], self.embedding_dim))[:, : self.embedding_dim]
        return looked_up.to(COMPUTE).reshape(*ids.shape, self.embedding_dim)

    def extra_repr(self) -> str:
        return f"{self.num_embeddings}, {self.embedding_dim}, Q6_K"


def has_quantized_linears(header: GgufHeader) -> bool:
    """Whether any 2-D tensor of the GGUF is stored quantized (else the float path is its size)."""
    return any(len(t.shape) == 2 and t.tensor_type not in DENSE_TYPES for t in header.tensors)


# ---------------------------------------------------------------- the skeleton and the names


def skeleton(config: PretrainedConfig) -> PreTrainedModel:
    """transformers' model with every parameter on the meta device and its buffers (rotary) real."""
    from transformers import AutoModelForCausalLM  # its modeling code: a second of a launch, here only

    with torch.device("meta"):
        model: PreTrainedModel = AutoModelForCausalLM.from_config(config, dtype=COMPUTE)  # type: ignore[no-untyped-call]
    for name, module in list(model.named_modules()):
        if any(b.is_meta for b in module.buffers(recurse=False)):
            rebuilt = type(module)(config=config.get_text_config())  # rotary embeddings take the config
            _set_module(model, name, rebuilt)
    return model


def _gguf_names(header: GgufHeader, model: PreTrainedModel) -> tuple[dict[str, str], TensorProcessor]:
    """GGUF tensor name → HF parameter name, and the architecture's tensor processor (given the
    HF config's keys, which are the names transformers renames the GGUF's metadata to)."""
    from transformers.modeling_gguf_pytorch_utils import TENSOR_PROCESSORS, TensorProcessor, get_gguf_hf_weights_map

    processor_class = TENSOR_PROCESSORS.get(header.architecture, TensorProcessor)
    processor: TensorProcessor = processor_class(config=model.config.to_dict())  # type: ignore[no-untyped-call]
    with _one_name_map():
        names: dict[str, str] = get_gguf_hf_weights_map(model, processor)
    return names, processor


@contextmanager
def _one_name_map() -> Iterator[None]:
    """``get_gguf_hf_weights_map`` rebuilds gguf's name map for every module it recurses into
    (~400 times for a 30-layer model, seconds): build each one once while it runs."""
    original = gguf.get_tensor_name_map
    gguf.get_tensor_name_map = functools.cache(original)
    try:
        yield
    finally:
        gguf.get_tensor_name_map = original


def _row_order(processor: TensorProcessor, name: str, rows: int) -> tuple[np.ndarray | None, bool]:
    """How the processor reorders a [rows, K] tensor (the Q/K un-permutation): the row order,
    or None for none, and whether it transposes (GPT-2's Conv1D layers)."""
    probe = np.arange(rows, dtype=np.float64)[:, None]
    out = _process(processor, probe, name)
    if out.shape == (1, rows):
        return None, True
    order = np.asarray(out).reshape(-1).astype(np.int64)
    if out.shape != (rows, 1) or not np.array_equal(np.sort(order), np.arange(rows)):
        raise DamagedForms(f"the tensor {name} is changed on load in a way a quantized form cannot follow")
    return (None if np.array_equal(order, np.arange(rows)) else order), False


# ---------------------------------------------------------------- writing the forms


def write_forms(header: GgufHeader, folder: Path, config: PretrainedConfig, want: str = "native") -> FormsSummary:
    """Each tensor of the GGUF ``header`` describes in its form, into ``folder`` (shards +
    manifest). Tensors are read from the file one at a time: the one being converted is the only
    one in memory besides the shard being filled."""
    model = skeleton(config)
    names, processor = _gguf_names(header, model)
    shards = _ShardWriter(folder)
    layers: dict[str, dict[str, object]] = {}
    head_tied = bool(getattr(config.get_text_config(), "tie_word_embeddings", False))
    for tensor in header.tensors:
        hf = names.get(tensor.name)
        if hf is None:
            continue
        module_name, _, leaf = hf.rpartition(".")
        module = model.get_submodule(module_name)
        raw = header.data(tensor)
        if leaf == "weight" and isinstance(module, (nn.Linear, Conv1D, nn.Embedding)) and len(tensor.shape) == 2:
            layers[module_name] = _write_matrix(shards, tensor, raw, module_name, module, processor, want)
        else:
            shards.add(hf, _dense(tensor, raw, processor))
        heap.spent(raw.nbytes)
        del raw
    shards.close()
    for name, info in layers.items():
        info["bias"] = f"{name}.bias" in shards.keys
    manifest = {
        "format": FORMAT, "want": want, "layers": layers, "tied": head_tied, "shards": shards.sizes,
        "int4_layout": int4_layout(),
    }
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1))
    return _summary(manifest)


def _dense(tensor: GgufTensor, raw: np.ndarray, processor: TensorProcessor) -> torch.Tensor:
    """A small tensor (norm, bias, float matrix) as the processor gives it, in fp32."""
    from gguf import dequantize

    values = dequantize(raw, tensor.tensor_type).reshape(tuple(reversed([int(d) for d in tensor.shape])))
    out = _process(processor, values, tensor.name)
    return torch.from_numpy(np.array(out, dtype=np.float32))  # a copy: its own, whatever the processor returned


def _process(processor: TensorProcessor, values: np.ndarray, name: str) -> np.ndarray:
    """What transformers does to this tensor on load (un-permute Q/K rows, transpose, …)."""
    result = processor.process(weights=values, name=name, parsed_parameters={"tensors": {}})  # type: ignore[no-untyped-call]
    return np.asarray(result.weights)


def _write_matrix(
    shards: _ShardWriter, tensor: GgufTensor, raw: np.ndarray, name: str, module: nn.Module,
    processor: TensorProcessor, want: str,
) -> dict[str, object]:
    k, n = (int(d) for d in tensor.shape)  # ggml order: inner dimension first
    qtype = Q(tensor.tensor_type)
    if qtype in DENSE_TYPES and want == "native":
        shards.add(f"{name}.weight", _dense(tensor, raw, processor))
        return {"form": "dense", "type": qtype.name, "shape": [n, k]}
    order, transposed = _row_order(processor, tensor.name, n)
    embedding = isinstance(module, nn.Embedding)
    k_quants = native.kernels() is not None and not transposed
    wanted = "int8" if embedding or (want == "native" and n % INT4_N_MULTIPLE) else want
    if wanted == "q4k" and (not k_quants or k % GROUP):
        wanted = "int4"  # Q4_K runs on SpecChat's kernels only, over whole blocks of 32
    form = form_of(raw, qtype, k, wanted, k_quants=k_quants)
    if isinstance(form, Int4Form) and n % INT4_N_MULTIPLE:
        form = form_of(raw, qtype, k, "int8")
    if isinstance(form, Q4KForm):  # the file's Q4_K as SpecChat's kernel reads it
        shards.add(f"{name}.q4k", _rows(q4k_rows(form.q, form.sc, form.m, form.d, form.dmin, form.k or None), order))
        return {"form": "int4", "q4k": True, "type": qtype.name, "shape": [n, k], "conv1d": transposed,
                "embedding": embedding}  # fmt: skip
    if isinstance(form, Q6KForm):  # the file's Q6_K as SpecChat's kernel reads it: 6-bit integers
        shards.add(f"{name}.q6k", _rows(q6k_rows(form.q, form.sc, form.d), order))
        return {"form": "int6", "q6k": True, "type": qtype.name, "shape": [n, k], "conv1d": transposed,
                "embedding": embedding}  # fmt: skip
    if isinstance(form, Int4Form):
        q, scale, zero = (_rows(t, order) for t in (form.q, form.scale, form.zero))
        shards.add(f"{name}.q4", pack_int4(q))  # as the kernel reads it: a load does not pack again
        shards.add(f"{name}.scale", scale.to(COMPUTE))
        shards.add(f"{name}.zero", zero.to(COMPUTE))
        kind = "int4"
    else:
        assert isinstance(form, Int8Form)
        shards.add(f"{name}.q8", _rows(form.q, order))
        shards.add(f"{name}.scale", _rows(form.scale, order).to(COMPUTE))
        kind = "int8"
    return {"form": kind, "type": qtype.name, "shape": [n, k], "conv1d": transposed, "embedding": embedding}


def _rows(t: torch.Tensor, order: np.ndarray | None) -> torch.Tensor:
    return t if order is None else t[torch.from_numpy(order)].contiguous()


class _ShardWriter:
    """safetensors shards of about ``SHARD_BYTES`` each (what is held in memory while writing)."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.bytes = folder, 0
        self.pending: dict[str, torch.Tensor] = {}
        self.sizes: dict[str, int] = {}
        self.keys: set[str] = set()

    def add(self, key: str, tensor: torch.Tensor) -> None:
        if self.bytes > SHARD_BYTES:
            self.flush()
        self.pending[key] = tensor.contiguous()
        self.keys.add(key)
        self.bytes += tensor.numel() * tensor.element_size()

    def flush(self) -> None:
        if self.pending:
            name = f"forms-{len(self.sizes):03d}.safetensors"
            save_file(self.pending, str(self.folder / name))
            self.sizes[name] = (self.folder / name).stat().st_size
            self.pending, self.bytes = {}, 0
            give_back()  # the shard just written and the forms' temporaries (heap.py)

    def close(self) -> None:
        self.flush()


# ---------------------------------------------------------------- loading the forms


def read_manifest(folder: Path) -> dict[str, object]:
    try:
        manifest = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DamagedForms(f"its manifest cannot be read ({exc})") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise DamagedForms(f"it is of another format ({manifest.get('format') if isinstance(manifest, dict) else '?'})")
    if manifest.get("int4_layout") != int4_layout():
        raise DamagedForms(f"its int4 layers are packed for {manifest.get('int4_layout')}, not {int4_layout()}")
    for shard, size in dict(manifest.get("shards", {})).items():
        file = folder / shard
        if not file.is_file() or file.stat().st_size != size:
            raise DamagedForms(f"{shard} is missing or truncated")
    return manifest


def load_forms(folder: Path) -> tuple[PreTrainedModel, FormsSummary]:
    """The model the cached forms in ``folder`` describe. ``DamagedForms`` when they cannot be used."""
    manifest = read_manifest(folder)
    own = llama_family.read_config(folder)  # SpecChat's classes where they build it: no modeling code imported
    # SpecChat's model has every module and attribute of transformers' that the engine reads (llama_family)
    model = skeleton(_config(folder)) if own is None else cast("PreTrainedModel", llama_family.CausalLM(own, COMPUTE))
    try:
        _place(model, _stream(folder, manifest), manifest)
    except (OSError, ValueError, KeyError, TypeError, RuntimeError, struct.error) as exc:
        raise DamagedForms(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from exc
    left = [n for n, p in [*model.named_parameters(), *model.named_buffers()] if p.is_meta]
    if left:
        raise DamagedForms(f"{len(left)} tensors are missing ({left[0]}, …)")
    model.train(False)
    model.requires_grad_(False)
    summary = _summary(manifest, model)
    setattr(model, "specchat_forms", summary)  # noqa: B010 - read by forms_of
    return model, summary


def _config(folder: Path) -> PretrainedConfig:
    from transformers import AutoConfig

    config: PretrainedConfig = AutoConfig.from_pretrained(folder, local_files_only=True, trust_remote_code=False)
    return config


def forms_of(model: nn.Module) -> FormsSummary | None:
    summary = getattr(model, "specchat_forms", None)
    return summary if isinstance(summary, FormsSummary) else None


def _stream(folder: Path, manifest: dict[str, object]) -> Iterator[tuple[str, torch.Tensor]]:
    """Every tensor of the shards, one tensor in memory at a time. Read, not mapped: a tensor
    left on a mapped file would crash the process (SIGBUS) if the cache were cut under it."""
    for shard in dict(manifest["shards"]):  # type: ignore[call-overload]
        yield from _read_shard(folder / shard)
        give_back()  # the layers' temporaries (heap.py)


SAFETENSORS_DTYPES = {"BF16": torch.bfloat16, "F16": torch.float16, "F32": torch.float32, "U8": torch.uint8,
                      "I8": torch.int8, "I32": torch.int32, "I64": torch.int64, "BOOL": torch.bool}


def _read_shard(path: Path) -> Iterator[tuple[str, torch.Tensor]]:
    """A safetensors file's tensors in file order, each read into its own tensor (the safetensors
    layout: an 8-byte header length, a JSON header of dtype / shape / data offsets, the data)."""
    with path.open("rb") as f:
        (length,) = struct.unpack("<Q", f.read(8).ljust(8, b"\0"))
        if length > path.stat().st_size:
            raise ValueError(f"{path.name} has a header longer than itself")
        header = json.loads(f.read(length))
        if not isinstance(header, dict):
            raise ValueError(f"{path.name} has no safetensors header")
        header.pop("__metadata__", None)
        for key, info in sorted(header.items(), key=lambda item: item[1]["data_offsets"][0]):
            begin, end = info["data_offsets"]
            tensor = torch.empty(info["shape"], dtype=SAFETENSORS_DTYPES[info["dtype"]])
            buffer = tensor.view(-1).view(torch.uint8).numpy() if tensor.numel() else None
            if (0 if buffer is None else buffer.nbytes) != end - begin:
                raise ValueError(f"{key} in {path.name} has {end - begin} bytes for its shape {info['shape']}")
            f.seek(8 + length + begin)
            if buffer is not None and f.readinto(buffer.data) != buffer.nbytes:
                raise ValueError(f"{path.name} is truncated at {key}")
            yield key, tensor


def _place(model: PreTrainedModel, stream: Iterator[tuple[str, torch.Tensor]], manifest: dict[str, object]) -> None:
    """Each quantized layer built as soon as its parts have been read; the rest put in place."""
    layers = {n: i for n, i in dict(manifest["layers"]).items() if i["form"] != "dense"}  # type: ignore[call-overload]
    parts: dict[str, dict[str, torch.Tensor]] = {}
    embedding: Int8Embedding | Q6KEmbedding | None = None
    for key, tensor in stream:
        name, _, leaf = key.rpartition(".")
        info = layers.get(name)
        if info is None:
            _set_tensor(model, key, tensor.to(COMPUTE))
            continue
        got = parts.setdefault(name, {})
        got[leaf] = tensor
        if set(got) >= _parts_of(info):
            layer = _quantized_layer(parts.pop(name), info)
            embedding = layer if isinstance(layer, (Int8Embedding, Q6KEmbedding)) else embedding
            _set_module(model, name, layer)
            heap.spent(sum(t.numel() * t.element_size() for t in layer.buffers()))
    if parts:
        raise KeyError(f"{next(iter(parts))} is incomplete")
    if manifest.get("tied"):
        _tie_head(model, embedding)


def _parts_of(info: dict[str, object]) -> set[str]:
    if info.get("q4k") or info.get("q6k"):
        parts = {"q4k" if info.get("q4k") else "q6k"}
    else:
        parts = {"q4", "scale", "zero"} if info["form"] == "int4" else {"q8", "scale"}
    return parts | {"bias"} if info.get("bias") else parts


def _quantized_layer(parts: dict[str, torch.Tensor], info: dict[str, object]) -> nn.Module:
    if info.get("q4k"):
        return Q4KLinear(parts["q4k"], int(list(info["shape"])[1]), parts.get("bias"))  # type: ignore[call-overload]
    if info.get("q6k"):
        k = int(list(info["shape"])[1])  # type: ignore[call-overload]
        return Q6KEmbedding(parts["q6k"], k) if info["embedding"] else Q6KLinear(parts["q6k"], k, parts.get("bias"))
    bias, scale = parts.get("bias"), parts["scale"].float()
    if info["form"] == "int4":
        return Int4Linear.from_packed(parts["q4"], scale, parts["zero"].float(), bias)  # packed (int4_layout)
    if info["embedding"]:
        return Int8Embedding(parts["q8"], scale)
    return Int8Linear.from_quantized(parts["q8"], scale, bias)


def _tie_head(model: PreTrainedModel, embedding: Int8Embedding | Q6KEmbedding | None) -> None:
    """A tied LM head computes with the embedding's own tensor (int8, Q6_K, or the dense weight)."""
    head = model.get_output_embeddings()  # type: ignore[no-untyped-call]
    if not isinstance(head, nn.Module):
        return
    name = next(n for n, m in model.named_modules() if m is head)
    if isinstance(embedding, Q6KEmbedding):
        _set_module(model, name, Q6KLinear(embedding.rows, embedding.embedding_dim, None))
    elif embedding is not None:
        _set_module(model, name, Int8Linear.from_quantized(embedding.q, embedding.scale.float()))
    else:
        head.weight = model.get_input_embeddings().weight


def _set_module(model: nn.Module, name: str, module: nn.Module) -> None:
    parent, _, leaf = name.rpartition(".")
    setattr(model.get_submodule(parent) if parent else model, leaf, module)


def _set_tensor(model: nn.Module, key: str, tensor: torch.Tensor) -> None:
    parent_name, _, leaf = key.rpartition(".")
    parent = model.get_submodule(parent_name)
    old = getattr(parent, leaf, None)
    if not isinstance(old, torch.Tensor) or tuple(old.shape) != tuple(tensor.shape):
        wanted = tuple(old.shape) if isinstance(old, torch.Tensor) else None
        raise ValueError(f"{key} has shape {tuple(tensor.shape)}, the model wants {wanted}")
    if isinstance(old, nn.Parameter):
        setattr(parent, leaf, nn.Parameter(tensor, requires_grad=False))
    else:
        parent.register_buffer(leaf, tensor)


def _summary(manifest: dict[str, object], model: nn.Module | None = None) -> FormsSummary:
    layers: dict[str, int] = {}
    for info in dict(manifest["layers"]).values():  # type: ignore[call-overload]
        key = f"{info['form']} from {info['type']}"
        layers[key] = layers.get(key, 0) + 1
    size = sum(dict(manifest["shards"]).values())  # type: ignore[call-overload]
    if model is not None:
        seen: set[int] = set()
        size = 0
        for t in [*model.parameters(), *model.buffers()]:
            if t.data_ptr() not in seen:
                seen.add(t.data_ptr())
                size += t.numel() * t.element_size()
    return FormsSummary(layers, size)
