"""What rendering an answer costs on the GUI thread: one render of a long Markdown answer with and
without its tokens' provenance, and a simulated stream of it into an answer widget.

    QT_QPA_PLATFORM=offscreen python tools/render_cost.py            # ~3,000 and ~6,000 characters
    QT_QPA_PLATFORM=offscreen python tools/render_cost.py --chars 12000

Times are CPU seconds of this process (``time.process_time``), so other work on a busy machine
inflates them less than wall time. The stream appends a few tokens every 30 ms, as the worker's
batches do, and reports how many renders ran and what share of the stream they took.
"""

from __future__ import annotations

import argparse
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from PySide6.QtCore import QEventLoop, QTimer
from PySide6.QtWidgets import QApplication

from app.ui.chat.markdown_view import MarkdownView
from app.ui.chat.message_widgets import AnswerWidget
from app.ui.common.conversation import Message, TokenRecord

ANSWER = """## Sorting in Python

Python has **two** ways to sort: `sorted()` returns a new list and `list.sort()` sorts *in place*.
Both take a `key` function and a `reverse` flag.

1. Use `sorted()` when you need the original list too.
2. Use `list.sort()` to save memory on long lists.
   - it returns `None`
   - it is stable

| Call | Returns | Copies |
|------|---------|--------|
| `sorted(xs)` | a new list | yes |
| `xs.sort()` | `None` | no |

```python
def by_length(words: list[str]) -> list[str]:
    return sorted(words, key=len, reverse=True)
```

> Stability means equal keys keep their order, so you can sort by several keys in passes.
"""
BATCH_TOKENS = 4  # tokens per worker batch (a few per 30 ms repaint)
BATCH_MS = 30


def answer_of(chars: int) -> tuple[str, list[TokenRecord]]:
    """A Markdown answer of about ``chars`` characters, cut into 1-4 character tokens, two in
    three of them accepted drafts."""
    text = (ANSWER * (chars // len(ANSWER) + 1))[:chars]
    pieces = re.findall(r"\s*\S{1,4}|\s+", text)
    return text, [TokenRecord(p, "draft" if k % 3 else "target", k) for k, p in enumerate(pieces)]


def cpu_ms(action, repeat: int = 5) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        started = time.process_time()
        action()
        times.append(time.process_time() - started)
    return statistics.median(times) * 1000


def stream(app: QApplication, records: list[TokenRecord]) -> dict[str, float]:
    message = Message("assistant", "")
    widget = AnswerWidget(message)
    widget.resize(800, 600)
    widget.show()
    renders = 0
    original = widget.rendered._render

    def counted() -> None:
        nonlocal renders
        renders += 1
        original()

    widget.rendered._render = counted  # type: ignore[method-assign]
    cpu_started, wall_started = time.process_time(), time.perf_counter()
    for start in range(0, len(records), BATCH_TOKENS):
        message.records.extend(records[start : start + BATCH_TOKENS])
        message.content += "".join(r.text for r in records[start : start + BATCH_TOKENS])
        widget.append_records(start)
        loop = QEventLoop()
        QTimer.singleShot(BATCH_MS, loop.quit)
        loop.exec()
    widget.set_streaming(False)
    wall = time.perf_counter() - wall_started
    return {
        "batches": -(-len(records) // BATCH_TOKENS),
        "renders": renders,
        "busy_share": (time.process_time() - cpu_started) / wall,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chars", type=int, nargs="*", default=[3000, 6000])
    args = parser.parse_args(argv)
    app = QApplication.instance() or QApplication(sys.argv)
    view = MarkdownView()
    view.resize(800, 600)
    view.show()
    for chars in args.chars:
        text, records = answer_of(chars)
        plain = cpu_ms(lambda: view.set_markdown(text))  # noqa: B023
        full = cpu_ms(lambda: view.set_markdown(text, records))  # noqa: B023
        streamed = stream(app, records)  # type: ignore[arg-type]
        print(
            f"{len(text)} chars, {len(records)} tokens: render {plain:.1f} ms CPU, with provenance {full:.1f} ms;"
            f" streamed in {streamed['batches']} batches: {streamed['renders']} renders,"
            f" GUI thread busy {streamed['busy_share']:.0%} of the stream"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
