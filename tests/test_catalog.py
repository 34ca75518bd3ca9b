"""The model library's engine side: metadata read without weights, pairing verdicts in plain
words, the suggestion rule and the per-pair cache."""

from __future__ import annotations

import json
import shutil
import struct
import sys
from pathlib import Path

import pytest
from tiny_gguf import GGUF_PARAMETERS, write_tiny_gguf
from tiny_models import build_model, build_tokenizer, save
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from transformers import PreTrainedTokenizerFast

from app.engine.models.catalog import (
    LOOKUP,
    ModelEntry,
    PairCheck,
    format_parameters,
    read_gguf_entry,
    read_gguf_header,
    scan_hub_cache,
    scan_models,
    scan_source,
    suggest_draft,
)
from app.engine.models.pairing import PairingChecker, load_tokenizer


@pytest.fixture(scope="module")
def other_models(tmp_path_factory, tokenizer) -> dict[str, Path]:
    """A small draft sharing the tiny tokenizer, and models whose tokenizers differ."""
    root = tmp_path_factory.mktemp("library-models")
    smaller, larger = build_tokenizer(300), build_tokenizer(400)
    assert len(smaller) < len(tokenizer) < len(larger)
    return {
        "small": save(build_model("llama", tokenizer, seed=3, layers=1, hidden=16), tokenizer, root / "sm"),
        "smaller-vocab": save(build_model("llama", smaller, seed=4), smaller, root / "smaller-vocab"),
        "larger-vocab": save(build_model("llama", larger, seed=5), larger, root / "larger-vocab"),
    }


def _entry(path: Path) -> ModelEntry:
    [entry] = scan_source(str(path))
    return entry


def test_parameter_count_from_safetensors_headers_equals_the_models_own(tiny_models, load_tiny):
    from transformers import AutoModelForCausalLM

    entry = _entry(tiny_models["llama"])
    # the checkpoint's own parameters (a loaded model's CPU kernels hold packed copies instead)
    model = AutoModelForCausalLM.from_pretrained(tiny_models["llama"], local_files_only=True)
    real = sum(p.numel() for p in model.parameters())
    assert entry.parameters == real
    assert (entry.architecture, entry.context_length, entry.dtype) == ("LlamaForCausalLM", 512, "float32")
    assert entry.vocab_size == len(load_tiny("llama").tokenizer) and entry.tokenizer.startswith("BPE")
    assert entry.size_bytes == sum(p.stat().st_size for p in tiny_models["llama"].iterdir())


def test_gguf_metadata_is_read_from_the_header(tmp_path):
    entry = _entry(write_tiny_gguf(tmp_path / "tiny.gguf", context_length=1024))
    assert (entry.architecture, entry.parameters, entry.context_length) == ("llama", GGUF_PARAMETERS, 1024)
    assert (entry.dtype, entry.vocab_size, entry.eos_token_ids) == ("F32", 40, (2,))
    assert entry.tokenizer == "BPE (byte-level, tiny)" and entry.usable


def test_the_gguf_scan_reads_no_tensor_data(tmp_path):
    path = write_tiny_gguf(tmp_path / "tiny.gguf")
    full = path.read_bytes()
    header_end = _gguf_header_end(path)
    path.write_bytes(full[:header_end])  # the tensors are gone; the metadata is all there
    entry = _entry(path)
    assert entry.usable and entry.parameters == GGUF_PARAMETERS
    path.write_bytes(full[: header_end - 1])
    assert "truncated or corrupt" in _entry(path).problem


def _gguf_header_end(path: Path) -> int:
    with path.open("rb") as f:
        read_gguf_header(path)  # proves it parses; then find where the header stops
        from app.engine.models.catalog import _Reader

        reader = _Reader(f, path.stat().st_size, path.name)
        reader.bytes(8)
        tensors, kvs = reader.scalar("Q"), reader.scalar("Q")
        for _ in range(kvs):
            reader.string()
            reader.value(reader.scalar("I"))
        for _ in range(tensors):
            reader.string()
            reader.skip(8 * reader.scalar("I") + 12)
        return f.tell()


