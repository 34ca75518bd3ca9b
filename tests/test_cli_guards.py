"""Settings that cannot hurt, on the command line (issue 20, section 4): keywords in any case,
``--version`` after every command, a draft dtype checked even without a draft model, and a
thread count above the cores available capped to them with a visible reason (the engine caps them too)."""

from __future__ import annotations

import pytest

from app import __version__
from app.cli import main, parse_args
from app.cli.inputs import UsageError
from app.engine.config import available_cpus


@pytest.mark.parametrize("command", ["generate", "compare", "bench", "sweep"])
def test_every_command_answers_version(command, capsys):
    assert main([command, "--version"]) == 0
    assert capsys.readouterr().out.strip() == f"SpecChat {__version__}"


def test_draft_and_drafters_keywords_are_accepted_in_any_case():
    assert parse_args(["generate", "--prompt", "hi", "--draft", "SUFFIX"]).draft == "suffix"
    assert parse_args(["generate", "--prompt", "hi", "--draft", "Lookup"]).draft == "lookup"
    args = parse_args(["sweep", "--prompt", "hi", "--drafters", "SUFFIX,Lookup,NONE"])
    assert args.drafters == ["suffix", "lookup", "none"]


def test_a_garbage_draft_dtype_is_refused_even_without_a_draft_model(capsys):
    with pytest.raises(UsageError, match="--draft-dtype"):
        parse_args(["generate", "--prompt", "hi", "--draft-dtype", "garbage"])
    for good in ("auto", "Int8", "bfloat16", "float32", "float16"):
        parse_args(["generate", "--prompt", "hi", "--draft-dtype", good])


@pytest.mark.parametrize("asked", ["999", "18446744073709551616"])
def test_threads_above_the_cores_are_capped_with_a_reason(asked, capsys):
    args = parse_args(["generate", "--prompt", "hi", "--threads", asked])
    assert args.threads == available_cpus()
    err = capsys.readouterr().err
    assert f"--threads {asked}" in err and f"{available_cpus()}" in err and "capped" in err


def test_the_engine_caps_a_thread_count_above_the_cpus():
    from app.engine.runners.threads import parse_threads

    assert parse_threads(18446744073709551616) == available_cpus()
    assert parse_threads("999") == available_cpus()


def test_max_new_tokens_above_the_context_length_are_capped_with_a_note(tiny_models, capsys):
    import json

    from app.engine.models.loading import load_model

    context = load_model(str(tiny_models["llama"]), device="cpu", dtype="float32").context_length
    asked = context + 1000
    code = main(["generate", "--target", str(tiny_models["llama"]), "--max-new-tokens", str(asked), "--prompt", "hi",
                 "--json", "--no-spec"])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert f"--max-new-tokens {asked} capped to {context}" in captured.err
    assert json.loads(captured.out)["stats"]["new_tokens"] <= context


def test_a_temperature_past_two_is_refused_with_a_reason(capsys):
    assert main(["generate", "--prompt", "hi", "--temperature", "5"]) == 2
    err = capsys.readouterr().err
    assert "--temperature" in err and "2.0" in err and err.count("\n") == 1
