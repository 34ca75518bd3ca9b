"""How soon the app can answer after its window opens, and what a first GGUF load costs. From the
project's root:

    python tools/startup_time.py [GGUF ...] [--warm N] [--json] [--no-window]

Every figure comes from a fresh process, with a temporary cache folder (``SPECCHAT_CACHE_DIR``),
settings folder and conversations folder, so the person's own files are neither used nor touched.

- ``window``: the app as ``python -m app`` starts it (``app.gui.main``, offscreen Qt where there is
  no display) on the bundled model and prompt lookup. ``shown_s``: from the process's start to the
  window's first paint; ``ready_s``: from that paint to the worker's ``loaded`` signal reaching the
  window (the first message is answered from then on); ``launch_to_ready_s``: their sum.
  ``cold``: a first launch (fresh caches); ``warm``: ``--warm`` launches after it with the caches
  it left (their median; each run listed). ``stages``: ``ready_s`` in the parts the window hears
  of: torch's import (until the worker's ``devices_found``), the rest of the engine's imports
  (until the load's first progress message), then each progress message until the next, the
  last until ``loaded`` (a warm median: each stage's).
- ``first_load``: a first load of each GGUF (the bundled one, then those named), fresh cache:
  ``Engine.load(path, "lookup")`` then ``warm_up()``, as the app's worker loads. ``load_s``,
  ``warm_up_s``; MiB: ``base`` (RSS after the imports, a conversion's too), ``peak`` (VmHWM after the load), ``file``;
  ``ratio``: (peak − base) ÷ file, what the load itself costs against the file.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

LAUNCH_TIMEOUT_S = 600
CONVERSION_IMPORTS = (  # what a first load imports besides the engine (``load_child``)
    "transformers.modeling_utils", "transformers.modeling_gguf_pytorch_utils",
    "transformers.models.auto.modeling_auto", "transformers.models.auto.tokenization_auto",
)
MARK = "startup-time: "  # the child's one line of JSON on stdout


def _status(key: str) -> float:  # MiB
    return int(Path("/proc/self/status").read_text().split(f"{key}:")[1].split()[0]) / 1024


def _isolated_env(root: Path) -> dict[str, str]:
    """The environment of a child whose cache, settings and data live under ``root``."""
    from app.ui.common.storage import DATA_DIR_ENV  # torch-free

    env = dict(os.environ, SPECCHAT_CACHE_DIR=str(root / "cache"), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env[DATA_DIR_ENV] = str(root / "data")
    env["STARTUP_TIME_SETTINGS"] = str(root / "settings")
    if not env.get("DISPLAY") and not env.get("WAYLAND_DISPLAY"):
        env.setdefault("QT_QPA_PLATFORM", "offscreen")
    return env


def _child(args: list[str], root: Path) -> dict[str, Any]:
    """Run this script's ``args`` in a fresh process isolated under ``root``; its JSON line."""
    started = time.time()
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), *args], cwd=ROOT, env=_isolated_env(root),
        capture_output=True, text=True, timeout=LAUNCH_TIMEOUT_S, check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith(MARK)]
    if not lines:
        raise SystemExit(f"{' '.join(args)} failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    result: dict[str, Any] = json.loads(lines[-1][len(MARK) :])
    if "painted_at" in result:
        result["shown_s"] = result.pop("painted_at") - started
        result["launch_to_ready_s"] = result["shown_s"] + result["ready_s"]
    return result


# ---------------------------------------------------------------- the window (child)


def window_child() -> int:
    """``app.gui.main`` as it runs; an event filter notes the main window's first paint and its
    worker's ``loaded``, prints the figures and closes the window."""
    from PySide6.QtCore import QEvent, QObject, QSettings, QTimer
    from PySide6.QtWidgets import QApplication

    from app import gui
    from app.ui.main_window import MainWindow

    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, os.environ["STARTUP_TIME_SETTINGS"])
    app = QApplication(["specchat"])
    figures: dict[str, Any] = {}

    marks: list[tuple[str, float]] = []  # (the stage that starts, when), as the window hears of it

    def mark(stage: str) -> None:
        if not marks or marks[-1][0] != stage:
            marks.append((stage, time.perf_counter()))

    def on_loaded(window: MainWindow) -> None:
        now = time.perf_counter()
        painted = figures.pop("painted")
        figures["ready_s"] = now - painted
        # from the paint: torch's import until the devices are probed, then the rest of the engine's
        # imports until the load's first progress message, then each message until the next
        starts = [("torch import", painted), *((stage, max(at, painted)) for stage, at in marks)]
        ends = [at for _, at in starts[1:]] + [now]
        figures["stages"] = [[stage, end - at] for (stage, at), end in zip(starts, ends)]
        figures["model"] = window.model_label.text()
        print(MARK + json.dumps(figures), flush=True)
        QTimer.singleShot(0, window.close)

    class FirstPaint(QObject):
        def eventFilter(self, watched: QObject, event: QEvent) -> bool:
            if isinstance(watched, MainWindow):
                if event.type() == QEvent.Type.Show and "connected" not in figures:
                    figures["connected"] = True  # before run_app calls window.start()
                    watched.worker.loaded.connect(lambda *_: on_loaded(watched))
                    # the load's stages as the window hears of them (``on_loaded``)
                    watched.worker.devices_found.connect(lambda *_: mark("transformers + engine import"))
                    watched.worker.load_progress.connect(lambda message, _f: mark(message))
                elif event.type() == QEvent.Type.Paint and "painted" not in figures:
                    figures["painted"], figures["painted_at"] = time.perf_counter(), time.time()
                    app.removeEventFilter(self)  # a Python call per event would slow the app it measures
            return False

    spy = FirstPaint()
    app.installEventFilter(spy)
    code = gui.main([])
    figures.pop("connected", None)
    return code if "ready_s" in figures else 1


