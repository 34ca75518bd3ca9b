"""The command line's grammar: options, their types and checks, and the options -> config mapping."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from app import __version__
from app.cli.inputs import DEFAULT_PROMPTS_FILE, UsageError, _utf8_text
from app.engine.config import (
    MAX_REPETITION_PENALTY,
    MAX_SEED,
    MAX_TEMPERATURE,
    MIN_REPETITION_PENALTY,
    GenerationConfig,
    cap_threads,
)

COMMANDS = ("generate", "compare", "bench", "sweep")
WEIGHTS = ("auto", "int4", "int8", "bf16", "fp32")  # forms.WEIGHTS_CHOICES (the CLI does not import torch)
VERSION = f"SpecChat {__version__}"


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad option is one line on stderr (raised, so ``main`` returns a code)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def _threads(text: str) -> str | int:
    """An argparse ``type`` for ``--threads``: ``auto`` or a whole number ≥ 1; a number above the
    CPUs this process may use is capped to them, with a note on stderr (more threads than CPUs
    only fight over them: 999 decoded at 0.6 tok/s against 42.9 with one thread)."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected auto or a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be auto or at least 1, got {text}")
    capped = cap_threads(value)
    if capped != value:
        sys.stderr.write(
            f"specchat: note: --threads {text.strip()} capped to {capped}, the CPUs this process may use\n"
        )
    return capped


