"""Print the worst GUI-thread block while an answer streams in the real app.

    python tools/gui_latency.py                       # bundled model + prompt lookup
    python tools/gui_latency.py --target DIR --draft DIR --max-new-tokens 200

A 5 ms timer on the GUI thread records the gaps between its ticks from "send" to the end of
the answer; the worst gap is how long the window could not repaint or react.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness import PROMPT, model_settings, open_window, send_and_wait, start_app

from app.ui.common.latency import GuiLatencyProbe
from app.ui.settings.store import AppSettings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--target", help="model folder, .gguf or hub id (default: bundled)")
    parser.add_argument("--draft", default="lookup", help="'lookup', 'none' or a model source")
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--prompt", default=PROMPT)
    args = parser.parse_args(argv)

    app = start_app()
    settings = replace(
        AppSettings(), models=model_settings(args.target, args.draft), max_new_tokens=args.max_new_tokens
    )
    window = open_window(settings)
    batches: list[int] = []
    window.worker.events_ready.connect(lambda _run, steps: batches.append(len(steps)))
    probe = GuiLatencyProbe(interval_ms=5)
    probe.start()
    result = send_and_wait(window, args.prompt)
    probe.stop()
    summary = probe.summary() | {
        "steps": len(result.steps),
        "batches": len(batches),
        "new_tokens": result.stats.new_tokens,
        "tokens_per_s": round(result.stats.tokens_per_s, 2),
        "target": window.model_label.text(),
    }
    print(json.dumps(summary, indent=2))
    window.close()
    app.processEvents()
    return 0


if __name__ == "__main__":
    sys.exit(main())
