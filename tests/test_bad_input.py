"""Bad input, as a hostile user would type it, ends as one clear message: ``InvalidSettingError``
from the Python API, exit code 2 and one line from the CLI; never a traceback, a NaN or a
silently empty answer."""

from __future__ import annotations

import json
import random
import sys
import types
from dataclasses import fields

import numpy as np
import pytest
import torch
from tiny_models import build_model, save

from app.cli import main as cli_main
from app.engine import Engine, GenerationConfig
from app.engine.config import MAX_SEED
from app.engine.decoding.acceptance import Rule
from app.engine.decoding.sampling import gumbel_argmax, probabilities
from app.engine.errors import InvalidSettingError, ModelLoadError
from app.engine.models.loading import _first_line, load_model

PROMPT = "The quick brown fox jumps over the lazy dog. The quick brown"
CONTEXT = 64  # positions of the small-context model below


@pytest.fixture(scope="module")
def small_context_folder(tmp_path_factory, tokenizer):
    """A tiny llama whose config says max_position_embeddings = 64."""
    model = build_model("llama", tokenizer, seed=0, scale=30.0)
    model.config.max_position_embeddings = CONTEXT
    return save(model, tokenizer, tmp_path_factory.mktemp("small-context") / "llama-64")


@pytest.fixture(scope="module")
def small_engine(small_context_folder) -> Engine:
    return Engine(load_model(str(small_context_folder), device="cpu", dtype="float32"), lookup=True)


# --- GenerationConfig: types -----------------------------------------------------------------


@pytest.mark.parametrize(
    "setting",
    [
        {"k": 2.5},
        {"max_new_tokens": 2.5},
        {"seed": None},
        {"max_new_tokens": "5"},
        {"top_k": None},
        {"temperature": "0"},
        {"k": True},
        {"max_new_tokens": False},
        {"temperature": True},
        {"speculative": 1},
        {"adaptive_k": "yes"},
        {"stop_strings": ["ok", 3]},
        {"stop_strings": 5},
        {"sampling": None},
        {"seed": 2**64},
        {"seed": -1},
        {"repetition_penalty": 0.0},
        {"repetition_penalty": 1e-300},
        {"repetition_penalty": float("inf")},
        {"temperature": 10**400},
    ],
    ids=repr,
)
def test_wrong_types_and_values_are_refused_with_one_line(setting):
    with pytest.raises(InvalidSettingError) as error:
        GenerationConfig(**setting)
    message = str(error.value)
    assert message and "\n" not in message and len(message) < 160


def test_one_stop_string_is_one_stop_string_not_a_set_of_characters():
    """A str is wrapped as Hugging Face generate() does: stop_strings="Sunday!" means that word."""
    assert GenerationConfig(stop_strings="Sunday!").stop_strings == ("Sunday!",)
    assert GenerationConfig(stop_strings=["a", "b"]).stop_strings == ("a", "b")


def test_numpy_numbers_are_accepted_as_plain_python_numbers():
    config = GenerationConfig(k=np.int64(3), max_new_tokens=np.int32(7), temperature=np.float32(0.5), top_p=1)
    assert (config.k, config.max_new_tokens) == (3, 7) and type(config.k) is int
    assert type(config.temperature) is float and type(config.top_p) is float
    assert GenerationConfig(speculative=np.bool_(False)).speculative is False


# fmt: off
EXTREMES = [
    0, 1, -1, 2, 5, 64, 65, 2**31, 2**63, 2**64 - 1, 2**64, -(2**70), 10**400,
    0.0, 1e-300, 5e-324, 1e-45, 0.5, 0.999, 1.0, 1.5, 1e300, -0.0, -1e-300,
    float("nan"), float("inf"), float("-inf"),
    True, False, None, "", "5", "standard", "seed-invariant", "beam", "Sunday!",
    (), ("stop",), [""], ["a", 1], np.int64(4), np.float64(0.7), np.bool_(True), np.float32("nan"),
]
# fmt: on


def _fuzzed_configs(count: int, seed: int = 6):
    rng = random.Random(seed)
    names = [f.name for f in fields(GenerationConfig)]
    for _ in range(count):
        chosen = rng.sample(names, rng.randint(1, 4))
        yield {name: rng.choice(EXTREMES) for name in chosen}


