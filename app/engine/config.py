"""Generation settings shared by the speculative and the plain path, and how models load."""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Literal

from app.engine.errors import InvalidSettingError

if TYPE_CHECKING:  # torch-free at run time: the window builds these options
    from app.engine.models.forms import FormProbe
    from app.engine.models.loading import ProgressFn

SamplingMode = Literal["standard", "seed-invariant"]
SAMPLING_MODES = ("standard", "seed-invariant")

LOOKUP = "lookup"  # the draft source meaning prompt lookup (no draft model)
SUFFIX = "suffix"  # prompt lookup plus the suffix index over every conversation seen (no draft model)
DRAFT_MODEL = "model"  # the loaded draft model alone, when an experiment picks a drafter by name
DRAFT_AND_LOOKUP = "model+lookup"  # the draft model and free lookup drafts together: the default with a draft model

MAX_SEED = 2**64 - 1  # what torch.Generator.manual_seed accepts
# past 10 every repeated token is as good as banned (below 0.1, forced); the bounds keep
# penalised logits far from float overflow
MIN_REPETITION_PENALTY, MAX_REPETITION_PENALTY = 0.1, 10.0
# the fronts' bound (the window, the CLI): past 2 the distribution is so flat that any model
# writes word salad (5 did, from the window); the engine itself takes any (tests flatten with 3)
MAX_TEMPERATURE = 2.0
AUTO = "auto"  # a device, dtype, weights form or thread count SpecChat chooses (LoadOptions)


