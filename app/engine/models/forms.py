"""The form a model's weights are computed in: ``int4``, ``int8``, ``bf16``, ``fp32`` (``fp16``
off the CPU), or ``auto``: the fastest of the forms that are exact on this CPU, measured at load.

- ``fp32`` / ``bf16``: the float weights, prepacked for oneDNN (``cpu_kernels``).
- ``int4`` / ``int8``: weight-only quantized linears (``runners/quant.py``) and the rest of the
  model (embeddings, norms, attention) in bf16, the kernels' fast path.

Every form offered on the CPU is exact: a verified block's logits equal one-token decoding's bit
for bit (prepacked or weight-only linears, row-wise attention). A form that would not be here is
not offered, and the load note says why (``offered_forms``).

``settle(model, asked, …)`` brings an already-built model (float, or with quantized layers a
GGUF reader made) into its form: the loading paths share it.
"""

from __future__ import annotations

import copy
import gc
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch

from app.engine.errors import InvalidSettingError
from app.engine.models.measured import MeasuredStore, machine_description
from app.engine.runners.cpu_kernels import CpuKernels, apply_cpu_kernels
from app.engine.runners.cpu_probe import CpuProbe, probe
from app.engine.runners.kv import CachedModel
from app.engine.runners.quant import QUANT_FORMS, batch_invariant, input_sizes, quantize_model, quantized_layers

if TYPE_CHECKING:
    from transformers import PreTrainedModel

AUTO = "auto"
FORMS = ("int4", "int8", "bf16", "fp32")  # what --weights offers besides auto (the order auto tries)
WEIGHTS_CHOICES = (AUTO, *FORMS)
ALIASES = {
    "auto": AUTO, "int4": "int4", "int8": "int8",
    "bf16": "bf16", "bfloat16": "bf16", "fp32": "fp32", "float32": "fp32", "fp16": "fp16", "float16": "fp16",
}
DTYPE_OF = {"int4": "int4", "int8": "int8", "bf16": "bfloat16", "fp32": "float32", "fp16": "float16"}
FORM_OF = {dtype: form for form, dtype in DTYPE_OF.items()}
LOAD_DTYPE = {"int4": torch.float32, "int8": torch.float32, "bf16": torch.bfloat16, "fp32": torch.float32,
              "fp16": torch.float16}  # the float weights a form is made from (int forms: quantized from fp32)
PROBE_ROUNDS = 3  # interleaved rounds per comparison of two forms (medians)
TARGET_SIZES = (1, 4)  # a target's cost: a pass over 1 token plus one over 4 (a verified block)
DRAFT_SIZES = (1,)  # a draft's cost: one draft step
FormProbe = Callable[["PreTrainedModel"], float]  # seconds of the passes that matter for a built form


def parse_weights(value: str | None) -> str:
    """``"auto"``, a form or a dtype name (``bfloat16``) → the form's short name; else
    InvalidSettingError."""
    name = (value or AUTO).strip().lower()
    if name not in ALIASES:
        choices = ", ".join(WEIGHTS_CHOICES)
        raise InvalidSettingError(f"'{value}' is not a weights form; use {choices}.")
    return ALIASES[name]


