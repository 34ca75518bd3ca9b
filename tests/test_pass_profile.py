"""tools/pass_profile.py splits a pass by part with exclusive times: a part's clock leaves out
the timed parts inside it, an untimed module's time goes to Python/other while its timed
children still count as theirs, and the parts never add up to more than the pass."""

from __future__ import annotations

import time

import torch
from torch import nn

from tools import pass_profile


class ToyMLP(nn.Module):  # "…MLP": its own time is the MLP activation
    def __init__(self) -> None:
        super().__init__()
        self.up_proj = nn.Linear(64, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(0.002)
        return torch.relu(self.up_proj(x))


class Wrapper(nn.Module):  # untimed: its own time is Python/other
    def __init__(self) -> None:
        super().__init__()
        self.mlp = ToyMLP()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(0.002)
        return self.mlp(x)


class Toy(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = Wrapper()
        self.config = type("Config", (), {"_attn_implementation": "sdpa"})()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(x)


def test_parts_get_exclusive_times_that_add_up_to_no_more_than_the_pass(monkeypatch):
    monkeypatch.setattr(pass_profile, "CLOCK", [time.perf_counter_ns])  # sleeps take no CPU time
    model, clocks = Toy(), pass_profile.Clocks()
    model(torch.randn(1, 64))  # the first matmul sets its library up
    with pass_profile.hooked(model, clocks):
        clocks.on = True
        started = time.perf_counter_ns()
        model(torch.randn(1, 64))
        total = time.perf_counter_ns() - started
        clocks.on = False
    spent = dict(clocks.spent)
    assert set(spent) == {"linears", "MLP activation"}
    assert spent["MLP activation"] >= 2e6 and spent["linears"] > 0  # the MLP's own sleep; the linear apart
    assert sum(spent.values()) <= total - 2e6  # the wrapper's sleep is Python/other, in no part
    assert not model.block._forward_hooks and not model.block._forward_pre_hooks  # removed after
