"""Headless front over the engine: ``generate``, ``compare`` and ``bench``.

    python -m app generate --prompt "Hi"                 # prompt lookup drafter on the default model
    python -m app compare --draft SRC --prompt "Hi"      # with and without speculation, diffed
    python -m app bench --prompts-file F --json          # ours vs Hugging Face generate(), interleaved
    python -m app sweep --drafters none,lookup,SRC --k-values 1,2,4 --prompt "Hi"   # drafter experiment
    python -m app bench --scenario edits                 # suffix index vs prompt lookup, multi-turn

Every failure the engine can describe (``SpecChatError``) and every bad option ends as one line
on stderr and exit code 2; Ctrl-C ends quietly with 130. torch is imported only once a command
runs, so ``--help`` is fast.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from app import __version__
from app.engine.config import MAX_REPETITION_PENALTY, MAX_SEED, MIN_REPETITION_PENALTY, GenerationConfig
from app.engine.errors import SpecChatError

if TYPE_CHECKING:
    from app.engine import Engine
    from app.engine.events import RunStats, StepEvent

COMMANDS = ("generate", "compare", "bench", "sweep")
DEFAULT_PROMPTS_FILE = Path(__file__).resolve().parent.parent / "resources" / "bench_prompts.txt"
EXIT_USAGE = 2
EXIT_FAILURE = 1
EXIT_INTERRUPTED = 130

Conversation = list[dict[str, str]]


class UsageError(Exception):
    """A bad command line: reported as one line, exit code 2."""


# --- argument parsing -------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad option is one line on stderr (raised, so ``main`` returns a code)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see {self.prog} --help)")


def _threads(text: str) -> str | int:
    """An argparse ``type`` for ``--threads``: ``auto`` or a whole number ≥ 1."""
    if text.strip().lower() == "auto":
        return "auto"
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected auto or a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be auto or at least 1, got {text}")
    return value


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


SOURCE_KEYWORDS = ("default", "lookup")  # model sources that are words, not paths or hub ids


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
        help="target dtype: auto, float32, bfloat16, float16",
    )
    models.add_argument(
        "--draft-dtype",
        type=_non_empty,
        metavar="X",
        default="auto",
        help="draft dtype: auto (on the CPU, the cheaper of the target's dtype and int8, measured at "
        "load; default), float32, bfloat16, float16 or int8",
    )
    models.add_argument(
        "--threads",
        type=_threads,
        default="auto",
        metavar="N",
        help="CPU threads for torch: auto (the cores other processes leave idle, re-chosen between answers) "
        "or a number (default: auto)",
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
        "--temperature", type=_bounded(float, 0.0), default=0.0, metavar="T", help="0 (default) is greedy"
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
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _common_options()
    parser = _Parser(
        prog="python -m app",
        description="SpecChat: speculative decoding you can see. Without a command it opens the desktop app.",
    )
    parser.add_argument("--version", action="version", version=f"SpecChat {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)
    generate = commands.add_parser(
        "generate",
        parents=[common],
        help="answer one prompt",
        description="Answer one prompt; draft tokens are marked on a terminal.",
    )
    generate.add_argument("--no-spec", action="store_true", help="no drafter: the target alone (baseline)")
    commands.add_parser(
        "compare",
        parents=[common],
        help="answer with and without speculation and diff them",
        description="Answer the prompt with and without speculation, then diff the answers.",
    )
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
        "drafter at each k, from empty caches; report speed-up, acceptance and whether the answer "
        "is the same as without speculation.",
    )
    sweep.add_argument(
        "--drafters",
        type=_drafter_list,
        default=None,
        metavar="LIST",
        help="comma-separated: none, lookup, suffix, and at most one draft model source "
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


def _drafter_list(text: str) -> list[str]:
    from app.engine.analysis.sweep import NONE
    from app.engine.config import DRAFT_MODEL, LOOKUP

    keywords = (NONE, LOOKUP, DRAFT_MODEL)
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
    return args


# --- from options to engine inputs ----------------------------------------------------------


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


MAX_INPUT_BYTES = 8 * 2**20  # a prompt or prompts file larger than this is refused, not read whole


def _utf8_text(data: str | bytes, what: str) -> str:
    """``data`` as text, or a ``UsageError`` naming the first byte that is not UTF-8. Text
    from the command line or stdin carries such bytes as lone surrogates (Python's
    ``surrogateescape``); no tokenizer can take those, so they are refused, not guessed at."""
    if isinstance(data, str):
        try:
            data.encode("utf-8")
            return data
        except UnicodeEncodeError as error:
            code = ord(data[error.start])
            byte = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"U+{code:04X}"
            raise UsageError(f"{what} is not valid UTF-8 text ({byte} at character {error.start})") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UsageError(
            f"{what} is not valid UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start})"
        ) from None


def _read_capped(stream: Any, what: str) -> bytes:
    """At most ``MAX_INPUT_BYTES`` from a binary stream: an endless one (``/dev/zero``) is
    refused after that many bytes instead of filling the memory."""
    data: bytes = stream.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise UsageError(f"{what} is larger than {MAX_INPUT_BYTES // 2**20} MiB")
    return data


def conversation(prompt: str, system: str | None) -> Conversation:
    if not prompt.strip():
        raise UsageError("the prompt is empty")
    prompt = _utf8_text(prompt, "the prompt")
    messages = [{"role": "system", "content": _utf8_text(system, "--system")}] if system else []
    return messages + [{"role": "user", "content": prompt}]


def read_prompt(args: argparse.Namespace) -> str:
    if args.prompt is None:
        raise UsageError("--prompt is required")
    if args.prompt != "-":
        return _utf8_text(args.prompt, "--prompt")
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # a text stream without bytes underneath (tests, embedding)
        text = sys.stdin.read(MAX_INPUT_BYTES + 1)
        if len(text) > MAX_INPUT_BYTES:
            raise UsageError(f"the prompt on stdin is larger than {MAX_INPUT_BYTES // 2**20} MiB")
        return _utf8_text(text, "the prompt on stdin")
    return _utf8_text(_read_capped(buffer, "the prompt on stdin"), "the prompt on stdin")


def read_prompts_file(path: Path) -> list[str]:
    """One prompt per non-blank line; the two characters ``\\n`` stand for a newline."""
    try:
        with path.open("rb") as file:
            data = _read_capped(file, f"the prompts file {path}")
    except FileNotFoundError:
        raise UsageError(f"no prompts file at {path}") from None
    except OSError as error:
        raise UsageError(f"cannot read the prompts file {path}: {error.strerror or error}") from None
    lines = _utf8_text(data, f"the prompts file {path}").splitlines()
    prompts = [line.replace("\\n", "\n") for line in lines if line.strip()]
    if not prompts:
        raise UsageError(f"the prompts file {path} has no prompts")
    return prompts


def load_engine(args: argparse.Namespace, *, drafter: bool) -> Engine:
    from app.engine import LOOKUP, Engine
    from app.engine.config import SUFFIX

    draft = (args.draft or (SUFFIX if args.suffix else LOOKUP)) if drafter else None
    engine = Engine.load(
        args.target,
        draft,
        device=args.device,
        dtype=args.dtype,
        draft_dtype=args.draft_dtype,
        allow_pickle=args.allow_pickle,
        cpu_kernels=args.cpu_kernels,
        threads=args.threads,
        progress=_progress_printer(sys.stderr),
    )
    for loaded in (engine.target, engine.draft):  # e.g. bf16 computed in fp32 on a CPU without bf16
        if loaded is not None and loaded.note:
            _clear_progress(sys.stderr)
            sys.stderr.write(f"specchat: note: {loaded.name}: {loaded.note}\n")
    return engine


@contextmanager
def _quiet_libraries() -> Iterator[None]:
    """No tqdm bars or library warnings on stderr while a command runs: it carries our
    progress and error lines only. Restored after, for callers that run ``main`` in-process."""
    if not sys.stderr.isatty():
        os.environ.setdefault("TQDM_DISABLE", "1")  # plain tqdm bars (GGUF conversion); read at import
    from transformers.utils import logging

    bars, verbosity = logging.is_progress_bar_enabled(), logging.get_verbosity()
    logging.disable_progress_bar()
    logging.set_verbosity_error()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", DeprecationWarning)
            yield
    finally:
        logging.set_verbosity(verbosity)
        if bars:
            logging.enable_progress_bar()


def _progress_printer(stream: TextIO) -> Callable[[str, float | None], None] | None:
    """Loading progress on a terminal only: piped stderr stays clean for the one error line."""
    if not stream.isatty():
        return None

    def show(message: str, fraction: float | None) -> None:
        percent = "" if fraction is None else f" {fraction:4.0%}"
        stream.write(f"\r\033[K{message}{percent}")
        stream.flush()

    return show


def _clear_progress(stream: TextIO) -> None:
    if stream.isatty():
        stream.write("\r\033[K")
        stream.flush()


# --- JSON (the engine's own serialisers: RunResult.to_dict, ComparisonReport.to_dict) ---------


def _print_json(data: dict[str, Any], out: TextIO) -> None:
    json.dump(data, out, ensure_ascii=False, indent=2, default=str)
    out.write("\n")


# --- readable output -------------------------------------------------------------------------

GREEN, DIM, RESET = "\033[32m", "\033[2m", "\033[0m"


def _use_colour(stream: TextIO) -> bool:
    return stream.isatty() and "NO_COLOR" not in os.environ


class TokenPrinter:
    """Writes tokens as they arrive; accepted draft tokens in green on a colour terminal."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.colour = _use_colour(out)

    def __call__(self, step: StepEvent) -> None:
        for token in step.tokens:
            if self.colour and token.source == "draft" and token.text:
                self.out.write(f"{GREEN}{token.text}{RESET}")
            else:
                self.out.write(token.text)
        self.out.flush()