@dataclass(frozen=True)
class WeightsForm:
    """The form a model computes in, where its weights came from, and why this form.

    ``reason``: ``measured`` (auto: the fastest exact form here), ``asked`` (a form given),
    ``same_as_target`` (a draft that follows its target), ``device`` (auto off the CPU, or
    without the CPU kernels: the device's float dtype). ``origin``: the checkpoint's own form
    ("bf16", "fp32", "GGUF", "Q4_K"); ``by_specchat``: SpecChat quantized float weights itself."""

    form: str
    reason: str = "asked"
    origin: str = ""
    by_specchat: bool = False
    size_bytes: int = 0
    pass_s: dict[str, float] = field(default_factory=dict)  # auto: measured seconds per form tried
    not_offered: tuple[str, ...] = ()  # auto: the forms not tried here, with why
    activations: str = ""  # "int8": its quantized layers run SpecChat's kernels (``runners/native``)
    head: str = ""  # a draft's head over its most frequent tokens only ("head: 32,790 of 151,936 tokens")

    @property
    def dtype(self) -> str:
        return DTYPE_OF.get(self.form, self.form)

    def label(self) -> str:
        """ "int4 (quantized by SpecChat) from bf16 · 0.1 GB", "int4 from Q4_1 · int8 activations · 0.1 GB"."""
        text = self.form + (" (quantized by SpecChat)" if self.by_specchat else "")
        if self.origin and self.origin != self.form:
            text += f" from {self.origin}"
        if self.activations:
            text += f" · {self.activations} activations"
        text += f" · {gigabytes(self.size_bytes)}" if self.size_bytes else ""
        return text + (f" · {self.head}" if self.head else "")

    def describe(self) -> str:
        """The label, and for auto what it measured: "… (auto: fastest of int4 12.1 ms, …)"."""
        if self.reason != "measured" or len(self.pass_s) < 2:
            return self.label()
        measured = ", ".join(f"{form} {seconds * 1000:.1f} ms" for form, seconds in self.pass_s.items())
        return f"{self.label()} (auto: fastest of {measured})"

    @property
    def note(self) -> str:
        return " ".join(self.not_offered)


def gigabytes(size: int) -> str:
    return f"{size / 1e9:.2f} GB" if size < 1e9 else f"{size / 1e9:.1f} GB"


def weights_bytes(model: torch.nn.Module) -> int:
    """Bytes the model's weights take in memory, in their form (a tied weight counted once)."""
    seen: set[int] = set()
    total = 0
    for tensor in [*model.parameters(), *model.buffers()]:
        if tensor.is_mkldnn:
            continue  # counted through its layer below
        key = tensor.data_ptr()
        if key not in seen:
            seen.add(key)
            total += tensor.numel() * tensor.element_size()
    for module in model.modules():
        packed = getattr(module, "packed_weight", None)
        if isinstance(packed, torch.Tensor) and packed.is_mkldnn:
            shape: tuple[int, int] = (getattr(module, "in_features", 0), getattr(module, "out_features", 0))
            total += shape[0] * shape[1] * packed.element_size()
    return total


PROBED = {"int4": "int4", "int8": "int8", "bf16": "prepacked-bf16", "fp32": "prepacked-fp32"}


def offered_forms(
    cpu: CpuProbe | None = None, sizes: Sequence[int] = (1024,), store: MeasuredStore | None = None
) -> tuple[list[str], list[str]]:
    """The forms exact on this CPU for linears over ``sizes`` inputs (a model's K), in the order
    auto tries them, and a sentence per form not offered. Each form's rows must be batch
    invariant here for verification's block sizes and a prompt's (asked once per K,
    ``quant.batch_invariant``; once per machine with a ``store``). bf16 must also be prepacked
    as bf16 (a bf16 model computed in fp32 is exact but no faster than fp32, so it is not offered)."""
    cpu = cpu or probe()
    offered, notes = [], []
    for form in FORMS:
        if form == "bf16" and not cpu.can_pack(torch.bfloat16):
            notes.append("bf16 is not offered: this CPU cannot prepack bf16 (computed in fp32 it is no faster).")
        elif form == "fp32" and not cpu.can_pack(torch.float32):
            notes.append("fp32 is not offered: this CPU's oneDNN cannot prepack it.")
        elif why := not_exact(form, sizes, cpu, store):
            notes.append(f"{form} is not offered: {why}.")
        else:
            offered.append(form)
    return offered, notes


