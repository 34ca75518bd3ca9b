"""The command line, run in-process on tiny random models saved to folders (no weights, no network).

Each test states the property it proves: the JSON shapes the issue specifies, that compare
finds greedy speculation lossless, that bench reports against Hugging Face, and that every
bad input ends as exit code 2 and exactly one line on stderr.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
from tiny_models import build_model, build_tokenizer, perturbed_copy, save

from app.cli import main

REPO = Path(__file__).resolve().parent.parent
PROMPT = "def add(a, b):\n    return a + b\nThe quick brown fox jumps over the lazy dog."
GENERATE_KEYS = {"text", "tokens", "steps", "stats", "stop_reason", "drafter", "target"}
TOKEN_KEYS = {"id", "text", "source"}
STEP_KEYS = {"index", "accepted", "rejected", "target", "kind", "k", "draft_s", "verify_s"}
STATS_KEYS = {
    "new_tokens",
    "target_passes",
    "draft_passes",
    "proposed",
    "accepted",
    "drafts_accepted_share",
    "tokens_per_pass",
    "prefill_s",
    "decode_s",
    "tokens_per_s",
}
SUMMARY_KEYS = {
    "baseline_tps",
    "speculative_tps",
    "whole_run_speedup",
    "hf_plain_tps",
    "hf_assisted_tps",
    "drafts_accepted_share",
    "tokens_per_pass",
    "all_identical",
    "hf_assisted_identical",
    "ratio_vs_hf_assisted",
}


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """A tiny target, a draft that mostly agrees with it, a model with another tokenizer, and
    a folder that is not a model."""
    root = tmp_path_factory.mktemp("models")
    tokenizer = build_tokenizer()
    target = build_model("llama", tokenizer, seed=1, scale=30.0)
    draft = perturbed_copy(target, noise=0.05, seed=2)
    other_tokenizer = build_tokenizer(vocab_size=300)
    other = build_model("llama", other_tokenizer, seed=3)
    not_a_model = root / "not_a_model"
    not_a_model.mkdir()
    (not_a_model / "notes.txt").write_text("hello")
    return {
        "target": str(save(target, tokenizer, root / "target")),
        "draft": str(save(draft, tokenizer, root / "draft")),
        "other_tokenizer": str(save(other, other_tokenizer, root / "other_tokenizer")),
        "not_a_model": str(not_a_model),
    }


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict:
    code, out, err = run_cli(capsys, *argv, "--json")
    assert code == 0, err
    return json.loads(out)


def tiny(models: dict[str, str], *extra: str) -> list[str]:
    """The tiny target, in fp32 unless ``extra`` names a form: auto measures at load, and two
    forms that measure alike on tiny models may swap between runs (and answer differently)."""
    pinned = [] if {"--weights", "--dtype"} & set(extra) else ["--weights", "fp32"]
    return ["--target", models["target"], "--max-new-tokens", "12", *pinned, *extra]


# --- generate ------------------------------------------------------------------------------


@pytest.mark.parametrize("form", ["int4", "int8"])
def test_weights_loads_the_form_asked_and_every_answer_names_it(models, capsys, form):
    """Issue 18: --weights (and --draft-weights) reach the engine; --json's provenance and the
    load's line on stderr name the form, who quantized it and from what."""
    argv = [*tiny(models, "--draft", models["draft"]), "--weights", form, "--draft-weights", "int4", "--no-auto-k"]
    argv += ["--prompt", PROMPT]  # a fixed k: the draft model drafts whatever its measured cost
    code, out, err = run_cli(capsys, "generate", *argv, "--json")
    assert code == 0, err
    made_by = json.loads(out)["made_by"]
    assert made_by["dtype"] == form and made_by["draft_dtype"] == "int4"
    assert made_by["weights"].startswith(f"{form} (quantized by SpecChat) from fp32 · ")
    assert made_by["draft_weights"].startswith("int4 (quantized by SpecChat) from fp32 · ")
    code, out, err = run_cli(capsys, "generate", *argv)
    assert code == 0 and err == "", err
    assert out.splitlines()[-2].startswith(f"weights: {form} (quantized by SpecChat) from fp32 · ")  # before the stats
    assert "; draft: int4 (quantized by SpecChat) from fp32 · " in out.splitlines()[-2]


def test_draft_dtype_still_works_as_the_older_name(models, capsys):
    argv = [*tiny(models, "--draft", models["draft"]), "--weights", "fp32", "--draft-dtype", "int8", "--prompt", PROMPT]
    made_by = run_json(capsys, "generate", *argv)["made_by"]
    assert (made_by["dtype"], made_by["draft_dtype"]) == ("float32", "int8")