def stats_line(stats: RunStats, drafter: str, stop_reason: str | None = None) -> str:
    parts = [
        f"{stats.new_tokens} tokens in {stats.wall_s:.2f} s ({stats.tokens_per_s:.1f} tok/s)",
        f"{stats.target_passes} target passes ({stats.tokens_per_pass:.2f} tokens/pass)",
    ]
    if stats.proposed:
        parts.append(f"drafts accepted {stats.accepted}/{stats.proposed} ({stats.drafts_accepted_share:.0%})")
    parts.append(f"drafter: {drafter}")
    if stop_reason:
        parts.append(f"stop: {stop_reason}")
    return " · ".join(parts)


def _snippet(text: str, start: int, width: int = 60) -> str:
    piece = text[start : start + width]
    return repr(piece + ("…" if len(text) > start + width else ""))


# --- commands --------------------------------------------------------------------------------


def run_generate(args: argparse.Namespace, out: TextIO) -> int:
    speculative = not args.no_spec
    config = generation_config(args, speculative=speculative)
    messages = conversation(read_prompt(args), args.system)
    engine = load_engine(args, drafter=speculative)
    _clear_progress(sys.stderr)
    if args.json:
        from app.engine.analysis.explanation import explain

        result = engine.generate(messages, config)
        _print_json({**result.to_dict(), "explanation": explain(result).to_dict()}, out)
        return 0
    printer = TokenPrinter(out)
    result = engine.generate(messages, config, on_step=printer)
    out.write("\n")
    if printer.colour and result.stats.accepted:
        out.write(f"{DIM}(green: draft tokens the target accepted){RESET}\n")
    out.write(stats_line(result.stats, result.drafter, result.stop_reason) + "\n")
    return 0


