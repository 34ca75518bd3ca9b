"""The drafter experiment: every arm answers the same conversation from fresh caches, the
plain arm first as the reference; greedy arms give the reference's answer; cancel stops it."""

from __future__ import annotations

import json
import threading

import pytest
from tiny_models import build_model, build_tokenizer, perturbed_copy, save

from app.cli import main
from app.engine import Engine, GenerationConfig, InvalidSettingError
from app.engine.analysis.sweep import NONE, SweepArm, plan_arms, run_sweep
from app.engine.backend import NEW_ANSWER
from app.engine.config import DRAFT_MODEL, LOOKUP, LoadOptions
from app.engine.events import MIXED_SUFFIX, RunResult, RunStats, TokenInfo

PROMPT = "Repeat after me: the cat sat on the mat, the cat sat on the mat."


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("sweep-models")
    tokenizer = build_tokenizer()
    target = build_model("llama", tokenizer, seed=1, scale=30.0)
    return {
        "target": str(save(target, tokenizer, root / "target")),
        "draft": str(save(perturbed_copy(target, noise=0.05, seed=2), tokenizer, root / "draft")),
    }


@pytest.fixture(scope="module")
def engine(folders: dict[str, str]) -> Engine:
    return Engine.load(folders["target"], folders["draft"], LoadOptions(device="cpu", dtype="float32"))


def test_plan_puts_the_plain_reference_first_and_each_drafter_at_each_k() -> None:
    arms = plan_arms([LOOKUP, NONE, DRAFT_MODEL, LOOKUP], [2, None, 2], [LOOKUP, DRAFT_MODEL])
    assert arms == [
        SweepArm(NONE),
        SweepArm(LOOKUP, 2),
        SweepArm(LOOKUP, None),
        SweepArm(DRAFT_MODEL, 2),
        SweepArm(DRAFT_MODEL, None),
    ]
    assert arms[2].label == "prompt lookup, k=auto" and arms[3].label == "draft model, k=2"


def test_plan_refuses_a_drafter_that_is_not_loaded_and_an_absurd_k() -> None:
    with pytest.raises(InvalidSettingError, match="draft model"):
        plan_arms([DRAFT_MODEL], [2], [LOOKUP])
    with pytest.raises(InvalidSettingError, match="k must be"):
        plan_arms([LOOKUP], [0], [LOOKUP])


def test_greedy_arms_give_the_plain_answer_and_report_their_own_drafters(engine: Engine) -> None:
    config = GenerationConfig(max_new_tokens=16)
    arms = plan_arms([LOOKUP, DRAFT_MODEL], [1, 3], engine.drafter_choices)
    rows = list(run_sweep(engine, PROMPT, config, arms))
    assert [row.arm for row in rows] == arms
    reference = rows[0].run
    assert not reference.speculative and reference.stats.target_passes == reference.stats.new_tokens
    assert rows[0].decode_speedup == 1.0 and rows[0].whole_run_speedup == 1.0 and rows[0].identical
    for row in rows[1:]:
        assert row.identical, row.arm.label
        assert row.run.token_ids == reference.token_ids
        assert row.run.speculative
        # the draft model alone (the engine's own drafter takes lookup drafts beside it)
        model_alone = engine.drafter_name.removesuffix(MIXED_SUFFIX)
        assert row.run.drafter == ("prompt lookup" if row.arm.drafter == LOOKUP else model_alone)
        assert max(step.k for step in row.run.steps) <= row.arm.k
        assert row.decode_speedup > 0 and row.whole_run_speedup > 0  # values checked on runs of known speed below
    model_rows = [row for row in rows if row.arm.drafter == DRAFT_MODEL]
    assert all(row.run.stats.draft_passes > 0 and row.run.stats.accepted > 0 for row in model_rows)


def test_each_arm_starts_from_empty_caches(engine: Engine) -> None:
    rows = list(run_sweep(engine, PROMPT, GenerationConfig(max_new_tokens=4), plan_arms([LOOKUP], [2], [LOOKUP])))
    assert all(row.run.stats.reused_prompt_tokens == 0 for row in rows)


