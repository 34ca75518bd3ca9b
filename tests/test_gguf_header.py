"""A GGUF's first load reads its header once and its tensors one at a time (issue 18: peak memory
after loading ≤ 2× the file). gguf's ``GGUFReader`` holds ~1.6× the bundled file in Python
objects while it lives, and transformers made one for the config and one for the tokenizer while
the loader held a third: these tests count the parses, which is what a peak-RSS regression would
come back through, and check that what transformers derives from the one parse is unchanged."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType as Q
from tiny_gguf import write_gguf
from tiny_models import build_model, build_tokenizer
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

from app.engine.models import gguf_forms, gguf_header, gguf_model
from app.engine.models.gguf_header import GgufHeader, lent
from app.engine.models.loading import load_model

pytestmark = pytest.mark.usefixtures("isolated_cache")  # every test converts into its own cache (conftest)


@pytest.fixture(scope="module")
def tok():
    return build_tokenizer()


@pytest.fixture(scope="module")
def q4_gguf(tok, tmp_path_factory) -> Path:
    model = build_model("llama", tok, seed=0, scale=30.0)
    return write_gguf(model, tok, tmp_path_factory.mktemp("gguf") / "tiny-q4.gguf", Q.Q4_1, embedding=Q.Q8_0)


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many times the file's header is parsed, by our reader and by gguf's."""
    counts = {"header": 0, "GGUFReader": 0}
    read, reader_init = GgufHeader.read.__func__, gguf.GGUFReader.__init__  # type: ignore[attr-defined]

    def counted_read(cls, path):
        counts["header"] += 1
        return read(cls, path)

    def counted_init(self, *args, **kwargs):
        counts["GGUFReader"] += 1
        reader_init(self, *args, **kwargs)

    monkeypatch.setattr(GgufHeader, "read", classmethod(counted_read))
    monkeypatch.setattr(gguf.GGUFReader, "__init__", counted_init)
    return counts


def test_a_first_load_parses_the_gguf_header_once_and_a_second_not_at_all(q4_gguf, parses):
    first = load_model(str(q4_gguf), device="cpu")
    assert parses == {"header": 1, "GGUFReader": 0}
    second = load_model(str(q4_gguf), device="cpu")
    assert parses == {"header": 1, "GGUFReader": 0}
    ids = torch.tensor([first.tokenizer.encode("The quick brown fox")])
    with torch.no_grad():
        assert torch.equal(first.model(ids).logits, second.model(ids).logits)


def test_a_float_conversion_parses_the_header_once_and_keeps_transformers_weights(q4_gguf, parses):
    """The fp32 path (transformers' own GGUF loading, then cached as safetensors): its config,
    tokenizer and tensor readers answer from one parse, and the weights are what transformers
    reads from the file itself."""
    converted = load_model(str(q4_gguf), device="cpu", weights="fp32", cpu_kernels=False)
    assert parses == {"header": 1, "GGUFReader": 0}
    own = AutoModelForCausalLM.from_pretrained(str(q4_gguf.parent), gguf_file=q4_gguf.name, dtype=torch.float32)
    assert parses["GGUFReader"] >= 1  # unlent, transformers parses the file itself
    theirs = dict(own.named_parameters())
    ours = dict(converted.model.named_parameters())
    assert ours.keys() == theirs.keys() and all(torch.equal(ours[n], theirs[n]) for n in theirs)


def test_the_config_and_tokenizer_derived_from_the_lent_header_are_transformers_own(q4_gguf, parses):
    folder, name = q4_gguf.parent, q4_gguf.name
    config = AutoConfig.from_pretrained(folder, gguf_file=name).to_dict()
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    assert parses["GGUFReader"] >= 1  # unlent: transformers parses the file itself
    counted = dict(parses)
    with lent(GgufHeader.read(q4_gguf)):
        lent_config = AutoConfig.from_pretrained(folder, gguf_file=name).to_dict()
        lent_tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    assert parses["GGUFReader"] == counted["GGUFReader"]  # lent: not once more
    assert lent_config == config
    assert type(lent_tokenizer) is type(tokenizer) and lent_tokenizer.get_vocab() == tokenizer.get_vocab()
    text = "The quick brown fox, naïve café 東京 🙂"
    assert lent_tokenizer.encode(text) == tokenizer.encode(text)
    assert lent_tokenizer.chat_template == tokenizer.chat_template
    assert lent_tokenizer.special_tokens_map == tokenizer.special_tokens_map


