"""Provenance in the rendered answer: the characters a token wrote carry its format (accepted
drafts tinted and underlined) and its hover details, on headings, lists, code blocks, inline
code and tables; syntax that is not shown carries nothing; rejected drafts appear, struck
through, when asked; and an answer streams straight into this view."""

from __future__ import annotations

import random
import re

from gui_helpers import send_and_wait, tiny_settings
from PySide6.QtCore import QEvent, QPoint
from PySide6.QtGui import QHelpEvent, QPalette, QTextCharFormat, QTextDocument
from PySide6.QtWidgets import QApplication, QToolTip

from app.ui.chat.markdown_view import MarkdownView, shown_text
from app.ui.chat.message_widgets import AnswerWidget
from app.ui.chat.source_map import align
from app.ui.common.conversation import Message, TokenRecord
from app.ui.common.token_style import TOKEN_INDEX, TOKEN_KIND, kind_colors

D, T = "draft", "target"
# (token text, kind, what of it the rendered answer shows): the answer is the texts end to end
TOKENS: list[tuple[str, str, str]] = [
    ("# ", D, ""),  # syntax only: nothing to tint
    ("Sorting", D, "Sorting"),
    (" lists\n\n", T, ""),
    ("Use **", T, ""),
    ("sorted", D, "sorted"),
    ("** or `", T, ""),
    ("list.sort", D, "list.sort"),
    ("()` to sort.\n\n", T, ""),
    ("- ", T, ""),
    ("first", D, "first"),
    (" item\n- ", T, ""),
    ("second", T, ""),
    (" item\n\n", D, " item"),
    ("```python\ndef", D, "def"),  # the fence is not shown, the keyword is
    (" add(a, b):\n    ", T, ""),
    ("return", D, "return"),
    (" a + b\n```\n\n", T, ""),
    ("| Key | Value |\n|-----|-------|\n| ", T, ""),
    ("alpha", D, "alpha"),
    (" | 1 |\n", T, ""),
]
MARKDOWN = "".join(text for text, _, _ in TOKENS)
RECORDS = [TokenRecord(text, kind, step, p_target=0.5, p_draft=0.25) for step, (text, kind, _) in enumerate(TOKENS)]


def _chars(document: QTextDocument) -> list[tuple[int, str, QTextCharFormat]]:
    """(position, character, format) for every character of the document's blocks."""
    out = []
    block = document.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            fmt = fragment.charFormat()
            out += [(fragment.position() + k, char, fmt) for k, char in enumerate(fragment.text())]
            it += 1
        block = block.next()
    return out


def _tinted(fmt: QTextCharFormat, palette: QPalette) -> bool:
    return fmt.background().color() == kind_colors(palette)["draft"] and fmt.fontUnderline()


def _view(qtbot, markdown: str = MARKDOWN, records: list[TokenRecord] = RECORDS) -> MarkdownView:  # type: ignore[no-untyped-def]
    view = MarkdownView()
    qtbot.addWidget(view)
    view.resize(600, 600)
    view.set_markdown(markdown, records)
    view.show()
    qtbot.waitExposed(view)
    return view


def test_tinted_characters_are_exactly_the_shown_text_of_accepted_drafts(qtbot):
    view = _view(qtbot)
    palette = view.palette()
    chars = _chars(view.document())

    tinted_by_token: dict[int, str] = {}
    for _, char, fmt in chars:
        if _tinted(fmt, palette):
            index = fmt.property(TOKEN_INDEX)
            assert RECORDS[index].kind == "draft" and fmt.property(TOKEN_KIND) == "draft"
            tinted_by_token[index] = tinted_by_token.get(index, "") + char
    expected = {n: shown for n, (_, kind, shown) in enumerate(TOKENS) if kind == D and shown}
    assert tinted_by_token == expected
    # target tokens are plain but still known (for hovering)
    targets = [fmt for _, _, fmt in chars if fmt.property(TOKEN_KIND) == "target"]
    assert targets and not any(_tinted(fmt, palette) for fmt in targets)


def test_the_markdown_keeps_its_own_formatting_under_the_tint(qtbot):
    view = _view(qtbot)
    document = view.document()
    heading = document.find("Sorting")
    assert heading.block().blockFormat().headingLevel() == 1
    assert _tinted(heading.charFormat(), view.palette())
    code = document.find("return")
    assert code.block().blockFormat().nonBreakableLines()  # still in the code block
    assert code.charFormat().fontFixedPitch() or "monospace" in (code.charFormat().fontFamilies() or [])
    assert code.charFormat().foreground().style() != 0  # Pygments' keyword colour kept
    assert _tinted(code.charFormat(), view.palette())
    assert document.find("first").block().textList() is not None
    assert document.find("alpha").currentTable() is not None
    assert view.toPlainText().count("#") == 0 and "```" not in view.toPlainText()


def _point_of(view: MarkdownView, text: str) -> QPoint:
    cursor = view.document().find(text)
    cursor.setPosition(cursor.selectionStart() + 1)
    rect = view.cursorRect(cursor)
    return QPoint(rect.x(), rect.center().y())  # inside the text's second character


def test_hovering_a_tinted_character_shows_its_token_details(qtbot):
    view = _view(qtbot)
    record = view.record_at(_point_of(view, "list.sort"))
    assert record == RECORDS[6]

    point = _point_of(view, "return")
    event = QHelpEvent(QEvent.Type.ToolTip, point, view.viewport().mapToGlobal(point))
    QApplication.sendEvent(view.viewport(), event)
    tip = QToolTip.text()
    assert "Draft token, accepted by the target in pass 15" in tip
    assert "'return'" in tip and "0.500" in tip and "0.250" in tip
    QToolTip.hideText()


