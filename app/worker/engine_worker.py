"""The one bridge between the engine and the GUI.

One worker thread owns the models and runs every forward pass; the GUI thread only queues
requests and receives signals. Like superqt's generator workers: the cancel flag is checked
by the engine before every target pass, and any exception becomes one ``failed`` signal
instead of a dead thread.

Step events are batched: the engine thread only appends them to a queue; a timer on the GUI
thread drains it every ``BATCH_INTERVAL_S`` while a run is active and emits one
``events_ready`` per run and tick. So a fast model cannot flood the GUI thread, and a slow
one never holds a token back until its next pass. The end of a run drains the queue first,
then emits ``finished`` or ``failed``.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import queue
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QCoreApplication, QObject, QTimer, Signal

from app.engine.analysis.compare import ComparisonReport
from app.engine.analysis.comparison import run_comparison  # torch-free itself: it drives the engine
from app.engine.analysis.sweep import plan_arms, run_sweep  # torch-free itself: it drives the engine
from app.engine.backend import AnswerOptions, Backend
from app.engine.config import GenerationConfig, LoadOptions
from app.engine.errors import MESSAGES, SpecChatError
from app.engine.events import RunResult, StepEvent
from app.engine.models.measured import FOLDER, MeasuredStore
from app.engine.runners.arenas import ARENAS
from app.engine.startup import import_engine
from app.paths import cache_dir
from app.worker.server_backend import (
    PlainEndpoint,
    ServerTarget,
    compare_on_servers,
    connect,
    server_path,
)

if TYPE_CHECKING:
    from app.remote.session import ServerSession

BATCH_INTERVAL_S = 0.03  # at most ~33 batches per second reach the GUI thread
PROGRESS_INTERVAL_S = 0.05
ARENA_SIZES = "huge-page-arenas"  # the measured store's entry: a load's key -> the arena sizes it moved
log = logging.getLogger(__name__)

Conversation = list[dict[str, str]]
EngineLoader = Callable[..., Backend]  # called as Engine.load(target=, draft=, options=)
ServerConnector = Callable[[ServerTarget], "ServerSession"]


@dataclass(frozen=True)
class LoadRequest:
    load_id: int
    target: str
    draft: str | None  # "lookup", None (no drafter) or a model source
    device: str = "auto"
    dtype: str = "auto"
    draft_dtype: str | None = None  # None: the target's dtype
    allow_pickle: bool = False
    cpu_kernels: bool = True
    threads: str | int = "auto"
    weights: str | None = None  # the target's weights form ("auto", "int4", …); None: as dtype says
    server: ServerTarget | None = None  # answer on this server instead (the fields above are unused)

    def arenas_key(self) -> str:
        """What the huge-page arenas this load moves its weights into are kept by (``arenas``)."""
        asked = (self.target, self.draft, self.device, self.dtype, self.draft_dtype, self.cpu_kernels, self.weights)
        return repr(asked)


@dataclass(frozen=True)
class WeightsWords:
    """A weights form (``forms.WeightsForm``) in parts, for the window to say in its language."""

    form: str  # "int4", "int8", "bf16", "fp32", "fp16"
    origin: str = ""  # the checkpoint's form: "bf16", "GGUF", "Q4_K"; "" unknown or the same
    by_specchat: bool = False  # SpecChat quantized float weights itself
    size_bytes: int = 0
    measured: bool = False  # chosen by auto: the fastest exact form timed at load


def _words(form: Any) -> WeightsWords | None:
    if form is None or not isinstance(getattr(form, "form", None), str):
        return None
    origin = form.origin if form.origin != form.form else ""
    measured = form.reason == "measured" and len(form.pass_s) > 1
    return WeightsWords(form.form, origin, bool(form.by_specchat), int(form.size_bytes), measured)


@dataclass(frozen=True)
class ComputePath:
    """How the loaded target computes, for the status bar (readable without torch)."""

    dtype: str  # the weights' dtype: "float32", "bfloat16", "float16", "int8"
    compute: str  # the dtype its matrix products run in (bf16 weights on a CPU without bf16: "float32")
    kernels: str  # "oneDNN" (prepacked CPU kernels), "stock" (a CPU fp32 / bf16 model without them), ""
    note: str = ""  # one line when it is not the designed path, from the engine (English)
    draft_dtype: str = ""  # the draft model's form ("int8", "float32", …); "" without a draft model
    draft_measured: bool = False  # chosen by ``auto``: the cheaper form, timed at load
    draft_step_ratio: float | None = None  # measured: its draft step ÷ the next cheapest form's
    form: WeightsWords | None = None  # the target's weights form, in parts the window words itself
    draft_form: WeightsWords | None = None  # the draft model's


@dataclass(frozen=True)
class GenerateRequest:
    run_id: int
    conversation: Conversation
    config: GenerationConfig
    cancel: threading.Event = field(default_factory=threading.Event)
    continue_answer: bool = False  # go on with the cut answer that ends the conversation
    answer_ids: tuple[int, ...] | None = None  # that answer's exact token ids, when known
    history_id: str | None = None  # the conversation's id: its prompt and answer are indexed under it
    answer_made_by: str | None = None  # the target that made ``answer_ids``: reused only with it


@dataclass(frozen=True)
class CompareRequest:
    """Run the comparison service (both arms, fresh) on the engine thread."""

    run_id: int
    conversation: Conversation
    config: GenerationConfig
    stored: RunResult | None = None  # the stored answer being compared, if any
    cancel: threading.Event = field(default_factory=threading.Event)
    history_id: str | None = None
    plain: ServerTarget | None = None  # on a server: the endpoint that does not speculate


@dataclass(frozen=True)
class SweepRequest:
    """The drafter experiment (app.engine.analysis.sweep) on the engine thread, one row per arm."""

    run_id: int
    conversation: Conversation
    config: GenerationConfig
    drafters: tuple[str, ...]  # LOOKUP / DRAFT_MODEL
    ks: tuple[int | None, ...]  # None: auto k
    cancel: threading.Event = field(default_factory=threading.Event)
    history_id: str | None = None  # the conversation's id (the suffix arm's "this conversation")


@dataclass(frozen=True)
class HistoryRequest:
    """What the suffix drafter may learn from: every saved conversation (id, messages; oldest
    first), or nothing when ``enabled`` is off. Kept by the engine thread and handed to every
    engine it loads; ``forget`` / ``remember`` change one conversation."""

    enabled: bool
    conversations: tuple[tuple[str, Conversation], ...] = ()
    forget: str | None = None  # a deleted conversation's id (the other fields are ignored)
    remember: tuple[str, Conversation] | None = None  # one conversation back (Undo)
    keep: tuple[str, Conversation] | None = None  # one saved as it is now: kept for the next load


Job = LoadRequest | GenerateRequest | CompareRequest | SweepRequest | HistoryRequest


def _load_engine(target: str, draft: str | None, options: LoadOptions) -> Backend:
    import_engine()  # transformers and the engine (seconds), the collector paused (engine/startup.py)
    from app.engine.session import Engine

    engine = Engine.load(target, draft, options)
    if options.progress is not None:
        options.progress(QCoreApplication.translate("EngineWorker", "Warming up…"), None)
    engine.warm_up()  # so the first answer (and its comparison) is not slowed by kernel set-up
    return engine


class EngineWorker(QObject):
    events_ready = Signal(int, object)  # run id, [StepEvent, ...] (object: no QVariant copy)
    finished = Signal(int, object)  # run id, RunResult (stop_reason "cancelled" when stopped)
    failed = Signal(int, str)  # run id, readable message (events already sent are kept)
    # Every load signal ends with the id ``request_load`` returned, so a window that queued
    # loads A then B can tell A's answer from B's (the id is last: a slot taking fewer
    # arguments still gets the name / message).
    load_started = Signal(str, int)  # target source, load id
    load_progress = Signal(str, float)  # message, fraction in [0, 1] or -1 when unknown
    loaded = Signal(str, str, int)  # target name, drafter name, load id
    load_failed = Signal(str, int)  # readable message, load id; the previous models stay loaded
    context_length_known = Signal(int)  # tokens the loaded target holds (sent before ``loaded``)
    compute_path_known = Signal(object)  # ComputePath of the loaded target (sent before ``loaded``)
    server_known = Signal(object)  # ServerPath of the server answering, None for this computer (before ``loaded``)
    cpu_probed = Signal(object)  # CpuProbe: what this CPU's oneDNN prepacks (fp32, bf16), once
    devices_found = Signal(list)  # ["auto", "cpu", ...]: devices this machine can run on
    compared = Signal(int, object)  # run id, ComparisonReport (compare requests)
    sweep_row = Signal(int, object)  # run id, SweepRow: one finished arm of a drafter experiment
    sweep_done = Signal(int, str, bool)  # run id, readable error or "", cancelled
    # the "earlier conversations" index now holds this many saved conversations: after the
    # saved ones were handed over (``set_history``), one forgotten or brought back, or a load
    history_indexed = Signal(int)
    notice = Signal(int, str)  # run id, a sentence about how it runs (Continue from the text, ...)
    _run_ended = Signal(int, object, str)  # engine thread -> GUI: run id, RunResult | None, error
    _compare_ended = Signal(int, object, str)  # engine thread -> GUI: run id, report | None, error

    def __init__(
        self,
        loader: EngineLoader | None = None,
        parent: QObject | None = None,
        server_connector: ServerConnector | None = None,
    ) -> None:
        super().__init__(parent)
        self._loader = loader or _load_engine
        self._connect_server = server_connector or connect
        self._plain = PlainEndpoint()  # Compare's plain endpoint on a server (engine thread)
        self._jobs: queue.Queue[Job | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._run_ids = itertools.count(1)
        self._load_ids = itertools.count(1)
        self._cancels: dict[int, threading.Event] = {}
        self._lock = threading.Lock()
        self._futures: dict[int, asyncio.Future[Any]] = {}
        self._load_futures: dict[int, asyncio.Future[tuple[str, str]]] = {}
        self._steps: deque[tuple[int, StepEvent]] = deque()  # filled by the engine thread
        self._flush_timer = QTimer(self)
        self._flush_timer.setInterval(round(BATCH_INTERVAL_S * 1000))
        self._flush_timer.timeout.connect(self._flush)
        self._run_ended.connect(self._on_run_ended)
        self._compare_ended.connect(self._on_compare_ended)
        # owned by the worker thread
        self._engine: Backend | None = None  # the local Engine or a ServerSession
        self._server: ServerSession | None = None  # the same back-end when it is a server (Compare on servers)
        self._load_error: str | None = None
        self._remembering = True
        self._remembered: dict[str, Conversation] = {}  # conversation id -> messages, oldest first
        self._held: list[Job] | None = None  # answers waiting for the saved conversations (GUI thread)
        self.finished.connect(self._on_finished)
        self.failed.connect(self._on_failed)
        self.loaded.connect(self._on_loaded)
        self.load_failed.connect(self._on_load_failed)

    # ---- GUI-thread API ---------------------------------------------------------------
    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="specchat-engine", daemon=True)
            self._thread.start()

    def request_load(
        self,
        target: str,
        draft: str | None,
        *,
        device: str = "auto",
        dtype: str = "auto",
        draft_dtype: str | None = None,
        allow_pickle: bool = False,
        cpu_kernels: bool = True,
        threads: str | int = "auto",
        weights: str | None = None,
        server: ServerTarget | None = None,
    ) -> int:
        """Queue a (re)load; returns its id for the signals. The current models keep serving
        until the new ones are ready. ``server``: connect to it instead of loading models."""
        self.start()
        load_id = next(self._load_ids)
        options = (device, dtype, draft_dtype, allow_pickle, cpu_kernels, threads, weights)
        request = LoadRequest(load_id, target, draft, *options, server=server)
        if server is None:  # the weights' pages faulted in while the engine thread imports (arenas.py)
            ARENAS.prefault(_measured().get(ARENA_SIZES, [request.arenas_key()]))
        self._jobs.put(request)
        return load_id

    def request_generate(
        self,
        conversation: Conversation,
        config: GenerationConfig,
        continue_answer: bool = False,
        answer_ids: tuple[int, ...] | None = None,
        history_id: str | None = None,
        answer_made_by: str | None = None,
    ) -> int:
        """Queue a run (after any queued load); returns its id for the signals. ``answer_ids``:
        with ``continue_answer``, the cut answer's exact token ids (it goes on from them when
        the loaded target is ``answer_made_by``, the model that made them; else from its text,
        and ``notice`` says so). ``history_id``: the conversation's id, under which the suffix
        drafter's memory indexes it."""
        self.start()
        request = GenerateRequest(
            next(self._run_ids),
            conversation,
            config,
            continue_answer=continue_answer,
            answer_ids=answer_ids,
            history_id=history_id,
            answer_made_by=answer_made_by,
        )
        with self._lock:
            self._cancels[request.run_id] = request.cancel
        self._put_answer(request)
        self._flush_timer.start()
        return request.run_id

    def request_compare(
        self,
        conversation: Conversation,
        config: GenerationConfig,
        stored: RunResult | None = None,
        history_id: str | None = None,
        plain: ServerTarget | None = None,
    ) -> int:
        """Queue a comparison of both arms (``compared`` or ``failed`` answers it); returns its
        id. ``stored``: the answer the person asked to compare, checked against the rerun;
        ``plain``: on a server, the endpoint without speculation."""
        self.start()
        request = CompareRequest(
            next(self._run_ids), conversation, config, stored, history_id=history_id, plain=plain
        )
        with self._lock:
            self._cancels[request.run_id] = request.cancel
        self._put_answer(request)
        return request.run_id

    def request_sweep(
        self,
        conversation: Conversation,
        config: GenerationConfig,
        drafters: list[str],
        ks: list[int | None],
        history_id: str | None = None,
    ) -> int:
        """Queue a drafter experiment; ``sweep_row`` brings each arm as it finishes and
        ``sweep_done`` ends it (also after ``cancel(run_id)``). Returns its id."""
        self.start()
        request = SweepRequest(
            next(self._run_ids), conversation, config, tuple(drafters), tuple(ks), history_id=history_id
        )
        with self._lock:
            self._cancels[request.run_id] = request.cancel
        self._put_answer(request)
        return request.run_id

    def set_history(self, enabled: bool, conversations: list[tuple[str, Conversation]]) -> None:
        """What the suffix drafter may learn from: these saved conversations (oldest first), or,
        ``enabled`` off, nothing at all (the engine forgets what it held). Kept for later loads.
        Answers held by ``hold_for_history`` go to the engine after it."""
        self.start()
        self._jobs.put(HistoryRequest(enabled, tuple(conversations)))
        held, self._held = self._held or [], None
        for job in held:
            self._jobs.put(job)

    def hold_for_history(self) -> None:
        """The saved conversations are still being read: answers, comparisons and experiments
        asked from now wait until ``set_history`` hands them over, so none is drafted before the
        "earlier conversations" drafter knows them."""
        if self._held is None:
            self._held = []

    @property
    def holding_for_history(self) -> bool:
        """Answers asked now wait for the saved conversations (``hold_for_history``)."""
        return self._held is not None

    def keep_conversation(self, conversation_id: str, conversation: Conversation) -> None:
        """A conversation was saved: the next engine loaded learns it as it is now (this one
        indexed its answers as they were made)."""
        self.start()
        self._jobs.put(HistoryRequest(True, keep=(conversation_id, conversation)))

    def forget_conversation(self, conversation_id: str) -> None:
        """A conversation was deleted: the engine drops everything it indexed from it."""
        self.start()
        self._jobs.put(HistoryRequest(True, forget=conversation_id))

    def remember_conversation(self, conversation_id: str, conversation: Conversation) -> None:
        """A conversation came back (Undo): index it again."""
        self.start()
        self._jobs.put(HistoryRequest(True, remember=(conversation_id, conversation)))

    def _put_answer(self, job: Job) -> None:
        if self._held is not None:
            self._held.append(job)
        else:
            self._jobs.put(job)

    def cancel(self, run_id: int | None = None) -> None:
        """Stop one run (or all) before its next target pass; the partial answer is kept."""
        with self._lock:
            events = list(self._cancels.values()) if run_id is None else [self._cancels.get(run_id)]
        for event in events:
            if event is not None:
                event.set()

    def shutdown(self, timeout: float = 1.5) -> bool:
        """Cancel everything and stop the thread; True if it ended within ``timeout``."""
        self.cancel()
        if self._thread is None:
            return True
        self._jobs.put(None)
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def on_server(self) -> bool:
        """The engine answering is a server (read from the GUI thread: a reference, no call)."""
        return self._server is not None

    async def load(self, target: str, draft: str | None, **options: Any) -> tuple[str, str]:
        """``await``-able load (qasync): (target name, drafter name) of THIS request; raises
        SpecChatError. Overlapping awaits each get their own request's outcome."""
        future: asyncio.Future[tuple[str, str]] = asyncio.get_running_loop().create_future()
        load_id = self.request_load(target, draft, **options)
        self._load_futures[load_id] = future
        return await future

    async def generate(self, conversation: Conversation, config: GenerationConfig) -> RunResult:
        """``await``-able run (qasync); raises SpecChatError with the readable message."""
        future: asyncio.Future[RunResult] = asyncio.get_running_loop().create_future()
        run_id = self.request_generate(conversation, config)
        self._futures[run_id] = future
        return await future

    def drain(self) -> None:
        """Hand on now the step events the engine made and no tick has sent yet (on close)."""
        self._flush()

    # ---- GUI thread: batches out, then the end of the run -----------------------------
    def _flush(self) -> None:
        """Emit what the engine produced since the last tick, one batch per run."""
        batches: dict[int, list[StepEvent]] = {}
        while self._steps:
            run_id, step = self._steps.popleft()
            batches.setdefault(run_id, []).append(step)
        for run_id, steps in batches.items():
            self.events_ready.emit(run_id, steps)

    def _on_run_ended(self, run_id: int, result: RunResult | None, error: str) -> None:
        self._flush()
        with self._lock:
            if not self._cancels:
                self._flush_timer.stop()
        if error:
            self.failed.emit(run_id, error)
        else:
            self.finished.emit(run_id, result)

    def _on_compare_ended(self, run_id: int, report: ComparisonReport | None, error: str) -> None:
        if error:
            self.failed.emit(run_id, error)
        else:
            self.compared.emit(run_id, report)

    # ---- futures, resolved on the GUI thread -------------------------------------------
    def _on_finished(self, run_id: int, result: RunResult) -> None:
        future = self._futures.pop(run_id, None)
        if future is not None and not future.done():
            future.set_result(result)

    def _on_failed(self, run_id: int, message: str) -> None:
        future = self._futures.pop(run_id, None)
        if future is not None and not future.done():
            future.set_exception(SpecChatError(message))

    def _on_loaded(self, target: str, drafter: str, load_id: int) -> None:
        future = self._load_futures.pop(load_id, None)
        if future is not None and not future.done():
            future.set_result((target, drafter))

    def _on_load_failed(self, message: str, load_id: int) -> None:
        future = self._load_futures.pop(load_id, None)
        if future is not None and not future.done():
            future.set_exception(SpecChatError(message))

    # ---- worker thread -------------------------------------------------------------------
    def _run(self) -> None:
        self._probe_devices()
        while (job := self._jobs.get()) is not None:
            if isinstance(job, LoadRequest):
                self._load(job)
                continue
            if isinstance(job, CompareRequest):
                self._compare(job)
                continue
            if isinstance(job, SweepRequest):
                self._sweep(job)
                continue
            if isinstance(job, HistoryRequest):
                self._history(job)
                continue
            result, error = self._generate(job)
            with self._lock:
                self._cancels.pop(job.run_id, None)
            self._run_ended.emit(job.run_id, result, error)
        self._close_servers()

    def _close_servers(self) -> None:
        self._plain.close()
        if self._engine is not None:
            self._engine.close()

    def _probe_devices(self) -> None:
        try:
            devices = _probe_devices_list()
        except Exception:
            log.exception("could not list the devices")
            return
        self.devices_found.emit(devices)
        try:
            cpu = _probe_cpu()
        except Exception:
            log.exception("could not probe the CPU")
            return
        self.cpu_probed.emit(cpu)

    def _load(self, request: LoadRequest) -> None:
        self.load_started.emit(request.target, request.load_id)
        last_time, last_message = 0.0, ""

        def progress(message: str, fraction: float | None) -> None:
            nonlocal last_time, last_message
            now = time.monotonic()
            if message != last_message or now - last_time >= PROGRESS_INTERVAL_S:
                last_time, last_message = now, message
                self.load_progress.emit(message, -1.0 if fraction is None else float(fraction))

        if request.server is not None:
            self._load_server(request)
            return
        try:
            options = LoadOptions(
                device=request.device,
                dtype=request.dtype,
                weights=request.weights,
                draft_weights=request.draft_dtype,
                allow_pickle=request.allow_pickle,
                cpu_kernels=request.cpu_kernels,
                threads=request.threads,
                progress=progress,
            )
            ARENAS.begin()
            engine = self._loader(target=request.target, draft=request.draft, options=options)
        except Exception as e:  # noqa: BLE001 - every failure must reach the person
            self._load_error = _describe(e)
            self.load_failed.emit(self._load_error, request.load_id)
            return
        finally:
            moved = ARENAS.finish()
            if moved:
                _measured().put(ARENA_SIZES, [request.arenas_key()], moved)
        self._serve(engine)
        self._feed_history(engine)  # a new engine (maybe a new tokenizer) indexes them afresh
        self.history_indexed.emit(len(self._remembered))
        self.context_length_known.emit(int(getattr(engine, "context_length", 0) or 0))
        path = _compute_path(engine)
        if path is not None:
            self.compute_path_known.emit(path)
        self.server_known.emit(None)
        self.loaded.emit(engine.target_name, engine.drafter_name, request.load_id)

    def _load_server(self, request: LoadRequest) -> None:
        """Connect to the server the request names; the engine serving until now keeps serving
        if it cannot be reached."""
        assert request.server is not None
        message = QCoreApplication.translate("EngineWorker", "Connecting to {0}…").format(request.server.url)
        self.load_progress.emit(message, -1.0)
        try:
            session = self._connect_server(request.server)
        except Exception as e:  # noqa: BLE001 - every failure must reach the person
            self._load_error = _describe(e)
            self.load_failed.emit(self._load_error, request.load_id)
            return
        self._serve(session, session)
        self.context_length_known.emit(session.context_length)
        self.server_known.emit(server_path(session))
        self.loaded.emit(session.target_name, session.drafter_name, request.load_id)

    def _serve(self, engine: Backend, server: ServerSession | None = None) -> None:
        """``engine`` answers from now on (``server``: the same, when it is a server); the
        back-end it replaces is closed (a server's connection)."""
        previous = self._engine
        self._engine, self._server, self._load_error = engine, server, None
        if previous is not None and previous is not engine:
            previous.close()

    def _generate(self, request: GenerateRequest) -> tuple[RunResult | None, str]:
        """(result, "") or (None, readable error); steps go to the queue as they come."""
        if self._engine is None:
            reason = self._load_error or QCoreApplication.translate("EngineWorker", "the model is not loaded")
            return None, QCoreApplication.translate("EngineWorker", "No model is loaded: {0}").format(reason)

        def on_step(step: StepEvent) -> None:
            self._steps.append((request.run_id, step))

        try:
            answer_ids = request.answer_ids if request.continue_answer else None
            problem = self._engine.answer_ids_problem(answer_ids, request.answer_made_by)
            if problem:
                self.notice.emit(request.run_id, problem)
                answer_ids = None
            options = AnswerOptions(
                continue_answer=request.continue_answer, answer_ids=answer_ids, history_id=request.history_id
            )
            result = self._engine.generate(
                request.conversation, request.config, cancel=request.cancel, on_step=on_step, options=options
            )
        except Exception as e:  # noqa: BLE001 - every failure must reach the person
            return None, _describe(e)
        return result, ""

    def _compare(self, request: CompareRequest) -> None:
        report, error = None, ""
        if self._engine is None:
            reason = self._load_error or QCoreApplication.translate("EngineWorker", "the model is not loaded")
            error = QCoreApplication.translate("EngineWorker", "No model is loaded: {0}").format(reason)
        elif (arms := self._engine.timed_arms) is None:
            report, error = self._compare_on_servers(request)
        else:
            try:
                report = run_comparison(
                    arms,
                    request.conversation,
                    request.config,
                    stored=request.stored,
                    cancel=request.cancel,
                    history_id=request.history_id,
                )
            except Exception as e:  # noqa: BLE001 - every failure must reach the person
                error = _describe(e)
        with self._lock:
            self._cancels.pop(request.run_id, None)
        self._compare_ended.emit(request.run_id, report, error)

    def _compare_on_servers(self, request: CompareRequest) -> tuple[ComparisonReport | None, str]:
        """The speculative endpoint answering the chat against the plain one the settings name."""
        if request.plain is None:
            return None, QCoreApplication.translate(
                "EngineWorker",
                "Compare on a server needs a second endpoint that does not speculate: set its URL "
                "or model in Settings → Server.",
            )
        assert self._server is not None  # no timed arms: a server answers
        try:
            plain = self._plain.session(request.plain)
            report = compare_on_servers(self._server, plain, request.conversation, request.config, request.cancel)
        except Exception as e:  # noqa: BLE001 - every failure must reach the person
            return None, _describe(e)
        return report, ""

    def _sweep(self, request: SweepRequest) -> None:
        """Runs on the engine thread; rows reach the GUI as queued signals."""
        error = ""
        if self._engine is None:
            reason = self._load_error or QCoreApplication.translate("EngineWorker", "the model is not loaded")
            error = QCoreApplication.translate("EngineWorker", "No model is loaded: {0}").format(reason)
        elif not self._engine.drafter_choices:
            error = QCoreApplication.translate(
                "EngineWorker",
                "The drafter experiment runs the models on this computer: a server chooses its own "
                "drafter. Choose “this computer” in Settings → Server to try drafters.",
            )
        else:
            try:
                arms = plan_arms(request.drafters, request.ks, self._engine.drafter_choices)
                rows = run_sweep(
                    self._engine, request.conversation, request.config, arms, request.cancel,
                    history_id=request.history_id,
                )
                for row in rows:
                    self.sweep_row.emit(request.run_id, row)
            except Exception as e:  # noqa: BLE001 - every failure must reach the person
                error = _describe(e)
            finally:
                self._engine.reset()  # the next chat turn must not reuse an experiment's cache
        with self._lock:
            self._cancels.pop(request.run_id, None)
        self.sweep_done.emit(request.run_id, error, request.cancel.is_set())


    # ---- the suffix drafter's memory (engine thread) ---------------------------------------
    def _history(self, request: HistoryRequest) -> None:
        engine = self._engine
        if request.keep is not None:
            if self._remembering:
                conversation_id, messages = request.keep
                self._remembered.pop(conversation_id, None)  # now the most recent: evicted last
                self._remembered[conversation_id] = messages
            return
        if request.forget is not None:
            self._remembered.pop(request.forget, None)
            if engine is not None:
                engine.forget(request.forget)
        elif request.remember is not None:
            conversation_id, messages = request.remember
            self._remembered[conversation_id] = messages
            if engine is not None:
                self._index(engine, [(conversation_id, messages)])
        else:
            self._remembering = request.enabled
            self._remembered = dict(request.conversations) if request.enabled else {}
            if engine is not None:
                self._feed_history(engine)
        self.history_indexed.emit(len(self._remembered))

    def _feed_history(self, engine: Backend) -> None:
        engine.set_remembering(False)  # forgets what it indexed before
        engine.set_remembering(self._remembering)
        self._index(engine, list(self._remembered.items()))

    def _index(self, engine: Backend, conversations: list[tuple[str, Conversation]]) -> None:
        for conversation_id, messages in conversations:
            try:
                engine.remember(conversation_id, messages)
            except Exception:  # a conversation that cannot be indexed is only not drafted from
                log.exception("could not index conversation %s", conversation_id)


