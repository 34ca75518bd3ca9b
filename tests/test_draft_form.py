"""The draft's form (issue 14 §1): ``--draft-dtype auto`` keeps whichever of the target's dtype
and int8 measured the cheaper draft step at load (costs injected here: no timing), an explicit
dtype still wins, and greedy speculation equals target-only whatever the form."""

from __future__ import annotations

import pytest

from app.engine import Engine, GenerationConfig
from app.engine.session import DraftForm, cheapest_draft

GREEDY = GenerationConfig(max_new_tokens=24, k=3)
PROMPT = "The quick brown fox"


def probe_by_dtype(costs: dict[str, float]):
    seen = []

    def probe(loaded) -> float:
        seen.append(loaded.dtype)
        return costs[loaded.dtype]

    probe.seen = seen  # type: ignore[attr-defined]
    return probe


@pytest.mark.parametrize(
    "costs, chosen", [({"float32": 1.0, "int8": 0.4}, "int8"), ({"float32": 0.3, "int8": 0.9}, "float32")]
)
def test_auto_keeps_the_draft_form_that_measured_cheaper(tiny_models, costs, chosen):
    probe = probe_by_dtype(costs)
    engine = Engine.load(
        str(tiny_models["llama"]), str(tiny_models["llama-draft"]), device="cpu", dtype="float32",
        draft_dtype="auto", draft_probe=probe,
    )
    assert set(probe.seen) == {"float32", "int8"}  # both forms were measured
    assert engine.draft is not None and engine.draft.dtype == chosen
    assert engine.draft_form == DraftForm(chosen, "measured", costs)
    spec = engine.generate(PROMPT, GREEDY)
    assert spec.made_by is not None and spec.made_by.draft_dtype == chosen  # provenance names it
    assert spec.stats.proposed > 0
    assert spec.token_ids == engine.generate(PROMPT, GenerationConfig(max_new_tokens=24, speculative=False)).token_ids


def test_an_explicit_draft_dtype_overrides_auto(tiny_models):
    probe = probe_by_dtype({"float32": 1.0, "int8": 0.1})
    engine = Engine.load(
        str(tiny_models["llama"]), str(tiny_models["llama-draft"]), device="cpu", dtype="float32",
        draft_dtype="float32", draft_probe=probe,
    )
    assert probe.seen == [] and engine.draft is not None and engine.draft.dtype == "float32"
    assert engine.draft_form == DraftForm("float32", "asked")


def test_the_probe_interleaves_forms_and_takes_medians():
    order = []
    values = {"float32": iter([1.0, 9.0, 1.0]), "int8": iter([0.8, 0.8, 0.8])}

    def probe(form) -> float:
        order.append(form)
        return next(values[form])

    form = cheapest_draft({"float32": "float32", "int8": "int8"}, probe)  # type: ignore[dict-item]
    assert order == ["float32", "int8"] * 3  # a burst of load hits both forms
    assert form.dtype == "int8" and form.step_s == {"float32": 1.0, "int8": 0.8}
    assert form.describe() == "int8 (auto: a draft step 0.80× float32's)"