def test_the_header_reads_the_same_fields_and_tensors_as_gguf_reader(q4_gguf):
    header = GgufHeader.read(q4_gguf)
    reader = gguf.GGUFReader(q4_gguf)
    assert [t.name for t in header.tensors] == [t.name for t in reader.tensors]
    for ours, theirs in zip(header.tensors, reader.tensors, strict=True):
        assert ours.shape == tuple(int(d) for d in theirs.shape) and ours.tensor_type == theirs.tensor_type
        assert np.array_equal(header.data(ours), theirs.data) and header.data(ours).dtype == theirs.data.dtype
    assert header.fields.keys() == reader.fields.keys()
    assert header.architecture == "llama"
    tokens = reader.fields["tokenizer.ggml.tokens"]
    assert header.fields["tokenizer.ggml.tokens"][1][1] == [bytes(tokens.parts[i]).decode() for i in tokens.data]


@pytest.mark.parametrize("keep", [0.3, 0.9, 0.999])
def test_a_truncated_gguf_is_unreadable_not_a_crash(q4_gguf, tmp_path, keep):
    cut = tmp_path / "cut.gguf"
    data = q4_gguf.read_bytes()
    cut.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(gguf_header.UnreadableHeader):
        GgufHeader.read(cut)


def test_a_wide_tensor_is_converted_in_chunks_that_hold_a_bounded_number_of_weights(monkeypatch):
    """The float copy a conversion decodes is ``CHUNK_ELEMENTS`` weights at most, however long a row:
    the embedding of a large vocabulary (the biggest tensor of a small model) is never whole in fp32."""
    k, n = 512, 96
    raw = gguf.quants.quantize(np.random.default_rng(0).standard_normal((n, k)).astype(np.float32) * 0.02, Q.Q8_0)
    whole = gguf_forms.form_of(raw, Q.Q8_0, k)
    decoded: list[int] = []
    real = gguf_forms._dequantized

    def counted(rows, qtype, kk):
        out = real(rows, qtype, kk)
        decoded.append(out.numel())
        return out

    monkeypatch.setattr(gguf_forms, "CHUNK_ELEMENTS", 10 * k)
    monkeypatch.setattr(gguf_forms, "_dequantized", counted)
    chunked = gguf_forms.form_of(raw, Q.Q8_0, k)
    assert max(decoded) <= 10 * k and sum(decoded) == n * k
    assert torch.equal(chunked.q, whole.q) and torch.equal(chunked.scale, whole.scale)  # type: ignore[union-attr]


def test_cached_shards_are_read_one_tensor_at_a_time(q4_gguf, monkeypatch):
    """A load never holds a whole shard's bytes: each tensor is read into its own buffer."""
    load_model(str(q4_gguf), device="cpu")
    monkeypatch.setattr(Path, "read_bytes", lambda self: pytest.fail(f"{self.name} read whole"))
    assert gguf_model.forms_of(load_model(str(q4_gguf), device="cpu").model) is not None


@pytest.mark.parametrize("strings", [(), ("tokenizer.ggml.tokens", "tokenizer.ggml.merges")])
def test_transformers_fast_metadata_reader_answers_the_same_from_the_lent_header(q4_gguf, strings):
    fast = pytest.importorskip("transformers.integrations.gguf.reader")
    theirs = fast.read_gguf_metadata(str(q4_gguf), strings)  # not lent: transformers' own parse
    with lent(GgufHeader.read(q4_gguf)):
        ours = fast.read_gguf_metadata(str(q4_gguf), strings)
    assert ours == theirs