# ---------------------------------------------------------------- a first load (child)


def load_child(source: str) -> int:
    from app.engine import Engine
    from app.engine.models.loading import bundled_model_path

    path = bundled_model_path() if source == "default" else Path(source)
    # a first load converts: transformers reads the file's header and lays out the model with its own
    # classes, importing its modeling code, which a warm launch never imports (runners/llama_family.py).
    # That is code, not the load's data: imported before the base, as it was with the engine's imports
    for module in CONVERSION_IMPORTS:
        importlib.import_module(module)

    base = _status("VmRSS")
    started = time.perf_counter()
    engine = Engine.load(source, "lookup")
    loaded = time.perf_counter()
    engine.warm_up()
    warmed = time.perf_counter()
    peak, file = _status("VmHWM"), path.stat().st_size / 2**20
    figures = {
        "gguf": path.name, "load_s": loaded - started, "warm_up_s": warmed - loaded, "base": base, "peak": peak,
        "file": file, "ratio": (peak - base) / file, "weights": engine.target.weights_label,
    }
    print(MARK + json.dumps(figures), flush=True)
    return 0


# ---------------------------------------------------------------- the parent


def measure(ggufs: list[str], warm: int, window: bool) -> dict[str, Any]:
    report: dict[str, Any] = {}
    if window:
        with tempfile.TemporaryDirectory(prefix="specchat-startup-") as root:
            cold = _child(["--child", "window"], Path(root))
            warms = [_child(["--child", "window"], Path(root)) for _ in range(warm)]
        report["window"] = {"cold": cold, "warm": _median(warms) if warms else None, "warm_runs": warms}
    report["first_load"] = []
    for source in ["default", *ggufs]:
        with tempfile.TemporaryDirectory(prefix="specchat-load-") as root:
            report["first_load"].append(_child(["--child", "load", source], Path(root)))
    return report


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    first = runs[0]
    median = {k: statistics.median(run[k] for run in runs) if isinstance(v, float) else v for k, v in first.items()}
    names = [[stage for stage, _ in run.get("stages", [])] for run in runs]
    if all(n == names[0] for n in names):  # the same stages in every run: each stage's median
        median["stages"] = [[stage, statistics.median(run["stages"][i][1] for run in runs)]
                            for i, stage in enumerate(names[0])]
    else:
        median.pop("stages", None)
    return median


def _stages(run: dict[str, Any]) -> str:
    """ "torch import 1.10 · transformers + engine import 2.61 · …" (seconds, from the paint)."""
    return " · ".join(f"{stage.rstrip('…')} {seconds:.2f}" for stage, seconds in run.get("stages", []))


def _print(report: dict[str, Any]) -> None:
    window = report.get("window")
    if window:
        for name in ("cold", "warm"):
            run = window[name]
            if run is not None:
                each = ", ".join(f"{r['ready_s']:.2f}" for r in window["warm_runs"])
                every = f" ({each})" if name == "warm" else ""
                print(f"{name} start: window painted {run['shown_s']:.2f} s after launch, ready "
                      f"{run['ready_s']:.2f} s after that{every}, {run['launch_to_ready_s']:.2f} s after launch")
                if run.get("stages"):
                    print(f"  of which{' (medians)' if name == 'warm' else ''}: {_stages(run)}")
    for run in report["first_load"]:
        print(f"first load of {run['gguf']} ({run['weights']}): load {run['load_s']:.1f} s + warm-up "
              f"{run['warm_up_s']:.1f} s; peak {run['peak']:.0f} MiB over {run['base']:.0f} after the imports: "
              f"+{run['peak'] - run['base']:.0f} MiB = {run['ratio']:.2f}× the file ({run['file']:.0f} MiB)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("ggufs", nargs="*", help="more .gguf files to measure a first load of")
    parser.add_argument("--warm", type=int, default=3, help="warm launches after the cold one (default 3)")
    parser.add_argument("--no-window", action="store_true", help="only the first loads")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return window_child() if args.child[0] == "window" else load_child(args.child[1])
    report = measure(args.ggufs, max(0, args.warm), not args.no_window)
    print(json.dumps(report, indent=1)) if args.json else _print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