def test_corrupt_files_become_entries_with_a_problem_not_exceptions(tmp_path, tiny_models):
    (tmp_path / "garbage.gguf").write_bytes(b"not a gguf at all")
    huge = tmp_path / "huge-count.gguf"
    huge.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 1, 2**60))
    broken = shutil.copytree(tiny_models["llama"], tmp_path / "broken")
    (broken / "model.safetensors").write_bytes(struct.pack("<Q", 10**12) + b"{}")
    classifier = shutil.copytree(tiny_models["llama"], tmp_path / "classifier")
    config = json.loads((classifier / "config.json").read_text())
    (classifier / "config.json").write_text(json.dumps({**config, "architectures": ["BertForMaskedLM"]}))
    no_config = tmp_path / "empty-folder"
    no_config.mkdir()
    entries = scan_models(
        [str(p) for p in (tmp_path / "garbage.gguf", huge, broken, classifier, no_config, tmp_path / "gone")],
        hub_cache=tmp_path / "no-hub", include_bundled=False,
    )
    problems = {Path(e.source).name: e.problem for e in entries}
    assert "not a GGUF file" in problems["garbage.gguf"]
    assert "corrupt" in problems["huge-count.gguf"]
    assert "model.safetensors is corrupt" in problems["broken"]
    assert "no config.json" in problems["empty-folder"]
    assert "'BertForMaskedLM' model, which cannot generate text" in problems["classifier"]
    assert "Not found" in problems["gone"]


def test_the_hub_cache_is_listed_by_hub_id_from_its_current_snapshot(tmp_path, tiny_models):
    repo = tmp_path / "models--org--tiny-llama"
    shutil.copytree(tiny_models["llama"], repo / "snapshots" / "abc123")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("abc123")
    (tmp_path / "models--org--empty" / "snapshots").mkdir(parents=True)
    [entry] = scan_hub_cache(tmp_path)
    assert (entry.name, entry.source, entry.kind) == ("org/tiny-llama", "org/tiny-llama", "hub")
    assert entry.parameters == _entry(tiny_models["llama"]).parameters


def test_a_compatible_draft_passes_the_engines_check(tiny_models, other_models, tmp_path):
    checker = PairingChecker(tmp_path / "pairings.json")
    check = checker.check(_entry(tiny_models["llama"]), _entry(other_models["small"]))
    assert check.compatible and check.reason == "" and check.detail == ""


@pytest.mark.parametrize(
    ("draft", "reason", "plain"),
    [
        ("smaller-vocab", "draft_vocab_smaller", "vocabulary is smaller"),
        ("larger-vocab", "draft_vocab_larger", "vocabulary is larger"),
    ],
)
def test_an_incompatible_draft_is_explained_in_plain_words_with_the_technical_detail(
    tiny_models, other_models, tmp_path, draft, reason, plain
):
    checker = PairingChecker(tmp_path / "pairings.json")
    check = checker.check(_entry(tiny_models["llama"]), _entry(other_models[draft]))
    assert not check.compatible and check.reason == reason and plain in check.plain
    assert "vocabulary entries differ" in check.detail  # the engine's own message


def test_a_tokenizer_of_another_family_is_called_a_different_tokenizer(tokenizer, tmp_path):
    words = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(WordLevel({f"w{i}": i for i in range(len(tokenizer))}, unk_token="w0")),
        eos_token="w2",
    )
    tokenizers = {"target": tokenizer, "words": words}
    checker = PairingChecker(tmp_path / "pairings.json", loader=lambda entry: tokenizers[entry.name])
    target = ModelEntry("target", "target", "folder", fingerprint="t")
    check = checker.check(target, ModelEntry("words", "words", "folder", fingerprint="w"))
    assert check.reason == "different_tokenizers"
    assert check.plain == "These two models use different tokenizers."


def test_an_unreadable_tokenizer_is_a_verdict_not_an_exception(tokenizer, tmp_path):
    def loader(entry: ModelEntry):  # type: ignore[no-untyped-def]
        if entry.name == "broken":
            raise OSError("tokenizer.json: unexpected end of file")
        return tokenizer

    checker = PairingChecker(tmp_path / "pairings.json", loader=loader)
    check = checker.check(ModelEntry("target", "target", "folder"), ModelEntry("broken", "broken", "folder"))
    assert (check.compatible, check.reason) == (False, "unreadable")
    assert "unexpected end of file" in check.detail


