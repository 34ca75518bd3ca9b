"""The same tokens, the same numbers: a row's logits depend only on the tokens before it, never on
how the prompt was split into passes, on a prefix reused from another conversation's cache, or on
what the engine answered before — for every weights form on every kernel path this CPU has
(``PATHS``; test.sh runs this file again with the CPU probe forced to AVX2 and with
``SPECCHAT_KERNELS=torch``), on every architecture the exactness tests cover.

The mechanism (runners/cpu_kernels.py): every row of every pass — a prompt's too — is attended as
the one-row call single-token decoding makes, and no linear is fed more rows a call than its
batch-invariant kernel takes (``PACK_MAX_ROWS``). Each test asserts that path was taken.
"""

from __future__ import annotations

import pytest
import torch
from test_cpu_kernels import (  # noqa: F401 - path, wide_models and the probe reset are fixtures
    QUANTIZED,
    _on_path,
    _probe_as_the_environment_says,
    _random_ids,
    path,
    wide_models,
)
from transformers import AttentionInterface

from app.engine import Engine, GenerationConfig
from app.engine.config import LoadOptions
from app.engine.models.loading import load_model
from app.engine.runners import cpu_kernels, native
from app.engine.runners.cpu_kernels import ROWWISE, cpu_kernels_of
from app.engine.runners.kv import CachedModel
from app.engine.runners.prepacked import PACK_MAX_ROWS, PrepackedLinear
from app.engine.runners.quant import quantized_layers

PROMPT_ROWS = PACK_MAX_ROWS + 9  # a prompt's pass crosses a linear's chunk of rows


@pytest.fixture
def one_row_attention_only(monkeypatch):
    """Fails the test if any attention call over more than one query row is made (the block SDPA
    a prompt's pass used to run); counts the calls that reach the row-wise attention."""
    seen = {"rowwise": 0}
    block_sdpa = cpu_kernels.sdpa_attention_forward
    rowwise = cpu_kernels.rowwise_attention

    def sdpa_one_row(module, query, *args, **kwargs):
        assert query.shape[2] == 1, f"a block of {query.shape[2]} query rows was attended at once"
        return block_sdpa(module, query, *args, **kwargs)

    def counted(*args, **kwargs):
        seen["rowwise"] += 1
        return rowwise(*args, **kwargs)

    monkeypatch.setattr(cpu_kernels, "sdpa_attention_forward", sdpa_one_row)
    monkeypatch.setitem(AttentionInterface._global_mapping, ROWWISE, counted)
    return seen


def _assert_linears_on_their_path(model, dtype: str) -> None:
    """The weight-only layers run SpecChat's kernels where they are built, torch's elsewhere."""
    if dtype in QUANTIZED:
        layers = quantized_layers(model)
        assert layers and all(layer.native == (native.kernels() is not None) for layer in layers)
    else:
        assert any(isinstance(m, PrepackedLinear) for m in model.modules())


@pytest.mark.parametrize("arch", ["llama", "qwen2", "mistral", "gpt2"])
def test_a_prompt_split_at_any_point_gives_the_logits_of_one_pass(
    wide_models, arch, path, one_row_attention_only  # noqa: F811 - fixtures
):
    dtype, _ = path
    loaded = load_model(wide_models[arch], device="cpu", dtype=dtype)
    kernels = cpu_kernels_of(loaded.model)
    assert kernels is not None and _on_path(kernels, path) and kernels.exact and kernels.attention == ROWWISE
    _assert_linears_on_their_path(loaded.model, dtype)
    ids = _random_ids(PROMPT_ROWS, loaded.vocab_size, seed=21)
    runner = CachedModel(loaded.model, loaded.vocab_size)
    whole = runner.forward(ids, keep=0)  # [T, V]
    assert one_row_attention_only["rowwise"] > 0  # the row-wise attention computed the pass
    for split in range(1, len(ids)):
        runner.reset()
        parts = torch.cat([runner.forward(ids[:split], keep=0), runner.forward(ids[split:], keep=0)])
        assert torch.equal(parts, whole), f"split after {split} of {len(ids)} tokens"