def not_exact(
    form: str, sizes: Sequence[int], cpu: CpuProbe | None = None, store: MeasuredStore | None = None
) -> str:
    """Why ``form`` is not exact here for linears over ``sizes`` inputs ("" when it is). bf16
    on a CPU that cannot prepack it is computed in fp32: fp32's kernels decide."""
    kernel = PROBED.get(form, "")
    if form == "bf16" and not (cpu or probe()).can_pack(torch.bfloat16):
        kernel = PROBED["fp32"]
    bad = _rows_change(kernel, sizes, store) if kernel else []
    if not bad:
        return ""
    return (
        f"its rows change with the number of rows computed together on this CPU (K = {', '.join(map(str, bad))}), "
        "so a verified block or a prompt's pass with drafts folded in would not be exact"
    )


EXACT_ROWS = "exact-rows"  # the measured store's answers of quant.batch_invariant on this machine


def _rows_change(kernel: str, sizes: Sequence[int], store: MeasuredStore | None) -> list[int]:
    """The K of ``sizes`` for which ``kernel``'s rows change with the rows computed together
    (``quant.batch_invariant``), asked once per machine when a ``store`` keeps the answers."""
    if store is None:
        return [k for k in sizes if not batch_invariant(kernel, k)]
    key = [machine_description()]
    stored = store.get(EXACT_ROWS, key)
    known: dict[str, object] = stored if isinstance(stored, dict) else {}
    missing = [k for k in sizes if not isinstance(known.get(f"{kernel} K={k}"), bool)]
    for k in missing:
        known[f"{kernel} K={k}"] = batch_invariant(kernel, k)
    if missing:
        store.put(EXACT_ROWS, key, known)
    return [k for k in sizes if not known[f"{kernel} K={k}"]]


def to_form(
    model: PreTrainedModel, form: str, cpu_kernels: bool = True, cpu: CpuProbe | None = None, draft: bool = False
) -> CpuKernels | None:
    """Bring ``model`` (float weights, or with quantized layers already in place) into ``form``,
    in place: int forms quantize the remaining linears from their float weights and run the rest
    in bf16 (a ``draft``'s int4 as Q4_K: ``quantize_model``'s super_blocks); then the CPU kernels
    (prepacked linears for what is still float, row-wise attention)."""
    if form in QUANT_FORMS:
        if not quantized_layers(model):
            quantize_model(model, form, super_blocks=draft and cpu_kernels)
        model.to(torch.bfloat16)  # type: ignore[arg-type]  # quantized buffers: integers (kept) or bf16 already
    elif form in DTYPE_OF:
        model.to(getattr(torch, DTYPE_OF[form]))
        for layer in quantized_layers(model):  # layers a file brought quantized keep their bf16 scales
            layer.to(torch.bfloat16)
    if not cpu_kernels or model.device.type != "cpu":
        return None
    return apply_cpu_kernels(model, cpu=cpu)


PROBE_RUNNER = "_specchat_probe_runner"  # the cache pass_seconds keeps on a model between rounds


def pass_seconds(model: PreTrainedModel, vocab_size: int, sizes: Sequence[int] = TARGET_SIZES) -> float:
    """Seconds of one pass over each of ``sizes`` tokens after a short prompt, summed. The first
    call on a model builds the prompt's cache and runs each shape once untimed (kernel set-up);
    later calls time only the passes: auto calls this in rounds, on a loaded machine."""
    runner = model.__dict__.get(PROBE_RUNNER)
    if not isinstance(runner, CachedModel):
        runner = CachedModel(model, vocab_size)
        model.__dict__[PROBE_RUNNER] = runner
        runner.forward([0] * 8, keep=1)
        for size in sizes:
            runner.forward([0] * size, keep=size)
            runner.truncate(8)
    total = 0.0
    for size in sizes:
        started = time.perf_counter()
        runner.forward([0] * size, keep=size)
        total += time.perf_counter() - started
        runner.truncate(8)
    return total


@dataclass
class Settled:
    model: PreTrainedModel
    kernels: CpuKernels | None
    form: WeightsForm