def run_compare(args: argparse.Namespace, out: TextIO) -> int:
    """Both arms through the engine's comparison service; this only presents its report."""
    from app.engine.analysis.compare import headline, verdict_reasons
    from app.engine.analysis.comparison import run_comparison

    config = generation_config(args, speculative=True)
    messages = conversation(read_prompt(args), args.system)
    engine = load_engine(args, drafter=True)
    _clear_progress(sys.stderr)
    report = run_comparison(engine, messages, config)
    if args.json:
        _print_json(report.to_dict(), out)
        return 0
    speculative, baseline, comparison = report.speculative, report.baseline, report.comparison
    out.write(speculative.text + "\n\n")
    out.write(f"speculative  {stats_line(speculative.stats, speculative.drafter)}\n")
    out.write(f"baseline     {stats_line(baseline.stats, baseline.drafter)}\n")
    out.write(f"verdict: {comparison.verdict} · {headline(comparison).render()}\n")
    unlike = " (not comparable: see below)" if comparison.outcome == "not_comparable" else ""
    out.write(
        f"decode speed-up {comparison.decode_speedup:.2f}x{unlike} (prefill left out) · "
        f"whole-run speed-up {comparison.whole_run_speedup:.2f}x (prefill included)\n"
    )
    out.writelines(f"  {phrase.render()}\n" for phrase in verdict_reasons(comparison))
    first = comparison.first_difference
    if first is not None:
        out.write(f"  speculative from there: {_snippet(speculative.text, first.char_index)}\n")
        out.write(f"  baseline from there:    {_snippet(baseline.text, first.char_index)}\n")
    return 0


