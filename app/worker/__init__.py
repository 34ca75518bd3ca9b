"""The bridge between the engine thread and Qt: requests in, signals (and futures) out."""

from __future__ import annotations

from app.worker.engine_worker import BATCH_INTERVAL_S, EngineWorker, LoadRequest

__all__ = ["BATCH_INTERVAL_S", "EngineWorker", "LoadRequest"]
