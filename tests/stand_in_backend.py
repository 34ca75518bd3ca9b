"""A back-end for the worker's tests that loads nothing: what a test does not script, it
answers as an idle local engine would (no index, nothing to close, both arms on itself)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from app.engine.backend import NEW_ANSWER, AnswerOptions, Conversation, TimedArms
from app.engine.config import LOOKUP, SUFFIX, GenerationConfig
from app.engine.events import ArmConditions, RunProvenance, StepEvent


class StandInBackend(TimedArms):
    """``target_name`` and ``drafter_name`` as given, any other attribute a test needs
    (``target=…`` for the status bar) by keyword. Subclasses script ``generate``."""

    target_name = "stand-in"
    drafter_name = "none"
    context_length = 0
    drafter_choices = [LOOKUP, SUFFIX]

    def __init__(self, target_name: str = "stand-in", drafter_name: str = "none", **attributes: Any) -> None:
        self.target_name, self.drafter_name = target_name, drafter_name
        for name, value in attributes.items():
            setattr(self, name, value)

    @property
    def timed_arms(self) -> StandInBackend:
        return self

    def stream(
        self,
        conversation: Conversation,
        config: GenerationConfig,
        cancel: threading.Event | None = None,
        options: AnswerOptions = NEW_ANSWER,
    ) -> Iterator[StepEvent]:
        raise AssertionError("a stand-in answers only what its test scripts (generate)")

    def answered_by(self, config: GenerationConfig, drafter_choice: str | None = None) -> RunProvenance:
        return self.made_by(config, drafter_choice)

    def made_by(self, config: GenerationConfig, drafter_choice: str | None = None) -> RunProvenance:
        drafter = self.drafter_name if config.speculative else "none"
        return RunProvenance(self.target_name, drafter, "float32", "cpu", config=config.to_dict())

    def start_arm(self) -> Callable[[], ArmConditions]:
        return ArmConditions  # nothing measured

    def answer_ids_problem(self, answer_ids: Sequence[int] | None, made_by: str | None = None) -> str:
        return ""

    def reset(self) -> None: ...
    def warm_up(self) -> None: ...
    def remember(self, owner: str, conversation: Conversation) -> None: ...
    def forget(self, owner: str) -> None: ...
    def set_remembering(self, on: bool) -> None: ...
    def close(self) -> None: ...
