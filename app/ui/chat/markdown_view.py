"""Answers rendered as Markdown: markdown-it-py parses (CommonMark + tables and
strikethrough, raw HTML off), Pygments colours fenced code, Qt's rich text shows the HTML.

Each code block gets a "Copy code" link (``specchat-copy:N``) above it; the view copies
block ``N`` when it is clicked, and its context menu offers the same for the block under
the mouse.

Given the answer's token records, the view carries their provenance onto the rendered text:
each rendered character is paired with the source character it shows (``source_map.align``),
each source character with the token that wrote it, and the token's char format (tint and
underline for accepted drafts, TOKEN_INDEX for hovering) is merged onto the rendered
characters, keeping the Markdown's own formatting (headings, code colours). Rejected drafts,
when shown, are inserted struck through where they were proposed. Syntax that is not shown
(``**``, ``#``, fences, list markers) carries no highlight.

Rendering is one parse of the whole answer: for ~3,000 characters about 8 ms of CPU, 16 ms
with the provenance painted (``tools/render_cost.py``, on a loaded 2-core machine). While an
answer streams, ``stream_markdown`` renders at most once per interval, the interval at least
four times the last render's cost, so rendering takes at most a fifth of the GUI thread
however long the answer grows.
"""

from __future__ import annotations

import html
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import TextLexer, get_lexer_by_name
from pygments.util import ClassNotFound
from PySide6.QtCore import QEvent, QPoint, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import (
    QContextMenuEvent,
    QDesktopServices,
    QGuiApplication,
    QPalette,
    QTextBlock,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
)
from PySide6.QtWidgets import QFrame, QSizePolicy, QTextBrowser, QWidget

from app.ui.chat.source_map import NOT_SHOWN, SourceMap, align, token_spans
from app.ui.common.conversation import TokenRecord
from app.ui.common.token_style import RECORD_KINDS, TOKEN_INDEX, is_dark, token_format
from app.ui.common.token_view import LINE_SEPARATOR, record_at, show_token_tooltip

COPY_SCHEME = "specchat-copy"
CODE_STYLES = {False: "default", True: "monokai"}  # Pygments style per dark palette
STREAM_MIN_INTERVAL_MS = 50  # while streaming, renders are at least this far apart ...
STREAM_COST_FACTOR = 4  # ... and at least this many times the last render's cost
UNPAINTED = "\u2029\ufdd0\ufdd1\ufffc"  # block and frame boundaries, objects: not text


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
    body = highlight(token.content.rstrip("\n"), _lexer(language), formatter).rstrip("\n")  # no empty last line
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
    """A read-only, self-sizing view of an answer's Markdown, with its tokens' provenance."""

    code_copied = Signal(int)  # index of the code block put on the clipboard

    def __init__(self, parent: QWidget | None = None, *, auto_height: bool = True) -> None:
        """``auto_height``: as tall as the answer (in the chat's scrolling column); off, a
        scrolling view of its own (Compare's panes)."""
        super().__init__(parent)
        self.setOpenLinks(False)
        self._auto_height = auto_height
        if auto_height:
            self.setFrameShape(QFrame.Shape.NoFrame)
            self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
            self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
            self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setMouseTracking(True)
        self._markdown = ""
        self._rendered_markdown = ""
        self._rendered_records: list[TokenRecord] = []  # the records of what is on screen
        self._records: list[TokenRecord] = []
        self._show_rejected = False
        self._rendered = RenderedMarkdown("", ())
        self._render_cost_s = 0.0
        self._rendered_at = -math.inf
        self._pending = QTimer(self)  # the next streaming render
        self._pending.setSingleShot(True)
        self._pending.timeout.connect(self._render)
        self.anchorClicked.connect(self._on_anchor)
        self.document().documentLayout().documentSizeChanged.connect(self._on_size_changed)

    @property
    def markdown(self) -> str:
        """The Markdown on screen (while streaming, what the last render showed)."""
        return self._rendered_markdown

    @property
    def records(self) -> list[TokenRecord]:
        """The token records of what is on screen."""
        return list(self._rendered_records)

    @property
    def code_blocks(self) -> tuple[str, ...]:
        return self._rendered.code_blocks

    @property
    def render_pending(self) -> bool:
        return self._pending.isActive()

    def set_markdown(self, text: str, records: Sequence[TokenRecord] = ()) -> None:
        """Show ``text`` now, with the provenance of ``records`` (the tokens that wrote it)."""
        self._markdown = text
        self._records = list(records)
        self._pending.stop()
        self._render()

    def stream_markdown(self, text: str, records: Sequence[TokenRecord]) -> None:
        """The answer grew: render it soon — at once if the last render was long enough ago,
        else when the interval is over. Batches arriving meanwhile join that one render."""
        self._markdown = text
        self._records = list(records)
        if self._pending.isActive():
            return
        interval_s = max(STREAM_MIN_INTERVAL_MS / 1000, STREAM_COST_FACTOR * self._render_cost_s)
        wait_s = self._rendered_at + interval_s - time.perf_counter()
        self._pending.start(max(0, math.ceil(wait_s * 1000)))

    def set_show_rejected(self, show: bool) -> None:
        if show != self._show_rejected:
            self._show_rejected = show
            if self._markdown:
                self._render()

    def record_at(self, pos: QPoint) -> TokenRecord | None:
        """The token that wrote the rendered character under a viewport position, if any."""
        return record_at(self, pos, self._rendered_records)

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

    def viewportEvent(self, event: QEvent) -> bool:
        if show_token_tooltip(self, event, self._rendered_records):
            return True
        return super().viewportEvent(event)

    def changeEvent(self, event: Any) -> None:
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange and self._markdown:
            self._render()

    def _render(self) -> None:
        started = time.perf_counter()
        self._pending.stop()
        self._rendered = render_markdown(self._markdown, is_dark(self.palette()), self.tr("Copy code"))
        self._rendered_markdown = self._markdown
        self._rendered_records = self._records
        self.setHtml(self._rendered.html)
        if self._records:
            paint_provenance(self.document(), self._markdown, self._records, self._show_rejected, self.palette())
        self._rendered_at = time.perf_counter()
        self._render_cost_s = self._rendered_at - started

    def _on_anchor(self, url: QUrl) -> None:
        if url.scheme() == COPY_SCHEME:
            index = int(url.path()) if url.path().isdigit() else -1
            if 0 <= index < len(self.code_blocks):
                self.copy_code_block(index)
        elif url.scheme() in ("http", "https"):
            QDesktopServices.openUrl(url)

    def _on_size_changed(self) -> None:
        if not self._auto_height:
            return
        height = math.ceil(self.document().size().height())
        margins = self.contentsMargins()
        self.setFixedHeight(max(height, self.fontMetrics().height()) + margins.top() + margins.bottom() + 2)


