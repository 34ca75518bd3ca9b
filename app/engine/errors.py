"""Errors a person can read.

Every failure the engine knows how to describe is a ``SpecChatError`` whose ``str()`` is one
plain sentence fit for a dialog box or one line of stderr. Anything else escaping the engine
is a bug.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from app.engine.i18n import QT_TRANSLATE_NOOP

# The messages a front translates by their code (the GUI: ``QCoreApplication.translate(
# "EngineError", MESSAGES[code]).format(**values)``), so no front has to match English text.
MESSAGES = {
    "prompt_too_long": QT_TRANSLATE_NOOP(
        "EngineError",
        "The prompt is {tokens} tokens long, but {model} has room for {limit} tokens: shorten it or start a new chat.",
    ),
    "prompt_empty": QT_TRANSLATE_NOOP("EngineError", "The prompt is empty: write something to send."),
    "no_model_at": QT_TRANSLATE_NOOP("EngineError", "There is no model file or folder at '{source}'."),
    "not_a_model_folder": QT_TRANSLATE_NOOP(
        "EngineError", "'{source}' is not a model folder: it has no config.json."
    ),
    "not_on_this_computer": QT_TRANSLATE_NOOP(
        "EngineError",
        "'{source}' is neither a file or folder on this computer nor a model in the local Hugging Face "
        "cache (SpecChat loads offline, so download it first).",
    ),
    "drafter_not_loaded": QT_TRANSLATE_NOOP(
        "EngineError", "The drafter {drafter} is not loaded (available: {available})."
    ),
}
E = TypeVar("E", bound="SpecChatError")


class SpecChatError(Exception):
    """A failure with a message meant for the person using the app. ``code`` (a key of
    ``MESSAGES``) and ``values`` let a front say the same in its own language."""

    def __init__(self, message: str = "", *, code: str = "", values: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.values = dict(values or {})

    @classmethod
    def of(cls: type[E], code: str, **values: Any) -> E:
        """The error whose message is ``MESSAGES[code]`` filled with ``values``."""
        return cls(MESSAGES[code].format(**values), code=code, values=values)


class ModelLoadError(SpecChatError):
    """A model source could not be found, read or loaded."""


class IncompatibleModelsError(SpecChatError):
    """The draft and the target do not share a tokenizer."""


class InvalidSettingError(SpecChatError):
    """A generation setting is out of range."""


class PromptError(SpecChatError):
    """The prompt is empty or does not fit the model's context."""


class StaleStreamError(SpecChatError):
    """An answer's stream was resumed after another answer started on the same engine."""
