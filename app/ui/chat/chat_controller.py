"""The turns of a chat: send, stream, stop, finish, fail, compare. Owns the current
``Conversation`` and saves it after every message; talks to the engine only through the
worker's requests and signals (it never waits on a forward pass)."""

from __future__ import annotations

import time
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

from app.engine.analysis.compare import Comparison, ComparisonReport
from app.engine.config import GenerationConfig
from app.engine.errors import InvalidSettingError
from app.engine.events import RunResult, RunStats, StepEvent
from app.ui.chat.chat_view import ChatView
from app.ui.common.conversation import Conversation, Message, TokenRecord, records_from_step
from app.ui.common.storage import ConversationStore

if TYPE_CHECKING:
    from app.worker import EngineWorker
    from app.worker.server_backend import ServerTarget


@dataclass(frozen=True)
class CompareOutcome:
    """The comparison service's report, and the speculative arm as records to paint."""

    report: ComparisonReport
    speculative_records: list[TokenRecord]
    answer: Message  # the stored answer the person asked to compare

    @property
    def speculative(self) -> RunResult:
        return self.report.speculative

    @property
    def baseline(self) -> RunResult:
        return self.report.baseline

    @property
    def comparison(self) -> Comparison:
        return self.report.comparison


class ChatController(QObject):
    busy_changed = Signal(bool)
    error = Signal(str)  # a failed turn; the conversation is kept
    comparison_ready = Signal(object)  # CompareOutcome
    conversation_saved = Signal(object)  # Conversation
    context_changed = Signal(int)  # tokens of the context window the conversation fills
    notice = Signal(str)  # how the answer under way is made, when it is not as asked (status bar)

    def __init__(
        self, worker: EngineWorker, view: ChatView, store: ConversationStore, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self._worker = worker
        self._view = view
        self._store = store
        self.conversation = Conversation()
        self.drafter_name = ""  # of the loaded models; "" while nothing is loaded
        self.model_ready = False
        self.plain_endpoint: ServerTarget | None = None  # on a server: what Compare measures against
        self.server_name: str | None = None  # the server answering ("llama.cpp b1 at URL"); None: this computer
        self._answer_run: tuple[int, Message] | None = None
        self._compare_run: tuple[int, Message] | None = None
        self._sweep_run: int | None = None
        self._continuing: tuple[str, RunStats] | None = None  # the cut answer's text and stats
        self._continued_stop: str | None = None  # its stop reason, back if the continuation fails
        worker.events_ready.connect(self._on_events)
        worker.finished.connect(self._on_finished)
        worker.failed.connect(self._on_failed)
        worker.compared.connect(self._on_compared)
        worker.sweep_done.connect(self._on_sweep_done)
        worker.notice.connect(self._on_notice)
        view.compare_requested.connect(self.compare)

    @property
    def busy(self) -> bool:
        return self._answer_run is not None or self._compare_run is not None or self._sweep_run is not None

    def show(self, conversation: Conversation) -> None:
        """Make ``conversation`` the current one and draw it."""
        self.conversation = conversation
        self._view.clear()
        for message in conversation.messages:
            self._view.add_message(message)
        self.context_changed.emit(conversation.context_tokens())

    def send(self, text: str, config: GenerationConfig) -> bool:
        """Start a turn; False (nothing happens) while busy or when ``text`` is blank."""
        if self.busy or not text.strip():
            return False
        conversation = self.conversation
        if not conversation.title:
            conversation.title = " ".join(text.split())[:60].rstrip()  # cut at a space: none at the end
        conversation.messages.append(Message("user", text))
        conversation.updated = time.time()  # only a new message moves a chat up the list
        self._view.add_message(conversation.messages[-1])
        self.save()  # the question survives a crash during the answer
        self._start_answer(config)
        return True

    def regenerate(self, answer: Message, config: GenerationConfig) -> bool:
        """Answer the question before ``answer`` again; ``answer`` and what follows it go."""
        messages = self.conversation.messages
        if self.busy or answer not in messages or answer.role != "assistant":
            return False
        self._truncate(messages.index(answer))
        self._start_answer(config)
        return True

    def edit_and_resend(self, message: Message, text: str, config: GenerationConfig) -> bool:
        """Replace the user's ``message`` with ``text`` and answer it; later messages go."""
        messages = self.conversation.messages
        if self.busy or not text.strip() or message not in messages or message.role != "user":
            return False
        self._truncate(messages.index(message))
        return self.send(text, config)

    def continue_answer(self, answer: Message) -> bool:
        """Go on generating the cut last answer from where it stopped, with its own settings."""
        if self.busy or not self.conversation.messages or answer is not self.conversation.messages[-1]:
            return False
        if not answer.can_continue:
            return False
        config = self._saved_config(answer)
        if config is None:
            return False  # nothing changed: the answer keeps its stop reason and its Continue
        self._continuing = (answer.content, answer.run_stats)
        self._continued_stop = answer.stop_reason
        answer.stop_reason = answer.error = None
        run_id = self._worker.request_generate(
            self.conversation.prompt(),
            config,
            continue_answer=True,
            answer_ids=answer.token_ids(),  # exact: its text cannot hold a cut character
            history_id=self.conversation.id,
            # ids mean tokens only to the tokenizer that made them: the worker checks the model
            answer_made_by=answer.made_by.target if answer.made_by is not None else None,
        )
        self._answer_run = (run_id, answer)
        self._refresh(answer)
        self._set_busy()
        return True

    def _saved_config(self, answer: Message) -> GenerationConfig | None:
        """The settings ``answer`` was made with, or None with a message when its saved settings
        are missing or malformed (a hand-edited or foreign file)."""
        if answer.config is None:
            self.error.emit(self.tr("This answer was saved without its settings: regenerate it instead."))
            return None
        try:
            return GenerationConfig.from_dict(answer.config)
        except InvalidSettingError as e:
            self.error.emit(
                self.tr("This answer's saved settings are damaged ({0}): regenerate it instead.").format(e)
            )
            return None

    def _truncate(self, index: int) -> None:
        messages = self.conversation.messages
        self._view.remove_from(messages[index])
        del messages[index:]
        self.save()
        self.context_changed.emit(self.conversation.context_tokens())

    def _start_answer(self, config: GenerationConfig) -> None:
        conversation = self.conversation
        self._continuing = None  # a new answer is never a continuation of an earlier one
        answer = Message(
            "assistant",
            "",
            config=config.to_dict(),
            speculative=config.speculative and self.drafter_name not in ("none", ""),
            # "": no model loaded yet, so no drafter either way (the result will say which)
            drafter=self.drafter_name if config.speculative or not self.drafter_name else "none",
        )
        answer.asked_server = self.server_name  # named in its header until the server's answer does
        run_id = self._worker.request_generate(conversation.prompt(), config, history_id=conversation.id)
        conversation.messages.append(answer)
        self._view.add_message(answer)
        widget = self._view.answer_for(answer)
        if widget is not None:
            if not self.model_ready:
                widget.set_waiting(self.tr("Waiting for the model to load…"))
            elif self._worker.holding_for_history:
                widget.set_waiting(self.tr("Reading the saved conversations for the Earlier conversations drafter…"))
            else:
                widget.set_waiting(self.tr("Thinking…"))
        self._answer_run = (run_id, answer)
        self._set_busy()

    def stop(self) -> None:
        for run in (self._answer_run, self._compare_run):
            if run is not None:
                self._worker.cancel(run[0])
        if self._sweep_run is not None:
            self._worker.cancel(self._sweep_run)

    def cut_short(self) -> None:
        """The window closes while an answer is made: keep what was made as a cut answer, as
        Stop would (its end-of-run signal will not arrive in time)."""
        if self._answer_run is None:
            return
        message = self._answer_run[1]
        self._answer_run = None
        self._continuing = None
        if message.stop_reason is None and (message.content or message.records):
            message.stop_reason = "cancelled"
            self.conversation.updated = time.time()
        elif message.stop_reason is None and self._continued_stop is not None:
            message.stop_reason = self._continued_stop  # a continuation that made nothing yet
        self._set_busy()

    def compare(self, answer: Message) -> bool:
        """Answer the conversation up to ``answer`` with and without speculation, both fresh,
        through the engine's comparison service; the report says whether the models that made
        ``answer`` are the ones loaded now and whether the rerun reproduced it."""
        if self.busy or answer not in self.conversation.messages:
            return False
        config = self._saved_config(answer)
        if config is None:
            return False
        index = self.conversation.messages.index(answer)
        stored = answer.run_result()
        run_id = self._worker.request_compare(
            self.conversation.prompt(upto=index), config, stored, history_id=self.conversation.id,
            plain=self.plain_endpoint,
        )
        self._compare_run = (run_id, answer)
        self._set_busy()
        return True

    def sweep(self, answer: Message, drafters: list[str], ks: list[int | None]) -> int | None:
        """The drafter experiment on the conversation up to ``answer``, with its settings; the
        worker's ``sweep_row`` / ``sweep_done`` report it. None when busy or not an answer."""
        if self.busy or answer not in self.conversation.messages:
            return None
        config = self._saved_config(answer)
        if config is None:
            return None
        index = self.conversation.messages.index(answer)
        run_id = self._worker.request_sweep(
            self.conversation.prompt(upto=index), config, drafters, ks, history_id=self.conversation.id
        )
        self._sweep_run = run_id
        self._set_busy()
        return run_id

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
        after = self._continuing[1] if self._continuing is not None else None
        for step in steps:
            message.add_step(step, after)
        widget = self._view.answer_for(message)
        if widget is not None:
            widget.append_records(start)
        self.context_changed.emit(self.conversation.context_tokens())

    def _on_finished(self, run_id: int, result: RunResult) -> None:
        if self._answer_run is not None and self._answer_run[0] == run_id:
            message = self._answer_run[1]
            self._answer_run = None
            if self._continuing is not None:
                message.finish_continuation(result, *self._continuing)
                self._continuing = None
            else:
                message.finish(result)
            self.conversation.updated = time.time()
            self._refresh(message, finished=True)
            self.save()
            self.context_changed.emit(self.conversation.context_tokens())
            self._set_busy()

    def _on_sweep_done(self, run_id: int, _error: str, _cancelled: bool) -> None:
        if self._sweep_run == run_id:
            self._sweep_run = None
            self._set_busy()

    def _on_notice(self, run_id: int, text: str) -> None:
        if self._answer_run is not None and self._answer_run[0] == run_id:
            self.notice.emit(text)

    def _on_compared(self, run_id: int, report: ComparisonReport) -> None:
        if self._compare_run is None or self._compare_run[0] != run_id:
            return
        answer = self._compare_run[1]
        self._compare_run = None
        self._set_busy()
        if "cancelled" in (report.speculative.stop_reason, report.baseline.stop_reason):
            return  # stopped by the person: half a comparison says nothing
        records = [r for step in report.speculative.steps for r in records_from_step(step)]
        answer.comparison = report  # the answer's Why panel measures against its plain run
        widget = self._view.answer_for(answer)
        if widget is not None:
            widget.comparison_arrived()
        self.comparison_ready.emit(CompareOutcome(report, records, answer))

    def _on_failed(self, run_id: int, message_text: str) -> None:
        if self._answer_run is not None and self._answer_run[0] == run_id:
            message = self._answer_run[1]
            self._answer_run = None
            if self._continuing is not None:  # the cut answer is still cut: it keeps its Continue
                message.stop_reason = self._continued_stop
            self._continuing = None
            message.error = message_text
            self._refresh(message, finished=True)
            self.save()
        elif self._compare_run is not None and self._compare_run[0] == run_id:
            self._compare_run = None
        else:
            return
        self._set_busy()
        self.error.emit(message_text)

    def _refresh(self, message: Message, finished: bool = False) -> None:
        """Stats, notes and errors changed; the painted tokens did not. A finished answer is
        rendered once more, from its final text, at once."""
        widget = self._view.answer_for(message)
        if widget is not None and finished:
            widget.set_streaming(False)
        elif widget is not None:
            widget.update_labels()

    def _set_busy(self) -> None:
        self._view.set_busy(self.busy)
        self.busy_changed.emit(self.busy)
