"""Persistent settings: ONE typed wrapper over ``QSettings``.

``AppSettings`` is a frozen dataclass (what the person chose); ``SettingsStore`` reads and
writes it, plus window geometry. Organisation and application names are set once, in
``configure_application``; every ``QSettings()`` after that lands in the same place.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Literal, TypeVar

from PySide6.QtCore import QByteArray, QCoreApplication, QSettings

from app.engine.config import LOOKUP, MAX_TEMPERATURE, SUFFIX, GenerationConfig, available_cpus, cap_threads
from app.engine.errors import InvalidSettingError

ORGANIZATION = "SpecChat"
APPLICATION = "SpecChat"

TargetKind = Literal["default", "folder", "gguf", "hub"]
DraftKind = Literal["lookup", "suffix", "none", "default", "folder", "gguf", "hub"]
DEVICES = ("auto", "cpu", "cuda", "mps")
DTYPES = ("auto", "float32", "float16", "bfloat16")
# The weights' form (issue 18): auto measures the exact forms at load; int4 / int8 are weight-only
WEIGHTS = ("auto", "int4", "int8", "bf16", "fp32")
DRAFT_DTYPES = ("auto", "same as target", "int4", "int8", "float32", "float16", "bfloat16")

RECENT_PAIRS = 8  # remembered by the model library

_Settings = TypeVar("_Settings", "ModelSettings", "ServerSettings", "AppSettings")
RunOn = Literal["computer", "server"]


def configure_application(app: QCoreApplication) -> None:
    """Names used by ``QSettings()`` and ``QStandardPaths``; call once, before either."""
    app.setOrganizationName(ORGANIZATION)
    app.setApplicationName(APPLICATION)


@dataclass(frozen=True)
class ModelSettings:
    """Which models to load and how. Changing any of these reloads the models."""

    target_kind: TargetKind = "default"
    target_path: str = ""  # folder, .gguf file or hub id, depending on the kind
    draft_kind: DraftKind = "lookup"
    draft_path: str = ""
    device: str = "auto"
    dtype: str = "auto"
    draft_dtype: str = "auto"  # the draft's weights form; auto: on the CPU the cheapest draft step, measured at load
    weights: str = "auto"  # the target's weights form (WEIGHTS); auto defers to a dtype other than auto
    allow_pickle: bool = False
    cpu_kernels: bool = True  # prepacked linears + row-wise attention for fp32 / bf16 on the CPU
    cpu_threads: int = 0  # torch's CPU threads; 0: auto (cores − 1, then re-chosen between answers)

    @property
    def threads_option(self) -> str | int:
        """What ``LoadOptions.threads`` takes."""
        return cap_threads(self.cpu_threads) if self.cpu_threads > 0 else "auto"

    @property
    def threads_capped(self) -> bool:
        """More threads were asked for than this machine's CPUs: ``threads_option`` caps them."""
        return self.cpu_threads > available_cpus()

    @property
    def target_source(self) -> str:
        return model_source(self.target_kind, self.target_path) or "default"

    @property
    def weights_option(self) -> str | None:
        """What ``LoadOptions.weights`` takes: a form, or None (the form ``dtype`` names)
        when the form is auto and the data type is not."""
        if self.weights not in WEIGHTS:
            return "auto" if self.dtype == "auto" else None
        if self.weights == "auto" and self.dtype != "auto":
            return None
        return self.weights

    @property
    def draft_dtype_option(self) -> str | None:
        """What ``LoadOptions.draft_weights`` takes: None means the target's form."""
        if self.draft_dtype == "same as target" or self.draft_dtype not in DRAFT_DTYPES:
            return None
        return self.draft_dtype

    @property
    def draft_source(self) -> str | None:
        """What ``Engine.load(draft=...)`` takes: "lookup", "suffix", None (no drafter) or a source."""
        return model_source(self.draft_kind, self.draft_path)


def model_source(kind: str, path: str) -> str | None:
    if kind == "none":
        return None
    if kind in ("default", LOOKUP, SUFFIX):
        return kind
    return path


@dataclass(frozen=True)
class ModelPair:
    """A target and its drafter, as the model library remembers them."""

    target_kind: str
    target_path: str
    draft_kind: str
    draft_path: str

    @classmethod
    def of(cls, models: ModelSettings) -> ModelPair:
        return cls(models.target_kind, models.target_path, models.draft_kind, models.draft_path)

    def apply_to(self, models: ModelSettings) -> ModelSettings:
        """``models`` with this pair (device, dtypes and the rest kept)."""
        return replace(
            models, target_kind=self.target_kind, target_path=self.target_path,  # type: ignore[arg-type]
            draft_kind=self.draft_kind, draft_path=self.draft_path,  # type: ignore[arg-type]
        )


@dataclass(frozen=True)
class ServerSettings:
    """Where the answers are made: this computer (the models above) or an OpenAI-compatible
    server (llama.cpp's ``llama-server``, vLLM). Changing any of these reconnects.

    ``api_key_env`` is the NAME of an environment variable holding the key, never the key: the
    key is read from the environment when connecting and is not written anywhere. ``plain_url``
    / ``plain_model``: the endpoint that does not speculate, for Compare ("" URL: the same server,
    a llama.cpp router, with ``plain_model``)."""

    run_on: RunOn = "computer"
    url: str = ""
    model: str = ""  # "": the server's only model
    api_key_env: str = ""
    plain_url: str = ""
    plain_model: str = ""

    @property
    def on_server(self) -> bool:
        return self.run_on == "server"

    @property
    def compare_url(self) -> str:
        """The plain endpoint's URL: its own, else the speculative one's (a router)."""
        return self.plain_url or self.url