def test_a_cancelled_sweep_stops_without_a_row_for_the_interrupted_arm(engine: Engine) -> None:
    cancel = threading.Event()
    arms = plan_arms([LOOKUP, DRAFT_MODEL], [2], engine.drafter_choices)
    rows = []
    for row in run_sweep(engine, PROMPT, GenerationConfig(max_new_tokens=8), arms, cancel):
        rows.append(row)
        cancel.set()
    assert len(rows) == 1 and rows[0].arm.drafter == NONE
    assert len(list(run_sweep(engine, PROMPT, GenerationConfig(max_new_tokens=8), arms, cancel))) == 0


def test_cli_sweep_json_has_one_row_per_arm(folders: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        ["sweep", "--target", folders["target"], "--drafters", f"none,lookup,{folders['draft']}",
         "--k-values", "1,2", "--max-new-tokens", "8", "--prompt", PROMPT, "--json"]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    rows = json.loads(captured.out)["rows"]
    assert [(r["drafter"], r["k"]) for r in rows] == [
        ("none", None), ("lookup", 1), ("lookup", 2), ("model", 1), ("model", 2)
    ]
    assert all(r["identical"] for r in rows)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--drafters", "model"], "needs --draft"),
        (["--k-values", "0"], "--k-values"),
        (["--drafters", "a/b,c/d"], "one draft model"),
    ],
)
def test_cli_sweep_bad_options_exit_2_with_one_line(
    argv: list[str], message: str, folders: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["sweep", "--target", folders["target"], "--prompt", "hi", *argv])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1


# --- the speed-up on runs of known speed -------------------------------------------------------


def _known_run(ids: list[int], passes: int, prefill_s: float, decode_s: float, drafter: str) -> RunResult:
    tokens = tuple(TokenInfo(i, f"t{i} ", "target") for i in ids)
    stats = RunStats(new_tokens=len(ids), target_passes=passes, prefill_s=prefill_s, decode_s=decode_s)
    speculative = drafter != "none"
    return RunResult("".join(t.text for t in tokens), tokens, (), stats, "eos", speculative, drafter)


class KnownSpeedEngine:
    """Answers each arm with a run of known tokens and seconds (no model): the plain arm 20
    tokens in 2 s (10 tokens/s); lookup 20 tokens in 8 passes and 1 s (20/s); the draft model
    20 tokens in 4 s (5/s), parting from the plain answer at token 5."""

    drafter_choices = (LOOKUP, DRAFT_MODEL)
    plain_ids = list(range(20))

    def __init__(self) -> None:
        self.calls: list[tuple[str | None, GenerationConfig]] = []
        self.resets = 0

    def reset(self) -> None:
        self.resets += 1

    def generate(self, conversation, config, cancel=None, options=NEW_ANSWER):  # type: ignore[no-untyped-def]
        drafter_choice = options.drafter_choice
        self.calls.append((drafter_choice, config))
        if not config.speculative:
            return _known_run(self.plain_ids, 20, 0.5, 1.5, "none")
        if drafter_choice == LOOKUP:
            return _known_run(self.plain_ids, 8, 0.25, 0.75, "prompt lookup")
        ids = self.plain_ids[:5] + [99] + self.plain_ids[6:]
        return _known_run(ids, 7, 1.0, 3.0, "draft model: d")


def test_the_speedup_is_tokens_per_second_over_the_plain_arms_on_known_runs() -> None:
    engine = KnownSpeedEngine()
    arms = [SweepArm(LOOKUP, 2), SweepArm(NONE), SweepArm(DRAFT_MODEL, 2)]  # the plain arm not first
    rows = list(run_sweep(engine, PROMPT, GenerationConfig(), arms))  # type: ignore[arg-type]
    assert [row.arm for row in rows] == [SweepArm(NONE), SweepArm(LOOKUP, 2), SweepArm(DRAFT_MODEL, 2)]
    assert [row.whole_run_speedup for row in rows] == pytest.approx([1.0, 2.0, 0.5])  # 10, 20 and 5 tokens/s
    assert [row.identical for row in rows] == [True, True, False]
    assert [row.first_difference for row in rows] == [None, None, 5]
    assert engine.resets == 3  # every arm from fresh caches
    assert [choice for choice, _ in engine.calls] == [None, LOOKUP, DRAFT_MODEL]
    data = [row.to_dict() for row in rows]
    assert [d["whole_run_speedup"] for d in data] == pytest.approx([1.0, 2.0, 0.5])
    assert [d["tokens_per_s"] for d in data] == pytest.approx([10.0, 20.0, 5.0])
