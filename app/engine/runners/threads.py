"""CPU threads for torch: how many to use ("auto": physical cores minus one), and while answering
with ``auto``, how many the machine's load and the measured passes allow (``ThreadGovernor``).
Oversubscribed OpenMP threads collapse speed on a busy machine."""

from __future__ import annotations

import math
import os
import re
import statistics
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch

from app.engine.config import cap_threads
from app.engine.errors import InvalidSettingError

AUTO = "auto"
_THREADS = re.compile(r"^\s*(auto|\d+)\s*$", re.IGNORECASE)


def physical_cores() -> int:
    """Physical cores this process may run on (hyper-threads counted once)."""
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    cores = set()
    for cpu in allowed:
        try:
            with open(f"/sys/devices/system/cpu/cpu{cpu}/topology/core_id") as f:
                core = f.read().strip()
            with open(f"/sys/devices/system/cpu/cpu{cpu}/topology/physical_package_id") as f:
                package = f.read().strip()
        except OSError:
            core, package = str(cpu), "0"
        cores.add((package, core))
    return max(1, len(cores))


def parse_threads(value: str | int | None) -> int | None:
    """``"auto"`` / None → None (choose), a positive integer → itself, capped to the CPUs this
    process may use (``config.cap_threads``); else InvalidSettingError."""
    if value is None:
        return None
    text = str(value)
    match = _THREADS.match(text)
    if match is None or match.group(1) == "0":
        raise InvalidSettingError(f"'{value}' is not a number of CPU threads; use auto or a whole number ≥ 1.")
    return None if match.group(1).lower() == AUTO else cap_threads(int(match.group(1)))


def auto_threads() -> int:
    """Physical cores minus one (at least one): a core left for the GUI thread and whatever else
    runs. Oversubscribed OpenMP threads collapse: on 2 busy cores, 2 threads decoded the bundled
    model at 0.25 tok/s against 6.2 tok/s with 1 thread (tools/thread_speed.py)."""
    return max(1, physical_cores() - 1)


def choose_threads(value: str | int | None = AUTO) -> int:
    """The thread count to use: the number asked for, or ``auto_threads()``."""
    asked = parse_threads(value)
    return asked if asked is not None else auto_threads()


def apply_threads(value: str | int | None = AUTO) -> int:
    """Set torch's intra-op threads (and, before any parallel work, its inter-op threads)."""
    threads = choose_threads(value)
    torch.set_num_threads(threads)
    try:
        torch.set_num_interop_threads(threads)
    except RuntimeError:  # allowed once per process, before inter-op work has started
        pass
    return threads


@contextmanager
def torch_threads(count: int) -> Iterator[None]:
    """torch's intra-op thread count set to ``count`` within, restored after (nothing done when
    it is that count already: a set costs ~0.2 µs)."""
    before = torch.get_num_threads()
    if before == count:
        yield
        return
    torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


# ------------------------------------------------- threads while answering (auto)

IDLE_SLACK = 0.25  # busy cores of other processes that still count as none (daemons, the GUI)
THREAD_SAMPLES = 7  # running median of plain passes per thread count
SLOWER = 1.05  # more threads must measure at least 5 % faster to be kept


class OtherLoad:
    """Cores kept busy by *other* processes since the previous call: the machine's busy time
    (/proc/stat) minus this process's own CPU time, over the wall time between the calls.
    None when it cannot be read (not Linux) or on the first call."""

    def __init__(
        self,
        stat_path: str = "/proc/stat",
        clock: Callable[[], float] = time.monotonic,
        own_cpu: Callable[[], float] = lambda: sum(os.times()[:2]),
    ) -> None:
        self.stat_path = stat_path
        self.clock, self.own_cpu = clock, own_cpu
        self.hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self.previous = self._read()

    def _read(self) -> tuple[float, float, float] | None:
        try:
            with open(self.stat_path) as f:
                fields = [float(v) for v in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)  # idle + iowait
        return (sum(fields[:8]) - idle) / self.hz, self.own_cpu(), self.clock()  # guest time is in user

    def __call__(self) -> float | None:
        now, before = self._read(), self.previous
        self.previous = now
        if now is None or before is None or now[2] - before[2] <= 0.05:
            return None
        others = (now[0] - before[0]) - (now[1] - before[1])
        return max(0.0, others / (now[2] - before[2]))


def threads_for_load(cores: int, others_busy: float) -> int:
    """The most threads that do not oversubscribe the machine: the cores other processes leave
    free (their busy cores rounded up, past a little slack), at least one."""
    return max(1, min(cores, cores - math.ceil(others_busy - IDLE_SLACK)))


@dataclass
class ThreadGovernor:
    """``auto`` threads while answering: all physical cores when other processes leave them
    idle, fewer as they get busy (never oversubscribed: 2 threads on 2 busy cores collapsed to
    0.25 tok/s against 6.2 with 1), and never more threads than the fewest that measured no
    slower on this machine's recent plain passes (``observe``). ``load()`` says how many cores
    other processes kept busy since it was last asked (``OtherLoad``; injected in tests); the
    engine chooses between answers."""

    cores: int
    load: Callable[[], float | None]
    costs: dict[int, deque[float]] = field(default_factory=dict)  # threads -> plain-pass seconds

    def observe(self, threads: int, seconds: float) -> None:
        if seconds > 0.0:
            self.costs.setdefault(threads, deque(maxlen=THREAD_SAMPLES)).append(seconds)

    def cost(self, threads: int) -> float | None:
        samples = self.costs.get(threads)
        return statistics.median(samples) if samples else None

    def choose(self, others: float | None) -> int:
        """Threads for the next answer, given the cores other processes keep busy (None:
        unknown, cores − 1)."""
        threads = max(1, self.cores - 1) if others is None else threads_for_load(self.cores, others)
        while threads > 1:  # measured: more threads must pay
            more, fewer = self.cost(threads), self.cost(threads - 1)
            if more is None or fewer is None or more < fewer * SLOWER:
                break
            threads -= 1
        return threads
