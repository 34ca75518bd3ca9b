"""What a run says about its drafting (issue 30, item 6): the draft step's cost as a share of a
plain pass, how much of the drafting overlapped the target's verification, the acceptance that
would only break even at that cost, and — for an answer asked to speculate that verified no draft —
"No drafts used: plain steps only, because …", the same sentence in generate, bench and the window."""

from __future__ import annotations

from dataclasses import replace

import pytest
from test_cli import models, run_cli, run_json  # noqa: F401 - models is a fixture
from test_explanation import _baseline, _run, _step

from app.bench.runs import _drafting, format_report
from app.engine.analysis.explanation import explain, no_drafts_note
from app.engine.decoding.cost import break_even_alpha, expected_tokens
from app.engine.events import KDecision


@pytest.mark.parametrize(("k", "c", "v"), [(2, 0.1, 1.5), (4, 0.45, 1.6), (5, 0.0, 2.9), (1, 0.3, 1.1)])
def test_break_even_acceptance_is_where_drafting_costs_what_it_yields(k, c, v):
    alpha = break_even_alpha(k, c, v)
    assert alpha is not None and 0 < alpha < 1
    assert expected_tokens(alpha, k) == pytest.approx(k * c + v, rel=1e-6)


def test_break_even_is_zero_when_drafting_costs_nothing_and_none_when_nothing_repays_it():
    assert break_even_alpha(3, 0.0, 1.0) == 0.0
    assert break_even_alpha(2, 0.5, 2.5) is None  # 3.5 passes' cost, at most 3 tokens
    assert break_even_alpha(0, 0.1, 1.0) is None


def _model_run(ahead: tuple[bool, ...]):  # type: ignore[no-untyped-def]
    """Four decode passes of a draft model, 2 drafts each (2, 1, 0, 2 accepted), 0.02 s of drafting
    on the clock per pass: c = 0.1 of the baseline's 0.1 s pass, v(2) = 1.5."""
    steps = [_step(0, verify_s=0.5)] + [
        replace(_step(i, accepted=n, rejected=2 - n, draft_s=0.02, verify_s=0.15, k=2), draft_passes=2, drafted_ahead=a)
        for i, (n, a) in enumerate(zip((2, 1, 0, 2), ahead), 1)
    ]
    return replace(_run(steps), drafter="draft model: d")


def test_the_explanation_names_the_cost_the_overlap_and_the_break_even_acceptance():
    e = explain(_model_run((False, True, True, False)), _baseline())
    assert e.draft_cost_ratio == pytest.approx(0.1) and e.k_used == 2
    assert e.drafted_ahead_share == pytest.approx(0.5)
    assert e.break_even_alpha == pytest.approx(break_even_alpha(2, 0.1, 1.5))
    assert "0.10× of a plain target pass" in e.summary and "50% of the drafting passes" in e.summary
    assert f"acceptance of {e.break_even_alpha:.0%}" in e.summary
    data = e.to_dict()
    assert data["drafted_ahead_share"] == pytest.approx(0.5) and data["break_even_alpha"] == e.break_even_alpha


def test_a_draft_models_pass_is_weighed_apart_from_the_free_drafts_beside_it():
    """With lookup's blocks beside the model's (the default drafter with a draft model), c is the
    drafting time per draft verified, lookup's free drafts included, and a draft model's pass is the
    model's own steps' drafting time per pass. On the real pair at 2 threads `bench` had printed c,
    0.19, as "a draft step cost", while a draft model's pass cost 0.32 of a plain pass alone."""
    model = [_step(0, verify_s=0.5)] + [
        replace(_step(i, accepted=n, rejected=2 - n, draft_s=0.02, verify_s=0.15, k=2), draft_passes=2)
        for i, n in enumerate((2, 1, 0, 2), 1)
    ]
    lookup = [_step(i, accepted=3, verify_s=0.17, k=3) for i in range(5, 9)]  # 12 drafts, no pass
    # the model asked again after lookup's blocks: its first pass fed the 12 tokens it missed
    caught_up = replace(_step(9, accepted=2, draft_s=0.1, verify_s=0.15, k=2), draft_passes=2, draft_caught_up=True)
    run = replace(_run(model + lookup + [caught_up]), drafter="draft model: d + lookup")
    e = explain(run, _baseline())
    assert e.draft_pass_ratio == pytest.approx(0.1)  # 0.01 s a pass, of a 0.1 s plain pass; the catch-up apart
    assert e.draft_cost_ratio == pytest.approx(0.18 / 22 / 0.1)  # 0.18 s of drafting for 8 + 12 + 2 drafts
    assert "a draft model's pass: 0.10×" in e.summary and "Drafting cost 0.08×" in e.summary
    assert e.to_dict()["draft_pass_ratio"] == e.draft_pass_ratio
    assert _drafting(run, _baseline())["draft_pass_ratio"] == e.draft_pass_ratio
    ahead = replace(run, steps=tuple(replace(s, drafted_ahead=bool(s.draft_passes)) for s in run.steps))
    assert explain(ahead, _baseline()).draft_pass_ratio is None  # waits for drafts made ahead: no pass's cost


