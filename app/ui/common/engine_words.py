"""The engine's own words, in the interface's language: the loading messages it reports, the
drafter names it gives ("prompt lookup", "draft model: NAME", "draft model: NAME + lookup") and
the bundled model's name.

The engine words them in English (one wording for the CLI and the GUI, and the JSON keeps
them so); the window translates them here. A message this module does not know is shown as
the engine wrote it."""

from __future__ import annotations

import re

from PySide6.QtCore import QCoreApplication

from app.engine.events import MIXED_SUFFIX  # the draft model and lookup: "draft model: NAME + lookup"

BUNDLED_SUFFIX = " (bundled)"  # app/engine/models/catalog.py BUNDLED_NAME ends with it
DRAFT_MODEL_PREFIX = "draft model: "  # app/engine/decoding/drafters.py ModelDrafter.name

SUFFIX_DRAFTER = "suffix index"  # app/engine/decoding/suffix_drafter.py: "earlier conversations" on screen


def model_label(name: str) -> str:
    """A model's name; the bundled model's "(bundled)" translated."""
    if name.endswith(BUNDLED_SUFFIX):
        return name.removesuffix(BUNDLED_SUFFIX) + " " + QCoreApplication.translate("Engine", "(bundled)")
    return name


def drafter_label(drafter: str) -> str:
    """A drafter as the engine names it ("prompt lookup", "suffix index", "draft model: NAME",
    "none"; "server": the drafter of an inference server, app/remote/session.py SERVER_DRAFTER) in
    the interface's words: "suffix index" is "earlier conversations" on screen."""
    if drafter == "prompt lookup":
        return QCoreApplication.translate("Engine", "prompt lookup")
    if drafter == "server":
        return QCoreApplication.translate("Engine", "the server's drafter")
    if drafter == "none":
        return QCoreApplication.translate("Engine", "none")
    if drafter == SUFFIX_DRAFTER:
        return QCoreApplication.translate("Engine", "earlier conversations")
    if drafter.startswith(DRAFT_MODEL_PREFIX) and drafter.endswith(MIXED_SUFFIX):
        name = model_label(drafter.removeprefix(DRAFT_MODEL_PREFIX).removesuffix(MIXED_SUFFIX))
        return QCoreApplication.translate("Engine", "draft model: {0} + lookup").format(name)
    if drafter.startswith(DRAFT_MODEL_PREFIX):
        name = model_label(drafter.removeprefix(DRAFT_MODEL_PREFIX))
        return QCoreApplication.translate("Engine", "draft model: {0}").format(name)
    return drafter


def loading_message(message: str) -> str:
    """A progress message of ``load_model`` (app/engine/models/loading.py) in the interface's
    language: the English template matched, its argument kept."""
    templates = (
        (
            "Converting GGUF (first load only)…",
            QCoreApplication.translate("Engine", "Converting GGUF (first load only)…"),
        ),
        (
            "Converting GGUF to its quantized form (first load only)…",
            QCoreApplication.translate("Engine", "Converting GGUF to its quantized form (first load only)…"),
        ),
        (
            "The cached form of {0} is damaged ({1}); converting it again…",
            QCoreApplication.translate("Engine", "The cached form of {0} is damaged ({1}); converting it again…"),
        ),
        ("Loading tokenizer…", QCoreApplication.translate("Engine", "Loading tokenizer…")),
        ("Loading weights…", QCoreApplication.translate("Engine", "Loading weights…")),
        ("Ready", QCoreApplication.translate("Engine", "Ready")),
        ("Preparing the model on {0}…", QCoreApplication.translate("Engine", "Preparing the model on {0}…")),
        ("Opening {0}…", QCoreApplication.translate("Engine", "Opening {0}…")),
    )
    for english, translated in templates:
        pattern = re.escape(english).replace(re.escape("{0}"), "(.+)").replace(re.escape("{1}"), "(.+)")
        found = re.fullmatch(pattern, message, flags=re.DOTALL)
        if found is not None:
            return translated.format(*(model_label(group) for group in found.groups()))
    return message


def server_words(description: str) -> str:
    """A server as ``app.remote`` describes it ("llama.cpp b6550 at URL", "vLLM 0.32.0 at URL",
    "an OpenAI-compatible server at URL") in the interface's language: the joints translated,
    the names, version and URL kept."""
    name, at, url = description.rpartition(" at ")
    if not at:
        return description
    if name == "an OpenAI-compatible server":
        name = QCoreApplication.translate("Engine", "an OpenAI-compatible server")
    return QCoreApplication.translate("Engine", "{0} at {1}").format(name, url)
