"""``auto`` threads while answering (issue 14 §4): all cores when other processes leave them
idle, fewer as they get busy (never oversubscribed), and never more threads than measured
faster. Loads and pass costs are injected: no timing, no dependence on this machine."""

from __future__ import annotations

import pytest
import torch

from app.engine import Engine, GenerationConfig
from app.engine.runners.threads import OtherLoad, ThreadGovernor, threads_for_load


@pytest.fixture(autouse=True)
def restore_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize(
    "cores, others, threads",
    [(2, 0.0, 2), (2, 0.2, 2), (2, 0.4, 1), (2, 1.9, 1), (2, 6.0, 1), (8, 0.0, 8), (8, 2.5, 5), (1, 0.0, 1)],
)
def test_threads_fill_the_cores_other_processes_leave_free(cores, others, threads):
    assert threads_for_load(cores, others) == threads


def test_more_threads_are_kept_only_while_they_measure_faster():
    governor = ThreadGovernor(cores=2, load=lambda: 0.0)
    assert governor.choose(0.0) == 2  # idle, nothing measured: all cores
    for _ in range(3):
        governor.observe(1, 0.030)
        governor.observe(2, 0.034)  # two threads measured slower here
    assert governor.choose(0.0) == 1
    for _ in range(7):
        governor.observe(2, 0.022)  # later passes: two threads pay again
    assert governor.choose(0.0) == 2
    assert governor.choose(1.5) == 1  # busy: never oversubscribed, whatever was measured
    assert governor.choose(None) == 1  # load unknown: cores - 1


def test_other_load_is_the_machines_busy_time_minus_our_own(tmp_path):
    stat = tmp_path / "stat"
    hz = OtherLoad().hz
    clock, own = [0.0], [0.0]

    def write(busy_s: float, idle_s: float) -> None:  # user nice system idle iowait irq softirq steal
        stat.write_text(f"cpu  {busy_s * hz:.0f} 0 0 {idle_s * hz:.0f} 0 0 0 0 0 0\ncpu0 1 2 3 4\n")

    write(100.0, 100.0)
    load = OtherLoad(str(stat), clock=lambda: clock[0], own_cpu=lambda: own[0])
    write(100.0 + 15.0, 100.0 + 5.0)  # 10 s of wall time on 2 cores: 15 s busy
    clock[0], own[0] = 10.0, 10.0  # 10 of them ours
    assert load() == pytest.approx(0.5)
    assert OtherLoad(str(tmp_path / "missing"))() is None


def test_the_engine_rechooses_threads_between_answers_and_measures_plain_passes(load_tiny):
    engine = Engine(load_tiny("llama"), lookup=True)
    others = [0.0]
    engine.thread_governor = ThreadGovernor(cores=2, load=lambda: others[0])
    torch.set_num_threads(1)
    config = GenerationConfig(max_new_tokens=8, speculative=False)
    engine.generate("The quick brown fox", config)
    assert torch.get_num_threads() == 2  # idle machine: both cores
    assert len(engine.thread_governor.costs[2]) == 7  # the answer's plain passes, measured
    others[0] = 1.2  # another process got busy
    engine.generate("The quick brown fox", config)
    assert torch.get_num_threads() == 1