def test_bench_reports_the_figures_of_the_why_panel():
    run, baseline = _model_run((True, True, True, True)), _baseline()
    e, row = explain(run, baseline), _drafting(run, baseline)
    assert row["draft_cost_ratio"] == e.draft_cost_ratio and row["drafted_ahead_share"] == 1.0
    assert row["break_even_alpha"] == e.break_even_alpha and row["no_drafts_note"] == ""


def _plain_run(decision: KDecision | None, drafter: str = "draft model: d"):  # type: ignore[no-untyped-def]
    steps = [_step(0, verify_s=0.5)] + [replace(_step(i, verify_s=0.1), decision=decision) for i in (1, 2, 3)]
    return replace(_run(steps), drafter=drafter, config={"speculative": True})


def test_an_answer_that_drafted_nothing_says_so_and_why():
    below = KDecision(0, "gain_below_margin", alpha=0.6, best_k=3, best_gain=0.91, draft_cost=0.45, pass_cost=1.3)
    note = no_drafts_note(_plain_run(below))
    assert note.startswith("No drafts used: plain steps only, because auto k predicted no gain")
    assert "0.91× with 3 drafts" in note and "60%" in note and "0.45×" in note
    catch_up = replace(below, reason="catch_up_not_repaid")
    assert "read the whole prompt" in no_drafts_note(_plain_run(catch_up, drafter="none"))
    assert "found nothing in the conversation" in no_drafts_note(_plain_run(None, drafter="prompt lookup"))


def test_no_note_when_drafts_were_verified_or_speculation_was_off():
    assert no_drafts_note(replace(_model_run((False,) * 4), config={"speculative": True})) == ""
    assert no_drafts_note(replace(_plain_run(None), config={"speculative": False})) == ""


def test_generate_says_when_auto_k_drafted_nothing(capsys, models, monkeypatch):  # noqa: F811 - a fixture
    """A draft step measured dearer than any gain (a pass's worth of seconds): auto k verifies no
    draft, and generate says so under its figures, in JSON as in text, with the same sentence."""
    from app.engine.decoding.cost import KChooser
    from app.engine.decoding.drafters import Proposal
    from app.engine.decoding.suffix_drafter import SuffixDrafter

    monkeypatch.setattr(KChooser, "_draft_cost", lambda self: 10.0)
    # lookup finds nothing (its drafts cost no pass: they would be verified whatever a draft step costs)
    monkeypatch.setattr(SuffixDrafter, "propose", lambda self, *args, **kwargs: Proposal([], None, [], passes=0))
    monkeypatch.setenv("SPECCHAT_DRAFT_AHEAD", "0")  # drafted ahead, a draft step costs the clock nothing
    args = ["--target", models["target"], "--weights", "fp32", "--draft", models["draft"], "--max-new-tokens", "8"]
    data = run_json(capsys, "generate", *args, "--prompt", "Hello world!")
    assert data["stats"]["proposed"] == 0 and data["config"]["speculative"]
    assert data["no_drafts_note"].startswith("No drafts used: plain steps only, because ")
    code, out, _ = run_cli(capsys, "generate", *args, "--prompt", "Hello world!")
    assert code == 0 and data["no_drafts_note"] in out


def test_bench_prints_c_and_a_draft_models_pass_each_under_its_own_name():
    from test_bench_rounds import _report_summary

    summary = {**_report_summary(), "draft_cost_ratio": 0.22, "draft_pass_ratio": 0.38}
    summary.update(drafted_ahead_share=0.0, break_even_alpha=0.55, alpha=0.82)
    text = format_report({"prompts": [], "summary": summary})
    assert "drafting cost c 0.22 of a plain pass a draft verified" in text and "lookup's drafts cost none" in text
    assert "a draft model's pass 0.38;" in text
    no_model_pass = {**summary, "draft_pass_ratio": None}  # lookup alone, or every block drafted ahead
    assert "a draft model's pass" not in format_report({"prompts": [], "summary": no_model_pass})