def _bounded(
    kind: type,
    low: float | None = None,
    high: float | None = None,
    *,
    open_low: bool = False,
    open_high: bool = False,
) -> Callable[[str], Any]:
    """An argparse ``type`` that parses ``kind`` and checks it lies in [low, high]."""

    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {'an integer' if kind is int else 'a number'}, got {text!r}"
            ) from None
        if isinstance(value, float) and not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
        too_low = low is not None and (value <= low if open_low else value < low)
        too_high = high is not None and (value >= high if open_high else value > high)
        if too_low or too_high:
            left = "(" if open_low else "["
            right = ")" if open_high else "]"
            span = f"{left}{'-inf' if low is None else low}, {'inf' if high is None else high}{right}"
            raise argparse.ArgumentTypeError(f"must be in {span}, got {text}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


def _non_empty(text: str) -> str:
    if not text:
        raise argparse.ArgumentTypeError("must not be empty")
    return text


SOURCE_KEYWORDS = ("default", "lookup", "suffix")  # model sources that are words, not paths or hub ids


def _source(text: str) -> str:
    """A model source: not empty (``--draft ''`` must not quietly mean prompt lookup); its
    keywords in any case, like every other keyword option."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty: give a folder, a .gguf file or a Hub id")
    return text.strip().lower() if text.strip().lower() in SOURCE_KEYWORDS else text


def _keyword(*choices: str) -> Callable[[str], str]:
    """An argparse ``type`` for a choice of words, accepted in any case (as --dtype, --device
    and --threads are)."""

    def parse(text: str) -> str:
        word = text.strip().lower()
        if word not in choices:
            raise argparse.ArgumentTypeError(f"choose from {', '.join(choices)} (got {text!r})")
        return word

    parse.__name__ = "choice"
    return parse


def _common_options() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    models = common.add_argument_group("models")
    models.add_argument(
        "--target",
        type=_source,
        default="default",
        metavar="SRC",
        help="target model: 'default', a folder, a .gguf file or a Hub id (default: default)",
    )
    models.add_argument(
        "--draft", type=_source, metavar="SRC", help="draft model (same tokenizer as the target)"
    )
    models.add_argument(
        "--lookup",
        action="store_true",
        help="draft by prompt lookup (n-gram copy from the conversation); the default",
    )
    models.add_argument(
        "--suffix",
        action="store_true",
        help="draft by prompt lookup and from every earlier answer of this run (a suffix index over "
        "all conversations seen; in memory only)",
    )
    models.add_argument(
        "--device", type=_non_empty, default="auto", help="auto, cpu, cuda, cuda:N or mps (default: auto)"
    )
    models.add_argument(
        "--dtype",
        type=_non_empty,
        default="auto",
        metavar="X",
        help="target dtype: auto, float32, bfloat16, float16, int8, int4 (--weights names the same forms)",
    )
    models.add_argument(
        "--weights",
        type=_keyword(*WEIGHTS),
        default=None,
        metavar="FORM",
        help="the target's weights form: auto (the fastest form that is exact on this CPU, measured at load; "
        "the default unless --dtype names one), int4 or int8 (weight-only, the rest in bf16), bf16, fp32",
    )
    models.add_argument(
        "--draft-weights",
        type=_keyword(*WEIGHTS, "same"),
        default=None,
        metavar="FORM",
        help="the draft model's weights form: auto (the cheapest draft step on this CPU: a GGUF's as Q4_K, "
        "another file's measured at load; default), same (the target's), int4 (on the CPU: Q4_K), int8, bf16, fp32",
    )
    models.add_argument(
        "--draft-dtype",
        type=_keyword("auto", "float32", "fp32", "bfloat16", "bf16", "float16", "fp16", "int8", "int4"),
        metavar="X",
        default="auto",
        help="the older name of --draft-weights: auto, float32, bfloat16, float16, int8 or int4",
    )
    models.add_argument(
        "--threads",
        type=_threads,
        default="auto",
        metavar="N",
        help="CPU threads a run computes on, all told (a draft model shares them with the target: it drafts "
        "ahead on one of its own or in turn on all, whichever measured faster): auto (the cores other "
        "processes leave idle, re-chosen between answers) or a number (default: auto)",
    )
    models.add_argument(
        "--no-cpu-kernels",
        dest="cpu_kernels",
        action="store_false",
        help="run stock linears and attention (default: prepacked linears and row-wise attention "
        "on an fp32 or bf16 CPU model, so a verified block gives the same logits as one-at-a-time decoding)",
    )
    models.add_argument(
        "--allow-pickle",
        action="store_true",
        help="allow loading pickle (.bin/.pt) checkpoints, which can run code",
    )

    prompt = common.add_argument_group("prompt")
    prompt.add_argument("--prompt", metavar="TEXT", help="the user message ('-' reads it from stdin)")
    prompt.add_argument("--system", metavar="TEXT", help="a system message before the prompt")

    gen = common.add_argument_group("generation")
    gen.add_argument("--max-new-tokens", type=_bounded(int, 1), default=256, metavar="N")
    gen.add_argument(
        "--k",
        type=_bounded(int, 1, 64),
        default=5,
        help="draft length: with --auto-k the most drafts a step may verify, else every step's (default: 5)",
    )
    gen.add_argument(
        "--auto-k",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="choose each step's k (0 included) from measured pass costs and acceptance (default: on); "
        "--no-auto-k drafts k every step",
    )
    gen.add_argument(
        "--adaptive",
        action="store_true",
        help="adapt k: grow after a fully accepted draft, shrink after a rejection",
    )
    gen.add_argument(
        "--confidence-threshold",
        type=_bounded(float, 0.0, 1.0, open_high=True),
        default=0.0,
        metavar="F",
        help="the draft model stops drafting below this probability (default: 0, off)",
    )
    gen.add_argument(
        "--temperature",
        type=_bounded(float, 0.0, MAX_TEMPERATURE),
        default=0.0,
        metavar="T",
        help=f"0 (default) is greedy; at most {MAX_TEMPERATURE:g} (past it any model writes word salad)",
    )
    gen.add_argument("--top-p", type=_bounded(float, 0.0, 1.0, open_low=True), default=1.0, metavar="P")
    gen.add_argument("--top-k", type=_bounded(int, 0), default=0, metavar="K", help="0 (default) is off")
    gen.add_argument(
        "--seed", type=_bounded(int, 0, MAX_SEED), default=0, metavar="S", help=f"0 to {MAX_SEED} (default: 0)"
    )
    gen.add_argument(
        "--sampling",
        type=_keyword("standard", "seed-invariant"),
        metavar="{standard,seed-invariant}",
        default="standard",
        help="seed-invariant: same seed, same text with and without speculation",
    )
    gen.add_argument(
        "--repetition-penalty",
        type=_bounded(float, MIN_REPETITION_PENALTY, MAX_REPETITION_PENALTY),
        default=1.0,
        metavar="F",
        help="> 1 discourages tokens already in the conversation, for both models alike; 0.1 to 10 "
        "(default: 1, off)",
    )
    gen.add_argument(
        "--stop",
        type=_non_empty,
        action="append",
        default=[],
        metavar="STR",
        help="stop when the answer contains STR (repeatable)",
    )
    common.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    common.add_argument("--version", action="version", version=VERSION)
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _common_options()
    parser = _Parser(
        prog="python -m app",
        description="SpecChat: speculative decoding you can see. Without a command it opens the desktop app.",
    )
    parser.add_argument("--version", action="version", version=VERSION)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)
    generate = commands.add_parser(
        "generate",
        parents=[common],
        help="answer one prompt",
        description="Answer one prompt; draft tokens are marked on a terminal.",
    )
    generate.add_argument("--no-spec", action="store_true", help="no drafter: the target alone (baseline)")
    _server_options(generate, plain=False)
    compare = commands.add_parser(
        "compare",
        parents=[common],
        help="answer with and without speculation and diff them",
        description="Answer the prompt with and without speculation, then diff the answers. With --server: "
        "a speculative server against a plain one (--plain-server, --plain-model), fairly.",
    )
    _server_options(compare, plain=True)
    bench = commands.add_parser(
        "bench",
        parents=[common],
        help="time ours and Hugging Face generate() on a set of prompts",
        description="Time our baseline and speculative runs and Hugging Face generate() (plain and assisted) "
        "on the same prompts, interleaved so a noisy machine affects all alike.",
    )
    bench.add_argument(
        "--prompts-file",
        type=Path,
        metavar="F",
        help="one prompt per line, the two characters \\n standing for a newline "
        f"(default: {DEFAULT_PROMPTS_FILE.name}; --prompt runs one prompt instead)",
    )
    bench.add_argument(
        "--repeat", type=_bounded(int, 1), default=1, metavar="N", help="runs per prompt (default: 1)"
    )
    bench.add_argument(
        "--peer",
        type=Path,
        metavar="DIR",
        help="also run llama.cpp (llama-bench, llama-speculative-simple in DIR) on the same GGUF files, "
        "interleaved with ours, and print decode tokens/s side by side (--repeat rounds, one prompt)",
    )
    bench.add_argument(
        "--scenario",
        choices=("prompts", "repeat", "edits"),
        default="prompts",
        help="prompts: each prompt once, ours vs Hugging Face (default); repeat: each prompt, then again in a "
        "new conversation; edits: a function written then edited three times (or one turn per line of "
        "--prompts-file). repeat and edits compare "
        "the target alone, prompt lookup and the suffix index, greedy",
    )
    sweep = commands.add_parser(
        "sweep",
        parents=[common],
        help="answer one prompt with several drafters and draft lengths",
        description="The drafter experiment: answer the prompt without speculation, then with each "
        "drafter at each k, from fresh caches; report speed-up, acceptance and whether the answer "
        "is the same as without speculation.",
    )
    sweep.add_argument(
        "--drafters",
        type=_drafter_list,
        default=None,
        metavar="LIST",
        help="comma-separated: none, lookup, suffix, model (the --draft model alone), model+lookup (it and "
        "lookup together, the default drafter with a draft model), or one draft model source "
        "(default: none,lookup plus --draft when given)",
    )
    sweep.add_argument(
        "--k-values",
        type=_k_list,
        default=None,
        metavar="LIST",
        help="comma-separated draft lengths, 'auto' for the engine's choice (default: 2,4,8)",
    )
    return parser


def _server_options(command: argparse.ArgumentParser, plain: bool) -> None:
    """Run on an inference server instead of this computer (app.remote)."""
    server = command.add_argument_group("server (instead of a model on this computer)")
    server.add_argument(
        "--server", type=_non_empty, metavar="URL",
        help="an OpenAI-compatible server (llama.cpp's llama-server, vLLM): http:// or https:// only"
        + ("; the speculative endpoint" if plain else ""),
    )  # fmt: skip
    server.add_argument("--model", type=_non_empty, metavar="NAME", help="the model there (default: its only one)")
    server.add_argument(
        "--api-key-env", type=_non_empty, metavar="VAR",
        help="the environment variable holding the server's API key (never stored nor logged)",
    )  # fmt: skip
    server.add_argument(
        "--timeout", type=_bounded(float, 0.0, open_low=True), default=120.0, metavar="S",
        help="seconds the server may stay silent before the request fails (default: 120)",
    )  # fmt: skip
    if not plain:
        return
    server.add_argument(
        "--plain-server", type=_non_empty, metavar="URL",
        help="the endpoint without speculation (default: --server, with --plain-model)",
    )  # fmt: skip
    server.add_argument("--plain-model", type=_non_empty, metavar="NAME", help="the model on the plain endpoint")
    server.add_argument(
        "--plain-api-key-env", type=_non_empty, metavar="VAR", help="the plain endpoint's key (default: --api-key-env)"
    )
    server.add_argument(
        "--rounds", type=_bounded(int, 1), default=1, metavar="N",
        help="times to run the order speculative, plain, plain, speculative (default: 1)",
    )  # fmt: skip


def _drafter_list(text: str) -> list[str]:
    from app.engine.analysis.sweep import NONE
    from app.engine.config import DRAFT_AND_LOOKUP, DRAFT_MODEL, LOOKUP, SUFFIX

    keywords = (NONE, LOOKUP, SUFFIX, DRAFT_MODEL, DRAFT_AND_LOOKUP)
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list such as none,lookup")
    return [item.lower() if item.lower() in keywords else item for item in items]


def _k_list(text: str) -> list[int | None]:
    parse_k = _bounded(int, 1, 64)
    values: list[int | None] = []
    for item in (part.strip() for part in text.split(",")):
        if item:
            values.append(None if item.lower() == "auto" else parse_k(item))
    if not values:
        raise argparse.ArgumentTypeError("expected a comma-separated list such as 1,2,4,auto")
    return values


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    args = build_parser().parse_args(argv)
    if sum((args.draft is not None, args.lookup, args.suffix)) > 1:
        raise UsageError("give one of --draft, --lookup and --suffix")
    if getattr(args, "server", None) is None and any(
        getattr(args, name, None) is not None for name in ("model", "plain_server", "plain_model")
    ):
        raise UsageError("--model, --plain-server and --plain-model go with --server URL")
    if getattr(args, "server", None) is not None and getattr(args, "no_spec", False):
        raise UsageError("a server decides itself whether it drafts: leave out --no-spec, or name a plain server")
    return args



def generation_config(args: argparse.Namespace, *, speculative: bool = True) -> GenerationConfig:
    """Raises ``InvalidSettingError`` (a ``SpecChatError``) for settings argparse let through."""
    defaults = GenerationConfig()
    return GenerationConfig(
        max_new_tokens=args.max_new_tokens,
        speculative=speculative,
        k=args.k,
        auto_k=args.auto_k,
        adaptive_k=args.adaptive,
        k_max=max(defaults.k_max, args.k),
        confidence_threshold=args.confidence_threshold,
        temperature=args.temperature,
        top_k=args.top_k,
        top_p=args.top_p,
        seed=args.seed,
        sampling=args.sampling,
        stop_strings=tuple(_utf8_text(stop, "--stop") for stop in args.stop),
        repetition_penalty=args.repetition_penalty,
    )
