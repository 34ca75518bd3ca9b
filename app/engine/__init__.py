"""The engine: torch + transformers only, no Qt.

Token ids in, events out. The CLI, the GUI worker and the tests all use the same API::

    from app.engine import Engine, GenerationConfig
    engine = Engine.load(target="default", draft="lookup")
    result = engine.generate([{"role": "user", "content": "Hi"}], GenerationConfig())

Names are imported lazily so that the pure-data modules (``events``, ``config``, ``compare``)
can be used without importing torch (``comparison`` runs models but imports no torch itself).
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Engine": "session",
    "Backend": "backend",
    "AnswerOptions": "backend",
    "LOOKUP": "config",
    "GenerationConfig": "config",
    "LoadOptions": "config",
    "StepEvent": "events",
    "TokenInfo": "events",
    "RunStats": "events",
    "RunResult": "events",
    "RunProvenance": "events",
    "Comparison": "analysis.compare",
    "ComparisonReport": "analysis.compare",
    "compare_runs": "analysis.compare",
    "run_comparison": "analysis.comparison",
    "SpecChatError": "errors",
    "ModelLoadError": "errors",
    "IncompatibleModelsError": "errors",
    "InvalidSettingError": "errors",
    "PromptError": "errors",
    "StaleStreamError": "errors",
    "LoadedModel": "models.loading",
    "load_model": "models.loading",
    "check_compatible": "models.loading",
    "Explanation": "analysis.explanation",
    "explain": "analysis.explanation",
    "SweepArm": "analysis.sweep",
    "plan_arms": "analysis.sweep",
    "run_sweep": "analysis.sweep",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'app.engine' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
