"""The same question in a new chat gets the same answer as it did before another chat, and as it
does in a window opened afresh (issue 32): the engine thread keeps one engine for the whole app
session, whose caches hold the previous conversation and reuse its start."""

from __future__ import annotations

from dataclasses import replace

from gui_helpers import send_and_wait, tiny_settings

from app.engine.events import RunResult

QUESTION = "The quick brown fox jumps over the lazy dog. Hello world!"
OTHER = "def add(a, b):\n    return a + b"
SYSTEM = "Speculative decoding drafts tokens and the target verifies them in one pass."


def _numbers(result: RunResult) -> list[tuple[object, ...]]:
    """Each answer token and the target's numbers about it: the same bits, not only the same ids."""
    return [(t.id, t.source, t.p_target, t.top_logit, t.margin) for t in result.tokens]


def _ask_in_a_new_chat(qtbot, window, text: str) -> list[tuple[object, ...]]:  # type: ignore[no-untyped-def]
    window.new_chat_action.trigger()
    assert not window.controller.conversation.messages
    return _numbers(send_and_wait(qtbot, window, text))


def test_a_new_chat_after_an_old_one_answers_as_a_fresh_window_does(qtbot, open_window, tiny_models):
    settings = tiny_settings(tiny_models)  # the tiny draft model, k = 4
    settings = replace(settings, models=replace(settings.models, weights="int4"))
    answers = []
    for _ in range(2):  # the second window: a fresh worker, a fresh engine
        window = open_window(settings)
        assert window.models_in_use is not None and "int4" in window.model_label.text()
        window.system_prompt.setText(SYSTEM)  # every new chat starts with it: the prefix reused
        first = _ask_in_a_new_chat(qtbot, window, QUESTION)
        assert first and any(source == "draft" for _, source, *_ in first)  # speculation ran
        _ask_in_a_new_chat(qtbot, window, OTHER)
        assert _ask_in_a_new_chat(qtbot, window, QUESTION) == first
        answers.append(first)
        window.close()
    assert answers[0] == answers[1]


def test_an_answer_that_drafted_nothing_says_so_under_it(qtbot, open_window, tiny_models, monkeypatch):
    """A draft step measured dearer than any gain: auto k verifies no draft, and the answer's notes
    are the sentences generate and bench print (``no_drafts_note``, ``sat_out_note``)."""
    from app.engine.analysis.explanation import no_drafts_note, sat_out_note
    from app.engine.decoding.cost import KChooser
    from app.engine.decoding.drafters import Proposal
    from app.engine.decoding.suffix_drafter import SuffixDrafter

    monkeypatch.setattr(KChooser, "_draft_cost", lambda self: 10.0)
    # lookup finds nothing (its drafts cost no pass: they would be verified whatever a draft step costs)
    monkeypatch.setattr(SuffixDrafter, "propose", lambda self, *args, **kwargs: Proposal([], None, [], passes=0))
    monkeypatch.setenv("SPECCHAT_DRAFT_AHEAD", "0")  # drafted ahead, a draft step costs the clock nothing
    window = open_window(replace(tiny_settings(tiny_models), auto_k=True))
    result = send_and_wait(qtbot, window, QUESTION)
    assert result.stats.proposed == 0
    note = no_drafts_note(result)
    assert note.startswith("No drafts used: plain steps only, because ")
    answer = window.chat_view.answers[-1]
    assert answer.status.isVisibleTo(window) and note in answer.status.text()
    sat_out = sat_out_note(result)  # the draft model left the answer to lookup, which found nothing
    assert sat_out.startswith("The draft model sat this answer out: ") and sat_out in answer.status.text()
