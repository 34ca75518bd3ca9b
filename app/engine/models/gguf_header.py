"""A GGUF file's header, read once: its metadata, its tensor table, each tensor's bytes on demand.

gguf's ``GGUFReader`` keeps every element of every metadata array as a numpy view of its own: for
the bundled SmolLM2 (94 MiB, 49,152 tokens and 48,900 merges) that is ~150 MiB of Python objects
and seconds of work, and transformers builds one for the config and another for the tokenizer.
``GgufHeader.read`` parses the file once into plain Python values (~9 MiB for the bundled file),
and ``lent(header)`` hands that parse to transformers' own GGUF readers while they derive the
config and the tokenizer, so that a conversion reads the header once and what transformers
derives from it is unchanged (its own code runs on the same values).

Tensors are read one at a time (``GgufHeader.data``), copied out of the file rather than mapped:
only the tensor being converted is in memory, and the file's pages are not held in the process.
"""

from __future__ import annotations

import copy
import functools
import mmap
import os
import struct
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf.constants import GGML_QUANT_SIZES

MAGIC = b"GGUF"
VERSIONS = (2, 3)
STRING, ARRAY = 8, 9
SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
ITEM_TYPES = {Q.F16: np.float16, Q.F32: np.float32, Q.F64: np.float64, Q.I8: np.int8, Q.I16: np.int16,
              Q.I32: np.int32, Q.I64: np.int64}  # what GGUFReader gives a tensor of these; others are bytes
PSEUDO = "GGUF."  # GGUFReader's own fields (version, counts), not in the file's metadata
NOT_LENT = ("gpt-oss", "gpt_oss")  # transformers reads these fields' raw parts: its own reader does


class UnreadableHeader(ValueError):
    """The file is not a GGUF this reader can parse (truncated, another version, a bad value)."""


@dataclass(frozen=True)
class GgufTensor:
    name: str
    shape: tuple[int, ...]  # ggml order, inner dimension first (as GGUFReader gives it)
    tensor_type: Q
    start: int  # in the file
    nbytes: int


