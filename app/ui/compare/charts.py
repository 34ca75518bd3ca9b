"""The Why panel's charts, drawn with pyqtgraph (axes, legends and ticks are the library's).

Imports pyqtgraph at module level: import this module only when a chart is about to be
shown (``explain_view`` does it when the panel opens), so the app starts without it.
"""

from __future__ import annotations

from typing import ClassVar

import pyqtgraph as pg
from PySide6.QtCore import QCoreApplication, Qt
from PySide6.QtWidgets import QHBoxLayout, QWidget

from app.engine.analysis.explanation import Explanation, PassBar
from app.ui.common.formatting import number_locale, percent

pg.setConfigOptions(antialias=True, background="w", foreground="k")

DRAFT_COLOUR = "#7fb3d5"  # drafting time; accepted drafts are this family of blue in the chat too
VERIFY_COLOUR = "#e59866"  # the target's pass
MEASURED_COLOUR = "#c0392b"
CURVE_COLOURS = ("#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf")
MAX_LABELLED_PASSES = 60  # above this, token counts per bar would overlap


class LocaleAxis(pg.AxisItem):
    """Tick labels in the interface's locale ("0,2" in French), as every other number."""

    def tickStrings(self, values: list[float], scale: float, spacing: float) -> list[str]:
        english = super().tickStrings(values, scale, spacing)
        locale = number_locale()
        point = locale.decimalPoint()
        return [text.replace(".", point).replace("-", locale.negativeSign()) for text in english]


def locale_axes() -> dict[str, pg.AxisItem]:
    return {"left": LocaleAxis("left"), "bottom": LocaleAxis("bottom")}


def _plot(title: str, x_label: str, y_label: str) -> pg.PlotWidget:
    plot = pg.PlotWidget(title=title, axisItems=locale_axes())
    plot.setLabel("bottom", x_label)
    plot.setLabel("left", y_label)
    plot.showGrid(x=False, y=True, alpha=0.3)
    plot.setMenuEnabled(False)
    return plot


LEGEND_ROW = 4  # the plot's layout: 0 title, 1 top axis, 2 the data (view box), 3 bottom axis


def legend_below(plot: pg.PlotWidget | pg.PlotItem, columns: int = 2) -> pg.LegendItem:
    """A legend in its own row under the plot's bottom axis: outside the data area, so it never
    covers a bar, a curve or a point, whatever the data."""
    item = plot.getPlotItem() if isinstance(plot, pg.PlotWidget) else plot
    legend = pg.LegendItem(colCount=columns)
    legend.setParentItem(item)
    item.layout.addItem(legend, LEGEND_ROW, 1)
    item.layout.setRowStretchFactor(LEGEND_ROW, 0)
    return legend


def _integer_ticks(plot: pg.PlotWidget, values: list[int]) -> None:
    plot.getAxis("bottom").setTicks([[(v, str(v)) for v in values]])


