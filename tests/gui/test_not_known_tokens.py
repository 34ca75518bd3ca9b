"""A server's tokens whose source it did not say: painted as neither draft nor target in both
views of an answer, named "not known" in the legend, and kept with the server's counts when the
conversation is saved and read back (no server needed: the events come from the back-end's own
step builder, as a stream would make them)."""

from __future__ import annotations

from gui_helpers import document_tokens
from PySide6.QtGui import QTextCharFormat

from app.engine.events import RunProvenance, RunResult
from app.remote.steps import ServerToken, StepBuilder
from app.ui.chat.markdown_view import MarkdownView
from app.ui.common.conversation import Message, records_from_step
from app.ui.common.token_style import TokenLegend, kind_colors, token_format
from app.ui.common.token_view import TokenTextView, token_tooltip


def server_run() -> RunResult:
    """Prompt pass; a pass that accepted 2 drafts; a group of 3 tokens (1 accepted draft among
    them) the stream did not attribute; a pass that rejected its only draft; the end."""
    b = StepBuilder(prompt_tokens=5)
    words = iter(["Hello", " there", ",", " how", " are", " you", " today", "?"])

    def toks(n: int) -> list[ServerToken]:
        return [ServerToken(i, next(words)) for i in range(n)]

    b.group(toks(1), 0, 0, attributed=True)
    b.group(toks(3), 2, 2, attributed=True)
    b.group(toks(3), 2, 1, attributed=False)
    b.group(toks(1), 1, 0, attributed=True)
    b.end("eos")
    made_by = RunProvenance("smol", "server", "unknown", "server", server="llama.cpp b1 at http://127.0.0.1:9")
    return RunResult.from_steps(b.steps, True, "server", {}, made_by)


def test_unknown_tokens_are_painted_apart_in_both_views_and_named_in_the_legend(qtbot) -> None:  # type: ignore[no-untyped-def]
    run = server_run()
    records = [r for s in run.steps for r in records_from_step(s)]
    kinds = ["target", "draft", "draft", "target", "unknown", "unknown", "unknown", "target"]
    assert [r.kind for r in records] == kinds
    tokens = TokenTextView()
    qtbot.addWidget(tokens)
    tokens.set_records(records)
    assert [k for _t, k in document_tokens(tokens)] == [r.kind for r in records]
    rendered = MarkdownView()
    qtbot.addWidget(rendered)
    rendered.set_markdown(run.text, records)
    assert "unknown" in {k for _t, k in document_tokens(rendered)}
    fmt = token_format("unknown", tokens.palette())
    assert fmt.underlineStyle() == QTextCharFormat.UnderlineStyle.DotLine
    assert fmt.background().color() not in (kind_colors(tokens.palette())["draft"],)
    assert "not known" in token_tooltip(records[4])
    legend = TokenLegend()
    qtbot.addWidget(legend)
    assert "unknown" not in legend.shown_kinds()  # a local run has none
    legend.set_server_visible(True)
    assert "unknown" in legend.shown_kinds()


def test_a_server_answer_keeps_its_counts_through_the_file(qtbot) -> None:  # type: ignore[no-untyped-def]
    run = server_run()
    streamed = Message("assistant", "")
    for step in run.steps:
        streamed.add_step(step)
    streamed.finish(run)
    again = Message.from_json(streamed.to_json())
    rebuilt = again.run_result()
    assert [r.kind for r in again.records] == [r.kind for r in streamed.records]
    steps = list(rebuilt.steps)  # rebuilt from the records and passes read back
    for name in ("new_tokens", "target_passes", "proposed", "accepted"):
        assert getattr(steps[-1].stats, name) == getattr(run.stats, name), name
    assert steps[2].target_kind == "unknown" and len(steps[2].unattributed) == 3
    assert steps[3].rejected_unseen == 1
    assert again.made_by is not None and again.made_by.server == run.made_by.server  # type: ignore[union-attr]
