"""The turns of a chat: send, stream, stop, finish, fail, compare. Owns the current
``Conversation`` and saves it after every message; talks to the engine only through the
worker's requests and signals (it never waits on a forward pass)."""

from __future__ import annotations

import time
from concurrent.futures import Future
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal

from app.engine.compare import Comparison, compare_runs
from app.engine.config import GenerationConfig
from app.engine.events import RunResult, StepEvent

from .chat_view import ChatView
from .conversation import Conversation, Message, TokenRecord, records_from_step
from .storage import ConversationStore

if TYPE_CHECKING:
    from app.worker import EngineWorker


@dataclass(frozen=True)
class CompareOutcome:
    speculative: RunResult
    speculative_records: list[TokenRecord]
    baseline: RunResult
    comparison: Comparison


class ChatController(QObject):
    busy_changed = Signal(bool)
    error = Signal(str)  # a failed turn; the conversation is kept
    comparison_ready = Signal(object)  # CompareOutcome
    conversation_saved = Signal(object)  # Conversation

    def __init__(
        self, worker: EngineWorker, view: ChatView, store: ConversationStore, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self._worker = worker
        self._view = view
        self._store = store
        self.conversation = Conversation()
        self.drafter_name = "none"  # of the loaded models; "" while nothing is loaded
        self.model_ready = False
        self._answer_run: tuple[int, Message] | None = None
        self._compare_run: tuple[int, Message] | None = None
        worker.events_ready.connect(self._on_events)
        worker.finished.connect(self._on_finished)
        worker.failed.connect(self._on_failed)
        view.compare_requested.connect(self.compare)

    @property
    def busy(self) -> bool:
        return self._answer_run is not None or self._compare_run is not None

    def show(self, conversation: Conversation) -> None:
        """Make ``conversation`` the current one and draw it."""
        self.conversation = conversation
        self._view.clear()
        for message in conversation.messages:
            self._view.add_message(message)

    def send(self, text: str, config: GenerationConfig) -> bool:
        """Start a turn; False (nothing happens) while busy or when ``text`` is blank."""
        if self.busy or not text.strip():
            return False
        conversation = self.conversation
        if not conversation.title:
            conversation.title = " ".join(text.split())[:60]
        conversation.messages.append(Message("user", text))
        conversation.updated = time.time()  # only a new message moves a chat up the list
        self._view.add_message(conversation.messages[-1])
        self.save()  # the question survives a crash during the answer
        answer = Message(
            "assistant",
            "",
            config=_config_dict(config),
            speculative=config.speculative and self.drafter_name not in ("none", ""),
            drafter=self.drafter_name if config.speculative else "none",
        )
        run_id = self._worker.request_generate(conversation.prompt(), config)
        conversation.messages.append(answer)
        self._view.add_message(answer)
        widget = self._view.answer_for(answer)
        if widget is not None:
            ready = self.model_ready
            widget.set_waiting(self.tr("Thinking…") if ready else self.tr("Waiting for the model to load…"))
        self._answer_run = (run_id, answer)
        self._set_busy()
        return True

    def stop(self) -> None:
        for run in (self._answer_run, self._compare_run):
            if run is not None:
                self._worker.cancel(run[0])

    def compare(self, answer: Message) -> bool:
        """Rerun the conversation up to ``answer`` the other way (with / without speculation)."""
        if self.busy or answer not in self.conversation.messages or answer.config is None:
            return False
        index = self.conversation.messages.index(answer)
        config = replace(_config_from_dict(answer.config), speculative=not answer.speculative)
        if answer.stop_reason == "cancelled" and answer.run_stats.new_tokens > 0:
            config = replace(config, max_new_tokens=answer.run_stats.new_tokens)  # same length
        run_id = self._worker.request_generate(self.conversation.prompt(upto=index), config)
        self._compare_run = (run_id, answer)
        self._set_busy()
        return True

    def save(self) -> None:
        """Queue a snapshot of the conversation for disk; a failed write is reported. Saving
        alone (closing, editing the system prompt) does not change ``updated``."""
        if self.conversation.messages:
            self._store.save(self.conversation).add_done_callback(self._on_written)
            self.conversation_saved.emit(self.conversation)

    def flush(self) -> None:
        """Wait until what was saved so far is on disk (on close, in tests)."""
        self._store.flush()

    def _on_written(self, future: Future[None]) -> None:  # on the writer thread
        error = future.exception()
        if error is not None:
            self.error.emit(self.tr("Could not save the conversation: {0}").format(error))

    # ---- worker signals --------------------------------------------------------------
    def _on_events(self, run_id: int, steps: list[StepEvent]) -> None:
        if self._answer_run is None or self._answer_run[0] != run_id:
            return  # compare runs are shown when they finish
        message = self._answer_run[1]
        start = len(message.records)
        for step in steps:
            message.add_step(step)
        widget = self._view.answer_for(message)
        if widget is not None:
            widget.append_records(start)

    def _on_finished(self, run_id: int, result: RunResult) -> None:
        if self._answer_run is not None and self._answer_run[0] == run_id:
            message = self._answer_run[1]
            self._answer_run = None
            message.finish(result)
            self.conversation.updated = time.time()
            self._refresh(message)
            self.save()
            self._set_busy()
        elif self._compare_run is not None and self._compare_run[0] == run_id:
            original = self._compare_run[1]
            self._compare_run = None
            self._set_busy()
            self.comparison_ready.emit(_outcome(original, result))

    def _on_failed(self, run_id: int, message_text: str) -> None:
        if self._answer_run is not None and self._answer_run[0] == run_id:
            message = self._answer_run[1]
            self._answer_run = None
            message.error = message_text
            self._refresh(message)
            self.save()
        elif self._compare_run is not None and self._compare_run[0] == run_id:
            self._compare_run = None
        else:
            return
        self._set_busy()
        self.error.emit(message_text)

    def _refresh(self, message: Message) -> None:
        """Stats, notes and errors changed; the painted tokens did not."""
        widget = self._view.answer_for(message)
        if widget is not None:
            widget.update_labels()

    def _set_busy(self) -> None:
        self._view.set_busy(self.busy)
        self.busy_changed.emit(self.busy)


def _outcome(original: Message, rerun: RunResult) -> CompareOutcome:
    first = original.run_result()
    if original.speculative:
        speculative, records, baseline = first, list(original.records), rerun
    else:
        records = [r for step in rerun.steps for r in records_from_step(step)]
        speculative, baseline = rerun, first
    return CompareOutcome(speculative, records, baseline, compare_runs(speculative, baseline))


def _config_dict(config: GenerationConfig) -> dict[str, Any]:
    data = asdict(config)
    data["stop_strings"] = list(config.stop_strings)
    return data


def _config_from_dict(data: dict[str, Any]) -> GenerationConfig:
    known = GenerationConfig.__dataclass_fields__
    values = {k: v for k, v in data.items() if k in known}
    values["stop_strings"] = tuple(values.get("stop_strings") or ())
    return GenerationConfig(**values)
