"""How long the GUI thread was blocked: a fast timer records the gaps between its ticks.
Used by the latency test and ``tools/gui_latency.py``."""

from __future__ import annotations

import time

from PySide6.QtCore import QObject, Qt, QTimer


class GuiLatencyProbe(QObject):
    def __init__(self, interval_ms: int = 5, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._timer = QTimer(self)
        self._timer.setTimerType(Qt.TimerType.PreciseTimer)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self._on_tick)
        self.interval_ms = interval_ms
        self.gaps_ms: list[float] = []
        self._last = 0.0

    def start(self) -> None:
        self.gaps_ms.clear()
        self._last = time.perf_counter()
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()

    @property
    def worst_ms(self) -> float:
        return max(self.gaps_ms, default=0.0)

    def summary(self) -> dict[str, float | int]:
        gaps = sorted(self.gaps_ms)
        p99 = gaps[min(len(gaps) - 1, int(len(gaps) * 0.99))] if gaps else 0.0
        return {
            "timer_interval_ms": self.interval_ms,
            "ticks": len(gaps),
            "worst_gap_ms": round(self.worst_ms, 2),
            "p99_gap_ms": round(p99, 2),
            "median_gap_ms": round(gaps[len(gaps) // 2], 2) if gaps else 0.0,
        }

    def _on_tick(self) -> None:
        now = time.perf_counter()
        self.gaps_ms.append((now - self._last) * 1000.0)
        self._last = now
