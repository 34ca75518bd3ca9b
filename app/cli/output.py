"""What the CLI prints: progress on a terminal, JSON, tokens in colour, one-line stats."""

from __future__ import annotations

import json
import math
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from app.engine.events import RunStats, StepEvent


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
    """Strict JSON: a figure that is not finite (NaN, ±inf) is written as null, never as the
    ``NaN`` / ``Infinity`` most parsers refuse; ``allow_nan=False`` makes a missed one an error."""
    json.dump(_finite(data), out, ensure_ascii=False, indent=2, default=str, allow_nan=False)
    out.write("\n")


def _finite(value: Any) -> Any:
    """``value`` with every non-finite float replaced by None, through dicts, lists and tuples."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


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


def _bench_progress(stream: TextIO) -> Callable[[int, int], None]:
    def show(done: int, total: int) -> None:
        if stream.isatty():
            stream.write(f"\r\033[Kbench: {done}/{total} rounds")
            stream.flush()

    return show


def fail(message: str, code: int) -> int:
    """One line on stderr for a failure; returns the exit code to end with."""
    _clear_progress(sys.stderr)
    first_line = " ".join(message.split()) or "unknown error"
    sys.stderr.write(f"specchat: error: {first_line}\n")
    return code