def test_a_dtype_given_decides_the_form_when_weights_is_not(models, capsys):
    argv = tiny(models, "--dtype", "bfloat16", "--no-spec", "--prompt", PROMPT)
    made_by = run_json(capsys, "generate", *argv)["made_by"]
    assert made_by["dtype"] == "bfloat16" and made_by["weights"].startswith("bf16 from fp32 · ")


def assert_generate_shape(run: dict) -> None:
    assert GENERATE_KEYS <= run.keys()
    assert STATS_KEYS <= run["stats"].keys()
    assert all(TOKEN_KEYS <= t.keys() and t["source"] in ("draft", "target") for t in run["tokens"])
    assert all(STEP_KEYS <= s.keys() for s in run["steps"])
    assert "".join(t["text"] for t in run["tokens"]) == run["text"]
    assert len(run["tokens"]) == run["stats"]["new_tokens"]
    assert len(run["steps"]) == run["stats"]["target_passes"]


def test_generate_json_tokens_spell_the_text_and_steps_account_for_every_token(models, capsys):
    run = run_json(
        capsys, "generate", *tiny(models, "--draft", models["draft"], "--k", "3"), "--prompt", PROMPT
    )
    assert_generate_shape(run)
    assert run["stats"]["new_tokens"] >= 1
    step_ids = [
        i for s in run["steps"] for i in s["accepted"] + ([s["target"]] if s["target"] is not None else [])
    ]
    assert step_ids == [t["id"] for t in run["tokens"]]
    assert sum(len(s["accepted"]) for s in run["steps"]) == run["stats"]["accepted"]
    assert [t["source"] for t in run["tokens"]].count("draft") == run["stats"]["accepted"]
    assert run["drafter"].startswith("draft model") and run["target"]


def test_generate_defaults_to_prompt_lookup_and_no_spec_runs_the_target_alone(models, capsys):
    lookup = run_json(capsys, "generate", *tiny(models), "--prompt", PROMPT)
    plain = run_json(capsys, "generate", *tiny(models), "--no-spec", "--prompt", PROMPT)
    assert lookup["drafter"] == "prompt lookup"
    assert plain["drafter"] == "none"
    assert plain["stats"]["proposed"] == 0
    assert plain["stats"]["target_passes"] == plain["stats"]["new_tokens"]
    assert plain["text"] == lookup["text"]  # greedy: speculation does not change the answer


def test_generate_options_reach_the_engine(models, capsys):
    run = run_json(
        capsys,
        "generate",
        *tiny(models, "--draft", models["draft"]),
        "--k",
        "2",
        "--temperature",
        "0.8",
        "--top-p",
        "0.9",
        "--top-k",
        "20",
        "--seed",
        "7",
        "--sampling",
        "seed-invariant",
        "--adaptive",
        "--system",
        "Be brief.",
        "--prompt",
        PROMPT,
    )
    config = run["config"]
    assert (config["k"], config["temperature"], config["top_p"], config["top_k"]) == (2, 0.8, 0.9, 20)
    assert (config["seed"], config["sampling"], config["adaptive_k"]) == (7, "seed-invariant", True)
    assert config["max_new_tokens"] == 12


def test_generate_stop_string_ends_the_answer(models, capsys):
    first = run_json(capsys, "generate", *tiny(models), "--no-spec", "--prompt", PROMPT)
    visible = first["text"].strip()
    assert visible, "the tiny model should answer with visible text"
    stop = visible[0]
    run = run_json(capsys, "generate", *tiny(models), "--no-spec", "--stop", stop, "--prompt", PROMPT)
    assert run["stop_reason"] == "stop_string"
    assert stop in run["text"]
    assert len(run["tokens"]) <= len(first["tokens"])


def test_generate_text_output_prints_the_answer_and_a_stats_line(models, capsys):
    run = run_json(capsys, "generate", *tiny(models), "--prompt", PROMPT)
    code, out, err = run_cli(capsys, "generate", *tiny(models), "--prompt", PROMPT)
    assert code == 0, err
    assert out.startswith(run["text"])
    assert "\x1b[" not in out  # not a terminal: no colour codes
    assert f"{run['stats']['new_tokens']} tokens in" in out.splitlines()[-1]
    assert "drafter: prompt lookup" in out


# --- compare -------------------------------------------------------------------------------


