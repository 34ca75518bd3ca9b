"""Replay the k chooser on recorded answers, on a simulated clock: the same decisions every run.

    python tools/chooser_replay.py record [--prompts-file F] [--model M] [--out FILE]
    python tools/chooser_replay.py replay [FILE] [--rounds 3] [--costs FILE2] [--without-ledger] [--json]

Timing an auto-k change on the real model compares two noisy runs: on 2 cores one answer's
tokens per second moves by 5-10 % from run to run, more than most changes to the chooser make.
This takes the noise out, and only the noise:

- ``record`` answers each prompt once, greedy and target-only, with the real model, and keeps
  the answer's token ids; it also times every verification step of a lookup run per block size
  (``verify_s`` + ``draft_s``: the pass, the readout and the drafter, as the chooser measures
  them) and keeps the medians: the cost curve v(n).
- ``replay`` runs the app's own ``Engine.generate`` — its decode loop, chooser, prompt-lookup
  drafter and acceptance rule — against a stand-in target whose greedy token at each position is
  the recorded answer's, and whose every pass advances a simulated clock by v(n). With greedy
  decoding the answer is the recorded one whatever the drafts (checked), so only how many passes
  of which size it takes depends on the chooser. It prints each prompt's lookup ÷ plain decode
  rate per round (the chooser kept across rounds, as in a session) and their geometric mean.

What it leaves out: the prompt's own pass (decode rates leave it out too), the pass's growth
with the context, and the clock's noise, which is the point. ``--noise S`` puts a seeded noise
back, the same every run: each pass costs v(n) times a slow drift of the machine's speed (a
mean-reverting walk, ±S over a few hundred passes) times its own jitter (±S/2): what a busy
2-core machine does to the chooser's measurements. A change it favours still has to be measured
with ``bench``; one it disfavours need not be. ``--without-ledger``: the answers never fall back on
their own measurement (``cost.AnswerLedger``), as before it.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from app.engine import Engine, GenerationConfig
from app.engine.config import LoadOptions
from app.engine.decoding import cost as cost_module
from app.engine.decoding import decode as decode_module
from app.engine.decoding.cost import KChooser
from app.engine.draft_threads import WARM_UP_BLOCK_SIZES

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PROMPTS = ROOT / "resources" / "bench_prompts.txt"
DEFAULT_RECORD = Path("chooser_replay.json")


def _prompts(path: Path) -> list[str]:
    return [line.replace("\\n", "\n") for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def record(engine: Engine, prompts: list[str], max_new_tokens: int) -> dict[str, Any]:
    """The recorded answers and the cost curve (ms per step by rows verified)."""
    answers = []
    steps: dict[int, list[float]] = defaultdict(list)
    for prompt in prompts:
        engine.reset()
        plain = engine.generate(prompt, GenerationConfig(max_new_tokens=max_new_tokens, speculative=False))
        answers.append({"prompt": prompt, "ids": [t.id for t in plain.tokens]})
        for spec in (False, True):
            run = engine.generate(prompt, GenerationConfig(max_new_tokens=max_new_tokens, speculative=spec))
            for step in run.steps[1:]:  # the prompt's pass is no verification step
                steps[len(step.accepted) + len(step.rejected) + 1].append((step.verify_s + step.draft_s) * 1000)
    curve = {str(rows): statistics.median(ms) for rows, ms in sorted(steps.items())}
    return {"max_new_tokens": max_new_tokens, "answers": answers, "step_ms": curve}


class _Clock:
    now = 0.0  # what the chooser's clock reads: noise included
    true = 0.0  # the passes' own cost (v(n) without noise): what a rate is scored on
    noise = 0.0  # S of --noise (0: every pass costs exactly v(n))
    drift = 0.0  # log of the machine's speed factor now
    rng = random.Random(0)

    @classmethod
    def factor(cls) -> float:
        """The noise on one pass: the drift, a step of its walk taken, times the pass's jitter."""
        if not cls.noise:
            return 1.0
        cls.drift = 0.99 * cls.drift + cls.rng.gauss(0.0, cls.noise * 0.14)  # stationary sd ≈ S
        return math.exp(cls.drift + cls.rng.gauss(0.0, cls.noise / 2))


class ReplayTarget:
    """A ``CachedModel`` stand-in: greedy logits that give the recorded answer, a pass that
    costs v(rows) on the simulated clock. Positions are counted from the prompt's end, found on
    the first pass (the prompt plus any drafts folded into it)."""

    def __init__(self, answer: list[int], vocab: int, step_ms: dict[int, float], device: torch.device) -> None:
        self.answer, self.vocab, self.step_ms, self.device = answer, vocab, step_ms, device
        self.tokens: list[int] = []
        self.prompt_len: int | None = None
        self.fed_tokens, self.forward_s = 0, 0.0

    def cost_s(self, rows: int, noisy: bool = True) -> float:
        largest = max(self.step_ms)
        ms = self.step_ms.get(rows, self.step_ms[largest] * rows / largest)  # beyond the curve: linear
        return ms / 1000 * (_Clock.factor() if noisy else 1.0)

    def _logits(self, rows: int) -> torch.Tensor:
        assert self.prompt_len is not None
        out = torch.full((rows, self.vocab), -10.0)
        for j in range(rows):
            at = len(self.tokens) - rows + j + 1 - self.prompt_len  # the answer's index this row predicts
            out[j, self.answer[min(max(at, 0), len(self.answer) - 1)]] = 10.0
        return out

    def reset(self) -> None:
        self.tokens = []

    def truncate(self, length: int) -> None:
        del self.tokens[length:]

    def common_prefix(self, ids: list[int], trusted: int = 0) -> int:
        return 0

    def continue_from(self, sequence: list[int], rows: int = 1, trusted: int = 0) -> torch.Tensor:
        if self.prompt_len is None:
            self.prompt_len = len(sequence) - rows + 1
        self.tokens = list(sequence)
        return self._logits(rows)  # the prompt's pass: left out of decode rates, no clock

    def feed_at(self, position: int, ids: list[int]) -> torch.Tensor | None:
        if len(self.tokens) < position:
            return None
        self.truncate(position)
        self.tokens += ids
        _Clock.now += self.cost_s(len(ids))
        _Clock.true += self.cost_s(len(ids), noisy=False)
        return self._logits(len(ids))


