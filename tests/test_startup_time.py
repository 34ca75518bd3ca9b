"""tools/startup_time.py runs the app and first loads in fresh, isolated processes and reports
every figure it names (no timed assertion: only that each was measured and is consistent)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from app.engine.models.catalog import find_bundled_model

ROOT = Path(__file__).resolve().parent.parent


def test_the_startup_tool_reports_the_window_and_first_load_figures(tmp_path: Path):
    bundled = find_bundled_model()
    assert bundled is not None
    # a home of its own: what the tool leaves there is the tool's (other tests running beside this
    # one in the suite write their own measurements to the real home's cache)
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("SPECCHAT_CACHE_DIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME")}
    env["HOME"] = str(home)
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "startup_time.py"), "--warm", "1", "--json", str(bundled)],
        cwd=ROOT, capture_output=True, text=True, timeout=1200, check=False, env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    window = report["window"]
    for run in (window["cold"], window["warm"], *window["warm_runs"]):
        assert 0 < run["shown_s"] < run["launch_to_ready_s"]
        assert run["ready_s"] > 0
        assert abs(run["shown_s"] + run["ready_s"] - run["launch_to_ready_s"]) < 1e-6
        assert "prompt lookup" in run["model"]  # the window names the models that answer
        stages = dict(run["stages"])  # ready_s in the parts the window heard of, in order
        assert list(stages)[:2] == ["torch import", "transformers + engine import"]
        assert "Loading weights…" in stages and all(seconds >= 0 for seconds in stages.values())
        assert abs(sum(stages.values()) - run["ready_s"]) < 1e-6
    assert len(window["warm_runs"]) == 1
    loads = report["first_load"]
    assert [run["gguf"] for run in loads] == [bundled.name, bundled.name]  # the bundled one, then the path given
    for run in loads:
        assert run["load_s"] > 0 and run["warm_up_s"] > 0
        assert run["peak"] > run["base"] > 0
        assert run["file"] == bundled.stat().st_size / 2**20
        assert run["ratio"] == (run["peak"] - run["base"]) / run["file"]
        assert "int4" in run["weights"]
    assert not (home / ".cache" / "specchat").exists()  # the person's own cache is left alone
    assert not (home / ".config").exists()  # and their settings