def test_compare_json_finds_greedy_speculation_identical(models, capsys):
    data = run_json(
        capsys, "compare", *tiny(models, "--draft", models["draft"], "--k", "4", "--no-auto-k"), "--prompt", PROMPT
    )
    assert {"speculative", "baseline", "identical", "first_difference", "decode_speedup", "verdict"} <= data.keys()
    assert_generate_shape(data["speculative"])
    assert_generate_shape(data["baseline"])
    assert data["speculative"]["drafter"].startswith("draft model")
    assert data["baseline"]["drafter"] == "none"
    assert data["speculative"]["stats"]["proposed"] > 0
    assert data["identical"] is True and data["first_difference"] is None and data["verdict"] == "identical"
    assert data["speculative"]["text"] == data["baseline"]["text"]
    assert data["decode_speedup"] > 0 and data["whole_run_speedup"] > 0


def test_compare_text_output_states_the_verdict(models, capsys):
    code, out, err = run_cli(capsys, "compare", *tiny(models), "--prompt", PROMPT)
    assert code == 0, err
    assert "verdict: identical · Identical answer · " in out
    assert "Both runs produced exactly the same tokens" in out
    assert "speculative" in out and "baseline" in out


@pytest.fixture()
def service_reports(monkeypatch: pytest.MonkeyPatch) -> list:
    """Every report the comparison service makes during the test."""
    from app.engine.analysis import comparison

    reports: list = []
    real = comparison.run_comparison

    def spy(*args, **kwargs):  # type: ignore[no-untyped-def]
        reports.append(real(*args, **kwargs))
        return reports[-1]

    monkeypatch.setattr(comparison, "run_comparison", spy)
    return reports


def test_compare_json_is_the_services_report(models, capsys, service_reports):
    # a fixed k: with auto k a 12-token answer may rightly skip the draft model (then named "none")
    argv = tiny(models, "--draft", models["draft"], "--no-auto-k")
    data = run_json(capsys, "compare", *argv, "--prompt", PROMPT)
    assert len(service_reports) == 1
    report = service_reports[0]
    assert data == json.loads(json.dumps(report.to_dict()))
    assert data["whole_run_speedup"] == report.speculative.stats.tokens_per_s / report.baseline.stats.tokens_per_s
    assert data["speculative"]["made_by"]["drafter"].startswith("draft model")
    assert data["baseline"]["made_by"]["drafter"] == "none"
    assert data["order"] == ["speculative", "baseline"]
    from app.engine.analysis.explanation import explain

    explanation = data["explanation"]  # the engine's explanation of the two runs, as the GUI shows it
    expected = explain(report.speculative, report.baseline, report.comparison.measured)  # Why from Compare
    assert explanation == json.loads(json.dumps(expected.to_dict()))
    keys = {"alpha", "drafts_accepted_share", "tokens_per_pass", "draft_cost_ratio", "verify_cost_ratio"}
    assert keys | {"predicted_decode_speedup", "decode_speedup", "whole_run_speedup", "summary"} <= explanation.keys()
    assert explanation["decode_speedup"] is not None and explanation["summary"]
    # one number per idea: the headline's speed-up is the Why panel's, the run stats' tokens per
    # pass and drafts accepted are the explanation's
    assert data["decode_speedup"] == explanation["decode_speedup"]
    assert data["whole_run_speedup"] == explanation["whole_run_speedup"]
    stats = data["speculative"]["stats"]
    assert stats["tokens_per_pass"] == explanation["tokens_per_pass"]
    assert stats["drafts_accepted_share"] == explanation["drafts_accepted_share"]
    assert "acceptance_rate" not in stats and "acceptance_rate" not in explanation


def test_compare_text_says_what_the_services_report_says(models, capsys, service_reports):
    from app.engine.analysis.compare import headline, verdict_reasons

    code, out, err = run_cli(capsys, "compare", *tiny(models), "--prompt", PROMPT)
    assert code == 0, err
    comparison = service_reports[0].comparison
    assert f"verdict: {comparison.verdict} · {headline(comparison).render()}\n" in out
    assert all(p.render() in out for p in verdict_reasons(comparison))


# --- bench ---------------------------------------------------------------------------------


@pytest.fixture()
def prompts_file(tmp_path: Path) -> Path:
    path = tmp_path / "prompts.txt"
    path.write_text("Add type hints:\\ndef add(a, b):\\n    return a + b\n\nThe quick brown fox\n")
    return path


