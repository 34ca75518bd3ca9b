"""What a load measures, kept per model file and machine, so a second launch need not measure it
again: the k chooser's first pass timings (``Engine.warm_up``) and which weights forms are exact
on this CPU (``forms.offered_forms``).

An entry is one small JSON file named by the hash of its key. The key lists everything the
answer depends on: each model file's path, size and modification time (``file_identity``), and
the machine (``machine_description``: the CPU, its core count, torch's version and the kernels
in use), plus ``FORMAT``. A changed file, another CPU or another version makes another key, so
it is measured again. A file that cannot be read, does not parse or holds another key is treated
as absent: the answer is measured again and the entry rewritten. Nothing but JSON is read.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

FORMAT = 1  # of an entry; another number is measured again
FOLDER = "measured"  # under the cache folder (``loading.cache_dir``)


def file_identity(path: Path) -> str:
    """``path``'s resolved name, size and modification time: what says a file is the same file.
    A folder: each of its files' (a model folder's config, tokenizer and weights)."""
    path = path.resolve()
    if path.is_dir():
        return "|".join(file_identity(p) for p in sorted(path.iterdir()) if p.is_file())
    stat = path.stat()
    return f"{path}|{stat.st_size}|{stat.st_mtime_ns}"


@functools.cache
def machine_description() -> str:
    """The CPU (model name, the instructions the kernels use, what oneDNN prepacks), its core
    count, torch's version and the kernels SpecChat computes with: what a measured time or an
    exactness answer depends on besides the model. Asked once per process."""
    import torch

    from app.engine.runners import native
    from app.engine.runners.cpu_probe import probe

    return " · ".join((
        _cpu_model_name(), f"{os.cpu_count()} CPUs", probe().describe(), f"torch {torch.__version__}",
        native.describe(),
    ))


def _cpu_model_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name":
                    return value.strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


class MeasuredStore:
    """Entries in ``folder``: ``get(kind, key)`` → the value ``put`` stored, or None."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, kind: str, key: Sequence[str]) -> Path:
        digest = hashlib.sha256(json.dumps([FORMAT, kind, *key]).encode()).hexdigest()[:16]
        return self.folder / f"{kind}-{digest}.json"

    def get(self, kind: str, key: Sequence[str]) -> Any:
        """The value stored under ``key``, or None (none stored, unreadable, or another key's)."""
        try:
            entry = json.loads(self._path(kind, key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("key") != [kind, *key]:
            return None
        return entry.get("value")

    def put(self, kind: str, key: Sequence[str], value: Any) -> None:
        """Store ``value`` (JSON) under ``key``, atomically; a cache that cannot be written only
        means measuring again next time."""
        path = self._path(kind, key)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(prefix=f".{path.name}-", dir=self.folder)
        except OSError:
            return
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"format": FORMAT, "key": [kind, *key], "value": value}, f)
            os.replace(temp, path)
        except OSError:
            Path(temp).unlink(missing_ok=True)