# --- bench -----------------------------------------------------------------------------------


def run_bench(args: argparse.Namespace, out: TextIO) -> int:
    from app import bench

    config = generation_config(args, speculative=True)
    if args.scenario != "prompts":
        return _run_bench_scenario(args, config, out)
    if args.prompt is not None and args.prompts_file is not None:
        raise UsageError("give --prompt or --prompts-file, not both")
    if args.peer is not None:
        return run_peer_bench(args, config, out)
    prompts = _bench_prompts(args)
    conversations = [conversation(p, args.system) for p in prompts]
    engine = load_engine(args, drafter=True)
    _clear_progress(sys.stderr)
    report = bench.run(
        engine, prompts, conversations, config, args.repeat, on_round=_bench_progress(sys.stderr)
    )
    _clear_progress(sys.stderr)
    return _print_report(args, report, bench.format_report, out)


def _print_report(
    args: argparse.Namespace, report: dict[str, Any], as_text: Callable[[dict[str, Any]], str], out: TextIO
) -> int:
    """A bench report as one JSON document (``--json``) or as the text ``as_text`` makes of it."""
    if args.json:
        _print_json(report, out)
    else:
        out.write(as_text(report))
    return 0


def _bench_prompts(args: argparse.Namespace) -> list[str]:
    """``--prompt`` alone, else the prompts file's (the bundled one by default)."""
    if args.prompt is not None:
        return [read_prompt(args)]
    return read_prompts_file(args.prompts_file or DEFAULT_PROMPTS_FILE)


def run_peer_bench(args: argparse.Namespace, config: GenerationConfig, out: TextIO) -> int:
    from app import peer
    from app.engine.models.catalog import find_bundled_model
    from app.engine.runners.cpu_kernels import choose_threads

    try:
        tools = peer.PeerTools.find(args.peer)
        files = peer.PeerFiles.of(args.target, args.draft, find_bundled_model())
    except peer.PeerError as error:
        raise UsageError(str(error)) from None
    prompt = _bench_prompts(args)[0]  # one prompt: the first of the file
    engine = load_engine(args, drafter=True)
    _clear_progress(sys.stderr)
    try:
        report = peer.run(
            engine, tools, files, conversation(prompt, args.system), config, choose_threads(args.threads),
            args.repeat, on_round=_bench_progress(sys.stderr),
        )  # fmt: skip
    except peer.PeerError as error:
        _clear_progress(sys.stderr)
        return _fail(str(error), 1)
    _clear_progress(sys.stderr)
    return _print_report(args, report, peer.format_report, out)


def _run_bench_scenario(args: argparse.Namespace, config: GenerationConfig, out: TextIO) -> int:
    from app import bench_sessions

    if config.temperature > 0:
        raise UsageError(f"the {args.scenario} scenario is greedy: leave --temperature at 0")
    engine = load_engine(args, drafter=True)
    _clear_progress(sys.stderr)
    engine.warm_up()
    if args.scenario == "repeat":
        report = bench_sessions.run_repeat(engine, _bench_prompts(args), config, args.repeat)
    else:  # the turns: one per line of --prompts-file, else the built-in session
        turns = read_prompts_file(args.prompts_file) if args.prompts_file else bench_sessions.EDIT_SESSION
        report = bench_sessions.run_edits(engine, config, args.repeat, tuple(turns))
    return _print_report(args, report, bench_sessions.format_report, out)


def _bench_progress(stream: TextIO) -> Callable[[int, int], None]:
    def show(done: int, total: int) -> None:
        if stream.isatty():
            stream.write(f"\r\033[Kbench: {done}/{total} rounds")
            stream.flush()

    return show


