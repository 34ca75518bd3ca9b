"""The real thing: the bundled SmolLM2-135M-Instruct answers, with and without speculation."""

from __future__ import annotations

from dataclasses import replace

import pytest

from app.engine import Engine, GenerationConfig, compare_runs
from app.engine.config import LoadOptions

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def bundled():
    return Engine.load("default", "lookup", LoadOptions(device="cpu"))


def test_bundled_model_answers_a_factual_question(bundled):
    # Germany, not France: the 135M model's answer about France changes with the last bits of its
    # activations (llama.cpp's own, on the same file: "L'Étoile, la Marseillaise, …"); Berlin holds
    # with bf16 and int8 activations alike
    result = bundled.generate("What is the capital of Germany?", GenerationConfig(max_new_tokens=24))
    assert "Berlin" in result.text
    assert result.stop_reason == "eos"


def test_bundled_model_with_prompt_lookup_gives_the_target_only_answer(bundled):
    prompt = (
        "Fix the spelling in this sentence and repeat it: "
        "'The quick brwn fox jumps over the lazzy dog near the river bank.'"
    )
    config = GenerationConfig(max_new_tokens=48, k=4, auto_k=False)  # drafting mechanics, not timing
    spec = bundled.generate(prompt, config)
    base = bundled.generate(prompt, replace(config, speculative=False))
    comparison = compare_runs(spec, base)
    assert comparison.identical, comparison.first_difference
    assert spec.stats.accepted > 0  # lookup really drafted from the prompt
    assert spec.stats.target_passes < base.stats.target_passes
