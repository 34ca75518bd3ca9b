"""Helpers for the GUI tests: settings over tiny models, sending and waiting, and reading
token provenance back out of a view's document."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from app.engine.events import RunResult
from app.ui.common.token_style import TOKEN_INDEX, TOKEN_KIND
from app.ui.common.token_view import TokenTextView
from app.ui.main_window import MainWindow
from app.ui.settings.store import AppSettings, ModelSettings

LOAD_TIMEOUT_MS = 60_000
ANSWER_TIMEOUT_MS = 60_000
PROMPT = "Hello world!"  # the tiny llama answers it with accepted AND rejected drafts


def tiny_settings(tiny_models: dict[str, Path], draft: str = "llama-draft", **changes: object) -> AppSettings:
    models = ModelSettings(
        target_kind="folder",
        target_path=str(tiny_models["llama"]),
        draft_kind="folder" if draft != "lookup" else "lookup",
        draft_path=str(tiny_models[draft]) if draft != "lookup" else "",
        device="cpu",
        dtype="float32",
    )
    # a fixed k: on tiny models a draft pass costs what a target pass costs, so the automatic
    # choice would (rightly) not draft, and these tests need drafts to paint
    settings = AppSettings(models=models, max_new_tokens=24, k=4, auto_k=False)
    return replace(settings, **changes)  # type: ignore[arg-type]


def send_and_wait(qtbot, window: MainWindow, text: str = PROMPT) -> RunResult:  # type: ignore[no-untyped-def]
    """Send ``text`` and return the engine's RunResult for the answer."""
    with qtbot.waitSignal(window.worker.finished, timeout=ANSWER_TIMEOUT_MS) as blocker:
        assert window.send_message(text)
    qtbot.waitUntil(lambda: not window.controller.busy)
    return blocker.args[1]


def document_tokens(view: TokenTextView) -> list[tuple[str, str]]:
    """(text, kind) per token as painted in a view's document, read from its char formats."""
    tokens: list[tuple[str, str]] = []
    block = view.document().begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            fmt = fragment.charFormat()
            if fmt.hasProperty(TOKEN_INDEX):
                text = fragment.text().replace("\u2028", "\n")
                tokens.append((text, str(fmt.property(TOKEN_KIND))))
            it += 1
        block = block.next()
    return tokens


def has_strikeout(view: TokenTextView, kind: str) -> bool:
    block = view.document().begin()
    it = block.begin()
    while not it.atEnd():
        fmt = it.fragment().charFormat()
        if fmt.property(TOKEN_KIND) == kind:
            return fmt.fontStrikeOut()
        it += 1
    raise AssertionError(f"no {kind} token in the view")