def test_a_pair_is_checked_once_then_answered_from_the_disk_cache(tiny_models, other_models, tmp_path):
    loads: list[str] = []

    def counting_loader(entry: ModelEntry):  # type: ignore[no-untyped-def]
        loads.append(entry.name)
        return load_tokenizer(entry)

    # a compatible pair: only the tokenizers can tell (an incompatible vocabulary is told
    # from the metadata, see the next test)
    target, draft = _entry(tiny_models["llama"]), _entry(other_models["small"])
    first = PairingChecker(tmp_path / "pairings.json", loader=counting_loader).check(target, draft)
    assert sorted(loads) == ["llama", "sm"] and first.compatible
    later_session = PairingChecker(tmp_path / "pairings.json", loader=counting_loader)
    assert later_session.check(target, draft) == first and len(loads) == 2
    (other_models["small"] / "tokenizer_config.json").touch()  # the draft changed
    later_session.check(target, _entry(other_models["small"]))
    assert len(loads) == 4


def _no_tokenizer(entry: ModelEntry):  # type: ignore[no-untyped-def]
    raise AssertionError(f"built the tokenizer of {entry.name}: the metadata tells already")


@pytest.mark.parametrize(("vocab", "reason"), [(50, "draft_vocab_larger"), (30, "draft_vocab_smaller")])
def test_an_incompatible_gguf_is_told_from_its_header_without_building_a_tokenizer(tmp_path, vocab, reason):
    target = read_gguf_entry(write_tiny_gguf(tmp_path / "target.gguf", vocab=40), str(tmp_path / "target.gguf"))
    other = tmp_path / f"draft{vocab}.gguf"
    draft = read_gguf_entry(write_tiny_gguf(other, vocab=vocab), str(other))
    check = PairingChecker(tmp_path / "pairings.json", loader=_no_tokenizer).check(target, draft)
    assert (check.compatible, check.reason) == (False, reason)
    assert "vocabulary entries differ" in check.detail


def test_an_incompatible_folder_is_told_from_its_tokenizer_json(tiny_models, other_models, tmp_path):
    checker = PairingChecker(tmp_path / "pairings.json", loader=_no_tokenizer)
    check = checker.check(_entry(tiny_models["llama"]), _entry(other_models["larger-vocab"]))
    assert (check.compatible, check.reason) == (False, "draft_vocab_larger")


def test_the_same_gguf_vocabulary_is_left_to_the_tokenizers(tmp_path):
    paths = [write_tiny_gguf(tmp_path / f"{name}.gguf") for name in ("a", "b")]
    entries = [read_gguf_entry(p, str(p)) for p in paths]
    asked: list[str] = []

    def loader(entry: ModelEntry):  # type: ignore[no-untyped-def]
        asked.append(entry.name)
        raise OSError("not built in this test")

    PairingChecker(tmp_path / "pairings.json", loader=loader).check(*entries)
    assert asked  # undecided by the metadata: the engine's own check runs


def test_the_suggestion_is_the_smallest_compatible_draft_several_times_smaller():
    def entry(name: str, parameters: int) -> ModelEntry:
        return ModelEntry(name, name, "folder", parameters=parameters)

    target = entry("target", 1_500_000_000)
    drafts = [
        (entry("tiny", 50_000_000), PairCheck("target", "tiny", False, "end_tokens")),
        (entry("half", 700_000_000), PairCheck("target", "half", True)),
        (entry("small", 360_000_000), PairCheck("target", "small", True)),
        (entry("smaller", 135_000_000), PairCheck("target", "smaller", True)),
    ]
    assert suggest_draft(target, drafts) == "smaller"
    assert suggest_draft(target, drafts[:2]) == LOOKUP  # 700M is not 3x smaller than 1.5B
    assert suggest_draft(entry("small", 100), []) == LOOKUP


def test_parameter_counts_are_shown_in_k_m_and_b():
    assert [format_parameters(n) for n in (648, 123_200, 134_515_008, 1_543_714_304, None)] == [
        "648", "123K", "135M", "1.5B", "?",
    ]


def test_the_catalog_finds_the_bundled_model_where_the_loader_does(monkeypatch, tmp_path):
    from app.engine.models import catalog, loading

    assert catalog.DEFAULT_SOURCE == loading.DEFAULT_SOURCE
    packaged = tmp_path / catalog.BUNDLED_PACKAGE / catalog.BUNDLED_FILE  # a PyInstaller bundle
    packaged.parent.mkdir()
    write_tiny_gguf(packaged)
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    monkeypatch.setattr(sys, "_MEIPASS", str(tmp_path), raising=False)
    assert catalog.find_bundled_model() == loading.bundled_model_path() == packaged
    [entry] = scan_models(hub_cache=tmp_path / "no-hub")
    assert (entry.source, entry.kind, entry.name) == ("default", "default", catalog.BUNDLED_NAME)