def _replay_one(
    engine: Engine, prompt: str, answer: list[int], step_ms: dict[int, float], spec: bool, limit: int
) -> float:
    """Decode tokens per simulated second of one answer (scored on the passes' own cost: with
    ``--noise`` the noise misleads the chooser's measurements, not the score)."""
    real = engine._target_kv
    engine._target_kv = ReplayTarget(answer, real.vocab_size, step_ms, real.device)  # type: ignore[assignment]
    started = _Clock.true
    try:
        run = engine.generate(prompt, GenerationConfig(max_new_tokens=limit, speculative=spec))
    finally:
        engine._target_kv = real
    if [t.id for t in run.tokens] != answer[: len(run.tokens)]:
        raise AssertionError("the replayed answer is not the recorded one")
    return (run.stats.new_tokens - 1) / (_Clock.true - started)


def replay(
    engine: Engine, recorded: dict[str, Any], rounds: int, step_ms: dict[int, float] | None = None, noise: float = 0.0
) -> dict[str, Any]:
    """Per prompt, lookup ÷ plain per round (a fresh chooser per prompt, kept over its rounds)."""
    costs = step_ms or {int(k): float(v) for k, v in recorded["step_ms"].items()}
    _Clock.noise, _Clock.drift, _Clock.rng = noise, 0.0, random.Random(0)
    real_clock = decode_module._clock
    decode_module._clock = lambda device: _Clock.now  # type: ignore[assignment]
    try:
        rows = []
        for item in recorded["answers"]:
            engine.chooser = KChooser()
            clock = ReplayTarget([0], 1, costs, engine._target_kv.device)
            for size in WARM_UP_BLOCK_SIZES:  # what warm_up would have measured (one round), on this clock
                engine.chooser.costs.observe_verify(1, clock.cost_s(1))
                engine.chooser.costs.observe_verify(size, clock.cost_s(size))
            ratios = []
            for _ in range(rounds):
                plain = _replay_one(engine, item["prompt"], item["ids"], costs, False, recorded["max_new_tokens"])
                lookup = _replay_one(engine, item["prompt"], item["ids"], costs, True, recorded["max_new_tokens"])
                ratios.append(lookup / plain)
            rows.append({"prompt": item["prompt"][:60], "tokens": len(item["ids"]), "lookup_vs_plain": ratios})
    finally:
        decode_module._clock = real_clock
    every = [r for row in rows for r in row["lookup_vs_plain"]]
    return {"prompts": rows, "geomean": math.exp(sum(map(math.log, every)) / len(every)), "worst": min(every)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("--prompts-file", type=Path, default=DEFAULT_PROMPTS)
    rec.add_argument("--model", default=None, help="a target (default: the bundled model)")
    rec.add_argument("--max-new-tokens", type=int, default=96)
    rec.add_argument("--out", type=Path, default=DEFAULT_RECORD)
    rep = sub.add_parser("replay")
    rep.add_argument("file", type=Path, nargs="?", default=DEFAULT_RECORD)
    rep.add_argument("--model", default=None, help="the target recorded with (its tokenizer and drafter)")
    rep.add_argument("--rounds", type=int, default=3)
    rep.add_argument("--costs", type=Path, help="another record's cost curve (v(n) of another machine)")
    rep.add_argument("--noise", type=float, default=0.0, help="the machine's noise S (0.1: ±10 %%), seeded")
    rep.add_argument("--without-ledger", action="store_true", help="no answer falls back on its own measurement")
    rep.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    engine = Engine.load(*([args.model] if args.model else []), draft="lookup", options=LoadOptions(threads=1))
    if args.command == "record":
        args.out.write_text(json.dumps(record(engine, _prompts(args.prompts_file), args.max_new_tokens)))
        print(f"recorded {args.out}")
        return 0
    recorded = json.loads(args.file.read_text())
    other = json.loads(args.costs.read_text())["step_ms"] if args.costs else None
    other_costs = {int(k): float(v) for k, v in other.items()} if other else None
    if args.without_ledger:
        cost_module.FALL_BACK_AFTER = sys.maxsize
    result = replay(engine, recorded, args.rounds, other_costs, args.noise)
    if args.json:
        print(json.dumps(result))
        return 0
    for row in result["prompts"]:
        rounds = " ".join(f"{r:.3f}" for r in row["lookup_vs_plain"])
        print(f"{row['prompt']!r:64} {row['tokens']:3d} tokens  {rounds}")
    print(f"lookup ÷ plain, every round: geometric mean {result['geomean']:.3f}, worst {result['worst']:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
