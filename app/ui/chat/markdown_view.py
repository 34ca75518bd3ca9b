"""Answers rendered as Markdown: markdown-it-py parses (CommonMark + tables and
strikethrough, raw HTML off), Pygments colours fenced code, Qt's rich text shows the HTML.

Each code block gets a "Copy code" link (``specchat-copy:N``) above it; the view copies
block ``N`` when it is clicked, and its context menu offers the same for the block under
the mouse. Rendering is one parse of the whole answer: the chat shows the token view while
an answer streams and renders once it is finished.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any

from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import TextLexer, get_lexer_by_name
from pygments.util import ClassNotFound
from PySide6.QtCore import QPoint, Qt, QUrl, Signal
from PySide6.QtGui import QContextMenuEvent, QDesktopServices, QGuiApplication, QTextBlock
from PySide6.QtWidgets import QFrame, QSizePolicy, QTextBrowser, QWidget

from app.ui.common.token_style import is_dark

COPY_SCHEME = "specchat-copy"
CODE_STYLES = {False: "default", True: "monokai"}  # Pygments style per dark palette


@dataclass(frozen=True)
class RenderedMarkdown:
    html: str
    code_blocks: tuple[str, ...]  # the source of each fenced / indented code block, in order


def _lexer(language: str) -> Lexer:
    try:
        return get_lexer_by_name(language, ensurenl=False) if language else TextLexer(ensurenl=False)
    except ClassNotFound:
        return TextLexer(ensurenl=False)


def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    md.add_render_rule("fence", _render_code)
    md.add_render_rule("code_block", _render_code)
    return md


def _render_code(self: Any, tokens: list[Any], idx: int, options: Any, env: dict[str, Any]) -> str:
    token = tokens[idx]
    language = token.info.strip().split(maxsplit=1)[0] if token.info and token.info.strip() else ""
    blocks: list[str] = env["code_blocks"]
    index = len(blocks)
    blocks.append(token.content)
    formatter: HtmlFormatter = env["formatter"]
    body = highlight(token.content.rstrip("\n"), _lexer(language), formatter).rstrip(
        "\n"
    )  # no empty last line
    background = formatter.style.background_color or "#f6f8fa"
    caption = f" &nbsp;<i>{html.escape(language)}</i>" if language else ""
    return (
        f'<p><a href="{COPY_SCHEME}:{index}">{html.escape(env["copy_label"])}</a>{caption}</p>\n'
        f'<pre style="background-color:{background}">{body}</pre>\n'
    )


def render_markdown(text: str, dark: bool = False, copy_label: str = "Copy code") -> RenderedMarkdown:
    """Markdown source → HTML for Qt's rich text, and the code blocks it holds."""
    env: dict[str, Any] = {
        "code_blocks": [],
        "formatter": HtmlFormatter(nowrap=True, noclasses=True, style=CODE_STYLES[dark]),
        "copy_label": copy_label,
    }
    body = _parser().render(text, env).rstrip()  # a newline after a last </pre> would join it
    return RenderedMarkdown(body, tuple(env["code_blocks"]))


class MarkdownView(QTextBrowser):
    """A read-only, self-sizing view of an answer's Markdown."""

    code_copied = Signal(int)  # index of the code block put on the clipboard

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self._markdown = ""
        self._rendered = RenderedMarkdown("", ())
        self.anchorClicked.connect(self._on_anchor)
        self.document().documentLayout().documentSizeChanged.connect(self._on_size_changed)

    @property
    def markdown(self) -> str:
        return self._markdown

    @property
    def code_blocks(self) -> tuple[str, ...]:
        return self._rendered.code_blocks

    def set_markdown(self, text: str) -> None:
        self._markdown = text
        self._render()

    def copy_code_block(self, index: int) -> None:
        QGuiApplication.clipboard().setText(self.code_blocks[index])
        self.code_copied.emit(index)

    def code_block_at(self, pos: QPoint) -> int | None:
        """The code block under a viewport position (code blocks are runs of ``<pre>`` lines)."""
        target = self.cursorForPosition(pos).block()
        if not _is_code(target):
            return None
        index, inside = -1, False
        block = self.document().begin()
        while block.isValid():
            code = _is_code(block)
            if code and not inside:
                index += 1
            inside = code
            if block == target:
                return index if 0 <= index < len(self.code_blocks) else None
            block = block.next()
        return None

    def contextMenuEvent(self, event: QContextMenuEvent) -> None:
        menu = self.createStandardContextMenu(event.pos())
        index = self.code_block_at(event.pos())
        if index is not None:
            first = menu.actions()[0] if menu.actions() else None
            action = menu.addAction(self.tr("Copy code block"))
            action.triggered.connect(lambda: self.copy_code_block(index))
            if first is not None:
                menu.insertAction(first, action)
        menu.exec(event.globalPos())

    def changeEvent(self, event: Any) -> None:
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange and self._markdown:
            self._render()

    def _render(self) -> None:
        self._rendered = render_markdown(self._markdown, is_dark(self.palette()), self.tr("Copy code"))
        self.setHtml(self._rendered.html)

    def _on_anchor(self, url: QUrl) -> None:
        if url.scheme() == COPY_SCHEME:
            index = int(url.path()) if url.path().isdigit() else -1
            if 0 <= index < len(self.code_blocks):
                self.copy_code_block(index)
        elif url.scheme() in ("http", "https"):
            QDesktopServices.openUrl(url)

    def _on_size_changed(self) -> None:
        height = math.ceil(self.document().size().height())
        margins = self.contentsMargins()
        self.setFixedHeight(max(height, self.fontMetrics().height()) + margins.top() + margins.bottom() + 2)


def _is_code(block: QTextBlock) -> bool:
    return block.blockFormat().nonBreakableLines()
