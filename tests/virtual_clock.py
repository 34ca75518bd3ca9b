"""The decode loop on a virtual clock, for tests of what auto k does with what passes cost (no
timed assertions): the loop's clock advances only by the modelled cost of each target pass."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import app.engine.decoding.decode as decode_module


def install(monkeypatch: pytest.MonkeyPatch, pass_cost: Callable[[int], float]) -> list[float]:
    """Each target pass over n tokens advances the loop's clock by ``pass_cost(n)``; the clock,
    as a one-item list a test may advance itself."""
    now = [0.0]
    real_rows = decode_module._target_rows

    def rows(target, tokens, drafts, new_turn):  # type: ignore[no-untyped-def]
        now[0] += pass_cost(len(drafts) + 1)
        return real_rows(target, tokens, drafts, new_turn)

    monkeypatch.setattr(decode_module, "_target_rows", rows)
    monkeypatch.setattr(decode_module, "_clock", lambda device: now[0])
    return now