def test_fuzzed_settings_give_a_clean_refusal_or_a_config_that_samples_finite_probabilities():
    logits = torch.randn(3, 40) * 20  # [T, V]
    accepted = 0
    for values in _fuzzed_configs(3000):
        try:
            config = GenerationConfig(**values)
        except InvalidSettingError as error:
            assert str(error) and "\n" not in str(error)
            continue
        accepted += 1
        for f in fields(config):  # normalised to the declared type
            value = getattr(config, f.name)
            assert type(value).__name__ == {"SamplingMode": "str", "tuple[str, ...]": "tuple"}.get(
                f.type, f.type
            )
        Rule(config)  # the seed fits the generator
        probs = probabilities(logits, config)
        assert torch.isfinite(probs).all() and torch.allclose(probs.sum(-1), torch.ones(3))
        if not config.greedy:
            assert all(0 <= t < 40 for t in gumbel_argmax(logits, config, first_position=7))
    assert accepted > 100  # the fuzz also reaches valid configurations


# --- temperature and top-p at the edge of float range ------------------------------------------


@pytest.mark.parametrize(
    "extreme",
    [
        {"temperature": 1e-300},
        {"temperature": 1e-45},
        {"temperature": 1e-45, "sampling": "seed-invariant"},
        {"temperature": 1e-300, "sampling": "seed-invariant"},
        {"temperature": 1.0, "top_p": 1e-300},
        {"temperature": 1.0, "top_p": 1e-300, "sampling": "seed-invariant"},
    ],
    ids=repr,
)
def test_vanishing_temperature_or_top_p_samples_the_greedy_answer(load_tiny, extreme):
    """Their limit is greedy; it used to be NaN probabilities (a traceback) or an empty answer."""
    engine = Engine(load_tiny("llama"), load_tiny("llama-draft"))
    greedy = engine.generate(PROMPT, GenerationConfig(max_new_tokens=12, k=3))
    for speculative in (True, False):
        sampled = engine.generate(
            PROMPT, GenerationConfig(max_new_tokens=12, k=3, speculative=speculative, **extreme)
        )
        assert sampled.token_ids == greedy.token_ids and sampled.text


def test_probabilities_at_a_vanishing_temperature_are_one_hot_on_the_argmax():
    logits = torch.randn(4, 50)
    for temperature in (1e-300, 1e-45, 5e-324):
        probs = probabilities(logits, GenerationConfig(temperature=temperature))
        assert torch.equal(probs, torch.nn.functional.one_hot(logits.argmax(-1), 50).float())


# --- the context window ------------------------------------------------------------------------


def test_an_answer_cut_by_a_full_context_says_context_full(small_engine):
    room = CONTEXT - len(small_engine.prompt_ids(PROMPT))
    full = small_engine.generate(PROMPT, GenerationConfig(max_new_tokens=500))
    assert len(full.tokens) == room and full.stop_reason == "context_full"
    assert (
        small_engine.generate(PROMPT, GenerationConfig(max_new_tokens=room)).stop_reason == "max_new_tokens"
    )
    assert small_engine.generate(PROMPT, GenerationConfig(max_new_tokens=3)).stop_reason == "max_new_tokens"


# --- the CLI ---------------------------------------------------------------------------------

# fmt: off
NUMERIC_OPTIONS = [
    "--max-new-tokens", "--k", "--confidence-threshold", "--temperature", "--top-p", "--top-k", "--seed",
    "--repetition-penalty",
]
NUMERIC_VALUES = [
    "0", "1", "-1", "2.5", "1e-300", "1e-45", "5e-324", "0.9999999999", "1e309", "-1e309", "nan", "inf", "-inf",
    "18446744073709551615", "18446744073709551616", "99999999999999999999999999", "abc", "", " 3 ", "1_0",
    "0x10", "1e3",
]
# fmt: on


