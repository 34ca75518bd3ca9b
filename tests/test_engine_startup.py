"""A launch's engine imports (app/engine/startup.py): with Python's cyclic collector paused, what
they made frozen, and the collector running again after, also when an import fails. Each case
runs in a fresh interpreter: a freeze cannot be undone for the objects of the test process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(code: str, folder: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, capture_output=True, text=True,
        timeout=300, check=False, env=dict(os.environ, PYTHONPATH=f"{folder}{os.pathsep}{ROOT}"),
    )
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-2000:]


def test_the_engine_imports_with_the_collector_paused_then_frozen(tmp_path: Path):
    stand_in = "import gc\nENABLED = gc.isenabled()\nMADE = [[] for _ in range(1000)]\n"
    (tmp_path / "heavy_stand_in.py").write_text(stand_in)
    _run(
        """
        import gc, sys
        from app.engine.startup import import_engine
        assert gc.isenabled() and gc.get_freeze_count() == 0
        assert import_engine(("heavy_stand_in",))
        import heavy_stand_in
        assert heavy_stand_in.ENABLED is False, "imported while the collector ran"
        assert gc.isenabled(), "the collector stays paused"
        frozen = gc.get_freeze_count()
        assert frozen >= 1000, frozen  # what the import made is in the permanent generation
        assert import_engine(("heavy_stand_in",))  # imported already: nothing paused, nothing frozen
        assert gc.get_freeze_count() == frozen
        """,
        tmp_path,
    )


def test_an_engine_that_cannot_be_imported_leaves_the_collector_running(tmp_path: Path):
    (tmp_path / "broken_stand_in.py").write_text("raise ImportError('no such library')\n")
    _run(
        """
        import gc
        from app.engine.startup import import_engine
        assert import_engine(("broken_stand_in",)) is False  # said later by the load that needs it
        assert gc.isenabled()
        gc.disable()  # a caller that had paused it itself: left paused
        assert import_engine(("broken_stand_in",)) is False
        assert not gc.isenabled()
        """,
        tmp_path,
    )


def test_the_engine_thread_imports_torch_with_the_collector_paused(tmp_path: Path):
    _run(
        """
        import gc, sys
        from app.worker.engine_worker import _probe_devices_list
        assert "torch" not in sys.modules and gc.get_freeze_count() == 0
        assert "cpu" in _probe_devices_list()
        assert gc.isenabled() and gc.get_freeze_count() > 100_000, gc.get_freeze_count()
        """,
        tmp_path,
    )
