"""A run's CPU threads shared by the target and a draft model: in turn or ahead, whichever
measures faster.

``threads`` (the setting, ``--threads``) is how many CPU threads a run computes on, all told. With
a draft model on the CPU an answer drafts one of two ways:

- **in turn**: the draft model's passes, then the target's verification, one after the other,
  each on every thread of the budget;
- **ahead** (a budget of two or more): the target verifies on one thread fewer while the draft
  model, on a thread of its own, drafts the next block (``decode``'s drafting ahead).

Neither wins everywhere. Ahead takes the draft model off the answer's clock, but the target
loses a thread; in turn keeps every thread on each pass, but pays for every draft step. On a
2-core AMD EPYC with AVX-512 drafting ahead made the real 1.5B + 0.5B pair 1.5x its target-only
speed at 2 threads; on a 2-core AVX2-only EPYC, where a pass over 5 tokens costs 3.4 plain ones,
it made it 0.95x, and plain steps on both threads were faster. So both ways are timed at the
warm-up (``time_sizes`` and ``time_ahead``: target passes per block size, draft steps; kept per
machine with the other timings), each way keeps its own measured costs as it decodes, and each
answer takes the way ``cost.ahead_is_faster`` expects to be faster at the acceptance the chooser
has learnt (and, for the draft model beside lookup, at the share of the last answers' time that
lookup's blocks took: ``Engine.free_share``). ``SPECCHAT_DRAFT_AHEAD`` = "0" always drafts in
turn, "1" always ahead (even on one thread, the tests).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from app.engine.decoding.cost import Split
from app.engine.decoding.drafters import ModelDrafter
from app.engine.runners.kv import CachedModel

__all__ = ["Split", "time_ahead", "time_in_turn", "time_sizes", "timed_pass"]

WARM_UP_BLOCK_SIZES = (2, 3, 4, 6, 8)  # tokens per timed target pass in the warm-up, each beside a plain one
# the warm-up times each size beside a plain pass, in rounds, while the rounds cost at most this
# (at most WARM_UP_ROUNDS, at least one): the chooser weighs a size by its ratio to a plain pass,
# and one sample of a ratio on a noisy 2-core machine is off by ±10 % (3 rounds: 1.1 s for the
# bundled model; a 1.5B's passes make it one round)
WARM_UP_SECONDS = 1.5
WARM_UP_ROUNDS = 3
# draft steps timed in turn, whose median the chooser starts from (``cost.SAMPLES_PER_SIZE`` kept):
# three were too few on a busy moment. The real pair at 2 threads kept 20.3 / 15.3 / 20.1 ms (a
# 2-token step costs 16-17.5 ms, timed 21 times in one process), a draft step of 0.49 of a plain
# pass where 0.40 is true, and the next answers set the draft model aside ("it would need 63 % of
# its drafts accepted") until they measured it themselves (2026-12-06, ``bench --peer``, is_prime).
DRAFT_STEPS = 7
# A draft step as a block starts it: after the target accepted the block, the draft model feeds
# its last draft and the target's token, two rows (a k = 1 block is nothing else). Timed over one
# token, the real pair's 0.5B draft step measured 0.30 of a plain target pass at the warm-up and
# 0.55 on the answer's clock (Zen 1, 1 thread, where each row of a pass costs ~0.4 of a pass), and
# the chooser paid the draft's catch-up for drafting that could not repay it.
DRAFT_STEP_TOKENS = 2


def timed_pass(runner: CachedModel, size: int) -> float:
    """Seconds of one pass over ``size`` tokens after the cached positions, which it leaves
    as they were."""
    position = len(runner.tokens)
    started = time.perf_counter()
    runner.forward([0] * size, keep=size)
    seconds = time.perf_counter() - started
    runner.truncate(position)
    return seconds


def time_sizes(target: CachedModel) -> list[tuple[int, float]]:
    """Each block size's pass beside a plain one, in rounds while they cost at most
    ``WARM_UP_SECONDS``: [tokens, seconds] in the order timed (a ratio is to the plain pass
    before it)."""
    verify: list[tuple[int, float]] = []
    started = time.perf_counter()
    for round_ in range(WARM_UP_ROUNDS):
        for size in WARM_UP_BLOCK_SIZES:
            verify += [(1, timed_pass(target, 1)), (size, timed_pass(target, size))]
        spent = time.perf_counter() - started
        if spent / (round_ + 1) * (round_ + 2) > WARM_UP_SECONDS:  # another round would overrun
            break
    return verify


def time_in_turn(target: CachedModel, draft: ModelDrafter | None) -> dict[str, list[Any]]:
    """The target's passes per block size and (with a draft model) its steps, one after the
    other on this thread's threads: the costs of drafting in turn."""
    verify = time_sizes(target)
    steps = [timed_pass(draft.runner, DRAFT_STEP_TOKENS) for _ in range(DRAFT_STEPS)] if draft is not None else []
    return {"verify": verify, "draft": steps}


def time_ahead(target: CachedModel, draft: ModelDrafter) -> dict[str, list[Any]]:
    """The costs of drafting ahead: the target's passes per block size on this thread's threads
    while the draft model drafts on its own thread, and the draft steps it made meanwhile (the
    two share the machine's memory and caches, so each is timed beside the other)."""
    stop = threading.Event()

    def drafting() -> list[float]:
        steps = [timed_pass(draft.runner, DRAFT_STEP_TOKENS)]
        while not stop.is_set():
            steps.append(timed_pass(draft.runner, DRAFT_STEP_TOKENS))
        return steps

    running = draft.on_own_thread(drafting)
    try:
        verify = time_sizes(target)
    finally:
        stop.set()
        steps = running.result()
    return {"verify": verify, "draft": steps[1:] or steps}  # the first may have run before the target's
