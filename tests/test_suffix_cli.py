"""The suffix drafter from the command line: ``--suffix``, the sweep arm, and the bench scenarios
that measure what reusing earlier conversations gains (tiny models, no timing asserted)."""

from __future__ import annotations

from test_cli import PROMPT, models, run_cli, run_json, tiny  # noqa: F401 - models is a fixture

from app.bench.sessions import ARMS, EDIT_SESSION


def test_generate_with_suffix_names_its_drafter_and_each_guess_its_origin(models, capsys):  # noqa: F811
    argv = tiny(models, "--suffix", "--no-auto-k", "--max-new-tokens", "32")
    run = run_json(capsys, "generate", *argv, "--prompt", PROMPT)
    assert run["drafter"] == "suffix index" and run["made_by"]["drafter"] == "suffix index"
    drafts = [t for t in run["tokens"] if t["source"] == "draft"]
    drafts += [t for step in run["steps"] for t in step["rejected_tokens"]]
    assert drafts and all(t["origin"] == "conversation" for t in drafts)  # nothing earlier in one run


def test_bench_repeat_scenario_reports_fewer_passes_the_second_time_with_the_same_text(models, capsys):  # noqa: F811
    argv = tiny(models, "--suffix", "--no-auto-k", "--max-new-tokens", "24")  # pass counts independent of timing
    data = run_json(capsys, "bench", *argv, "--scenario", "repeat", "--prompt", PROMPT)
    (row,) = data["rows"]
    assert set(row["arms"]) == set(ARMS)
    suffix, plain = row["arms"]["suffix"], row["arms"]["none"]
    assert suffix["again_passes_per_token"] < suffix["first_passes_per_token"]
    assert plain["again_passes_per_token"] == plain["first_passes_per_token"] == 1.0
    assert data["summary"]["all_identical"]


def test_bench_edits_scenario_reports_every_turn_beside_prompt_lookup(models, capsys, tmp_path):  # noqa: F811
    turns = tmp_path / "turns.txt"
    turns.write_text("def add(a, b): return a + b\nRename add to plus.\nNow call it sum2.\n")
    argv = tiny(models, "--suffix", "--scenario", "edits", "--prompts-file", str(turns))
    code, out, err = run_cli(capsys, "bench", *argv)
    assert code == 0, err
    heads = [line.split(" (")[0] for line in out.splitlines() if line.startswith("turn ")]
    assert heads == ["turn 1", "turn 2", "turn 3"]
    assert out.count("   prompt lookup ") == 3 and out.count("   suffix index + prompt lookup ") == 3
    assert "answers identical: yes" in out
    assert len(EDIT_SESSION) == 4  # the built-in session: written, then edited three times


def test_sweep_runs_a_suffix_arm(models, capsys):  # noqa: F811
    data = run_json(capsys, "sweep", *tiny(models), "--drafters", "none,suffix", "--k-values", "2", "--prompt", PROMPT)
    labels = [row["label"] for row in data["rows"]]
    assert labels == ["no speculation", "suffix index, k=2"]
    assert all(row["identical"] for row in data["rows"])


def test_suffix_with_a_draft_model_is_refused_in_one_line(models, capsys):  # noqa: F811
    argv = tiny(models, "--suffix", "--draft", models["draft"])
    code, out, err = run_cli(capsys, "generate", *argv, "--prompt", "hi")
    assert code == 2 and out == "" and len(err.splitlines()) == 1
