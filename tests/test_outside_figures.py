"""Figures from outside are checked before they are shown (issue 20, section 5): what llama.cpp's
tools print is read as a rate only when it is one (finite, not negative, no more drafts accepted
than drafted), else the run stops with a message naming the tool; and ``--json`` never writes
``NaN`` or ``Infinity``, which most JSON parsers refuse."""

from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pytest

from app.bench import peer
from app.cli.output import _print_json

FILES = peer.PeerFiles(Path("t.gguf"), None)
TOOLS = peer.PeerTools(Path(peer.BENCH_TOOL), Path(peer.SPEC_TOOL))


def _bench_printing(avg_ts: str) -> peer.Runner:
    return lambda _command: f'[{{"n_gen": 8, "avg_ts": {avg_ts}}}]'


def _spec_printing(decoded: str, drafted: int = 10, accepted: int = 6) -> peer.Runner:
    return lambda _command: f"{decoded}\nn_drafted = {drafted}\nn_accept  = {accepted}\n"


@pytest.mark.parametrize("avg_ts", ["NaN", "Infinity", "-Infinity", "1e999", "-5", '"fast"'])
def test_a_plain_rate_that_is_not_a_finite_positive_number_is_refused_naming_the_tool(avg_ts):
    with pytest.raises(peer.PeerError, match=peer.BENCH_TOOL):
        peer.llama_plain(TOOLS, FILES, 8, 1, _bench_printing(avg_ts))


@pytest.mark.parametrize(
    "decoded",
    [
        "decoded 8 tokens in 0.000 seconds",  # an infinite rate
        "decoded 8 tokens in 1.2.3 seconds",  # not a number at all
        "decoded 8 tokens in 1e999 seconds",
    ],
)
def test_a_speculative_timing_that_is_not_a_rate_is_refused_naming_the_tool(decoded):
    with pytest.raises(peer.PeerError, match=peer.SPEC_TOOL):
        peer.llama_speculative(TOOLS, FILES, "hi", 8, 1, 4, _spec_printing(decoded))


def test_more_drafts_accepted_than_drafted_is_refused_naming_the_tool():
    runner = _spec_printing("decoded 8 tokens in 0.250 seconds", drafted=5, accepted=9)
    with pytest.raises(peer.PeerError, match=rf"{peer.SPEC_TOOL}.*accepted 9 drafts of 5"):
        peer.llama_speculative(TOOLS, FILES, "hi", 8, 1, 4, runner)


def test_a_sound_speculative_log_is_still_read():
    run = peer.llama_speculative(TOOLS, FILES, "hi", 8, 1, 4, _spec_printing("decoded 8 tokens in 0.250 seconds"))
    assert run.decode_tps == pytest.approx(32.0) and (run.drafted, run.accepted) == (10, 6)


def test_json_output_never_holds_nan_or_infinity():
    out = io.StringIO()
    _print_json({"a": math.nan, "b": [math.inf, -math.inf, 1.5], "c": {"d": math.nan}}, out)
    text = out.getvalue()
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text) == {"a": None, "b": [None, None, 1.5], "c": {"d": None}}
