"""Generation settings shared by the speculative and the plain path."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from .errors import InvalidSettingError

SamplingMode = Literal["standard", "seed-invariant"]

LOOKUP = "lookup"  # the draft source meaning prompt lookup (no draft model)


@dataclass(frozen=True)
class GenerationConfig:
    """What to generate and how. ``temperature == 0`` means greedy.

    ``speculative=False`` runs the same loop with no drafter (k = 0), so a comparison between
    the two is fair: sampling, stopping and detokenisation are shared.
    """

    max_new_tokens: int = 256
    speculative: bool = True
    k: int = 5  # draft length (initial length when adaptive; the most drafts per step when auto_k)
    auto_k: bool = True  # choose each step's k (0 included) from measured costs and acceptance
    adaptive_k: bool = False  # grow after full acceptance, shrink after a rejection
    k_max: int = 16  # upper bound for the adaptive schedule
    confidence_threshold: float = 0.0  # draft model stops drafting below this probability
    temperature: float = 0.0
    top_k: int = 0  # 0: off
    top_p: float = 1.0  # 1.0: off
    seed: int = 0
    sampling: SamplingMode = "standard"
    stop_strings: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        validate(self)

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0


def validate(config: GenerationConfig) -> None:
    """Raise ``InvalidSettingError`` naming the first absurd setting."""
    checks = [
        (config.max_new_tokens >= 1, f"max new tokens must be at least 1 (got {config.max_new_tokens})"),
        (config.k >= 1, f"k (draft length) must be at least 1 (got {config.k})"),
        (config.k <= 64, f"k (draft length) must be at most 64 (got {config.k})"),
        (config.k_max >= config.k, f"k_max must be at least k (got {config.k_max} < {config.k})"),
        (
            0.0 <= config.confidence_threshold < 1.0,
            f"the confidence threshold must be in [0, 1) (got {config.confidence_threshold})",
        ),
        (
            math.isfinite(config.temperature) and config.temperature >= 0.0,
            f"temperature must be 0 or more (got {config.temperature})",
        ),
        (config.top_k >= 0, f"top-k must be 0 (off) or more (got {config.top_k})"),
        (
            math.isfinite(config.top_p) and 0.0 < config.top_p <= 1.0,
            f"top-p must be in (0, 1] (got {config.top_p})",
        ),
        (config.sampling in ("standard", "seed-invariant"), f"unknown sampling mode {config.sampling!r}"),
        (all(config.stop_strings), "stop strings must not be empty"),
        (isinstance(config.auto_k, bool), f"auto_k must be True or False (got {config.auto_k!r})"),
    ]
    for ok, message in checks:
        if not ok:
            raise InvalidSettingError(message)