# --- sweep -----------------------------------------------------------------------------------


def sweep_drafters(args: argparse.Namespace) -> tuple[list[str], str | None]:
    """The drafter choices and the draft model source to load (``model`` stands for it)."""
    from app.engine.analysis.sweep import NONE
    from app.engine.config import DRAFT_MODEL, LOOKUP, SUFFIX

    items = args.drafters or [NONE, LOOKUP] + ([args.draft] if args.draft else [])
    sources = [item for item in items if item not in (NONE, LOOKUP, SUFFIX, DRAFT_MODEL)]
    if len(set(sources)) > 1:
        raise UsageError("a sweep can load one draft model at a time: give one model source in --drafters")
    source = sources[0] if sources else args.draft
    if DRAFT_MODEL in items and source is None:
        raise UsageError("'model' in --drafters needs --draft SRC")
    choices = [DRAFT_MODEL if item in sources else item for item in items]
    return choices, source


def run_sweep(args: argparse.Namespace, out: TextIO) -> int:
    from app.engine import LOOKUP, Engine
    from app.engine.analysis.sweep import plan_arms
    from app.engine.analysis.sweep import run_sweep as sweep

    config = generation_config(args, speculative=True)
    messages = conversation(read_prompt(args), args.system)
    choices, source = sweep_drafters(args)
    engine = Engine.load(
        args.target,
        source or LOOKUP,
        device=args.device,
        dtype=args.dtype,
        draft_dtype=args.draft_dtype,
        allow_pickle=args.allow_pickle,
        cpu_kernels=args.cpu_kernels,
        threads=args.threads,
        progress=_progress_printer(sys.stderr),
    )
    arms = plan_arms(choices, args.k_values or [2, 4, 8], engine.drafter_choices)
    _clear_progress(sys.stderr)
    engine.warm_up()
    rows = []
    for row in sweep(engine, messages, config, arms):
        rows.append(row)
        if not args.json:
            out.write(_sweep_line(row) + "\n")
            out.flush()
    if args.json:
        _print_json({"target": engine.target.name, "rows": [row.to_dict() for row in rows]}, out)
    return 0


def _sweep_line(row: Any) -> str:
    from app.engine.analysis.explanation import alpha_of

    stats = row.run.stats
    alpha = alpha_of(row.run)
    same = "same answer" if row.identical else f"differs from token {row.first_difference}"
    return (
        f"{row.arm.label:<28} {stats.tokens_per_s:6.1f} tok/s  decode speed-up {row.decode_speedup:5.2f}x  "
        f"whole-run {row.whole_run_speedup:5.2f}x  "
        f"acceptance α {'—' if alpha is None else format(alpha, '4.0%')}  "
        f"drafts accepted {stats.drafts_accepted_share:4.0%}  {stats.tokens_per_pass:4.2f} tokens/pass  {same}"
    )


# --- entry point -----------------------------------------------------------------------------

_RUNNERS: dict[str, Callable[[argparse.Namespace, TextIO], int]] = {
    "generate": run_generate,
    "compare": run_compare,
    "bench": run_bench,
    "sweep": run_sweep,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code. Never lets a known failure out as a traceback."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parse_args(argv)
        with _quiet_libraries():
            return _RUNNERS[args.command](args, sys.stdout)
    except SystemExit as exit_:  # --help
        return exit_.code if isinstance(exit_.code, int) else 0
    except (UsageError, SpecChatError) as error:
        return _fail(str(error), EXIT_USAGE)
    except KeyboardInterrupt:
        _clear_progress(sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. piped into head
        _silence_stdout()
        return EXIT_FAILURE
    except Exception as error:
        if type(error).__name__ == "OutOfMemoryError":  # torch.OutOfMemoryError, without importing torch
            return _fail(
                "out of memory: try a smaller model, --dtype bfloat16, --device cpu or fewer "
                "--max-new-tokens",
                EXIT_FAILURE,
            )
        raise


def _fail(message: str, code: int) -> int:
    _clear_progress(sys.stderr)
    first_line = " ".join(message.split()) or "unknown error"
    sys.stderr.write(f"specchat: error: {first_line}\n")
    return code


def _silence_stdout() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