def _probe_devices_list() -> list[str]:
    import_engine(("torch",))  # the engine thread's first import of torch: the collector paused
    from app.engine.runners.devices import available_devices

    return available_devices()


def _probe_cpu() -> Any:
    from app.engine.runners.cpu_probe import probe  # imports torch, on the worker thread

    return probe()


def _compute_path(engine: Any) -> ComputePath | None:
    """The target's dtype and kernels (None for an engine without a loaded target, e.g. a stub)."""
    target = getattr(engine, "target", None)
    dtype = getattr(target, "dtype", None)
    if not isinstance(dtype, str):
        return None
    kernels = getattr(target, "kernels", None)
    note = str(getattr(target, "note", "") or "")
    draft = _draft_form(engine)
    form = _words(getattr(target, "form", None))
    draft_form = _words(getattr(engine, "draft_form", None)) if getattr(engine, "draft", None) is not None else None
    if kernels is not None and int(getattr(kernels, "quantized", 0)):
        return ComputePath(dtype, kernels.compute, "weight-only", note, *draft, form=form, draft_form=draft_form)
    if kernels is not None and kernels.applied:
        return ComputePath(dtype, kernels.compute, "oneDNN", note, *draft, form=form, draft_form=draft_form)
    on_cpu = str(getattr(target, "device", "")) == "cpu" and dtype in ("float32", "bfloat16")
    return ComputePath(dtype, dtype, "stock" if on_cpu else "", note, *draft, form=form, draft_form=draft_form)


