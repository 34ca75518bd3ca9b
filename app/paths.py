"""Where SpecChat's data files live: icons, translations, bench prompts.

One lookup for the three ways the app runs: from a source checkout (``resources/`` beside
``app/``), from an installed wheel (``<prefix>/share/specchat/resources``), and from the
PyInstaller bundle (``resources/`` inside the bundle folder).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def resource_dirs() -> list[Path]:
    dirs = []
    bundle = getattr(sys, "_MEIPASS", None)
    if bundle:
        dirs.append(Path(bundle) / "resources")
    dirs.append(Path(__file__).resolve().parent.parent / "resources")
    dirs.append(Path(sys.prefix) / "share" / "specchat" / "resources")
    return dirs


def resource_path(name: str) -> Path | None:
    """The first existing ``resources/<name>``, or None when no copy is installed."""
    for folder in resource_dirs():
        if (folder / name).exists():
            return folder / name
    return None


def cache_dir() -> Path:
    """SpecChat's cache folder (converted models, measurements): ``SPECCHAT_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/specchat``, else ``~/.cache/specchat``."""
    if os.environ.get("SPECCHAT_CACHE_DIR"):
        return Path(os.environ["SPECCHAT_CACHE_DIR"]).expanduser()
    if os.environ.get("XDG_CACHE_HOME"):
        return Path(os.environ["XDG_CACHE_HOME"]).expanduser() / "specchat"
    return Path.home() / ".cache" / "specchat"
