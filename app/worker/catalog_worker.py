"""The model library's bridge: scans, draft-pairing checks and draft probes (short measured
runs, on request) on a thread of their own.

Scanning reads metadata and pairing loads tokenizers (no weights, no forward pass), so they
need not wait behind the engine thread's loads and answers. Jobs run one at a time on a
daemon thread that ends when the queue is empty; results come back as queued signals on the
GUI thread. The engine modules are imported on that thread, never on the GUI thread.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, Signal

from app.engine.analysis.probe import DraftProbe
from app.engine.models.catalog import ModelEntry, PairCheck

log = logging.getLogger(__name__)

Scanner = Callable[[Sequence[str]], list[ModelEntry]]  # added sources -> entries
PairChecker = Callable[[ModelEntry, ModelEntry], PairCheck]
# (target source, draft sources or LOOKUP, cancel) -> one DraftProbe per draft, as measured
Prober = Callable[[str, Sequence[str], threading.Event], Iterator[DraftProbe]]


@dataclass(frozen=True)
class ScanRequest:
    scan_id: int
    added: tuple[str, ...]  # folders and .gguf files the person added


@dataclass(frozen=True)
class PairingRequest:
    target: ModelEntry
    drafts: tuple[ModelEntry, ...]


@dataclass(frozen=True)
class ProbeRequest:
    target: ModelEntry
    drafts: tuple[str, ...]  # model sources, or LOOKUP
    cancel: threading.Event


def _default_prober(target: str, drafts: Sequence[str], cancel: threading.Event) -> Iterator[DraftProbe]:
    from app.engine.analysis.probe_run import probe_drafts

    return probe_drafts(target, drafts, cancel=cancel)


def _default_scanner(added: Sequence[str]) -> list[ModelEntry]:
    from app.engine.models.catalog import scan_models

    return scan_models(added)


class CatalogWorker(QObject):
    scanned = Signal(int, object)  # scan id, [ModelEntry, ...]
    pair_checked = Signal(object)  # PairCheck, one per draft as it is decided
    pairings_done = Signal(str)  # target source: every requested draft has its PairCheck
    probed = Signal(object)  # DraftProbe, one per candidate as it is measured
    probes_done = Signal(str)  # target source: the requested probe ended (finished or stopped)
    failed = Signal(str)  # readable message

    def __init__(
        self,
        scanner: Scanner | None = None,
        checker: PairChecker | None = None,
        parent: QObject | None = None,
        prober: Prober | None = None,
    ) -> None:
        super().__init__(parent)
        self._scanner = scanner or _default_scanner
        self._checker = checker  # built on the worker thread when None (it imports torch)
        self._prober = prober or _default_prober
        self._probe_cancel = threading.Event()
        self._jobs: queue.Queue[ScanRequest | PairingRequest | ProbeRequest] = queue.Queue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._scan_ids = 0
        self._latest_target = ""

    # ---- GUI-thread API ---------------------------------------------------------------
    def request_scan(self, added: Sequence[str]) -> int:
        self._scan_ids += 1
        self._put(ScanRequest(self._scan_ids, tuple(added)))
        return self._scan_ids

    def request_pairings(self, target: ModelEntry, drafts: Sequence[ModelEntry]) -> None:
        """Check every draft against ``target``; a newer request makes older ones stop early."""
        with self._lock:
            self._latest_target = target.source
        self.cancel_probe()  # its answers would be for another target
        self._put(PairingRequest(target, tuple(drafts)))

    def request_probe(self, target: ModelEntry, drafts: Sequence[str]) -> None:
        """Measure each draft (a source or LOOKUP) for ``target`` with a short run, on this
        thread: loads models, takes seconds to minutes. A newer request stops this one."""
        self.cancel_probe()
        with self._lock:
            self._probe_cancel = threading.Event()
            cancel = self._probe_cancel
        self._put(ProbeRequest(target, tuple(drafts), cancel))

    def cancel_probe(self) -> None:
        with self._lock:
            self._probe_cancel.set()

    def wait_idle(self, timeout: float) -> bool:
        """For shutdown and tests: True when no job is running or queued."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return thread is None or not thread.is_alive()

    # ---- worker thread --------------------------------------------------------------------
    def _put(self, job: ScanRequest | PairingRequest | ProbeRequest) -> None:
        with self._lock:
            self._jobs.put(job)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="specchat-catalog", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                try:
                    job = self._jobs.get_nowait()
                except queue.Empty:
                    self._thread = None
                    return
            try:
                self._do(job)
            except Exception as e:  # every failure must reach the person
                if isinstance(e, RuntimeError) and "already deleted" in str(e):
                    return  # the window closed while a check ran: nobody is listening
                log.exception("model library job failed", exc_info=e)
                self.failed.emit(f"The model library could not be read ({type(e).__name__}: {e}).")

    def _do(self, job: ScanRequest | PairingRequest | ProbeRequest) -> None:
        if isinstance(job, ScanRequest):
            self.scanned.emit(job.scan_id, self._scanner(job.added))
            return
        if isinstance(job, ProbeRequest):
            try:
                for probe in self._prober(job.target.source, job.drafts, job.cancel):
                    if job.cancel.is_set():
                        break
                    self.probed.emit(probe)
            finally:
                self.probes_done.emit(job.target.source)
            return
        check = self._pair_checker()
        for draft in job.drafts:
            with self._lock:
                if self._latest_target != job.target.source:
                    return  # another target was chosen meanwhile
            self.pair_checked.emit(check(job.target, draft))
        self.pairings_done.emit(job.target.source)

    def _pair_checker(self) -> PairChecker:
        if self._checker is None:
            from app.engine.models.pairing import PairingChecker

            checker: Any = PairingChecker()
            self._checker = checker.check
        return self._checker
