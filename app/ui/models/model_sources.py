"""Where models can come from, for the settings dialog. Pure filesystem: the HF cache is
listed by scanning its ``models--ORG--NAME`` folders, without importing huggingface_hub."""

from __future__ import annotations

import os
from pathlib import Path


def hf_hub_cache() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    hf_home = os.environ.get("HF_HOME") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "huggingface"
    )
    return Path(hf_home) / "hub"


def cached_hub_models(cache: Path | None = None) -> list[str]:
    """Hub ids ("ORG/NAME") with at least one downloaded snapshot, sorted."""
    root = cache or hf_hub_cache()
    try:
        entries = list(root.glob("models--*"))
    except OSError:
        return []
    ids = []
    for entry in entries:
        snapshots = entry / "snapshots"
        if snapshots.is_dir() and any(snapshots.iterdir()):
            ids.append(entry.name[len("models--") :].replace("--", "/"))
    return sorted(ids)