@pytest.fixture
def threads():
    """Sets torch's thread count for the test and puts back the one it found."""
    before = torch.get_num_threads()
    yield torch.set_num_threads
    torch.set_num_threads(before)


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_a_rows_numbers_do_not_depend_on_the_thread_count(wide_models, arch, path, threads):  # noqa: F811
    """A cache written at one thread count and read by rows computed at another (``auto`` threads
    change between answers; the drafter drafts on a thread of its own) gives the logits of one
    thread. Thread counts above the cores are asked on purpose: a kernel that splits a row's
    reduction between threads (ATen's one-row SDPA did, on an AMD EPYC) computes it otherwise
    at each count, whatever the cores."""
    dtype, _ = path
    loaded = load_model(wide_models[arch], device="cpu", dtype=dtype)
    assert _on_path(cpu_kernels_of(loaded.model), path)
    ids = _random_ids(PROMPT_ROWS, loaded.vocab_size, seed=5)
    runner = CachedModel(loaded.model, loaded.vocab_size)
    threads(1)
    whole = runner.forward(ids, keep=0)
    for count in (2, 3, 4):
        runner.reset()
        threads(1)
        first = runner.forward(ids[:20], keep=0)  # the cache written on one thread
        threads(count)
        rest = runner.forward(ids[20:], keep=0)
        assert torch.equal(torch.cat([first, rest]), whole), f"{count} threads"


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_a_prefix_reused_from_another_conversation_gives_a_fresh_passs_logits(wide_models, arch, path):  # noqa: F811
    """The cache holds conversation A (a shared start + A's own tokens + an answer decoded one
    token at a time); conversation B reuses the shared start and feeds the rest in one pass."""
    dtype, _ = path
    loaded = load_model(wide_models[arch], device="cpu", dtype=dtype)
    assert _on_path(cpu_kernels_of(loaded.model), path)
    start = _random_ids(12, loaded.vocab_size, seed=1)
    a = start + _random_ids(30, loaded.vocab_size, seed=2)
    b = start + _random_ids(PROMPT_ROWS, loaded.vocab_size, seed=3)
    reused = CachedModel(loaded.model, loaded.vocab_size)
    reused.forward(a, keep=1)
    for token in _random_ids(6, loaded.vocab_size, seed=4):
        reused.forward([token], keep=1)
    from_cache = reused.continue_from(b, rows=len(b) - len(start))  # rolls back to the shared start
    assert reused.fed_tokens == len(a) + 6 + len(b) - len(start)  # the start was not fed again
    fresh = CachedModel(loaded.model, loaded.vocab_size).forward(b, keep=len(b) - len(start))
    assert torch.equal(from_cache, fresh)


# ---------------------------------------------------------------- the answers

FORMS = ("float32", "bfloat16", "int4", "int8")
# a system message shared by every conversation, as a chat template's default one is: the prefix
# a later conversation reuses from the cache, the rest of its prompt fed in one pass
SYSTEM = "Speculative decoding drafts tokens and the target verifies them in one pass. Hello world!"


def _chat(question: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]


QUESTION = _chat("def add(a, b):\n    return a + b\nThe quick brown fox jumps over the lazy dog.")
OTHERS = (_chat("Café, naïve, déjà vu, 東京, 日本語"), _chat("The quick brown fox jumps over the lazy dog. 🙂 🚀"))
CONFIGS = {
    "greedy": GenerationConfig(max_new_tokens=24),
    "seed-invariant sampling": GenerationConfig(max_new_tokens=24, temperature=0.9, seed=7, sampling="seed-invariant"),
    "standard sampling, plain": GenerationConfig(max_new_tokens=24, temperature=0.9, seed=7, speculative=False),
}


def _answer(engine: Engine, config: GenerationConfig) -> list[tuple[object, ...]]:
    """Each answer token with the target's numbers about it: its probability, the top logit and
    the margin to the second. The same numbers, not only the same tokens: a last-bit change in a
    row shows here before it flips a near tie."""
    return [(t.id, t.p_target, t.top_logit, t.margin) for t in engine.generate(QUESTION, config).tokens]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("drafter", ["none", "lookup", "model"])
def test_the_same_question_gets_the_same_answer_whatever_was_asked_before(wide_models, form, drafter):  # noqa: F811 - a fixture
    """A fresh engine's answer, and the same engine's answer after two other conversations (whose
    caches share the chat template's start, and whose steps moved the k chooser), and a second
    fresh engine's: one answer, and the same numbers about each of its tokens, for greedy and both
    kinds of seeded sampling."""
    draft = {"none": None, "lookup": "lookup", "model": wide_models["qwen2"]}[drafter]

    def load() -> Engine:
        return Engine.load(wide_models["llama"], draft, LoadOptions(device="cpu", dtype=form, draft_weights=form))

    engine = load()
    _assert_linears_on_their_path(engine.target.model, {"float32": "fp32", "bfloat16": "bf16"}.get(form, form))
    for name, config in CONFIGS.items():
        first = _answer(engine, config)
        for other in OTHERS:
            engine.generate(other, config)
        assert _answer(engine, config) == first, f"{name}: changed after other conversations"
        assert _answer(load(), config) == first, f"{name}: a fresh engine answered otherwise"


@pytest.mark.slow
@pytest.mark.parametrize("form", ["int4", "int8"])
def test_the_bundled_model_answers_a_haiku_the_same_after_another_question(form):
    """The report that found it (issue 32): 60 tokens against 35 (int4), 38 against 43 (int8)."""
    config = GenerationConfig(max_new_tokens=60)
    engine = Engine.load(target="default", draft="lookup", options=LoadOptions(weights=form))
    haiku, rainy = "Write a haiku about autumn.", "Give me three ideas for a rainy Sunday afternoon."
    first = engine.generate(haiku, config)
    engine.generate(rainy, config)
    again = engine.generate(haiku, config)
    plain = engine.generate(haiku, GenerationConfig(max_new_tokens=60, speculative=False))
    assert [t.id for t in again.tokens] == [t.id for t in first.tokens] == [t.id for t in plain.tokens]