def test_bench_json_compares_ours_with_hugging_face_on_every_prompt(models, capsys, prompts_file):
    data = run_json(
        capsys,
        "bench",
        *tiny(models, "--draft", models["draft"], "--k", "3", "--no-auto-k"),
        "--prompts-file",
        str(prompts_file),
        "--repeat",
        "2",
    )
    summary = data["summary"]
    assert SUMMARY_KEYS <= summary.keys()
    assert len(data["runs"]) == 4  # 2 prompts (the blank line skipped) x 2 repeats
    assert data["runs"][0]["prompt"] == "Add type hints:\ndef add(a, b):\n    return a + b"
    assert [len(set(r["order"])) for r in data["runs"]] == [4, 4, 4, 4]
    assert len({tuple(r["order"]) for r in data["runs"]}) == 4  # the order rotates
    for kind in ("baseline", "speculative", "hf_plain", "hf_assisted"):
        assert summary[f"{kind}_tps"] > 0
    assert summary["all_identical"] is True
    assert summary["hf_plain_identical"] is True  # our target-only loop = HF greedy
    assert summary["hf_assisted_identical"] is True
    assert summary["ratio_vs_hf_assisted"] == pytest.approx(
        summary["speculative_tps"] / summary["hf_assisted_tps"]
    )
    assert summary["whole_run_speedup_of_totals"] == pytest.approx(
        summary["speculative_tps"] / summary["baseline_tps"]
    )
    assert summary["whole_run_speedup"] == pytest.approx(
        statistics.median(r["whole_run_speedup"] for r in data["runs"])
    )
    assert 0 < summary["drafts_accepted_share"] <= 1
    assert [p["prompt_index"] for p in data["prompts"]] == [0, 1]
    # the worst prompt, each prompt's speedup, the k it ran with, the time outside the models
    speedups = [p["whole_run_speedup"] for p in data["prompts"]]
    assert summary["whole_run_speedups"] == speedups and summary["worst_whole_run_speedup"] == min(speedups)
    assert data["prompts"][summary["worst_prompt_index"]]["whole_run_speedup"] == min(speedups)
    # the lowest single round beside the medians; 2 rounds a prompt are too few to say a round's noise
    rounds = [r["whole_run_speedup"] for r in data["runs"]]
    assert summary["worst_round_speedup"] == min(rounds)
    assert data["runs"][rounds.index(min(rounds))]["prompt_index"] == summary["worst_round_prompt_index"]
    for p in data["prompts"]:
        its_rounds = [r["whole_run_speedup"] for r in data["runs"] if r["prompt_index"] == p["prompt_index"]]
        assert p["worst_round_speedup"] == min(its_rounds)
    assert summary["round_noise"] is None
    assert summary["auto_k"] is False and summary["mean_k"] == pytest.approx(3.0, abs=1.0)
    assert 0.0 <= summary["outside_forward_share"] < 1.0 and summary["cost_curve_ms"]
    # the time split per answer: the parts add up to the whole call, drafting only where it drafted
    for run in data["runs"]:
        for kind in ("speculative", "baseline"):
            split = run[kind]["time_split_ms"]
            assert set(split) == {"prefill", "draft", "verify", "outside"}
            assert sum(split.values()) == pytest.approx(1000.0 * run[kind]["seconds"], rel=1e-6)
        assert run["speculative"]["time_split_ms"]["draft"] > 0.0
    assert summary["time_split_ms"]["verify"] > 0.0 and summary["baseline_time_split_ms"]["draft"] < 1.0
    assert summary["draft_form"] is not None and summary["draft_form"].split()[0] in ("int4", "int8", "bf16", "fp32")
    assert summary["weights"].split()[0] in ("int4", "int8", "bf16", "fp32")


def test_bench_with_prompt_lookup_and_one_prompt_prints_a_table(models, capsys):
    code, out, err = run_cli(capsys, "bench", *tiny(models), "--prompt", PROMPT)
    assert code == 0, err
    assert "prompt lookup" in out
    assert "Hugging Face generate()" in out
    assert out.count("\n 1  ") == 1
    assert "auto k <= 5" in out and "worst prompt: #1" in out  # auto k is the default
    assert "ms per answer, speculative (mean): prefill" in out


def test_bench_skips_hugging_face_when_sampling(models, capsys):
    data = run_json(capsys, "bench", *tiny(models), "--temperature", "0.7", "--prompt", PROMPT)
    assert data["summary"]["hf_assisted_tps"] is None
    assert "greedy only" in data["summary"]["note"]
    assert set(data["runs"][0]["order"]) == {"baseline", "speculative"}