def _draft_form(engine: Any) -> tuple[str, bool, float | None]:
    """The draft model's form as the engine chose it: (form, measured, its pass ÷ the next
    cheapest form's)."""
    form = getattr(engine, "draft_form", None)
    if form is None or getattr(engine, "draft", None) is None:
        return "", False, None
    others = sorted(seconds for name, seconds in form.pass_s.items() if name != form.form)
    measured = form.reason == "measured" and bool(others)
    ratio = form.pass_s[form.form] / others[0] if measured and others[0] > 0 else None
    return str(form.form), measured, ratio


def translated(error: SpecChatError) -> str:
    """The engine's message in the interface's language, by its code (``errors.MESSAGES``);
    a message without a code stays as the engine wrote it."""
    template = MESSAGES.get(error.code)
    if template is None:
        return str(error)
    try:
        return QCoreApplication.translate("EngineError", template).format(**error.values)  # i18n: noop
    except (KeyError, IndexError, ValueError):  # a translation that lost a placeholder
        return str(error)


def _measured() -> MeasuredStore:
    """The cache folder's measured store (torch-free), as the environment says now."""
    return MeasuredStore(cache_dir() / FOLDER)


def _describe(error: Exception) -> str:
    """One readable sentence for any failure; unexpected ones are logged with a traceback."""
    if isinstance(error, SpecChatError):
        return translated(error)
    if type(error).__name__ == "OutOfMemoryError" or isinstance(error, MemoryError):
        return QCoreApplication.translate(
            "EngineWorker", "Out of memory. Try a smaller model, fewer new tokens, another dtype or the CPU."
        )
    log.exception("unexpected error in the engine thread", exc_info=error)
    return QCoreApplication.translate(
        "EngineWorker", "Unexpected error in the engine ({0}: {1}). The app keeps running."
    ).format(type(error).__name__, error)
