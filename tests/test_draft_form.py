"""The weights' form (issue 18; the draft's since issue 14 §1): ``auto`` keeps whichever exact
form measured the cheapest pass at load, for the target and the draft (costs injected here: no
timing), forms are compared in interleaved rounds, an explicit form still wins, a form not exact
on this CPU is not offered (and the note says why), and greedy speculation equals target-only
whatever the forms."""

from __future__ import annotations

import pytest

from app.engine import Engine, GenerationConfig
from app.engine.config import LoadOptions
from app.engine.models import forms
from app.engine.models.forms import WeightsForm, offered_forms
from app.engine.runners.cpu_kernels import cpu_kernels_of
from app.engine.runners.cpu_probe import force_probe

GREEDY = GenerationConfig(max_new_tokens=24, k=3)
TINY_SIZES = (64, 128)  # the tiny models' linears' K: what decides the forms offered for them
PROMPT = "The quick brown fox"


@pytest.fixture(autouse=True)
def _native_probe():
    force_probe(None)
    yield
    force_probe(None)


def form_of(model) -> str:
    kernels = cpu_kernels_of(model)
    if kernels is not None and kernels.quantized:
        return kernels.form.split("+")[0]
    return forms.FORM_OF[str(model.dtype).removeprefix("torch.")]


def probe_by_form(costs: dict[str, float]):
    seen = []

    def probe(model) -> float:
        seen.append(form_of(model))
        return costs[form_of(model)]

    probe.seen = seen  # type: ignore[attr-defined]
    return probe


@pytest.mark.parametrize(
    "costs, chosen",
    [
        ({"int4": 0.2, "int8": 0.3, "bf16": 0.5, "fp32": 1.0}, "int4"),
        ({"int4": 0.9, "int8": 0.4, "bf16": 0.5, "fp32": 1.0}, "int8"),
        ({"int4": 0.9, "int8": 0.8, "bf16": 0.7, "fp32": 0.3}, "fp32"),
    ],
)
def test_auto_keeps_the_draft_form_that_measured_cheapest(tiny_models, costs, chosen):
    probe = probe_by_form(costs)
    engine = Engine.load(
        str(tiny_models["llama"]),
        str(tiny_models["llama-draft"]),
        LoadOptions(device="cpu", dtype="float32", draft_weights="auto", draft_probe=probe),
    )
    assert set(probe.seen) == set(offered_forms(sizes=TINY_SIZES)[0])  # every offered form was measured
    assert engine.draft is not None and engine.draft_form is not None and engine.draft_form.form == chosen
    assert engine.draft_form.reason == "measured" and engine.draft_form.pass_s == {
        f: costs[f] for f in offered_forms(sizes=TINY_SIZES)[0]
    }
    assert form_of(engine.draft.model) == chosen
    spec = engine.generate(PROMPT, GREEDY)
    assert spec.made_by is not None and spec.made_by.draft_dtype == forms.DTYPE_OF[chosen]  # provenance names it
    assert spec.made_by.draft_weights == engine.draft.weights_label and chosen in spec.made_by.draft_weights
    assert spec.stats.proposed > 0
    assert spec.token_ids == engine.generate(PROMPT, GenerationConfig(max_new_tokens=24, speculative=False)).token_ids


def test_draft_dtype_is_the_older_name_of_draft_weights(tiny_models):
    probe = probe_by_form({"int4": 0.1, "int8": 0.2, "bf16": 0.3, "fp32": 0.4})
    engine = Engine.load(
        str(tiny_models["llama"]),
        str(tiny_models["llama-draft"]),
        LoadOptions(device="cpu", dtype="float32", draft_weights="auto", draft_probe=probe),
    )
    assert engine.draft_form is not None and engine.draft_form.form == "int4" and probe.seen


@pytest.mark.parametrize("asked, form", [("float32", "fp32"), ("int8", "int8"), ("int4", "int4"), ("bf16", "bf16")])
def test_an_explicit_draft_form_overrides_auto(tiny_models, asked, form):
    probe = probe_by_form({"int4": 0.1, "int8": 0.1, "bf16": 0.1, "fp32": 0.1})
    engine = Engine.load(
        str(tiny_models["llama"]),
        str(tiny_models["llama-draft"]),
        LoadOptions(device="cpu", dtype="float32", draft_weights=asked, draft_probe=probe),
    )
    assert probe.seen == [] and engine.draft is not None and form_of(engine.draft.model) == form
    assert engine.draft_form is not None and (engine.draft_form.form, engine.draft_form.reason) == (form, "asked")


def test_the_target_form_is_chosen_the_same_way_and_named(tiny_models):
    probe = probe_by_form({"int4": 0.5, "int8": 0.2, "bf16": 0.6, "fp32": 0.9})
    options = LoadOptions(device="cpu", weights="auto", target_probe=probe)
    engine = Engine.load(str(tiny_models["llama"]), "lookup", options)
    assert engine.target.dtype == "int8" and engine.target.form is not None
    assert engine.target.form.describe().startswith("int8 (quantized by SpecChat) from fp32 · ")
    assert "auto: fastest of int4 500.0 ms, int8 200.0 ms" in engine.target.form.describe()
    result = engine.generate(PROMPT, GREEDY)
    assert result.made_by is not None and result.made_by.weights == engine.target.weights_label
    assert result.made_by.describe().startswith(f"{engine.target.name} (int8 (quantized by SpecChat) from fp32")


def test_forms_are_compared_in_interleaved_rounds(tiny_models):
    """A burst of load falls on both forms of a comparison, not on one; medians decide."""
    probe = probe_by_form({"int4": 0.5, "int8": 0.2, "bf16": 0.6, "fp32": 0.9})
    Engine.load(str(tiny_models["llama"]), None, LoadOptions(device="cpu", weights="auto", target_probe=probe))
    offered = offered_forms(sizes=TINY_SIZES)[0]
    assert probe.seen[:2 * forms.PROBE_ROUNDS] == [offered[0], offered[1]] * forms.PROBE_ROUNDS


def test_a_form_not_exact_on_this_cpu_is_not_offered_and_the_note_says_why(tiny_models):
    force_probe("avx2")  # as on a CPU that cannot prepack bf16
    offered, notes = offered_forms(sizes=TINY_SIZES)
    assert "bf16" not in offered and any(n.startswith("bf16 is not offered") for n in notes)
    probe = probe_by_form({"int4": 0.5, "int8": 0.2, "bf16": 0.0, "fp32": 0.9})
    engine = Engine.load(str(tiny_models["llama"]), None, LoadOptions(device="cpu", weights="auto", target_probe=probe))
    assert "bf16" not in probe.seen and engine.target.dtype == "int8"
    assert "bf16 is not offered: this CPU cannot prepack bf16" in engine.target.note


def test_the_label_says_who_quantized_and_from_what():
    assert WeightsForm("int4", origin="bf16", by_specchat=True, size_bytes=9 * 10**8).label() == (
        "int4 (quantized by SpecChat) from bf16 · 0.90 GB"
    )
    assert WeightsForm("int4", origin="Q4_K", size_bytes=9 * 10**8).label() == "int4 from Q4_K · 0.90 GB"
    assert WeightsForm("fp32", origin="fp32", size_bytes=2 * 10**9).label() == "fp32 · 2.0 GB"