@dataclass(frozen=True)
class AppSettings:
    """Everything the settings dialog edits; applied to the next message."""

    models: ModelSettings = ModelSettings()
    server: ServerSettings = ServerSettings()
    speculative: bool = True
    k: int = 5
    auto_k: bool = True  # choose each step's k (at most k) from measured costs
    adaptive_k: bool = False
    k_max: int = 16
    confidence_threshold: float = 0.0
    sampling: bool = False  # False: greedy
    temperature: float = 0.7
    top_p: float = 1.0
    top_k: int = 0
    seed: int = 0
    sampling_mode: str = "standard"  # or "seed-invariant"
    max_new_tokens: int = 256
    repetition_penalty: float = 1.0  # 1.0: off; the same for target and draft
    show_rejected: bool = False
    # the suffix drafter may learn from every saved conversation (in memory only, forgotten with
    # a deleted conversation); off: it learns from none and the engine forgets what it held
    remember_conversations: bool = True
    language: str = "auto"  # "auto" (system locale), "en" or "fr"; applied at the next start

    def generation_config(self) -> GenerationConfig:
        """Raises ``InvalidSettingError`` on an absurd combination."""
        if self.sampling and not 0.0 <= self.temperature <= MAX_TEMPERATURE:
            raise InvalidSettingError(
                QCoreApplication.translate(
                    "AppSettings", "The temperature must be from 0 to {0} (it is {1}): higher makes word salad."
                ).format(MAX_TEMPERATURE, self.temperature)
            )
        if self.adaptive_k and self.k_max < self.k:
            raise InvalidSettingError(
                QCoreApplication.translate(
                    "AppSettings", "The largest adaptive k ({0}) must be at least k ({1}): raise it, or lower k."
                ).format(self.k_max, self.k)
            )
        return GenerationConfig(
            max_new_tokens=self.max_new_tokens,
            speculative=self.speculative,
            k=self.k,
            auto_k=self.auto_k,
            adaptive_k=self.adaptive_k,
            k_max=max(self.k_max, self.k),
            confidence_threshold=self.confidence_threshold,
            temperature=self.temperature if self.sampling else 0.0,
            top_k=self.top_k,
            top_p=self.top_p,
            seed=self.seed,
            sampling=self.sampling_mode,  # type: ignore[arg-type]
            repetition_penalty=self.repetition_penalty,
        )


class SettingsStore:
    """Reads and writes ``AppSettings`` (and geometry) through ``QSettings``."""

    def __init__(self, settings: QSettings | None = None) -> None:
        self._qs = settings if settings is not None else QSettings()

    def load(self) -> AppSettings:
        models = _read(self._qs, "models", ModelSettings())
        server = _read(self._qs, "server", ServerSettings())
        if server.run_on not in ("computer", "server"):
            server = replace(server, run_on="computer")
        top = _read(self._qs, "generation", AppSettings())
        return replace(top, models=models, server=server)

    def save(self, settings: AppSettings) -> None:
        _write(self._qs, "models", settings.models)
        _write(self._qs, "server", settings.server)
        _write(self._qs, "generation", settings)
        self._qs.sync()

    def added_models(self) -> list[str]:
        """Folders and .gguf files added to the model library, in the order added."""
        return [str(s) for s in _read_json_list(self._qs, "library/added")]

    def add_model(self, source: str) -> None:
        added = self.added_models()
        if source not in added:
            self._qs.setValue("library/added", json.dumps([*added, source]))
            self._qs.sync()

    def recent_pairs(self) -> list[ModelPair]:
        pairs = []
        for item in _read_json_list(self._qs, "library/recent_pairs"):
            try:
                pairs.append(ModelPair(**item))
            except TypeError:
                continue
        return pairs

    def remember_pair(self, pair: ModelPair) -> None:
        """Most recent first, each pair once, at most ``RECENT_PAIRS``."""
        pairs = [pair] + [p for p in self.recent_pairs() if p != pair]
        self._qs.setValue("library/recent_pairs", json.dumps([asdict(p) for p in pairs[:RECENT_PAIRS]]))
        self._qs.sync()

    def geometry(self, key: str) -> QByteArray | None:
        value = self._qs.value(f"geometry/{key}")
        return value if isinstance(value, QByteArray) and not value.isEmpty() else None

    def set_geometry(self, key: str, value: QByteArray) -> None:
        self._qs.setValue(f"geometry/{key}", value)
        self._qs.sync()


def _read(qs: QSettings, group: str, defaults: _Settings) -> _Settings:
    """Read the scalar fields of a settings dataclass, each with its own type and default."""
    values: dict[str, Any] = {}
    for f in fields(defaults):
        default = getattr(defaults, f.name)
        if not isinstance(default, (bool, int, float, str)):
            continue
        key = f"{group}/{f.name}"
        try:
            values[f.name] = qs.value(key, default, type=type(default))
        except (TypeError, ValueError):
            values[f.name] = default
    return replace(defaults, **values)


def _read_json_list(qs: QSettings, key: str) -> list[Any]:
    try:
        value = json.loads(str(qs.value(key, "[]")))
    except ValueError:
        return []
    return value if isinstance(value, list) else []


def _write(qs: QSettings, group: str, data: ModelSettings | ServerSettings | AppSettings) -> None:
    for f in fields(data):
        value = getattr(data, f.name)
        if isinstance(value, (bool, int, float, str)):
            qs.setValue(f"{group}/{f.name}", value)
