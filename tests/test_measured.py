"""What a load measures is kept per model file and machine (``app.engine.models.measured``): read
back on the next launch, measured again when the file or the machine changed, and a damaged
entry is measured again without a crash. Counted, not timed."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from app.engine import Engine, session
from app.engine.models import forms, measured
from app.engine.models.measured import MeasuredStore, file_identity

MACHINE = "Test CPU · 2 CPUs · AVX2 CPU: oneDNN prepacks float32"


def test_a_value_put_is_got_back_under_the_same_key_only(tmp_path: Path):
    store = MeasuredStore(tmp_path / "measured")
    store.put("kind", ["model a", MACHINE], {"x": [1, 2.5]})
    assert store.get("kind", ["model a", MACHINE]) == {"x": [1, 2.5]}
    assert store.get("kind", ["model b", MACHINE]) is None
    assert store.get("kind", ["model a", "Other CPU · 16 CPUs"]) is None  # another CPU: measured again
    assert store.get("other kind", ["model a", MACHINE]) is None


def test_a_changed_file_has_another_identity(tmp_path: Path):
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF" + bytes(60))
    before = file_identity(model)
    assert file_identity(model) == before
    model.write_bytes(b"GGUF" + bytes(61))  # rewritten: another size
    resized = file_identity(model)
    assert resized != before
    os.utime(model, ns=(1, 1))  # the same size, another time
    assert file_identity(model) not in (before, resized)


def test_a_folder_changes_identity_when_any_of_its_files_does(tmp_path: Path):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(bytes(8))
    before = file_identity(folder)
    (folder / "model.safetensors").write_bytes(bytes(9))
    assert file_identity(folder) != before


@pytest.mark.parametrize("damage", [b"", b"{not json", b"[1, 2]", b'{"format": 1, "key": ["kind", "x"], "value": 3}'])
def test_a_damaged_or_foreign_entry_reads_as_absent(tmp_path: Path, damage: bytes):
    store = MeasuredStore(tmp_path)
    store.put("kind", ["key", MACHINE], {"x": 1})
    (entry,) = tmp_path.glob("kind-*.json")
    entry.write_bytes(damage)
    assert store.get("kind", ["key", MACHINE]) is None
    store.put("kind", ["key", MACHINE], {"x": 2})  # rewritten whole
    assert store.get("kind", ["key", MACHINE]) == {"x": 2}


def test_an_unwritable_store_only_means_measuring_again(tmp_path: Path):
    (tmp_path / "file").write_text("")
    store = MeasuredStore(tmp_path / "file" / "measured")  # a file where its folder should be
    store.put("kind", ["key"], 1)
    assert store.get("kind", ["key"]) is None


# ---------------------------------------------------------------- the exactness answers


def _counting_probe(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    asked: list[tuple[str, int]] = []

    def invariant(kernel: str, k: int = 1024) -> bool:
        asked.append((kernel, k))
        return kernel != "prepacked-bf16"

    monkeypatch.setattr(forms, "batch_invariant", invariant)
    return asked


def test_the_forms_exact_here_are_asked_once_per_machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    asked = _counting_probe(monkeypatch)
    store = MeasuredStore(tmp_path)
    first = forms.offered_forms(sizes=(64, 128), store=store)
    n = len(asked)
    assert n > 0
    assert forms.offered_forms(sizes=(64, 128), store=store) == first  # the same answer and notes
    assert len(asked) == n  # read back, not asked again
    monkeypatch.setattr(forms, "machine_description", lambda: "Other CPU")
    assert forms.offered_forms(sizes=(64, 128), store=store) == first
    assert len(asked) == 2 * n  # another machine asks again


def test_a_damaged_exactness_entry_is_asked_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    asked = _counting_probe(monkeypatch)
    store = MeasuredStore(tmp_path)
    first = forms.offered_forms(sizes=(64,), store=store)
    n = len(asked)
    for entry in tmp_path.glob(f"{forms.EXACT_ROWS}-*.json"):
        entry.write_text('{"format": 1, "key": ')
    assert forms.offered_forms(sizes=(64,), store=store) == first
    assert len(asked) == 2 * n


# ---------------------------------------------------------------- the warm-up's timings


@pytest.fixture
def timed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per warm-up that timed its passes (each then runs as before)."""
    warm_ups: list[int] = []
    real = Engine._time_passes

    def time_passes(engine: Engine, split) -> dict:
        warm_ups.append(1)
        return real(engine, split)

    monkeypatch.setattr(Engine, "_time_passes", time_passes)
    return warm_ups


def test_the_warm_up_times_once_per_model_and_machine_and_replays_the_same_points(
    load_tiny, isolated_cache, timed, monkeypatch: pytest.MonkeyPatch
):
    target = load_tiny("llama")
    first = Engine(target, lookup=True)
    first.warm_up()
    assert len(timed) == 1  # measured and kept
    second = Engine(target, lookup=True)
    second.warm_up()
    assert len(timed) == 1  # read back: nothing timed
    assert second.chooser.costs.buckets == first.chooser.costs.buckets
    assert second.chooser.costs.ratios == first.chooser.costs.ratios
    monkeypatch.setattr(session, "machine_description", lambda: "Other CPU")
    Engine(target, lookup=True).warm_up()
    assert len(timed) == 2  # another machine measures again
    monkeypatch.setattr(session.native, "build_id", lambda: "_q8mm-0123456789ab")
    Engine(target, lookup=True).warm_up()
    assert len(timed) == 3  # so does another build of the kernels (a pass's cost is theirs)


def test_a_changed_model_file_or_a_damaged_entry_is_timed_again(load_tiny, isolated_cache, timed, tiny_models):
    target = load_tiny("llama")
    Engine(target, lookup=True).warm_up()
    weights = next(Path(tiny_models["llama"]).glob("*.safetensors"))
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))  # the file changed
    try:
        Engine(target, lookup=True).warm_up()
        assert len(timed) == 2
        for entry in (isolated_cache / measured.FOLDER).glob(f"{session.WARM_UP_TIMINGS}-*.json"):
            kept = json.loads(entry.read_text())
            entry.write_text(json.dumps({**kept, "value": {"verify": "garbage", "draft": []}}))  # its own key
        Engine(target, lookup=True).warm_up()
        assert len(timed) == 3
    finally:
        os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_a_draft_models_acceptance_is_kept_for_the_next_engine_of_the_same_pair(load_tiny, isolated_cache):
    """Each answer keeps the draft model's acceptance evidence under the pair's files and the
    draft's form; the next engine of that pair starts its chooser from it (not from the prior),
    another pair does not."""
    from app.engine import GenerationConfig
    from app.engine.decoding.cost import MODEL_KEY

    target, draft = load_tiny("llama"), load_tiny("llama-other")
    first = Engine(target, draft)
    first.warm_up()
    assert first.chooser.acceptance.judged[MODEL_KEY] == 0
    first.generate("The quick brown fox", GenerationConfig(max_new_tokens=6, k=2, auto_k=False))
    hits, trials = first.chooser.acceptance.kept(MODEL_KEY)
    assert 0 < trials <= session.KEPT_TRIALS
    second = Engine(target, draft)
    second.warm_up()
    assert second.chooser.acceptance.kept(MODEL_KEY) == pytest.approx((hits, trials), abs=1e-3)
    alpha = first.chooser.acceptance.alpha(MODEL_KEY)
    assert second.chooser.acceptance.alpha(MODEL_KEY) == pytest.approx(alpha, abs=1e-3)
    other = Engine(target, target)  # the target drafting for itself: another pair
    other.warm_up()
    assert other.chooser.acceptance.judged[MODEL_KEY] == 0