@dataclass(frozen=True)
class GgufHeader:
    """What a GGUF says about itself: ``fields`` (key → (value type, value); an array's value is
    (element type, list of values); ``GGUF.version`` and the counts first, as ``GGUFReader``
    lists them), and its tensors in file order."""

    path: str
    fields: dict[str, tuple[int, Any]]
    tensors: tuple[GgufTensor, ...]

    @property
    def architecture(self) -> str:
        return str(self.fields["general.architecture"][1])

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> GgufHeader:
        """Parse ``path``'s header and tensor table; ``UnreadableHeader`` when they do not parse or
        a tensor lies past the file's end."""
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as blob:
            try:
                return _parse(str(path), blob)
            except (struct.error, UnicodeDecodeError, ValueError, KeyError, OverflowError) as exc:
                raise UnreadableHeader(f"{Path(path).name}: {exc}") from exc

    def tensors_only(self) -> GgufHeader:
        """This header without its metadata but the architecture (what converting tensors needs)."""
        return GgufHeader(self.path, {"general.architecture": self.fields["general.architecture"]}, self.tensors)

    def data(self, tensor: GgufTensor) -> np.ndarray:
        """The tensor's stored values, as ``GGUFReader``'s ``tensor.data`` shapes them (floats and
        ints as such, quantized types as [..., bytes per row]), copied out of the file."""
        item = ITEM_TYPES.get(tensor.tensor_type, np.uint8)
        dims = tuple(reversed(tensor.shape))
        if item is np.uint8:
            block, size = GGML_QUANT_SIZES[tensor.tensor_type]
            dims = (*dims[:-1], dims[-1] // block * size)
        values = np.fromfile(self.path, dtype=item, count=tensor.nbytes // np.dtype(item).itemsize, offset=tensor.start)
        return values.reshape(dims)


def _parse(path: str, blob: mmap.mmap) -> GgufHeader:
    if blob[:4] != MAGIC:
        raise ValueError("it does not start with 'GGUF'")
    version, n_tensors, n_fields = struct.unpack_from("<IQQ", blob, 4)
    if version not in VERSIONS:
        raise ValueError(f"GGUF version {version} (this reader reads {VERSIONS})")
    pos = 24
    fields: dict[str, tuple[int, Any]] = {  # as GGUFReader lists them, first
        "GGUF.version": (4, version), "GGUF.tensor_count": (10, n_tensors), "GGUF.kv_count": (10, n_fields),
    }
    for _ in range(n_fields):
        key, pos = _string(blob, pos)
        (kind,) = struct.unpack_from("<I", blob, pos)
        fields[key], pos = _value(blob, pos + 4, kind)
    entries = []
    for _ in range(n_tensors):
        name, pos = _string(blob, pos)
        (n_dims,) = struct.unpack_from("<I", blob, pos)
        dims = struct.unpack_from(f"<{n_dims}Q", blob, pos + 4)
        kind, offset = struct.unpack_from("<IQ", blob, pos + 4 + 8 * n_dims)
        entries.append((name, tuple(int(d) for d in dims), Q(kind), offset))
        pos += 4 + 8 * n_dims + 12
    alignment = int(fields.get("general.alignment", (4, 32))[1]) or 32
    data_start = -(-pos // alignment) * alignment
    tensors = tuple(
        GgufTensor(name, dims, kind, data_start + offset, _nbytes(kind, dims)) for name, dims, kind, offset in entries
    )
    for t in tensors:
        if t.start + t.nbytes > len(blob):
            raise ValueError(f"the tensor {t.name} lies past the end of the file (truncated)")
    if "general.architecture" not in fields:
        raise ValueError("it names no architecture")
    return GgufHeader(path, fields, tensors)


def _string(blob: mmap.mmap, pos: int) -> tuple[str, int]:
    (length,) = struct.unpack_from("<Q", blob, pos)
    end = pos + 8 + length
    if end > len(blob):
        raise ValueError("a string runs past the end of the file (truncated)")
    return blob[pos + 8 : end].decode("utf-8"), end


def _value(blob: mmap.mmap, pos: int, kind: int) -> tuple[tuple[int, Any], int]:
    if kind in SCALARS:
        (value,) = struct.unpack_from("<" + SCALARS[kind], blob, pos)
        return (kind, value), pos + struct.calcsize(SCALARS[kind])
    if kind == STRING:
        text, pos = _string(blob, pos)
        return (kind, text), pos
    if kind != ARRAY:
        raise ValueError(f"a metadata value of unknown type {kind}")
    item, count = struct.unpack_from("<IQ", blob, pos)
    pos += 12
    if item in SCALARS:
        width = struct.calcsize(SCALARS[item])
        return (kind, (item, list(struct.unpack_from(f"<{count}{SCALARS[item]}", blob, pos)))), pos + count * width
    if item != STRING:
        raise ValueError(f"a metadata array of type {item}")  # nested arrays: nothing we load has them
    values = []
    for _ in range(count):
        text, pos = _string(blob, pos)
        values.append(text)
    return (kind, (item, values)), pos


def _nbytes(kind: Q, dims: tuple[int, ...]) -> int:
    block, size = GGML_QUANT_SIZES[kind]
    return int(np.prod(dims, dtype=np.int64)) // block * size


# ---------------------------------------------------------------- lending the parse to transformers


@dataclass
class _Field:
    """What transformers' ``load_gguf_checkpoint`` reads of a ``GGUFReader`` field: ``parts`` indexed
    by ``data``, parsed with ``types`` (one value: ``(v,)`` or a string's bytes)."""

    parts: list[Any]
    data: range
    types: list[int]


class _ReaderView:
    """The header as the ``GGUFReader`` transformers' readers walk: fields, and tensors by name,
    type and (read when asked, one at a time) data."""

    def __init__(self, header: GgufHeader) -> None:
        self.fields = {key: _field(kind, value) for key, (kind, value) in header.fields.items()}
        self.tensors = [_TensorView(header, tensor) for tensor in header.tensors]


class _TensorView:
    """A tensor as ``GGUFReader`` lists it, for what transformers reads of one: ``name``,
    ``tensor_type``, ``shape`` and ``data`` (copied out of the file when read)."""

    def __init__(self, header: GgufHeader, tensor: GgufTensor) -> None:
        self._header, self._tensor = header, tensor
        self.name, self.tensor_type = tensor.name, tensor.tensor_type
        self.shape = np.array(tensor.shape, dtype=np.uint64)

    @property
    def data(self) -> np.ndarray:
        return self._header.data(self._tensor)


def _field(kind: int, value: Any) -> _Field:
    if kind != ARRAY:
        return _Field([_part(kind, value)], range(1), [kind])
    item, values = value
    return _Field([_part(item, v) for v in values], range(len(values)), [ARRAY, item] if values else [ARRAY])


def _part(kind: int, value: Any) -> Any:
    return value.encode("utf-8") if kind == STRING else (value,)


_LENT: dict[str, GgufHeader] = {}
_PARSED: dict[str, dict[str, Any]] = {}  # load_gguf_checkpoint's metadata result, per lent path
_LOCK = threading.Lock()
_PARSING = threading.Lock()  # one config derivation at a time: it swaps gguf.GGUFReader while it runs
_INSTALLED: list[bool] = []


def _lent_header(path: object) -> GgufHeader | None:
    try:
        return _LENT.get(os.path.realpath(str(path)))
    except (TypeError, ValueError):
        return None


@contextmanager
def lent(header: GgufHeader) -> Iterator[None]:
    """While open, transformers' GGUF metadata readers answer for ``header.path`` from ``header``
    (and derive the config once) instead of parsing the file again; other files are theirs."""
    key = os.path.realpath(header.path)
    with _LOCK:
        _install()
        _LENT[key] = header
    try:
        yield
    finally:
        with _LOCK:
            _LENT.pop(key, None)
            _PARSED.pop(key, None)


def _install() -> None:
    """Wrap transformers' two readers once; a wrapper asked about a path not lent calls the original."""
    if _INSTALLED:
        return
    import transformers.modeling_gguf_pytorch_utils as legacy

    legacy.load_gguf_checkpoint = _lending_checkpoint(legacy.load_gguf_checkpoint)
    try:
        import transformers.integrations.gguf as package
        import transformers.integrations.gguf.reader as fast
    except ImportError:  # an older transformers: the legacy reader is all there is
        pass
    else:
        wrapped = _lending_metadata(fast.read_gguf_metadata)
        fast.read_gguf_metadata = wrapped
        setattr(package, "read_gguf_metadata", wrapped)  # noqa: B010 - a lazy module's attribute
    _INSTALLED.append(True)


def _lending_checkpoint(original: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    @functools.wraps(original)
    def load_gguf_checkpoint(gguf_checkpoint_path: Any, return_tensors: bool = False, **kwargs: Any) -> dict[str, Any]:
        header = _lent_header(gguf_checkpoint_path)
        if header is None or header.architecture in NOT_LENT:
            return original(gguf_checkpoint_path, return_tensors=return_tensors, **kwargs)
        if return_tensors:  # the float conversion's tensors, read from the file one at a time
            with _PARSING:
                return _parsed_from(original, header, gguf_checkpoint_path, kwargs, return_tensors=True)
        key = os.path.realpath(header.path)
        with _PARSING:
            if key not in _PARSED:
                _PARSED[key] = _parsed_from(original, header, gguf_checkpoint_path, kwargs)
            parsed = _PARSED[key]
        return {part: copy.deepcopy(values) if part != "tokenizer" else dict(values) for part, values in parsed.items()}

    return load_gguf_checkpoint


def _parsed_from(
    original: Callable[..., dict[str, Any]], header: GgufHeader, path: Any, kwargs: Any, return_tensors: bool = False
) -> dict[str, Any]:
    """``original`` run on the header: the ``GGUFReader`` it imports by name answers with a view of
    ``header`` for that file (and is gguf's own for any other file opened meanwhile)."""
    import gguf

    reader_class = gguf.GGUFReader
    key = os.path.realpath(header.path)

    def reader(file: Any, *args: Any, **kw: Any) -> Any:
        return _ReaderView(header) if os.path.realpath(str(file)) == key else reader_class(file, *args, **kw)

    gguf.GGUFReader = reader  # type: ignore[misc, assignment]
    try:
        return original(path, return_tensors=return_tensors, **kwargs)
    finally:
        gguf.GGUFReader = reader_class  # type: ignore[misc]


def _lending_metadata(original: Callable[..., tuple[dict[str, Any], tuple[str, ...]]]) -> Callable[..., Any]:
    @functools.wraps(original)
    def read_gguf_metadata(gguf_path: Any, string_arrays: Any = ()) -> tuple[dict[str, Any], tuple[str, ...]]:
        header = _lent_header(gguf_path)
        if header is None:
            return original(gguf_path, string_arrays)
        metadata = {
            key: _plain(key, kind, value, string_arrays)
            for key, (kind, value) in header.fields.items()
            if not key.startswith(PSEUDO)
        }
        return metadata, tuple(t.name for t in header.tensors)

    return read_gguf_metadata


def _plain(key: str, kind: int, value: Any, string_arrays: Any) -> Any:
    """A value as transformers' fast reader gives it: a string array not asked for is its count."""
    if kind != ARRAY:
        return value
    item, values = value
    return len(values) if item == STRING and key not in string_arrays else list(values)
