"""Opt-in: a real pair, the Qwen2.5-Coder 1.5B-Instruct Q4_K_M target and 0.5B-Instruct Q5_0 draft
that ``../shared/tools/fetch_real_pair.sh`` downloads (1.6 GB; a fixture for measuring, never a
dependency of the app). Skipped unless ``SPECCHAT_REAL_PAIR`` names both files:

    SPECCHAT_REAL_PAIR="$(../shared/tools/fetch_real_pair.sh | tr '\\n' ' ')" ./test.sh tests/test_real_pair.py

(~2 min on 2 cores once the forms are cached; the first load converts both files.) At their own
forms, the draft model drafting on every step, alone and with lookup, and auto k: every greedy
answer is the target-only answer, token for token."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from app.engine import Engine, GenerationConfig
from app.engine.backend import AnswerOptions
from app.engine.config import DRAFT_AND_LOOKUP, DRAFT_MODEL, LoadOptions

PAIR = os.environ.get("SPECCHAT_REAL_PAIR", "").split()
pytestmark = pytest.mark.skipif(
    len(PAIR) != 2 or not all(Path(p).is_file() for p in PAIR),
    reason="set SPECCHAT_REAL_PAIR='TARGET.gguf DRAFT.gguf' (../shared/tools/fetch_real_pair.sh prints both)",
)
PROMPTS = (
    "Write a Python function that checks whether a number is prime, with a docstring.",
    "Write a short poem about the sea.",
)


@pytest.fixture(scope="module")
def engine() -> Engine:
    return Engine.load(PAIR[0], PAIR[1], LoadOptions(threads=1))


def test_the_real_pair_loads_at_its_own_forms(engine):
    assert engine.target.form is not None and "Q4_K" in engine.target.form.describe()
    assert engine.draft_form is not None and "Q5_0" in engine.draft_form.describe()


@pytest.mark.parametrize("drafter", [DRAFT_MODEL, DRAFT_AND_LOOKUP])
def test_the_real_pair_speculates_to_the_target_only_answer(engine, drafter):
    fixed = GenerationConfig(max_new_tokens=32, k=4, auto_k=False)
    for prompt in PROMPTS:
        conversation = [{"role": "user", "content": prompt}]
        base = engine.generate(conversation, replace(fixed, speculative=False), options=AnswerOptions(record=False))
        for config in (fixed, replace(fixed, auto_k=True)):
            options = AnswerOptions(record=False, drafter_choice=drafter)
            spec = engine.generate(conversation, config, options=options)
            assert spec.token_ids == base.token_ids, (prompt, drafter, config.auto_k)
            if not config.auto_k and drafter == DRAFT_MODEL:
                assert spec.stats.draft_passes > 0 and spec.stats.proposed > 0
