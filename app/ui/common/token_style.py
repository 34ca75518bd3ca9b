"""How token provenance looks: accepted draft tokens get a tinted background AND an underline
(readable without colour), target tokens stay plain, rejected drafts are struck through and
dimmed, and a server's tokens whose source it did not say ("not known") get a grey tint and a
dotted underline, so they read as neither. Colours are picked for the current palette, light
or dark."""

from __future__ import annotations

from collections.abc import Collection

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPalette, QTextCharFormat, QTextFormat
from PySide6.QtWidgets import QHBoxLayout, QLabel, QSizePolicy, QWidget

from app.ui.common.conversation import RecordKind

TOKEN_INDEX = QTextFormat.Property.UserProperty + 1  # index into the view's records
TOKEN_KIND = QTextFormat.Property.UserProperty + 2  # "draft" | "target" | "rejected" | "unknown"
RECORD_KINDS: tuple[RecordKind, ...] = ("draft", "target", "rejected", "unknown")
DIFF_OP = QTextFormat.Property.UserProperty + 3  # "insert" | "delete" in the diff view


def is_dark(palette: QPalette) -> bool:
    return palette.color(QPalette.ColorRole.Base).lightness() < 128


def kind_colors(palette: QPalette) -> dict[str, QColor]:
    dark = is_dark(palette)
    return {
        "draft": QColor("#1f5a35" if dark else "#c6efd2"),
        "draft_line": QColor("#6fdc95" if dark else "#1e7b3f"),
        "rejected": QColor("#5a2424" if dark else "#f7d6d6"),
        "unknown": QColor("#3d4450" if dark else "#e4e7ec"),
        "unknown_line": QColor("#a0a8b4" if dark else "#6b7380"),
        "insert": QColor("#1f5a35" if dark else "#c6efd2"),
        "delete": QColor("#5a2424" if dark else "#f7d6d6"),
    }


def token_format(kind: RecordKind, palette: QPalette) -> QTextCharFormat:
    colors = kind_colors(palette)
    fmt = QTextCharFormat()
    fmt.setProperty(TOKEN_KIND, kind)
    if kind == "draft":
        fmt.setBackground(colors["draft"])
        fmt.setUnderlineStyle(QTextCharFormat.UnderlineStyle.SingleUnderline)
        fmt.setUnderlineColor(colors["draft_line"])
    elif kind == "rejected":
        fmt.setBackground(colors["rejected"])
        fmt.setFontStrikeOut(True)
        fmt.setForeground(palette.color(QPalette.ColorRole.PlaceholderText))
    elif kind == "unknown":
        fmt.setBackground(colors["unknown"])
        fmt.setUnderlineStyle(QTextCharFormat.UnderlineStyle.DotLine)
        fmt.setUnderlineColor(colors["unknown_line"])
    return fmt


def diff_format(op: str, palette: QPalette) -> QTextCharFormat:
    """Insertions (only in the second text) underlined on green; deletions (only in the
    first) struck through on red."""
    colors = kind_colors(palette)
    fmt = QTextCharFormat()
    fmt.setProperty(DIFF_OP, op)
    if op == "insert":
        fmt.setBackground(colors["insert"])
        fmt.setUnderlineStyle(QTextCharFormat.UnderlineStyle.SingleUnderline)
    elif op == "delete":
        fmt.setBackground(colors["delete"])
        fmt.setFontStrikeOut(True)
    return fmt


def _swatch_css(kind: RecordKind, palette: QPalette) -> str:
    colors = kind_colors(palette)
    if kind == "draft":
        return (
            f"background:{colors['draft'].name()}; text-decoration: underline;"
            f" border-bottom: 1px solid {colors['draft_line'].name()};"
        )
    if kind == "rejected":
        dim = palette.color(QPalette.ColorRole.PlaceholderText).name()
        return f"background:{colors['rejected'].name()}; color:{dim}; text-decoration: line-through;"
    if kind == "unknown":
        return f"background:{colors['unknown'].name()}; border-bottom: 1px dotted {colors['unknown_line'].name()};"
    return ""


class TokenLegend(QWidget):
    """ "draft token (accepted) · target token · rejected draft" with the same styling, which
    both views of an answer use (rendered Markdown and Tokens)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self._labels = {kind: QLabel(self) for kind in RECORD_KINDS}
        caption = QLabel(self.tr("Legend:"), self)
        layout.addWidget(caption)
        for label in self._labels.values():
            label.setTextFormat(Qt.TextFormat.RichText)
            layout.addWidget(label)
        hint = QLabel(self.tr("Hover a token for its source, pass and probabilities."), self)
        hint.setEnabled(False)
        self.setToolTip(
            self.tr(
                "The same in the rendered answer and in the Tokens view. A rendered answer does not "
                "show its Markdown syntax (**, #, backticks, list markers), so the part of a token "
                "made of it has no highlight; Tokens shows every token as generated."
            )
        )
        hint.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # may be cut
        layout.addWidget(hint, 1)
        self._labels["unknown"].hide()  # only while answers come from a server
        self._render()

    def set_speculation_visible(
        self, speculative: bool, show_rejected: bool, on_screen: Collection[str] = ()
    ) -> None:
        """Draft swatches while drafts can appear: speculation on, or answers on screen that
        show some (``on_screen``: the token kinds they hold); rejected ones only when shown."""
        drafts = speculative or "draft" in on_screen or "rejected" in on_screen
        self._labels["draft"].setVisible(drafts)
        self._labels["rejected"].setVisible(show_rejected and (speculative or "rejected" in on_screen))

    def set_server_visible(self, on_server: bool) -> None:
        """A server may not say which of its tokens were drafts: "not known" while one answers."""
        self._labels["unknown"].setVisible(on_server)

    def shown_kinds(self) -> list[str]:
        """The token kinds the legend explains right now."""
        return [kind for kind, label in self._labels.items() if not label.isHidden()]

    def changeEvent(self, event) -> None:  # type: ignore[no-untyped-def]
        super().changeEvent(event)
        if event.type() == event.Type.PaletteChange:
            self._render()

    def _render(self) -> None:
        texts = {
            "draft": self.tr("accepted draft token (underlined)"),
            "target": self.tr("token from the target model"),
            "rejected": self.tr("rejected draft (struck through)"),
            "unknown": self.tr("not known: the server did not say (dotted)"),
        }
        for kind, label in self._labels.items():
            css = _swatch_css(kind, self.palette())  # type: ignore[arg-type]
            label.setText(f'<span style="{css}">&nbsp;{texts[kind]}&nbsp;</span>')
