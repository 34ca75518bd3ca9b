"""The back-end contract: what answers a conversation, on this computer or on a server.

Two back-ends implement ``Backend``: ``app.engine.session.Engine`` (the models on this computer)
and ``app.remote.session.ServerSession`` (a model on an inference server). The worker, the CLI
and the comparison hold a ``Backend`` and never ask which one it is: where the two differ, a
capability value or a method below says what each one does. ``Backend.generate`` is written
once, over ``stream`` and ``answered_by``, so every ``AnswerOptions`` field means the same on both::

    run = backend.generate(messages, GenerationConfig(), options=AnswerOptions(history_id="c1"))

Torch-free (``app.remote`` imports it): the protocol and its values only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from app.engine.config import GenerationConfig
from app.engine.events import ArmConditions, RunProvenance, RunResult, StepEvent

Conversation = str | Sequence[Mapping[str, str]]  # one user turn, or {"role", "content"} messages


@dataclass(frozen=True)
class AnswerOptions:
    """Which answer a call makes beyond its generation settings, and what it leaves behind.
    The defaults: a new answer, indexed under a name of its own, by the configured drafter."""

    # the last message is a cut assistant answer to go on with
    continue_answer: bool = False
    # that answer's exact token ids, as the engine made them (``Engine.prompt_ids``): it goes on
    # exactly where it stopped; None: from its text, tokenised again (a server always goes on
    # from the text: its chat endpoint takes no ids)
    answer_ids: Sequence[int] | None = None
    # the target that made ``answer_ids`` (None: not recorded, trusted): ids another model made,
    # or that are no tokens of this one, are set aside (``Backend.answer_ids_problem``)
    answer_made_by: str | None = None
    # the conversation's id: its prompt and answer are indexed under it, for the suffix drafter
    # (None: a name of their own); a back-end that keeps no index (a server) records nothing
    history_id: str | None = None
    # False: nothing of this answer is indexed
    record: bool = True
    # a fresh rerun of an answer already given in ``history_id`` (Compare, the drafter
    # experiment): nothing is recorded, and nothing the earlier answer left helps it: the
    # suffix drafter sees nothing indexed under ``history_id`` (only the prompt, by prompt
    # lookup, and the other conversations); a server is asked not to reuse a cached prompt
    # (llama.cpp's ``cache_prompt``: vLLM's chat requests cannot say so)
    rerun: bool = False
    # a drafter by name (one of ``Backend.drafter_choices``) instead of the configured one
    drafter_choice: str | None = None


NEW_ANSWER = AnswerOptions()


@runtime_checkable
class Backend(Protocol):
    """What answers a conversation: ``stream`` / ``generate`` yield ``StepEvent`` and return a
    ``RunResult``, whichever back-end ran. Used from one thread at a time (the worker's engine
    thread, the CLI's main thread)."""

    @property
    def target_name(self) -> str:
        """The model answering, as the back-end names it."""
        ...

    @property
    def drafter_name(self) -> str:
        """The configured drafter ("none" without one; a server: "server" once it is known to draft)."""
        ...

    @property
    def drafter_choices(self) -> list[str]:
        """What ``AnswerOptions.drafter_choice`` may name. Empty where the back-end chooses its
        own drafter (a server): no drafter experiment runs there."""
        ...

    @property
    def context_length(self) -> int:
        """Tokens the target holds, prompt and answer together (0: the back-end does not say)."""
        ...

    @property
    def timed_arms(self) -> TimedArms | None:
        """The back-end itself where it runs both arms of a comparison (the local engine:
        ``speculative`` off is the same loop with no drafter); None where it drafts as it was
        started (a server), so a comparison needs a second, plain back-end."""
        ...

    def stream(
        self,
        conversation: Conversation,
        config: GenerationConfig,
        cancel: threading.Event | None = None,
        options: AnswerOptions = NEW_ANSWER,
    ) -> Iterator[StepEvent]:
        """Answer the conversation, one ``StepEvent`` per step the back-end can tell apart (the
        local engine: per target pass); the last one carries the stop reason. ``cancel`` stops
        it before its next step, keeping what was made."""
        ...

    def answered_by(self, config: GenerationConfig, drafter_choice: str | None = None) -> RunProvenance:
        """Which models and settings made the answer the latest ``stream`` gave with ``config``
        and ``drafter_choice`` (asked when it has ended: a server tells only then whether it
        drafted, the local engine whether it skipped its draft model)."""
        ...

    def answer_ids_problem(self, answer_ids: Sequence[int] | None, made_by: str | None = None) -> str:
        """Why a cut answer's saved token ids are set aside, for the person to be told: Continue
        then goes on from the answer's text. "": nothing to tell (none given, they are fed, or
        the back-end never takes ids: a server's chat endpoint always goes on from the text)."""
        ...

    def reset(self) -> None:
        """Forget the caches of earlier turns on this side (the next call prefills its prompt)."""
        ...

    def warm_up(self) -> None:
        """Pay the one-off set-up costs now, so the first answer (and its comparison) does not."""
        ...

    def remember(self, owner: str, conversation: Conversation) -> None:
        """Index a saved conversation under ``owner``, its id, for the suffix drafter (a
        back-end that keeps no index: nothing)."""
        ...

    def forget(self, owner: str) -> None:
        """Drop everything indexed under ``owner``, also what an answer in flight would still record."""
        ...

    def set_remembering(self, on: bool) -> None:
        """Off: forget every conversation and record none until it is on again."""
        ...

    def close(self) -> None:
        """Release what the back-end holds outside this process (a server's connection)."""
        ...

    def generate(
        self,
        conversation: Conversation,
        config: GenerationConfig,
        cancel: threading.Event | None = None,
        on_step: Callable[[StepEvent], None] | None = None,
        options: AnswerOptions = NEW_ANSWER,
    ) -> RunResult:
        """Answer the conversation (or go on with its cut answer) and return the whole run:
        ``stream``'s steps, each handed to ``on_step`` as it comes, made by ``answered_by``."""
        steps = []
        for step in self.stream(conversation, config, cancel, options):
            steps.append(step)
            if on_step is not None:
                on_step(step)
        made_by = self.answered_by(config, options.drafter_choice)
        return RunResult.from_steps(
            steps,
            speculative=made_by.drafter != "none",
            drafter=made_by.drafter,
            config=config.to_dict(),
            made_by=made_by,
        )


@runtime_checkable
class TimedArms(Backend, Protocol):
    """A back-end that runs both arms of a comparison itself (``app.engine.analysis.comparison``)."""

    def start_arm(self) -> Callable[[], ArmConditions]:
        """Before one arm: start measuring the machine; call what it returns when the arm is over."""
        ...

    def made_by(self, config: GenerationConfig, drafter_choice: str | None = None) -> RunProvenance:
        """Which models and settings a run with ``config`` would be made by (before it runs)."""
        ...