def test_rejected_drafts_are_inserted_struck_through_where_they_were_proposed(qtbot):
    maybe, ordered = TokenRecord("maybe", "rejected", 2), TokenRecord("ordered", "rejected", 4)
    records = [*RECORDS[:3], maybe, *RECORDS[3:5], ordered, *RECORDS[5:]]
    view = _view(qtbot, MARKDOWN, records)
    assert "ordered" not in view.toPlainText()

    view.set_show_rejected(True)

    assert "sortedordered or list.sort()" in view.toPlainText()  # right after the token before it
    found = view.document().find("ordered")
    assert found.charFormat().fontStrikeOut() and not found.charFormat().fontUnderline()
    assert found.charFormat().property(TOKEN_INDEX) == 6
    assert view.record_at(_point_of(view, "ordered")) == ordered
    # proposed after the heading's last word: at the end of the heading, not in the next block
    assert view.document().find("maybe").block().text() == "Sorting listsmaybe"
    # the tokens after them still map to themselves
    assert view.document().find("alpha").charFormat().property(TOKEN_INDEX) == 20


def test_the_tint_follows_the_palette_light_and_dark(qtbot):
    view = _view(qtbot)
    light = view.document().find("Sorting").charFormat().background().color()
    dark = QPalette(view.palette())
    dark.setColor(QPalette.ColorRole.Base, dark.color(QPalette.ColorRole.Base).darker(400))
    view.setPalette(dark)
    again = view.document().find("Sorting").charFormat()
    assert again.background().color() == kind_colors(dark)["draft"] != light
    assert again.fontUnderline()


def test_an_answer_streams_into_the_rendered_view_with_its_provenance(qtbot):
    message = Message("assistant", "")
    answer = AnswerWidget(message)
    qtbot.addWidget(answer)
    answer.resize(600, 600)
    answer.show()
    streamed = 0
    for cut in (3, 8, len(TOKENS)):  # batches of tokens, as the controller appends them
        message.records.extend(RECORDS[streamed:cut])
        message.content = "".join(r.text for r in message.records)
        answer.append_records(streamed)
        streamed = cut
        qtbot.waitUntil(lambda: answer.rendered.markdown == message.content)
        assert answer.rendered.isVisible() and not answer.showing_tokens
        heading = answer.rendered.document().find("Sorting")
        assert heading.block().blockFormat().headingLevel() == 1  # a heading before the answer ends
        assert _tinted(heading.charFormat(), answer.rendered.palette())
    assert not answer.copy_button.isEnabled()  # still streaming
    streamed_look = [(c, f.property(TOKEN_INDEX), f.background()) for _, c, f in _chars(answer.rendered.document())]

    message.stop_reason = "eos"
    answer.set_streaming(False)

    finished_look = [(c, f.property(TOKEN_INDEX), f.background()) for _, c, f in _chars(answer.rendered.document())]
    assert finished_look == streamed_look  # no jump from one look to another at the end


def test_a_real_answer_tints_in_the_rendered_view_only_accepted_drafts_text(open_window, qtbot, tiny_models):
    window = open_window(tiny_settings(tiny_models))
    result = send_and_wait(qtbot, window)
    answer = window.chat_view.answers[-1]
    assert answer.rendered.isVisible()
    records = answer.message.records
    palette = answer.rendered.palette()

    tinted = 0
    for _, char, fmt in _chars(answer.rendered.document()):
        index = fmt.property(TOKEN_INDEX)
        if _tinted(fmt, palette):
            tinted += 1
            assert records[index].kind == "draft"
        if isinstance(index, int) and not char.isspace():
            assert char in records[index].text  # a character is only ever given to a token that wrote it
    assert any(t.source == "draft" and t.text.strip() for t in result.tokens)
    assert tinted > 0


SYNTAX = ["**", "*", "`", "_", "\n\n# ", "\n- ", "\n1. ", "\n\n```py\n", "\n```\n", "\n\n> ", " | ", "\n", "  ", "["]
SYNTAX += ["](http://x.y/z)", "\\*", "&amp;", "~~"]


def _random_markdown(rng: random.Random, words: list[str]) -> str:
    parts = []
    for _ in range(rng.randint(3, 50)):
        parts += [rng.choice(words), rng.choice(SYNTAX) if rng.random() < 0.4 else " "]
    return "".join(parts)


def test_every_shown_word_is_paired_with_its_own_occurrence_in_the_source(qtbot):
    """Random Markdown over a few repeated words: the n-th time a word is shown, its letters
    are paired with the n-th time it is written (when the rendering shows every one)."""
    rng = random.Random(3)
    words = ["moon", "sun", "ice", "bee", "fog"]
    view = MarkdownView()
    qtbot.addWidget(view)
    checked = 0
    for _ in range(120):
        source = _random_markdown(rng, words)
        view.set_markdown(source)
        rendered = shown_text(view.document())
        pairs = align(rendered, source)
        for word in words:
            shown = [m.start() for m in re.finditer(word, rendered)]
            written = [m.start() for m in re.finditer(word, source)]
            if len(shown) != len(written):
                continue  # a word the rendering hid (in a link target...): no oracle
            for r, s in zip(shown, written):
                assert pairs[r : r + len(word)] == list(range(s, s + len(word))), (source, word)
                checked += 1
    assert checked > 2000