def available_cpus() -> int:
    """The logical CPUs this process may run on (its affinity mask, else the machine's count)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def cap_threads(threads: int) -> int:
    """A thread count the machine can run: at most ``available_cpus()`` (more threads than CPUs
    only take turns on them, and OpenMP's spin-waiting makes that far slower), at least 1."""
    return max(1, min(threads, available_cpus()))


@dataclass(frozen=True)
class GenerationConfig:
    """What to generate and how. ``temperature == 0`` means greedy.

    ``speculative=False`` runs the same loop with no drafter (k = 0), so a comparison between
    the two is fair: sampling, stopping and detokenisation are shared.

    Every field is checked for its type on construction (``bool`` is not an int, ``"5"`` is not
    a number) and normalised: numpy scalars become Python numbers, and ``stop_strings`` becomes
    a tuple; a single string is one stop string, as in Hugging Face ``generate()``.
    """

    max_new_tokens: int = 256
    speculative: bool = True
    k: int = 5  # draft length (initial length when adaptive; the most drafts per step when auto_k)
    auto_k: bool = True  # choose each step's k (0 included) from measured costs and acceptance
    adaptive_k: bool = False  # grow after full acceptance, shrink after a rejection
    k_max: int = 16  # upper bound for the adaptive schedule
    # the draft model stops drafting when its most likely next token has a lower probability
    confidence_threshold: float = 0.0
    temperature: float = 0.0
    top_k: int = 0  # 0: off
    top_p: float = 1.0  # 1.0: off
    seed: int = 0
    sampling: SamplingMode = "standard"
    stop_strings: tuple[str, ...] = field(default_factory=tuple)
    # > 1 discourages tokens already in the context (Hugging Face semantics), for both models
    repetition_penalty: float = 1.0

    def __post_init__(self) -> None:
        for f in fields(self):
            normalise = _NORMALISERS[str(f.type)]
            object.__setattr__(self, f.name, normalise(f.name, getattr(self, f.name)))
        validate(self)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    def reproducible(self, drafted: bool) -> bool:
        """Whether the same models give the same answer again from these settings (and seed).

        Greedy and seed-invariant sampling do: the token at a position does not depend on the
        drafts. Standard sampling does when its random draws come in the same order: without
        drafting, or with a k the settings fix (fixed or adaptive). With automatic k the
        number of drafts per step is chosen from measured timings, and each verified draft
        uses a draw, so a rerun with the same seed may give another (equally valid) answer."""
        return self.greedy or self.sampling == "seed-invariant" or not drafted or not self.auto_k

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON values (stop strings as a list); ``from_dict`` reads it back."""
        data = asdict(self)
        data["stop_strings"] = list(self.stop_strings)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GenerationConfig:
        """The one mapping from stored or front-end settings to a config: unknown keys are
        ignored (older or newer files), missing ones take their defaults, and the values are
        validated like any other (``InvalidSettingError``)."""
        if not isinstance(data, dict):
            raise InvalidSettingError(f"the settings must be a JSON object of names and values (got {_shown(data)})")
        names = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in names}
        if values.get("stop_strings") is None:
            values.pop("stop_strings", None)  # null: none, as in older files
        return cls(**values)  # each value checked by its normaliser (a list of stop strings included)


# --- types: one normaliser per annotation, so a new field is checked by declaring it ------------


def _as_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidSettingError(f"{_label(name)} must be a whole number (got {_shown(value)})")
    return int(value)


def _as_float(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidSettingError(f"{_label(name)} must be a number (got {_shown(value)})")
    try:
        return float(value)
    except OverflowError:  # an int beyond float range
        raise InvalidSettingError(f"{_label(name)} is out of range (got {_shown(value)})") from None


def _as_bool(name: str, value: Any) -> bool:
    if type(value).__name__ not in ("bool", "bool_"):  # Python or numpy bool, never 0/1 or "no"
        raise InvalidSettingError(f"{_label(name)} must be true or false (got {_shown(value)})")
    return bool(value)


def _as_sampling_mode(name: str, value: Any) -> str:
    if not isinstance(value, str) or value not in SAMPLING_MODES:
        raise InvalidSettingError(f"unknown sampling mode {value!r} (choose {' or '.join(SAMPLING_MODES)})")
    return value


def _as_strings(name: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, (tuple, list)) or not all(isinstance(s, str) for s in value):
        raise InvalidSettingError(
            f"{_label(name)} must be a string or a list of strings (got {_shown(value)})"
        )
    return tuple(value)


_NORMALISERS: dict[str, Callable[[str, Any], Any]] = {
    "int": _as_int,
    "float": _as_float,
    "bool": _as_bool,
    "SamplingMode": _as_sampling_mode,
    "tuple[str, ...]": _as_strings,
}

_LABELS = {"k": "k (draft length)", "top_k": "top-k", "top_p": "top-p"}


def _label(name: str) -> str:
    return _LABELS.get(name, name.replace("_", " "))


def _shown(value: Any, width: int = 40) -> str:
    """A value as it goes into a one-line message: repr, shortened if huge."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"


# --- ranges ----------------------------------------------------------------------------------


def validate(config: GenerationConfig) -> None:
    """Raise ``InvalidSettingError`` naming the first absurd setting (types are already right)."""
    checks = [
        (
            config.max_new_tokens >= 1,
            f"max new tokens must be at least 1 (got {_shown(config.max_new_tokens)})",
        ),
        (config.k >= 1, f"k (draft length) must be at least 1 (got {_shown(config.k)})"),
        (config.k <= 64, f"k (draft length) must be at most 64 (got {_shown(config.k)})"),
        (
            config.k_max >= config.k,
            f"k_max must be at least k (got {_shown(config.k_max)} < {_shown(config.k)})",
        ),
        (
            0.0 <= config.confidence_threshold < 1.0,
            f"the confidence threshold must be in [0, 1) (got {_shown(config.confidence_threshold)})",
        ),
        (
            math.isfinite(config.temperature) and config.temperature >= 0.0,
            f"temperature must be a finite number, 0 or more (got {_shown(config.temperature)})",
        ),
        (config.top_k >= 0, f"top-k must be 0 (off) or more (got {_shown(config.top_k)})"),
        (
            math.isfinite(config.top_p) and 0.0 < config.top_p <= 1.0,
            f"top-p must be in (0, 1] (got {_shown(config.top_p)})",
        ),
        (0 <= config.seed <= MAX_SEED, f"the seed must be from 0 to {MAX_SEED} (got {_shown(config.seed)})"),
        (all(config.stop_strings), "stop strings must not be empty"),
        (
            MIN_REPETITION_PENALTY <= config.repetition_penalty <= MAX_REPETITION_PENALTY,
            (
                f"the repetition penalty must be from {MIN_REPETITION_PENALTY:g} to "
                f"{MAX_REPETITION_PENALTY:g} (got {_shown(config.repetition_penalty)})"
            ),
        ),
    ]
    for ok, message in checks:
        if not ok:
            raise InvalidSettingError(message)


def fit_to_context(config: GenerationConfig, context_length: int) -> GenerationConfig:
    """``config`` with at most ``context_length`` new tokens (a prompt and its answer share the
    context, so more can never be made); the same config when it fits or the length is unknown
    (0). The fronts say so when it changed."""
    if 0 < context_length < config.max_new_tokens:
        return replace(config, max_new_tokens=context_length)
    return config


@dataclass(frozen=True)
class LoadOptions:
    """How ``Engine.load`` loads the target and the draft model. The defaults: the fastest
    device, dtype and thread count this machine has, the target's stored form, the draft in
    its fastest exact form, SpecChat's CPU kernels, no pickle."""

    # "auto" (the fastest this machine has: ``runners.devices``), "cpu", "cuda:0", "mps"
    device: str | None = AUTO
    # the dtype float weights are computed in: "auto", "float32", "bfloat16", "float16"
    dtype: str | None = AUTO
    # the target's weights form (``forms.WEIGHTS_CHOICES``: "auto" keeps the fastest exact form on
    # the CPU, timed by ``target_probe``; "int4", "int8", "bf16", "fp32"); None: the form ``dtype`` names
    weights: str | None = None
    # the draft model's form: "auto" (on the CPU the fastest form for a draft step, timed by
    # ``draft_probe``; elsewhere the target's), a form, or None / "same as target": the target's.
    # Every form offered is exact, the draft's too
    draft_weights: str | None = AUTO
    # load pickle checkpoints (.bin / .pt), which can run code: only when the person allows it
    allow_pickle: bool = False
    # prepacked linears and row-wise attention on the CPU (``runners.cpu_kernels``)
    cpu_kernels: bool = True
    # torch's CPU threads: "auto" (re-chosen between answers, ``ThreadGovernor``) or a number
    threads: str | int | None = AUTO
    # told each loading stage (message, fraction 0..1 or None)
    progress: ProgressFn | None = None
    # seconds of a built form's passes, for ``weights`` / ``draft_weights`` "auto" (None: passes
    # over the block sizes each model decodes, ``forms.TARGET_SIZES`` / ``forms.DRAFT_SIZES``)
    target_probe: FormProbe | None = None
    draft_probe: FormProbe | None = None
