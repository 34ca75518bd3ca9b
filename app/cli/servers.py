"""``generate --server`` and ``compare --server … --plain-server …``: the same commands against
inference servers (``app.remote``). A server's text is printed as text: control characters
(a terminal's escape sequences among them) are shown as ``\\x1b``-style escapes, never run.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import TYPE_CHECKING, Any, TextIO

from app.cli.inputs import UsageError, conversation, read_prompt
from app.cli.output import DIM, GREEN, RESET, _print_json, _snippet, _use_colour, stats_line
from app.cli.parser import generation_config
from app.engine.events import StepEvent

if TYPE_CHECKING:
    from app.remote.comparison import ServerComparisonReport
    from app.remote.session import ServerSession
    from app.remote.steps import ServerFigures

YELLOW = "\033[33m"
ARM_NAMES = {"speculative": "speculative", "baseline": "plain"}
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 and C1 controls but \t and \n


def printable(text: str) -> str:
    """A server's text as it may reach a terminal: control characters escaped."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


class ServerTokenPrinter:
    """Tokens as they arrive; accepted drafts green, tokens of unknown source yellow."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.colour = _use_colour(out)
        self.unknown = False

    def __call__(self, step: StepEvent) -> None:
        for token in step.tokens:
            text = printable(token.text)
            self.unknown = self.unknown or token.source == "unknown"
            colour = {"draft": GREEN, "unknown": YELLOW}.get(token.source) if self.colour and text else None
            self.out.write(f"{colour}{text}{RESET}" if colour else text)
        self.out.flush()


def connect(args: argparse.Namespace, plain: bool = False) -> ServerSession:
    from app.remote.session import ServerSession

    url = (args.plain_server or args.server) if plain else args.server
    model = args.plain_model if plain else args.model
    key_env = (args.plain_api_key_env or args.api_key_env) if plain else args.api_key_env
    return ServerSession.connect(url, model, api_key_env=key_env, read_timeout_s=args.timeout)


def run_generate(args: argparse.Namespace, out: TextIO) -> int:
    from app.engine.analysis.explanation import explain

    config = generation_config(args, speculative=True)
    messages = conversation(read_prompt(args), args.system)
    session = connect(args)
    try:
        if args.json:
            result = session.generate(messages, config)
            figures = session.last_figures
            _print_json(
                {
                    **result.to_dict(),
                    "server": session.info.to_dict(),
                    "server_figures": None if figures is None else figures.to_dict(),
                    "explanation": explain(result).to_dict(),
                },
                out,
            )
            return 0
        printer = ServerTokenPrinter(out)
        result = session.generate(messages, config, on_step=printer)
    finally:
        session.close()
    out.write("\n")
    if printer.colour and (result.stats.accepted or printer.unknown):
        out.write(f"{DIM}(green: drafts the server accepted; yellow: the server did not say){RESET}\n")
    out.write(stats_line(result.stats, result.drafter, result.stop_reason) + "\n")
    out.write(f"made by {printable(result.made_by.describe() if result.made_by else session.server_name)}\n")
    if session.last_figures is not None:
        out.write(figures_line(session.last_figures) + "\n")
    return 0


def figures_line(f: ServerFigures) -> str:
    """What the server itself said about one answer."""
    parts = [f"server: {f.server}"]
    if f.predicted_tokens is not None and f.predicted_ms is not None:
        speed = f.decode_tokens_per_s
        parts.append(f"{f.predicted_tokens} tokens in {f.predicted_ms:.0f} ms on its clock"
                     + (f" ({speed:.1f} tok/s)" if speed else ""))
    if f.drafted is not None:
        parts.append(f"drafts accepted {f.accepted}/{f.drafted}" + (f" ({f.acceptance:.0%})" if f.drafted else ""))
    else:
        parts.append("no draft figures")
    return " · ".join(parts)


def run_compare(args: argparse.Namespace, out: TextIO) -> int:
    from app.remote.comparison import run_server_comparison

    if not (args.plain_server or args.plain_model):
        raise UsageError("compare --server needs the plain endpoint: --plain-server URL and/or --plain-model NAME")
    config = generation_config(args, speculative=True)
    messages = conversation(read_prompt(args), args.system)
    speculative = connect(args)
    try:
        plain = connect(args, plain=True)
        try:
            report = run_server_comparison(speculative, plain, messages, config, repeats=args.rounds)
        finally:
            plain.close()
    finally:
        speculative.close()
    if args.json:
        _print_json(report.to_dict(), out)
    else:
        print_report(report, out)
    return 0


def print_report(report: ServerComparisonReport, out: TextIO) -> None:
    from app.engine.analysis.compare import headline, verdict_reasons
    from app.engine.analysis.explanation import decode_tokens_per_s, explain

    spec, base, comparison = report.speculative, report.baseline, report.comparison
    for name, run in (("speculative", spec), ("plain", base)):
        out.write(f"--- {name}: {printable(run.made_by.describe() if run.made_by else '?')}\n")
        out.write(printable(run.text) + "\n")
    out.write("\n")
    out.write(f"verdict: {comparison.verdict} · {headline(comparison).render()}\n")
    out.writelines(f"  {phrase.render()}\n" for phrase in verdict_reasons(comparison))
    first = comparison.first_difference
    if first is not None:
        ids = [r.tokens[first.token_index].id if first.token_index < len(r.tokens) else None for r in (spec, base)]
        out.write(
            f"  first differing token: #{first.token_index} (ids {ids[0]} vs {ids[1]}), "
            f"character {first.char_index}\n"
        )
        out.write(f"  speculative from there: {printable(_snippet(spec.text, first.char_index))}\n")
        out.write(f"  plain from there:       {printable(_snippet(base.text, first.char_index))}\n")
        out.write(f"  character diff: {_diff_summary(report)}\n")
    out.write(
        f"decode speed-up {comparison.decode_speedup:.2f}x (client's clock, prefill left out) · "
        f"whole-run {comparison.whole_run_speedup:.2f}x\n"
    )
    for name, run, figures in (("speculative", spec, report.figures[0]), ("plain", base, report.figures[1])):
        client = decode_tokens_per_s(run)
        own = figures.decode_tokens_per_s
        out.write(
            f"{name:<12} first token {run.stats.time_to_first_token_s * 1000:.0f} ms · decode "
            f"{_speed(client)} (client) · {_speed(own)} (server's predicted_ms) · "
            f"{stats_line(run.stats, run.drafter)}\n"
        )
        out.write(f"{'':<12} {figures_line(figures)}\n")
    out.write(f"why: {explain(spec, base).summary}\n")
    positions = explain(spec).acceptance_by_position
    if positions:
        shares = ", ".join(f"{p.position}: {p.accepted}/{p.reached}" for p in positions if p.reached)
        out.write(f"acceptance by draft position (accepted/judged): {shares}\n")
    out.write("rounds (A B B A):\n")
    for r in report.rounds:
        d = r.to_dict()
        out.write(
            f"  {ARM_NAMES[r.arm]:<12} first token {d['time_to_first_token_s'] * 1000:6.0f} ms · decode "
            f"{_speed(d['decode_tokens_per_s'])} (client) · {_speed(d['server_decode_tokens_per_s'])} (server)"
            f" · {figures_line(r.figures)}\n"
        )
    for check in report.checks:
        out.write(f"note: {printable(check.render())}\n")
    sys.stdout.flush()


def _speed(value: Any) -> str:
    return "—" if value is None else f"{value:.1f} tok/s"


def _diff_summary(report: ServerComparisonReport, shown: int = 5) -> str:
    """The character diff (speculative → plain): the changes, the first few spelt out."""
    ops = [op for op in report.comparison.diff if op.op != "equal"]
    a, b = report.speculative.text, report.baseline.text
    parts = [
        f"{op.op} at {op.a_start}: {printable(repr(a[op.a_start:op.a_end][:40]))} → "
        f"{printable(repr(b[op.b_start:op.b_end][:40]))}"
        for op in ops[:shown]
    ]
    more = f"; {len(ops) - shown} more" if len(ops) > shown else ""
    return f"{len(ops)} change(s): " + "; ".join(parts) + more