# --- bad input -----------------------------------------------------------------------------


def bad_inputs(models: dict[str, str], tmp: Path) -> dict[str, list[str]]:
    corrupt = tmp / "corrupt.gguf"
    corrupt.write_bytes(b"GGUF\x03\x00\x00\x00 this is not a model")
    empty = tmp / "empty.txt"
    empty.write_text("\n  \n")
    target = ["--target", models["target"]]
    return {
        "missing path": ["generate", "--target", str(tmp / "nowhere"), "--prompt", "hi"],
        "not a model folder": ["generate", "--target", models["not_a_model"], "--prompt", "hi"],
        "corrupt gguf": ["generate", "--target", str(corrupt), "--prompt", "hi"],
        "incompatible draft": ["compare", *target, "--draft", models["other_tokenizer"], "--prompt", "hi"],
        "empty prompt": ["generate", *target, "--prompt", "   "],
        "no prompt": ["generate", *target],
        "prompt longer than the context": ["generate", *target, "--prompt", "fox " * 600],
        "k below 1": ["generate", *target, "--k", "0", "--prompt", "hi"],
        "top-p above 1": ["generate", *target, "--top-p", "1.5", "--prompt", "hi"],
        "top-p of 0": ["compare", *target, "--top-p", "0", "--prompt", "hi"],
        "negative temperature": ["generate", *target, "--temperature", "-1", "--prompt", "hi"],
        "not a number": ["generate", *target, "--temperature", "warm", "--prompt", "hi"],
        "draft and lookup": ["generate", *target, "--draft", models["target"], "--lookup", "--prompt", "hi"],
        "unknown dtype": ["generate", *target, "--dtype", "float3", "--prompt", "hi"],
        "missing prompts file": ["bench", *target, "--prompts-file", str(tmp / "none.txt")],
        "empty prompts file": ["bench", *target, "--prompts-file", str(empty)],
        "no command": [],
        "empty draft": ["compare", *target, "--draft", "", "--prompt", "hi"],
        "empty target": ["generate", "--target", "", "--prompt", "hi"],
        "raw byte in the prompt": ["generate", *target, "--prompt", "caf\udce9 au lait"],  # argv's \xe9
        "raw byte in a stop string": ["generate", *target, "--prompt", "hi", "--stop", "\udcff"],
        "endless prompts file": ["bench", *target, "--prompts-file", "/dev/zero"],
    }


BAD_INPUT_NAMES = [
    "missing path",
    "not a model folder",
    "corrupt gguf",
    "incompatible draft",
    "empty prompt",
    "no prompt",
    "prompt longer than the context",
    "k below 1",
    "top-p above 1",
    "top-p of 0",
    "negative temperature",
    "not a number",
    "draft and lookup",
    "unknown dtype",
    "missing prompts file",
    "empty prompts file",
    "no command",
    "empty draft",
    "empty target",
    "raw byte in the prompt",
    "raw byte in a stop string",
    "endless prompts file",
]


@pytest.mark.parametrize("name", BAD_INPUT_NAMES)
def test_bad_input_exits_2_with_one_error_line_on_stderr(name, models, capsys, tmp_path):
    """One error line, last; before it only what loading noted (on a CPU without AVX-512 the
    target's bf16 form is not offered, and the load says so)."""
    argv = bad_inputs(models, tmp_path)[name]
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert err.endswith("\n") and lines[-1].startswith("specchat: error: "), err
    assert all(line.startswith("specchat: note: ") for line in lines[:-1]), err
    assert "Traceback" not in err


@pytest.mark.parametrize("stdin", ["bytes", "text"])
def test_a_prompt_on_stdin_that_is_not_utf8_exits_2_with_one_line(models, capsys, monkeypatch, stdin):
    import io

    raw = b"caf\xe9 au lait"  # Latin-1, not UTF-8
    if stdin == "bytes":
        stream = io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8", errors="surrogateescape")
    else:  # a text stream that decoded with surrogateescape, as Python does in a C locale
        stream = io.StringIO(raw.decode("utf-8", "surrogateescape"))
    monkeypatch.setattr(sys, "stdin", stream)
    code, out, err = run_cli(capsys, "generate", *tiny(models), "--prompt", "-")
    assert (code, out) == (2, "") and len(err.splitlines()) == 1
    assert "not valid UTF-8" in err and "0xe9" in err


