"""The commands: each reads its inputs, runs the engine (or a bench) and presents the result."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TextIO

from app.cli.inputs import DEFAULT_PROMPTS_FILE, UsageError, conversation, read_prompt, read_prompts_file
from app.cli.output import (
    DIM,
    RESET,
    TokenPrinter,
    _bench_progress,
    _clear_progress,
    _print_json,
    _progress_printer,
    _snippet,
    fail,
    stats_line,
)
from app.cli.parser import generation_config
from app.engine.config import GenerationConfig

if TYPE_CHECKING:
    from app.engine import Engine


def load_engine(args: argparse.Namespace, *, drafter: bool, draft: str | None = None) -> Engine:
    """The engine the options ask for; ``draft``: this drafter instead of the one they name."""
    from app.engine import LOOKUP, Engine
    from app.engine.config import SUFFIX, LoadOptions

    if draft is None and drafter:
        draft = args.draft or (SUFFIX if args.suffix else LOOKUP)
    options = LoadOptions(
        device=args.device,
        dtype=args.dtype,
        **weights_options(args),
        allow_pickle=args.allow_pickle,
        cpu_kernels=args.cpu_kernels,
        threads=args.threads,
        progress=_progress_printer(sys.stderr),
    )
    engine = Engine.load(args.target, draft, options)
    for loaded in (engine.target, engine.draft):  # e.g. bf16 computed in fp32 on a CPU without bf16
        if loaded is not None and loaded.note:
            _clear_progress(sys.stderr)
            sys.stderr.write(f"specchat: note: {loaded.name}: {loaded.note}\n")
    return engine


def weights_options(args: argparse.Namespace) -> dict[str, str | None]:
    """``--weights`` / ``--draft-weights`` as ``LoadOptions`` takes them: the target's form is
    auto unless ``--weights`` or a ``--dtype`` names one; the draft's defaults to
    ``--draft-dtype`` (auto), ``same`` follows the target."""
    weights = args.weights or ("auto" if str(args.dtype).strip().lower() == "auto" else None)
    draft = args.draft_weights if args.draft_weights is not None else args.draft_dtype
    return {"weights": weights, "draft_weights": "same as target" if draft == "same" else draft}


def fit_to_engine(engine: Engine, config: GenerationConfig) -> GenerationConfig:
    """``config`` with no more new tokens than the loaded target holds, and a note saying so."""
    from app.engine.config import fit_to_context

    fitted = fit_to_context(config, int(engine.context_length))
    if fitted is not config:
        _clear_progress(sys.stderr)
        sys.stderr.write(
            f"specchat: note: --max-new-tokens {config.max_new_tokens} capped to {fitted.max_new_tokens}, "
            f"the context length of {engine.target.name}\n"
        )
    return fitted


def run_generate(args: argparse.Namespace, out: TextIO) -> int:
    if args.server is not None:
        from app.cli import servers

        return servers.run_generate(args, out)
    speculative = not args.no_spec
    config = generation_config(args, speculative=speculative)
    messages = conversation(read_prompt(args), args.system)
    engine = load_engine(args, drafter=speculative)
    _clear_progress(sys.stderr)
    config = fit_to_engine(engine, config)
    engine.warm_up()  # as the app's worker does: one-off kernel set-up, the chooser's first points
    from app.engine.analysis.explanation import drafting_notes, explain, no_drafts_note, sat_out_note

    if args.json:
        result = engine.generate(messages, config)
        explained = {
            "explanation": explain(result).to_dict(),
            "no_drafts_note": no_drafts_note(result),
            "sat_out_note": sat_out_note(result),
        }
        _print_json({**result.to_dict(), **explained}, out)
        return 0
    printer = TokenPrinter(out)
    result = engine.generate(messages, config, on_step=printer)
    out.write("\n")
    if printer.colour and result.stats.accepted:
        out.write(f"{DIM}(green: draft tokens the target accepted){RESET}\n")
    out.write(weights_line(engine) + "\n")
    out.write(stats_line(result.stats, result.drafter, result.stop_reason) + "\n")
    for note in drafting_notes(result):
        out.write(note + "\n")
    return 0


def weights_line(engine: Engine) -> str:
    """ "weights: int4 (quantized by SpecChat) from GGUF · 0.15 GB (auto: …); draft: int8 …" """
    parts = [f"weights: {engine.target.form.describe() if engine.target.form else engine.target.dtype}"]
    if engine.draft is not None and engine.draft_form is not None:
        parts.append(f"draft: {engine.draft_form.describe()}")
    return "; ".join(parts)


def run_compare(args: argparse.Namespace, out: TextIO) -> int:
    """Both arms through the engine's comparison service; this only presents its report."""
    if args.server is not None:
        from app.cli import servers

        return servers.run_compare(args, out)
    from app.engine.analysis.compare import headline, verdict_reasons
    from app.engine.analysis.comparison import run_comparison

    config = generation_config(args, speculative=True)
    messages = conversation(read_prompt(args), args.system)
    engine = load_engine(args, drafter=True)
    _clear_progress(sys.stderr)
    config = fit_to_engine(engine, config)
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
    from app.bench import runs as bench

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
    config = fit_to_engine(engine, config)
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
    from app.bench import peer
    from app.engine.models.catalog import find_bundled_model
    from app.engine.runners.threads import choose_threads

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
        return fail(str(error), 1)
    _clear_progress(sys.stderr)
    return _print_report(args, report, peer.format_report, out)


def _run_bench_scenario(args: argparse.Namespace, config: GenerationConfig, out: TextIO) -> int:
    from app.bench import sessions as bench_sessions

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


# --- sweep -----------------------------------------------------------------------------------


def sweep_drafters(args: argparse.Namespace) -> tuple[list[str], str | None]:
    """The drafter choices and the draft model source to load (``model`` stands for it)."""
    from app.engine.analysis.sweep import NONE
    from app.engine.config import DRAFT_AND_LOOKUP, DRAFT_MODEL, LOOKUP, SUFFIX

    items = args.drafters or [NONE, LOOKUP] + ([args.draft] if args.draft else [])
    sources = [item for item in items if item not in (NONE, LOOKUP, SUFFIX, DRAFT_MODEL, DRAFT_AND_LOOKUP)]
    if len(set(sources)) > 1:
        raise UsageError("a sweep can load one draft model at a time: give one model source in --drafters")
    source = sources[0] if sources else args.draft
    if (DRAFT_MODEL in items or DRAFT_AND_LOOKUP in items) and source is None:
        raise UsageError("'model' or 'model+lookup' in --drafters needs --draft SRC")
    choices = [DRAFT_MODEL if item in sources else item for item in items]
    return choices, source


def run_sweep(args: argparse.Namespace, out: TextIO) -> int:
    from app.engine import LOOKUP
    from app.engine.analysis.sweep import plan_arms
    from app.engine.analysis.sweep import run_sweep as sweep

    config = generation_config(args, speculative=True)
    messages = conversation(read_prompt(args), args.system)
    choices, source = sweep_drafters(args)
    engine = load_engine(args, drafter=True, draft=source or LOOKUP)
    arms = plan_arms(choices, args.k_values or [2, 4, 8], engine.drafter_choices)
    _clear_progress(sys.stderr)
    config = fit_to_engine(engine, config)
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



RUNNERS: dict[str, Callable[[argparse.Namespace, TextIO], int]] = {
    "generate": run_generate,
    "compare": run_compare,
    "bench": run_bench,
    "sweep": run_sweep,
}