def settle(
    model: PreTrainedModel,
    asked: str,
    *,
    origin: str = "",
    cpu_kernels: bool = True,
    form_probe: FormProbe,
    progress: Callable[[str], None] | None = None,
    store: MeasuredStore | None = None,
    draft: bool = False,
) -> Settled:
    """``model`` in the form ``asked`` (a form, or ``auto``: the fastest offered form by
    ``form_probe``, timed in interleaved rounds; ``model`` is then the float master each form is
    made from, and is consumed). ``store``: where this machine's exactness answers are kept;
    ``draft``: a draft model's (its int4 is Q4_K, ``to_form``)."""
    quantized_in_file = bool(quantized_layers(model))
    sizes = input_sizes(model)
    if asked != AUTO:
        why = not_exact(asked, sizes, store=store) if model.device.type == "cpu" and cpu_kernels else ""
        kernels = to_form(model, asked, cpu_kernels, draft=draft)
        warning = (f"{asked} is not exact here: {why}.",) if why else ()
        return Settled(model, kernels, _form(model, asked, "asked", origin, quantized_in_file, None, warning))
    if quantized_in_file:  # a quantized file is computed in its own form: the form most of its layers have
        kinds = Counter(layer.form for layer in quantized_layers(model))
        offered = [max(kinds, key=lambda kind: kinds[kind])]
        why = not_exact(offered[0], sizes, store=store)  # the other forms are not tried: not asked
        notes = [f"{offered[0]} is not exact here: {why}."] if why else []
    else:
        offered, notes = offered_forms(sizes=sizes, store=store)
    if progress is not None and len(offered) > 1:
        progress("Measuring the weights forms (" + ", ".join(offered) + ")…")
    best, samples = _tournament(model, offered, cpu_kernels, form_probe, draft)
    form = _form(best[0], best[1], "measured", origin, quantized_in_file, samples, tuple(notes))
    return Settled(best[0], best[2], form)


def _form(
    model: PreTrainedModel, form: str, reason: str, origin: str, in_file: bool,
    samples: dict[str, float] | None = None, notes: tuple[str, ...] = (),
) -> WeightsForm:
    by_us = form in QUANT_FORMS and not in_file
    activations = "int8" if any(layer.native for layer in quantized_layers(model)) else ""
    return WeightsForm(form, reason, origin, by_us, weights_bytes(model), dict(samples or {}), notes, activations)


Built = tuple["PreTrainedModel", str, "CpuKernels | None"]


def _tournament(
    master: PreTrainedModel, offered: list[str], cpu_kernels: bool, form_probe: FormProbe, draft: bool = False
) -> tuple[Built, dict[str, float]]:
    """Build each offered form from ``master`` in turn (the last one from ``master`` itself) and
    time it against the fastest so far in interleaved rounds: at most the master and two forms in
    memory at once."""
    samples: dict[str, float] = {}
    best: Built | None = None
    for i, form in enumerate(offered):
        model = master if i == len(offered) - 1 else copy.deepcopy(master)
        built: Built = (model, form, to_form(model, form, cpu_kernels, draft=draft))
        if best is None:
            best = built
            continue
        times: dict[str, list[float]] = {best[1]: [], form: []}
        for _ in range(PROBE_ROUNDS):
            for candidate in (best, built):
                times[candidate[1]].append(form_probe(candidate[0]))
        for name, values in times.items():
            samples[name] = statistics.median(values)
        if samples[form] < samples[best[1]]:
            best = built
        del built, model
        gc.collect()
    if best is None:
        raise InvalidSettingError("No weights form is available on this CPU.")
    # one form (a quantized file's own): nothing to choose, so nothing is timed; a timed pass
    # would only lengthen the load (a 7B's by 4.6 s)
    best[0].__dict__.pop(PROBE_RUNNER, None)  # its cache: the probe's, not the answers'
    gc.collect()
    return best, {form: samples[form] for form in offered if form in samples}