def test_a_prompts_file_beyond_the_size_cap_is_refused_before_it_is_read_whole(models, capsys, monkeypatch, tmp_path):
    import app.cli.inputs

    monkeypatch.setattr(app.cli.inputs, "MAX_INPUT_BYTES", 1000)
    big = tmp_path / "big.txt"
    big.write_text("a prompt\n" * 300)  # 2,700 bytes
    code, out, err = run_cli(capsys, "bench", *tiny(models), "--prompts-file", str(big))
    assert (code, out) == (2, "") and "larger than" in err and len(err.splitlines()) == 1


def test_sweep_passes_the_kernel_and_thread_options_to_the_engine(capsys, monkeypatch):
    from app.engine import Engine
    from app.engine.errors import ModelLoadError

    seen: dict = {}

    def load(target, draft, options):  # type: ignore[no-untyped-def]
        seen.update(vars(options))
        raise ModelLoadError("stop here")

    monkeypatch.setattr(Engine, "load", load)
    from app.engine.config import available_cpus

    argv = ["sweep", "--prompt", "hi", "--no-cpu-kernels", "--threads", str(available_cpus()), "--dtype", "BFloat16"]
    assert run_cli(capsys, *argv)[0] == 2
    assert seen["cpu_kernels"] is False and seen["threads"] == available_cpus() and seen["dtype"] == "BFloat16"


def test_keywords_are_accepted_in_any_case_everywhere():
    from app.cli import parse_args

    args = parse_args(
        ["sweep", "--prompt", "hi", "--k-values", "AUTO,2", "--drafters", "NONE,Lookup", "--sampling",
         "Seed-Invariant", "--threads", "AUTO", "--target", "DEFAULT", "--dtype", "BF16"]
    )
    assert args.k_values == [None, 2] and args.drafters == ["none", "lookup"]
    assert args.sampling == "seed-invariant" and args.threads == "auto" and args.target == "default"


def test_version_and_gui_help_answer_without_opening_the_window(monkeypatch, capsys):
    import types

    from app import __version__
    from app.__main__ import main as app_main

    opened: list[list[str]] = []
    fake_gui = types.ModuleType("app.gui")
    fake_gui.main = lambda argv: opened.append(list(argv)) or 7
    monkeypatch.setitem(sys.modules, "app.gui", fake_gui)
    assert app_main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"SpecChat {__version__}"
    assert app_main(["gui", "--help"]) == 0
    help_text = capsys.readouterr().out
    assert "desktop app" in help_text and "sweep" in help_text
    assert app_main(["gui", "--version"]) == 0 and __version__ in capsys.readouterr().out
    assert opened == []


def test_keyboard_interrupt_exits_130_quietly(models, capsys, monkeypatch):
    from app.engine import Engine

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(Engine, "generate", interrupted)
    assert run_cli(capsys, "generate", *tiny(models), "--prompt", PROMPT) == (130, "", "")


def test_python_m_app_opens_the_gui_without_a_command_and_the_cli_with_one(monkeypatch, capsys):
    import types

    from app.__main__ import main as app_main

    seen: list[list[str]] = []
    fake_gui = types.ModuleType("app.gui")
    fake_gui.main = lambda argv: seen.append(list(argv)) or 7
    monkeypatch.setitem(sys.modules, "app.gui", fake_gui)
    assert app_main([]) == 7
    assert app_main(["--some-gui-flag"]) == 7
    assert app_main(["gui", "--x"]) == 7
    assert seen == [[], ["--some-gui-flag"], ["--x"]]
    assert app_main(["generate", "--k", "0", "--prompt", "hi"]) == 2
    assert capsys.readouterr().err.startswith("specchat: error: argument --k")
    assert seen == [[], ["--some-gui-flag"], ["--x"]]


def test_help_runs_as_a_module_without_loading_torch():
    probe = (
        "import runpy, sys; sys.argv = ['app', 'generate', '--help']\n"
        "try:\n    runpy.run_module('app', run_name='__main__')\nexcept SystemExit as e:\n"
        "    print('exit', e.code, 'torch' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], check=False, cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert "--prompts-file" not in done.stdout  # generate's own help, not bench's
    assert "--no-spec" in done.stdout and "--max-new-tokens" in done.stdout
    assert done.stdout.strip().endswith("exit 0 False"), done.stdout + done.stderr


def test_the_app_without_a_display_says_so_in_one_line():
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    done = subprocess.run(
        [sys.executable, "-m", "app"], check=False, cwd=REPO, capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and "no display" in done.stderr
    from app.cli import COMMANDS

    assert all(command in done.stderr for command in COMMANDS)  # sweep included
