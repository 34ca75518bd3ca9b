"""The app's own passes, or whole answers, with this tree's kernels against q8mm.c at another revision:
each build in a process of its own, the processes taken in turn.

    python tools/kernels_ab.py --against REV --source T --threads 2              # a target's pass
    python tools/kernels_ab.py --against REV --source D --draft --rows 45       # a draft's catch-up
    python tools/kernels_ab.py --against REV --answers --source T --draft-source D --threads 2

Pass: ``CachedModel.feed_at`` of ``--rows`` tokens after 100 of context (a draft loaded as the app
loads one, its head over its likely tokens), medians of ``--passes``, each pass timed twice: "cold"
after 400 MB read (the weights out of the caches, as after the other model's pass) and
"back-to-back". Answers: type hints, the poem and list → JSON (lines 2, 8, 3 of the bench prompts)
answered twice each, target-only and speculative, 64 tokens; decode tokens per second (the
prompt's pass left out), the median of the six. The other build is compiled from ``git show
REV:app/engine/runners/native/q8mm.c`` in a temporary folder (``native.SOURCE`` pointed at it
before the kernels are first asked for); everything else is this tree's.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.cli.inputs import DEFAULT_PROMPTS_FILE, read_prompts_file
from app.engine.config import GenerationConfig, LoadOptions
from app.engine.runners import native

ANSWER_PROMPTS = (1, 7, 2)  # the bench prompts' lines 2, 8, 3 (0-based)


def passes(args: argparse.Namespace) -> str:
    import torch

    from app.engine.models.draft_head import restrict_draft_head
    from app.engine.models.loading import load_model
    from app.engine.runners.kv import CachedModel
    from app.engine.runners.threads import apply_threads

    apply_threads(str(args.threads))
    loaded = load_model(args.source, device="cpu", draft=args.draft)
    if args.draft:
        restrict_draft_head(loaded.model, loaded.tokenizer, loaded.vocab_size)
    runner = CachedModel(loaded.model, loaded.vocab_size)
    text = "Write a Python function is_prime(n) that returns whether n is a prime number. " * 12
    ids = loaded.tokenizer(text)["input_ids"]
    runner.forward(ids[:100], keep=1)
    feed = ids[100 : 100 + args.rows]
    flush = torch.ones(100 * 2**20)  # 400 MB
    for _ in range(5):
        runner.feed_at(100, feed)
    cold, warm = [], []
    for _ in range(args.passes):
        float(flush.sum())
        for samples in (cold, warm):
            start = time.perf_counter()
            runner.feed_at(100, feed)
            samples.append(time.perf_counter() - start)
    return f"cold {statistics.median(cold) * 1e3:.2f} ms, back-to-back {statistics.median(warm) * 1e3:.2f} ms"


def answers(args: argparse.Namespace) -> str:
    from app.engine.session import Engine

    engine = Engine.load(args.source, args.draft_source, LoadOptions(threads=str(args.threads)))
    engine.warm_up()
    prompts = read_prompts_file(DEFAULT_PROMPTS_FILE)
    rates: dict[bool, list[float]] = {False: [], True: []}
    for _ in range(2):
        for line in ANSWER_PROMPTS:
            for speculative in (False, True):
                engine.reset()
                engine.history.clear()
                steps: list = []
                config = GenerationConfig(max_new_tokens=64, speculative=speculative)
                engine.generate([{"role": "user", "content": prompts[line]}], config, on_step=steps.append)
                seconds = sum(s.draft_s + s.verify_s for s in steps[1:])
                tokens = sum(len(s.accepted) + 1 for s in steps[1:])
                rates[speculative].append(tokens / seconds)
    plain, spec = statistics.median(rates[False]), statistics.median(rates[True])
    return f"target-only {plain:.2f} tok/s, speculative {spec:.2f} tok/s"


def child(args: argparse.Namespace) -> int:
    if args.child != "this":
        native.SOURCE = Path(args.child)  # before the kernels are first asked for: that build runs
    if native.kernels() is None:
        print(f"no kernels: {native.why_not()}", file=sys.stderr)
        return 1
    print(answers(args) if args.answers else passes(args))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", default="main", help="the git revision of q8mm.c to compare with")
    parser.add_argument("--source", required=True, help="the model (a pass), or the target (--answers)")
    parser.add_argument("--draft", action="store_true", help="load --source as a draft model")
    parser.add_argument("--draft-source", help="the draft model of --answers")
    parser.add_argument("--answers", action="store_true", help="whole answers instead of one pass")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rows", type=int, default=1)
    parser.add_argument("--passes", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3, help="pairs of processes, the other build first")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args)
    source = subprocess.run(
        ["git", "show", f"{args.against}:app/engine/runners/native/q8mm.c"], capture_output=True, text=True, check=True
    ).stdout
    forwarded = list(argv if argv is not None else sys.argv[1:])
    with tempfile.TemporaryDirectory() as folder:
        other = Path(folder) / "q8mm.c"
        other.write_text(source)
        for round_ in range(args.rounds):
            for name, build in ((args.against, str(other)), ("this tree", "this")):
                run = [sys.executable, __file__, *forwarded, "--child", build]
                out = subprocess.run(run, capture_output=True, text=True)
                said = out.stdout.strip().splitlines()[-1:] or [out.stderr.strip()[-300:]]
                print(f"round {round_} {name}: {said[0]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
