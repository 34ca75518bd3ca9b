"""Errors a person can read.

Every failure the engine knows how to describe is a ``SpecChatError`` whose ``str()`` is one
plain sentence fit for a dialog box or one line of stderr. Anything else escaping the engine
is a bug.
"""

from __future__ import annotations


class SpecChatError(Exception):
    """A failure with a message meant for the person using the app."""


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
