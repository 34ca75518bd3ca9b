"""Drafter experiment: the same conversation answered with several drafters and draft lengths.

The exercise SpecChat exists to teach — when does speculation pay? — run on the person's own
models: no speculation, prompt lookup, the loaded draft model, each at a few k (or auto k).
Every arm starts from fresh caches (the chat template's head only: no arm profits from another's
prompt cache); the plain arm runs first and is the reference for speed and for "same answer".
Speed-ups are the explanation's: the decode speed-up (what the what-if curves predict, the
chart's y) and the whole-run one, each labelled.

    for row in run_sweep(engine, conversation, config, arms):
        print(row.arm.label, row.decode_speedup, row.identical)

Torch-free (the GUI imports the arms and rows); only ``run_sweep`` drives a back-end (``app.engine.backend.Backend``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

from app.engine.analysis.explanation import alpha_of, decode_speedup, whole_run_speedup
from app.engine.backend import AnswerOptions, Backend, Conversation
from app.engine.config import DRAFT_AND_LOOKUP, DRAFT_MODEL, LOOKUP, SUFFIX, GenerationConfig
from app.engine.errors import InvalidSettingError
from app.engine.events import RunResult

NONE = "none"
DRAFTER_LABELS = {
    NONE: "no speculation",
    LOOKUP: "prompt lookup",
    SUFFIX: "suffix index",  # prompt lookup + every earlier conversation
    DRAFT_MODEL: "draft model",
    DRAFT_AND_LOOKUP: "draft model + lookup",  # the default with a draft model
}


@dataclass(frozen=True)
class SweepArm:
    """One way to answer: a drafter (``none``, ``lookup``, ``suffix`` or ``model``) and a draft length
    (``None``: the engine chooses k each step, when the engine supports it)."""

    drafter: str
    k: int | None = None

    @property
    def label(self) -> str:
        if self.drafter == NONE:
            return DRAFTER_LABELS[NONE]
        return f"{DRAFTER_LABELS[self.drafter]}, k={'auto' if self.k is None else self.k}"

    def config(self, base: GenerationConfig) -> GenerationConfig:
        if self.drafter == NONE:
            return replace(base, speculative=False)
        if self.k is None:
            return replace(base, speculative=True, auto_k=True)
        return replace(base, speculative=True, k=self.k, k_max=max(base.k_max, self.k), auto_k=False)


@dataclass(frozen=True)
class SweepRow:
    arm: SweepArm
    run: RunResult
    decode_speedup: float  # decode tokens/s of this arm ÷ the plain arm's (0: unknown)
    whole_run_speedup: float  # tokens/s over the whole run, prefill included, ÷ the plain arm's
    identical: bool  # the same token ids as the plain arm
    first_difference: int | None  # token index where it parts from the plain arm

    def to_dict(self) -> dict[str, object]:
        stats = self.run.stats
        return {
            "drafter": self.arm.drafter,
            "k": "auto" if self.arm.k is None and self.arm.drafter != NONE else self.arm.k,
            "label": self.arm.label,
            "tokens_per_s": stats.tokens_per_s,
            "decode_speedup": self.decode_speedup,
            "whole_run_speedup": self.whole_run_speedup,
            "alpha": alpha_of(self.run),
            "drafts_accepted_share": stats.drafts_accepted_share,
            "tokens_per_pass": stats.tokens_per_pass,
            "target_passes": stats.target_passes,
            "new_tokens": stats.new_tokens,
            "identical": self.identical,
            "first_difference": self.first_difference,
        }


def plan_arms(drafters: Sequence[str], ks: Sequence[int | None], available: Sequence[str]) -> list[SweepArm]:
    """The arms to run: the plain arm first (always: it is the reference), then each drafter at
    each k. Raises ``InvalidSettingError`` for a drafter that is not loaded or an absurd k."""
    for k in ks:
        if k is not None and not 1 <= k <= 64:
            raise InvalidSettingError(f"k must be between 1 and 64 (got {k})")
    arms = [SweepArm(NONE)]
    for drafter in dict.fromkeys(drafters):
        if drafter == NONE:
            continue
        if drafter not in available:
            names = ", ".join(DRAFTER_LABELS.get(a, a) for a in available)
            raise InvalidSettingError.of(
                "drafter_not_loaded", drafter=repr(DRAFTER_LABELS.get(drafter, drafter)), available=names
            )
        arms += [SweepArm(drafter, k) for k in dict.fromkeys(ks)]
    return arms


def _first_difference(run: RunResult, reference: RunResult) -> int | None:
    a, b = run.token_ids, reference.token_ids
    index = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return None if index == len(a) == len(b) else index


def run_sweep(
    engine: Backend,
    conversation: Conversation,
    base: GenerationConfig,
    arms: Sequence[SweepArm],
    cancel: threading.Event | None = None,
    on_row: Callable[[int, SweepRow], None] | None = None,
    history_id: str | None = None,
) -> Iterator[SweepRow]:
    """Run each arm from fresh caches, the plain arm first; yield one row per finished arm.
    Stops early (without a row for the interrupted arm) when ``cancel`` is set. ``history_id``:
    the conversation's id: the suffix arm sees nothing indexed under it (its prompt only by
    prompt lookup), so no arm recites the answer it reruns."""
    ordered = sorted(arms, key=lambda arm: arm.drafter != NONE)
    reference: RunResult | None = None
    for index, arm in enumerate(ordered):
        if cancel is not None and cancel.is_set():
            return
        engine.reset()
        choice = None if arm.drafter == NONE else arm.drafter
        # a fresh rerun: no arm records its answer, and the suffix arm drafts from the other
        # conversations, never from this one's indexed answer (the one rerun) nor another arm's
        options = AnswerOptions(drafter_choice=choice, history_id=history_id, rerun=True)
        run = engine.generate(conversation, arm.config(base), cancel, options=options)
        if run.stop_reason == "cancelled":
            return
        reference = reference or run
        first = _first_difference(run, reference)
        row = SweepRow(
            arm=arm,
            run=run,
            decode_speedup=decode_speedup(run, reference) or 0.0,
            whole_run_speedup=whole_run_speedup(run, reference) or 0.0,
            identical=first is None,
            first_difference=first,
        )
        if on_row is not None:
            on_row(index, row)
        yield row
