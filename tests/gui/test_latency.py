"""How long the GUI thread is blocked while an answer streams. The figure is recorded, not
asserted (it depends on the machine): see out/tests/gui_latency.json."""

from __future__ import annotations

import json
import os
from pathlib import Path

from gui_helpers import send_and_wait, tiny_settings

from app.ui.latency import GuiLatencyProbe

OUTPUT = Path(os.environ.get("SPECCHAT_TEST_OUTPUT", Path(__file__).parents[2] / "out" / "tests"))


def test_gui_thread_keeps_running_while_an_answer_streams(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models, draft="lookup", max_new_tokens=200))
    batches: list[int] = []
    window.worker.events_ready.connect(lambda _run, steps: batches.append(len(steps)))
    probe = GuiLatencyProbe(interval_ms=5)
    probe.start()
    result = send_and_wait(qtbot, window)
    probe.stop()

    summary = probe.summary() | {
        "steps": len(result.steps),
        "batches": len(batches),
        "new_tokens": result.stats.new_tokens,
        "answer_wall_s": round(result.stats.prefill_s + result.stats.decode_s, 3),
    }
    OUTPUT.mkdir(parents=True, exist_ok=True)
    (OUTPUT / "gui_latency.json").write_text(json.dumps(summary, indent=2))
    print(f"\nworst GUI-thread block while streaming: {summary['worst_gap_ms']} ms {summary}")
    assert sum(batches) == len(result.steps)
    assert summary["ticks"] > len(batches)  # the GUI thread ran between batches, not after the answer