def shown_text(document: QTextDocument) -> str:
    """The document's text, one character per position, with what the renderer added itself
    (the "Copy code" captions) blanked out with NUL, which no source character matches."""
    text = list(document.toPlainText())
    block = document.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            if it.fragment().charFormat().anchorHref().startswith(COPY_SCHEME + ":") and _is_code(block.next()):
                start = block.position()
                text[start : start + block.length() - 1] = "\0" * (block.length() - 1)
                break
            it += 1
        block = block.next()
    return "".join(text)


def paint_provenance(
    document: QTextDocument,
    source: str,
    records: Sequence[TokenRecord],
    show_rejected: bool,
    palette: QPalette,
) -> None:
    """Merge each token's format onto the rendered characters it wrote; insert the rejected
    drafts, if shown, where they were proposed."""
    raw = document.toRawText()
    pairs = align(shown_text(document), source)
    for position, char in enumerate(raw):
        if char in UNPAINTED:  # a block break is no token's text, nor a place to put one after
            pairs[position] = NOT_SHOWN
    source_map = SourceMap(pairs)
    spans = token_spans(records, source)
    cursor = QTextCursor(document)
    cursor.beginEditBlock()
    formats = {kind: token_format(kind, palette) for kind in RECORD_KINDS}
    for start, end, index in source_map.runs(spans.owner):
        fmt = QTextCharFormat(formats[records[index].kind])
        fmt.setProperty(TOKEN_INDEX, index)
        cursor.setPosition(start)
        cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
        cursor.mergeCharFormat(fmt)
    if show_rejected:
        proposed = [
            (source_map.insertion_point(spans.ends[n]), n)
            for n, r in enumerate(records)
            if r.kind == "rejected" and r.text
        ]
        for position, index in sorted(proposed, reverse=True):  # back to front: positions hold
            cursor.setPosition(position)
            cursor.insertText(
                records[index].text.replace("\r\n", "\n").replace("\n", LINE_SEPARATOR),
                _rejected_format(cursor, index, palette),
            )
    cursor.endEditBlock()


def _rejected_format(cursor: QTextCursor, index: int, palette: QPalette) -> QTextCharFormat:
    """The surrounding text's look (a heading's size, code's font), struck through as a
    rejected draft, with none of its neighbour's provenance or link."""
    fmt = cursor.charFormat()
    fmt.clearBackground()
    fmt.setUnderlineStyle(QTextCharFormat.UnderlineStyle.NoUnderline)
    fmt.setAnchor(False)
    fmt.setAnchorHref("")
    fmt.merge(token_format("rejected", palette))
    fmt.setProperty(TOKEN_INDEX, index)
    return fmt


def _is_code(block: QTextBlock) -> bool:
    return block.blockFormat().nonBreakableLines()
