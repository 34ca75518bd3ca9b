"""run.sh names the X11 libraries Qt's xcb plugin lacks (and the packages holding them)
before the window would fail with Qt's generic "could not load the Qt platform plugin xcb"."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "check-qt-libs.sh"
LDD_OUTPUT = """\tlinux-vdso.so.1 (0x00007ffd)
\tlibxcb-cursor.so.0 => not found
\tlibxcb-icccm.so.4 => not found
\tlibxcb-keysyms.so.1 => not found
\tlibxcb-keysyms.so.1 => not found
\tlibweird.so.7 => not found
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f)
"""


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    fake_ldd = tmp_path / "ldd"
    fake_ldd.write_text(f"#!/bin/sh\ncat <<'END'\n{LDD_OUTPUT}END\n")
    fake_ldd.chmod(0o755)
    plugin = tmp_path / "libqxcb.so"
    plugin.write_bytes(b"")
    base = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "QT_QPA_PLATFORM", "WAYLAND_DISPLAY")}
    base.update(SPECCHAT_LDD=str(fake_ldd), SPECCHAT_QXCB=str(plugin), **env)
    return subprocess.run(["bash", str(SCRIPT)], env=base, capture_output=True, text=True, timeout=30)


def test_missing_xcb_libraries_are_named_with_their_packages(tmp_path):
    checked = _run(tmp_path, DISPLAY=":0")
    assert checked.returncode == 1
    for package in ("libxcb-cursor0", "libxcb-icccm4", "libxcb-keysyms1"):
        assert package in checked.stderr
    assert "apt-get install libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1" in checked.stderr
    assert "libweird.so.7" in checked.stderr  # no known package: named as the library


def test_the_check_runs_only_when_qt_would_pick_xcb(tmp_path):
    for env in ({}, {"DISPLAY": ":0", "QT_QPA_PLATFORM": "offscreen"}, {"DISPLAY": ":0", "WAYLAND_DISPLAY": "w"}):
        checked = _run(tmp_path, **env)
        assert (checked.returncode, checked.stderr) == (0, ""), env


def test_run_sh_checks_before_the_window_and_the_readme_lists_the_packages():
    run = (ROOT / "run.sh").read_text()
    assert run.index("check-qt-libs.sh") < run.index("exec ")
    readme = (ROOT / "README.md").read_text()
    assert all(p in readme for p in ("libxcb-cursor0", "libxcb-icccm4", "libxcb-keysyms1"))