class AcceptanceCharts(QWidget):
    """Acceptance by draft position, and how many tokens each target pass produced."""

    def __init__(self, explanation: Explanation, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        rows = explanation.acceptance_by_position
        self.by_position = _plot(
            QCoreApplication.translate("Charts", "Acceptance by draft position"),
            QCoreApplication.translate("Charts", "draft position"),
            QCoreApplication.translate("Charts", "accepted"),
        )
        positions = [r.position for r in rows]
        # a position no pass got to has no rate: nothing is drawn there (a bar at 0 would read
        # "always rejected"), only a "not used" label
        judged = [r for r in rows if r.rate_of_reached is not None]
        proposed = [r for r in rows if r.rate_of_proposed is not None]
        self.reached_bars = pg.BarGraphItem(
            x=[r.position - 0.2 for r in judged],
            height=[r.rate_of_reached for r in judged],
            width=0.38,
            brush=DRAFT_COLOUR,
        )
        self.proposed_bars = pg.BarGraphItem(
            x=[r.position + 0.2 for r in proposed],
            height=[r.rate_of_proposed for r in proposed],
            width=0.38,
            brush="#d6eaf8",
        )
        self.not_used = []
        for r in rows:
            if r.rate_of_reached is None:
                unused = QCoreApplication.translate("Charts", "not used")
                label = pg.TextItem(unused, color="#777777", anchor=(0.5, 1.0))
                label.setPos(r.position - 0.2, 0.12)
                self.by_position.addItem(label)
                self.not_used.append(label)
        legend = self.legend = legend_below(self.by_position, columns=1)
        for item, name in (
            (
                self.reached_bars,
                QCoreApplication.translate("Charts", "accepted, of the drafts judged here (earlier ones accepted)"),
            ),
            (
                self.proposed_bars,
                QCoreApplication.translate("Charts", "accepted, of the drafts proposed here"),
            ),
        ):
            self.by_position.addItem(item)
            legend.addItem(item, name)
        share = explanation.drafts_accepted_share  # Σ accepted ÷ Σ proposed over the positions
        if explanation.alpha is not None:
            pen = pg.mkPen("#5d6d7e", style=Qt.PenStyle.DotLine)
            self.share_line = pg.InfiniteLine(pos=share, angle=0, pen=pen)
            self.by_position.addItem(self.share_line)
            legend.addItem(
                pg.PlotDataItem(pen=pen),
                QCoreApplication.translate("Charts", "all positions: drafts accepted, of all proposed = {0}").format(
                    percent(share)
                ),
            )
        if explanation.alpha is not None:  # named in the legend, not on the line over the bars
            pen = pg.mkPen(MEASURED_COLOUR, style=Qt.PenStyle.DashLine)
            alpha = pg.InfiniteLine(pos=explanation.alpha, angle=0, pen=pen)
            self.by_position.addItem(alpha)
            legend.addItem(
                pg.PlotDataItem(pen=pen),
                QCoreApplication.translate("Charts", "acceptance α = {0}").format(percent(explanation.alpha)),
            )
        self.by_position.setYRange(0, 1.05)
        _integer_ticks(self.by_position, positions)

        histogram = explanation.tokens_per_pass_histogram
        self.histogram = _plot(
            QCoreApplication.translate("Charts", "Tokens per target pass"),
            QCoreApplication.translate("Charts", "tokens from one pass"),
            QCoreApplication.translate("Charts", "passes"),
        )
        self.histogram_bars = pg.BarGraphItem(
            x=[t for t, _ in histogram], height=[n for _, n in histogram], width=0.7, brush=VERIFY_COLOUR
        )
        self.histogram.addItem(self.histogram_bars)
        _integer_ticks(self.histogram, [t for t, _ in histogram])

        layout = QHBoxLayout(self)
        layout.addWidget(self.by_position)
        layout.addWidget(self.histogram)


class TimelineChart(pg.PlotWidget):
    """Both runs on one wall-clock axis: a bar per target pass, split into drafting and
    verifying; a bar's height grows with the tokens the pass produced (labelled when few)."""

    ROWS: ClassVar[dict[str, float]] = {"speculative": 1.0, "baseline": 0.0}  # y of each run

    def __init__(self, explanation: Explanation, parent: QWidget | None = None) -> None:
        super().__init__(
            parent, title=QCoreApplication.translate("Charts", "Timeline of target passes"), axisItems=locale_axes()
        )
        self.setLabel("bottom", QCoreApplication.translate("Charts", "wall-clock time (s)"))
        self.setMenuEnabled(False)
        bars = explanation.timeline
        most = max((b.tokens for b in bars), default=1)
        heights = [0.2 + 0.6 * b.tokens / most for b in bars]
        self.draft_bars = pg.BarGraphItem(
            x0=[b.start_s for b in bars],
            y0=[self.ROWS[b.run] - h / 2 for b, h in zip(bars, heights)],
            width=[b.draft_s for b in bars],
            height=heights,
            brush=DRAFT_COLOUR,
            pen=None,
        )
        self.verify_bars = pg.BarGraphItem(
            x0=[b.start_s + b.draft_s for b in bars],
            y0=[self.ROWS[b.run] - h / 2 for b, h in zip(bars, heights)],
            width=[b.verify_s for b in bars],
            height=heights,
            brush=VERIFY_COLOUR,
            pen=pg.mkPen("w", width=0.5),
        )
        legend = self.legend = legend_below(self)
        for item, name in (
            (self.draft_bars, QCoreApplication.translate("Charts", "drafting")),
            (self.verify_bars, QCoreApplication.translate("Charts", "target pass (verify)")),
        ):
            self.addItem(item)
            legend.addItem(item, name)
        self.token_labels = self._label_tokens(bars, heights)
        runs = sorted({b.run for b in bars}, key=lambda run: self.ROWS[run])
        names = {
            "speculative": QCoreApplication.translate("Charts", "speculative"),
            "baseline": QCoreApplication.translate("Charts", "plain"),
        }
        self.getAxis("left").setTicks([[(self.ROWS[run], names[run]) for run in runs]])
        self.setYRange(-0.6, 1.6)  # the legend is below the axis, not above the bars
        self.setLimits(xMin=0)

    def _label_tokens(self, bars: tuple[PassBar, ...], heights: list[float]) -> list[pg.TextItem]:
        labels = []
        for run in self.ROWS:
            mine = [(b, h) for b, h in zip(bars, heights) if b.run == run]
            if len(mine) > MAX_LABELLED_PASSES:
                continue
            for bar, height in mine:
                label = pg.TextItem(str(bar.tokens), color="#333333", anchor=(0.5, 1.0))
                label.setPos(bar.start_s + (bar.draft_s + bar.verify_s) / 2, self.ROWS[run] + height / 2)
                self.addItem(label)
                labels.append(label)
        return labels


class WhatIfChart(pg.PlotWidget):
    """Predicted speed-up against α at the measured costs, one curve per k; the run's own
    point on top, so a person sees where their draft sits and what a better one would give."""

    def __init__(self, explanation: Explanation, parent: QWidget | None = None) -> None:
        super().__init__(
            parent,
            title=QCoreApplication.translate("Charts", "What if the draft agreed more often?"),
            axisItems=locale_axes(),
        )
        self.setLabel("bottom", QCoreApplication.translate("Charts", "acceptance α"))
        self.setLabel("left", QCoreApplication.translate("Charts", "decode speed-up over plain decoding (×)"))
        self.setMenuEnabled(False)
        self.showGrid(x=True, y=True, alpha=0.3)
        legend = self.legend = legend_below(self)
        self.curves: dict[int, pg.PlotDataItem] = {}  # every pass drafting k
        self.run_curve: pg.PlotDataItem | None = None  # the run's own passes; passes through "predicted"
        mixed = any(curve.kind == "this_run" for curve in explanation.what_if)
        for colour, curve in zip(CURVE_COLOURS * 3, explanation.what_if):
            ours = curve.kind == "this_run" or (not mixed and curve.k == explanation.k_used)
            if curve.kind == "this_run":
                name = QCoreApplication.translate("Charts", "this run (its mix of draft lengths)")
            elif ours:
                name = QCoreApplication.translate("Charts", "k = {0} (this run)").format(curve.k)
            elif curve.estimated:
                name = QCoreApplication.translate("Charts", "k = {0} every pass (cost interpolated)").format(
                    curve.k
                )
            else:
                name = QCoreApplication.translate("Charts", "k = {0} every pass").format(curve.k)
            style = Qt.PenStyle.DashLine if curve.estimated else Qt.PenStyle.SolidLine
            pen = pg.mkPen(MEASURED_COLOUR if ours else colour, width=3 if ours else 1.5, style=style)
            item = self.plot(list(curve.alphas), list(curve.speedups), pen=pen)
            legend.addItem(item, name)
            if ours:
                self.run_curve = item
            if curve.kind == "fixed_k":
                self.curves[curve.k] = item
        even = pg.mkPen("#888888", style=Qt.PenStyle.DotLine)
        self.addItem(pg.InfiniteLine(pos=1.0, angle=0, pen=even))  # named in the legend
        legend.addItem(pg.PlotDataItem(pen=even), QCoreApplication.translate("Charts", "break-even (1×)"))
        measured = explanation.measured
        self.measured_point = self._point(  # not drawn when the figure is not a result
            explanation,
            measured.shown if measured is not None else None,
            "o",
            QCoreApplication.translate("Charts", "decode speed-up, measured"),
        )
        self.predicted_point = self._point(
            explanation,
            explanation.predicted_decode_speedup,
            "x",
            QCoreApplication.translate("Charts", "decode speed-up, predicted"),
        )
        self.setXRange(0, 1)

    def _point(
        self, explanation: Explanation, speedup: float | None, symbol: str, name: str
    ) -> pg.ScatterPlotItem | None:
        if speedup is None or explanation.alpha is None or not explanation.what_if:
            return None
        item = pg.ScatterPlotItem(
            [explanation.alpha],
            [speedup],
            symbol=symbol,
            size=13,
            brush=pg.mkBrush(MEASURED_COLOUR),
            pen=pg.mkPen(MEASURED_COLOUR, width=2),
            name=name,
        )
        self.addItem(item)
        self.legend.addItem(item, name)
        return item


class SweepChart(WhatIfChart):
    """The drafter experiment: each drafting arm at (its acceptance α, its measured decode
    speed-up) — the quantity of the what-if curves of the first drafting arm's measured costs.
    Each arm has its own symbol, named in the legend below the plot (no text over the data)."""

    SYMBOLS = ("s", "t", "d", "star", "p", "h", "t1", "t2", "t3", "+")
    ARM_COLOURS = ("#2c3e50", "#e67e22", "#16a085", "#8e44ad", "#7f8c8d")

    def __init__(self, explanation: Explanation, parent: QWidget | None = None) -> None:
        super().__init__(explanation, parent)
        self.setTitle(QCoreApplication.translate("Charts", "Each drafter on the what-if curves"))
        # a short axis title (the long one is cut at this chart's height), the legend in one
        # column beside the data: under it, a dozen entries left the plot ~100 px tall
        self.setLabel("left", QCoreApplication.translate("Charts", "decode speed-up (×)"))
        item = self.getPlotItem()
        item.layout.removeItem(self.legend)
        item.layout.addItem(self.legend, 2, 2)
        item.layout.setColumnStretchFactor(2, 0)
        item.layout.setColumnSpacing(1, 8)  # a gap between the data and the legend
        self.legend.setColumnCount(1)
        for point in (self.measured_point, self.predicted_point):  # the arms' own points say it
            if point is not None:
                self.removeItem(point)
                self.legend.removeItem(point)
        self.arms = pg.ScatterPlotItem(size=12, pxMode=True)
        self.addItem(self.arms)
        self.names: list[str] = []
        self._samples: list[pg.ScatterPlotItem] = []

    def set_points(self, points: list[tuple[float, float, str]]) -> None:
        """(acceptance α, measured decode speed-up, label) per drafting arm."""
        styles = [self._style(i) for i in range(len(points))]
        # hollow-ish markers with a solid outline: arms that land on one spot stay visible
        self.arms.setData(
            [p[0] for p in points],
            [p[1] for p in points],
            symbol=[symbol for symbol, _ in styles],
            brush=[pg.mkBrush(colour + "40") for _, colour in styles],
            pen=[pg.mkPen(colour, width=2) for _, colour in styles],
        )
        for sample in self._samples:
            self.legend.removeItem(sample)
        self._samples, self.names = [], [name for _, _, name in points]
        for (symbol, colour), name in zip(styles, self.names):
            sample = pg.ScatterPlotItem(  # legend only
                size=12, symbol=symbol, brush=pg.mkBrush(colour + "40"), pen=pg.mkPen(colour, width=2)
            )
            self.legend.addItem(sample, name)
            self._samples.append(sample)

    def _style(self, index: int) -> tuple[str, str]:
        return self.SYMBOLS[index % len(self.SYMBOLS)], self.ARM_COLOURS[index % len(self.ARM_COLOURS)]
