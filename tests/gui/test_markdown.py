"""Answers rendered as Markdown (markdown-it-py + Pygments in Qt rich text), the per-answer
switch to the raw token view, and streaming straight into the rendered view (its provenance:
test_rendered_provenance.py)."""

from __future__ import annotations

from gui_helpers import ANSWER_TIMEOUT_MS, document_tokens, tiny_settings
from PySide6.QtGui import QFont, QTextDocument

from app.ui.chat.markdown_view import MarkdownView
from app.ui.chat.message_widgets import AnswerWidget
from app.ui.common.conversation import Message, TokenRecord

MARKDOWN = "Use **bold** and `inline`.\n\n- one\n- two\n\n```python\ndef add(a, b):\n    return a + b\n```\n"


def _fragments(document: QTextDocument):  # type: ignore[no-untyped-def]
    """(block, fragment) for every fragment of the document."""
    block = document.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            yield block, it.fragment()
            it += 1
        block = block.next()


def _is_monospace(fragment) -> bool:  # type: ignore[no-untyped-def]
    fmt = fragment.charFormat()
    return fmt.fontFixedPitch() or "monospace" in (fmt.fontFamilies() or [])


def _answer(qtbot) -> AnswerWidget:  # type: ignore[no-untyped-def]
    """A finished answer whose tokens alternate draft / target, its text MARKDOWN."""
    pieces = [MARKDOWN[i : i + 5] for i in range(0, len(MARKDOWN), 5)]
    records = [TokenRecord(p, "draft" if i % 2 else "target", i) for i, p in enumerate(pieces)]
    message = Message("assistant", MARKDOWN, records=records, stats={"new_tokens": len(pieces)}, stop_reason="eos")
    widget = AnswerWidget(message)
    qtbot.addWidget(widget)
    widget.resize(600, 400)
    widget.show()
    return widget


def test_a_code_block_renders_monospace_with_syntax_colours(qtbot):
    view = MarkdownView()
    qtbot.addWidget(view)
    view.set_markdown(MARKDOWN)
    code = [(b, f) for b, f in _fragments(view.document()) if b.blockFormat().nonBreakableLines()]

    assert "".join(f.text() for _, f in code) == "def add(a, b):    return a + b"  # one <pre> line per block
    assert all(_is_monospace(f) for _, f in code)
    colours = {f.charFormat().foreground().color().name() for _, f in code if f.text().strip()}
    assert len(colours) >= 3  # keyword, name, operator, plain text: Pygments coloured it
    assert code[0][0].blockFormat().background().style() != 0  # the block has its own background
    assert view.code_blocks == ("def add(a, b):\n    return a + b\n",)


def test_bold_inline_code_and_lists_render(qtbot):
    view = MarkdownView()
    qtbot.addWidget(view)
    view.set_markdown(MARKDOWN)
    fragments = {f.text(): (b, f) for b, f in _fragments(view.document())}

    assert fragments["bold"][1].charFormat().fontWeight() >= QFont.Weight.Bold
    assert _is_monospace(fragments["inline"][1]) and not _is_monospace(fragments["Use "][1])
    items = [fragments[text][0] for text in ("one", "two")]
    assert all(block.textList() is not None for block in items)
    assert items[0].textList() == items[1].textList()  # one list of two items
    assert "**" not in view.toPlainText() and "```" not in view.toPlainText()


def test_raw_html_from_the_model_is_shown_as_text_not_rendered(qtbot):
    view = MarkdownView()
    qtbot.addWidget(view)
    view.set_markdown("<b>not bold</b>")
    assert view.toPlainText() == "<b>not bold</b>"


def test_a_finished_answer_is_rendered_and_the_switch_shows_its_token_provenance(qtbot):
    answer = _answer(qtbot)
    assert answer.rendered.isVisible() and not answer.view.isVisible()
    assert "**" not in answer.rendered.toPlainText()

    answer.tokens_button.click()

    assert answer.view.isVisible() and not answer.rendered.isVisible()
    expected = [(r.text, r.kind) for r in answer.message.records]
    assert document_tokens(answer.view) == expected
    assert {"draft", "target"} == {kind for _, kind in document_tokens(answer.view)}
    answer.tokens_button.click()
    assert answer.rendered.isVisible() and not answer.view.isVisible()


def test_an_answer_streams_into_the_rendered_view(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models, max_new_tokens=40))
    seen: list[tuple[bool, bool, str]] = []

    def on_events(_run: int, _steps: list) -> None:  # type: ignore[type-arg]
        answer = window.chat_view.answers[-1]
        seen.append((answer.showing_tokens, answer.rendered.isVisible(), answer.message.content))

    window.worker.events_ready.connect(on_events)
    with qtbot.waitSignal(window.worker.finished, timeout=ANSWER_TIMEOUT_MS):
        window.send_message("Hello world!")
    qtbot.waitUntil(lambda: not window.controller.busy)
    window.worker.events_ready.disconnect(on_events)

    answer = window.chat_view.answers[-1]
    assert seen and all(not tokens and rendered for tokens, rendered, _ in seen)  # rendered while streaming
    assert not answer.showing_tokens and answer.rendered.markdown == answer.message.content
    assert answer.rendered.records == answer.message.records
