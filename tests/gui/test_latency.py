"""How long the GUI thread is blocked while an answer streams. The worst gap is recorded,
not asserted (it depends on the machine): see out/tests/gui_latency.json.

What is asserted counts events on the GUI thread instead of reading a clock: a 1 ms probe
timer ticks whenever the event loop is free, and the worker's 30 ms flush timer emits the
batches. So between two batches the probe must tick — at least once (the loop ran between
them: nothing held the GUI thread across batches) and, typically, several times (the GUI
thread was not blocked for a whole batch interval at every batch). A slot that freezes the
GUI thread on each batch leaves exactly one overdue tick between batches and fails."""

from __future__ import annotations

import itertools
import json
import os
import statistics
import time
from pathlib import Path

from gui_helpers import send_and_wait, tiny_settings

from app.ui.common.latency import GuiLatencyProbe

OUTPUT = Path(os.environ.get("SPECCHAT_TEST_OUTPUT", Path(__file__).parents[2] / "out" / "tests"))
PROBE_INTERVAL_MS = 1  # far below the worker's 30 ms batch interval
STEP_FLOOR_S = 0.004  # each engine step takes at least this long: several batches on any machine


def _paced(decode):
    """The engine's decode loop with a floor on each step's time, so a tiny model's answer
    spans several 30 ms batches however fast the machine (the sleep is on the engine thread)."""

    def paced(*args, **kwargs):
        for step in decode(*args, **kwargs):
            time.sleep(STEP_FLOOR_S)
            yield step

    return paced


def test_the_gui_thread_runs_between_event_batches(open_window, qtbot, tiny_models, monkeypatch):
    import app.engine.session as session

    monkeypatch.setattr(session, "decode", _paced(session.decode))
    window = open_window(tiny_settings(tiny_models, draft="lookup", max_new_tokens=200))
    probe = GuiLatencyProbe(interval_ms=PROBE_INTERVAL_MS)
    ticks_at_batch: list[int] = []  # probe ticks counted when each batch reached the GUI
    batch_sizes: list[int] = []

    def on_batch(_run: int, steps: list[object]) -> None:
        ticks_at_batch.append(len(probe.gaps_ms))
        batch_sizes.append(len(steps))

    window.worker.events_ready.connect(on_batch)
    probe.start()
    result = send_and_wait(qtbot, window)
    probe.stop()

    between = [b - a for a, b in itertools.pairwise(ticks_at_batch)]
    summary = probe.summary() | {
        "steps": len(result.steps),
        "batches": len(batch_sizes),
        "ticks_between_batches_median": statistics.median(between) if between else None,
        "ticks_between_batches_min": min(between, default=None),
        "new_tokens": result.stats.new_tokens,
        "answer_wall_s": round(result.stats.prefill_s + result.stats.decode_s, 3),
    }
    OUTPUT.mkdir(parents=True, exist_ok=True)
    (OUTPUT / "gui_latency.json").write_text(json.dumps(summary, indent=2))
    print(f"\nworst GUI-thread block while streaming: {summary['worst_gap_ms']} ms {summary}")

    assert sum(batch_sizes) == len(result.steps) and len(between) >= 3, summary
    # the last batch is the end-of-run drain, which may follow a timer batch at once
    assert min(between[:-1]) >= 1, summary  # never two batches in one hold of the GUI thread
    assert statistics.median(between) >= 2, summary  # not frozen for a batch interval each time