def test_cli_numeric_options_exit_0_or_2_with_one_line_never_a_traceback(small_engine, monkeypatch, capsys):
    monkeypatch.setattr("app.cli.commands.load_engine", lambda args, drafter: small_engine)
    for option in NUMERIC_OPTIONS:
        for value in NUMERIC_VALUES:
            for sampling in ([], ["--temperature", "0.8"]):
                argv = [
                    "generate",
                    "--prompt",
                    PROMPT,
                    "--json",
                    "--max-new-tokens",
                    "4",
                    *sampling,
                    option,
                    value,
                ]
                code = cli_main(argv)
                out, err = capsys.readouterr()
                assert code in (0, 2), (argv, err)
                if code == 2:
                    assert out == "" and len(err.splitlines()) == 1 and err.startswith("specchat: error: "), (
                        argv
                    )
                else:
                    run = json.loads(out)
                    # an answer cut by max_new_tokens inside its first character has tokens (its
                    # ids, which Continue goes on from) but no complete character of text yet
                    assert run["tokens"] and run["stop_reason"] in ("max_new_tokens", "context_full", "eos"), (
                        argv
                    )
                    assert run["text"] or run["stop_reason"] == "max_new_tokens", argv


def test_cli_reports_a_full_context_as_the_stop_reason(small_engine, monkeypatch, capsys):
    monkeypatch.setattr("app.cli.commands.load_engine", lambda args, drafter: small_engine)
    assert cli_main(["generate", "--prompt", PROMPT, "--max-new-tokens", "500"]) == 0
    assert "stop: context_full" in capsys.readouterr().out


def test_cli_refuses_a_seed_beyond_64_bits_and_accepts_the_largest(small_engine, monkeypatch, capsys):
    monkeypatch.setattr("app.cli.commands.load_engine", lambda args, drafter: small_engine)
    base = ["generate", "--prompt", PROMPT, "--max-new-tokens", "2", "--temperature", "1", "--seed"]
    assert cli_main([*base, str(MAX_SEED)]) == 0
    capsys.readouterr()
    assert cli_main([*base, str(MAX_SEED + 1)]) == 2
    assert "--seed" in capsys.readouterr().err


def test_a_mistyped_command_is_a_usage_error_not_the_desktop_app(monkeypatch, capsys):
    from app.__main__ import main as app_main

    opened: list[list[str]] = []
    fake_gui = types.ModuleType("app.gui")
    fake_gui.main = lambda argv: opened.append(list(argv)) or 0  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "app.gui", fake_gui)
    assert app_main(["generat", "--prompt", "hi"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "unknown command 'generat'" in err and "'generate'" in err
    assert opened == []
    assert app_main(["-style", "fusion"]) == 0 and opened == [
        ["-style", "fusion"]
    ]  # Qt options still reach it


# --- messages from loading -------------------------------------------------------------------


def test_long_error_details_are_cut_at_a_word_boundary_with_an_ellipsis():
    words = " ".join(f"word{i}" for i in range(100))
    detail = _first_line(ValueError(words + "\nsecond line"))
    assert detail.endswith("…") and len(detail) <= 201
    kept = detail[:-1]
    assert words.startswith(kept) and words[len(kept)] == " "
    short = "a one-line message of a hundred and seventy characters " * 3
    assert _first_line(ValueError(short.strip())) == short.strip()


def test_a_model_that_needs_remote_code_is_refused_as_such(tokenizer, tmp_path):
    config = {
        "model_type": "my_custom_arch",
        "architectures": ["MyCustomForCausalLM"],
        "auto_map": {
            "AutoConfig": "configuration_my.MyConfig",
            "AutoModelForCausalLM": "modeling_my.MyModel",
        },
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    (tmp_path / "modeling_my.py").write_text("raise SystemExit('remote code ran')\n")
    tokenizer.save_pretrained(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(ModelLoadError) as error:
        load_model(str(tmp_path), device="cpu")
    message = str(error.value)
    assert "never runs code" in message and "this version of transformers" not in message
    assert "\n" not in message


def test_an_unknown_architecture_without_custom_code_is_still_a_version_problem(tokenizer, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "from_the_future"}))
    tokenizer.save_pretrained(tmp_path)
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(ModelLoadError, match="this version of transformers"):
        load_model(str(tmp_path), device="cpu")
