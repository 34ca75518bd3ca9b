"""Shared fixtures: tiny random models saved to folders and loaded through the app's own
loading code (no weights, no network)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _pin_xdist_worker() -> None:
    """Under ``pytest -n N`` (test.sh), worker i runs on core i of those allowed, and so do the
    servers it starts: each worker's torch then sees one core and takes one thread, instead of
    N workers each taking every core (oversubscribed threads collapse speed)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if not worker.startswith("gw") or not hasattr(os, "sched_setaffinity"):
        return
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) > 1:
        os.sched_setaffinity(0, {allowed[int(worker[2:]) % len(allowed)]})


_pin_xdist_worker()

from servers import server_logs, servers  # noqa: E402, F401 - real inference servers, started on first use
from tiny_models import build_model, build_tokenizer, perturbed_copy, save  # noqa: E402 - after the pinning

# name -> how to build it: (architecture, seed, draft noise or None)
TINY = {
    "llama": ("llama", 0, None),
    "llama-draft": ("llama", 0, 0.05),  # well matched: the target plus a little noise
    "llama-other": ("llama", 7, None),  # mismatched: an unrelated random model
    "qwen2": ("qwen2", 1, None),
    "qwen2-draft": ("qwen2", 1, 0.05),
    "qwen2-other": ("qwen2", 8, None),
}


@pytest.fixture
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``SPECCHAT_CACHE_DIR`` in this test's tmp folder: its conversions are its own."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("SPECCHAT_CACHE_DIR", str(cache))
    return cache


@pytest.fixture(scope="session")
def tokenizer():
    return build_tokenizer()


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory, tokenizer) -> dict[str, Path]:
    """Folders of tiny models, keyed by the names in ``TINY``."""
    root = tmp_path_factory.mktemp("tiny-models")
    folders = {}
    for name, (arch, seed, noise) in TINY.items():
        model = build_model(arch, tokenizer, seed=seed, scale=30.0)
        if noise is not None:
            model = perturbed_copy(model, noise, seed=seed + 100)
        folders[name] = save(model, tokenizer, root / name)
    return folders


@pytest.fixture(scope="session")
def load_tiny(tiny_models):
    """Load a tiny model through ``load_model`` once per session."""
    from app.engine.models.loading import load_model

    cache = {}

    def load(name: str, form: str = "float32"):
        """``form``: the weights' form (float32, bfloat16, int8, int4)."""
        if (name, form) not in cache:
            cache[name, form] = load_model(str(tiny_models[name]), device="cpu", dtype=form)
        return cache[name, form]

    return load
