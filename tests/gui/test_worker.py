"""The bridge alone, with a scripted engine: batching, failures, loads and the asyncio API."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from stand_in_backend import StandInBackend

from app.engine.backend import NEW_ANSWER
from app.engine.config import GenerationConfig
from app.engine.errors import ModelLoadError, SpecChatError
from app.engine.events import RunResult, RunStats, StepEvent, TokenInfo
from app.engine.models.measured import FOLDER
from app.engine.runners import arenas
from app.engine.runners.arenas import why_not_huge
from app.worker import BATCH_INTERVAL_S, EngineWorker


class ScriptedEngine(StandInBackend):
    """Yields ``steps`` steps ``delay`` seconds apart, like ``Engine.generate``."""

    target_name = "scripted"
    drafter_name = "prompt lookup"

    def __init__(
        self,
        steps: int = 200,
        delay: float = 0.001,
        error: Exception | None = None,
        delays: list[float] | None = None,
    ) -> None:
        self.steps, self.delay, self.error = steps, delay, error
        self.delays = delays or []
        self.produced: dict[int, float] = {}

    def generate(self, conversation, config, cancel=None, on_step=None, options=NEW_ANSWER):  # type: ignore[no-untyped-def]
        events = []
        for i in range(self.steps):
            if self.error is not None and i == self.steps // 2:
                raise self.error
            cancelled = cancel is not None and cancel.is_set()
            last = cancelled or i == self.steps - 1
            token = None if cancelled else TokenInfo(i, "x", "target")
            reason = ("cancelled" if cancelled else "eos") if last else None
            stats = RunStats(new_tokens=i + (0 if cancelled else 1))
            step = StepEvent(i, (), token, (), "plain", 0, 0.0, 0.0, stats, stop_reason=reason)
            events.append(step)
            self.produced[i] = time.monotonic()
            on_step(step)
            if last:
                break
            time.sleep(self.delays[i] if i < len(self.delays) else self.delay)
        return RunResult.from_steps(events, True, self.drafter_name, {})


def _worker(qtbot, engines: list) -> EngineWorker:  # type: ignore[no-untyped-def]
    queue = list(engines)

    def load(**_kwargs):  # type: ignore[no-untyped-def]
        engine = queue.pop(0)
        if isinstance(engine, Exception):
            raise engine
        return engine

    worker = EngineWorker(loader=load)
    with qtbot.waitSignal(worker.loaded, timeout=5000):
        worker.request_load("t", "lookup")
    return worker


def test_events_are_batched_not_one_signal_per_step(qtbot):
    worker = _worker(qtbot, [ScriptedEngine(steps=200, delay=0.001)])
    batches: list[int] = []
    worker.events_ready.connect(lambda _run, steps: batches.append(len(steps)))
    start = time.monotonic()
    with qtbot.waitSignal(worker.finished, timeout=10_000) as done:
        worker.request_generate([{"role": "user", "content": "hi"}], GenerationConfig())
    elapsed = time.monotonic() - start
    worker.shutdown()
    assert sum(batches) == 200 and done.args[1].stats.new_tokens == 200
    assert len(batches) <= elapsed / BATCH_INTERVAL_S + 2  # one per tick at most, not 200


def test_a_step_reaches_the_gui_without_waiting_for_the_next_pass(qtbot):
    engine = ScriptedEngine(steps=3, delays=[0.0, 1.5])  # the third pass is slow
    worker = _worker(qtbot, [engine])
    arrived: dict[int, float] = {}
    worker.events_ready.connect(
        lambda _run, steps: arrived.update({s.index: time.monotonic() for s in steps})
    )
    with qtbot.waitSignal(worker.finished, timeout=10_000):
        worker.request_generate([{"role": "user", "content": "hi"}], GenerationConfig())
    worker.shutdown()
    assert arrived[1] < engine.produced[2]  # step 1 was shown while step 2 was computed


def test_an_engine_exception_becomes_one_failed_signal_and_the_thread_lives_on(qtbot):
    worker = _worker(qtbot, [ScriptedEngine(steps=10, error=ValueError("bad"))])
    with qtbot.waitSignal(worker.failed, timeout=5000) as failed:
        worker.request_generate([{"role": "user", "content": "hi"}], GenerationConfig())
    assert "ValueError: bad" in failed.args[1]
    worker._engine.error = None
    with qtbot.waitSignal(worker.finished, timeout=5000):
        worker.request_generate([{"role": "user", "content": "hi"}], GenerationConfig())
    assert worker.shutdown()


def test_a_failed_reload_keeps_the_previous_models(qtbot):
    worker = _worker(qtbot, [ScriptedEngine(steps=3), ModelLoadError("no such model: x")])
    with qtbot.waitSignal(worker.load_failed, timeout=5000) as failed:
        worker.request_load("x", None)
    assert failed.args[0] == "no such model: x"  # message first, then the load id
    with qtbot.waitSignal(worker.finished, timeout=5000):
        worker.request_generate([{"role": "user", "content": "hi"}], GenerationConfig())
    assert worker.shutdown()


def test_cancel_stops_a_run_and_shutdown_joins_the_thread(qtbot):
    worker = _worker(qtbot, [ScriptedEngine(steps=100_000, delay=0.001)])
    with qtbot.waitSignal(worker.finished, timeout=5000) as done:
        with qtbot.waitSignal(worker.events_ready, timeout=5000):
            run = worker.request_generate([{"role": "user", "content": "hi"}], GenerationConfig())
        worker.cancel(run)
    assert done.args[1].stop_reason == "cancelled"
    assert worker.shutdown(1.0)
    assert not any(t.name == "specchat-engine" and t.is_alive() for t in threading.enumerate())


def test_the_asyncio_api_awaits_results_and_raises_readable_errors(qtbot, qapp):
    import qasync

    worker = EngineWorker(loader=lambda **_kw: ScriptedEngine(steps=5))

    async def scenario() -> tuple[tuple[str, str], RunResult]:
        names = await worker.load("t", "lookup")
        result = await worker.generate([{"role": "user", "content": "hi"}], GenerationConfig())
        worker._engine.error, worker._engine.steps = RuntimeError("x"), 4
        with pytest.raises(SpecChatError):
            await worker.generate([{"role": "user", "content": "hi"}], GenerationConfig())
        return names, result

    loop = qasync.QEventLoop(qapp)
    try:
        names, result = loop.run_until_complete(asyncio.wait_for(scenario(), 10))
    finally:
        loop.close()
        asyncio.set_event_loop(None)
    worker.shutdown()
    assert names == ("scripted", "prompt lookup") and result.stats.new_tokens == 5


def test_each_load_signal_names_the_request_it_answers(qtbot):
    worker = EngineWorker(loader=_loader_by_target({"a": ScriptedEngine(steps=1)}))
    answers: list[tuple[str, int]] = []
    worker.loaded.connect(lambda _target, _drafter, load_id: answers.append(("loaded", load_id)))
    worker.load_failed.connect(lambda _message, load_id: answers.append(("failed", load_id)))
    with qtbot.waitSignal(worker.load_failed, timeout=5000):
        first = worker.request_load("a", "lookup")
        second = worker.request_load("b", "lookup")
    worker.shutdown()
    assert first != second and answers == [("loaded", first), ("failed", second)]


def test_overlapping_awaited_loads_each_resolve_with_their_own_outcome(qtbot, qapp):
    import qasync

    worker = EngineWorker(loader=_loader_by_target({"a": ScriptedEngine(steps=1)}))

    async def scenario() -> list[object]:
        return await asyncio.gather(
            worker.load("a", "lookup"), worker.load("b", "lookup"), return_exceptions=True
        )

    loop = qasync.QEventLoop(qapp)
    try:
        first, second = loop.run_until_complete(asyncio.wait_for(scenario(), 10))
    finally:
        loop.close()
        asyncio.set_event_loop(None)
    worker.shutdown()
    assert first == ("scripted", "prompt lookup")
    assert isinstance(second, SpecChatError) and "no such model: b" in str(second)


def _loader_by_target(engines: dict[str, ScriptedEngine]):  # type: ignore[no-untyped-def]
    """A loader that knows the targets in ``engines`` and refuses every other one."""

    def load(target: str, **_kwargs):  # type: ignore[no-untyped-def]
        if target not in engines:
            raise ModelLoadError(f"no such model: {target}")
        return engines[target]

    return load


@pytest.mark.skipif(why_not_huge() is not None, reason=str(why_not_huge()))
def test_a_load_keeps_what_it_moved_and_the_same_load_asked_again_is_faulted_in_ahead(
    qtbot, isolated_cache, monkeypatch
):
    """The window's request starts faulting in the arenas the same load moved last time
    (``arenas``), before the engine thread runs it; the load's move takes them."""
    from app.worker import engine_worker

    ahead = arenas.Arenas()
    monkeypatch.setattr(engine_worker, "ARENAS", ahead)
    taken: list[object] = []

    def load(**_kwargs):  # type: ignore[no-untyped-def]
        taken.append(ahead.take(4 << 20))  # as huge_pages' move asks
        return ScriptedEngine()

    worker = EngineWorker(loader=load)
    with qtbot.waitSignal(worker.loaded, timeout=5000):
        worker.request_load("t", "lookup")
    entries = (isolated_cache / FOLDER).glob(f"{engine_worker.ARENA_SIZES}-*")
    kept = [json.loads(entry.read_text())["value"] for entry in entries]
    assert kept == [[4 << 20]] and taken == [None]
    with qtbot.waitSignal(worker.loaded, timeout=5000):
        worker.request_load("other", "lookup")  # another load: not this one's arenas
    assert taken[-1] is None
    with qtbot.waitSignal(worker.loaded, timeout=5000):
        worker.request_load("t", "lookup")
    assert taken[-1] is not None and len(taken[-1]) == 4 << 20
    worker.shutdown()
