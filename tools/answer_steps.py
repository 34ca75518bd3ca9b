"""Each step of one answer, speculative beside target-only, as the bench runs them: what was drafted,
kept and thrown away, the draft's and the verification's milliseconds, and why the chooser chose k.
From the project's root:

    python tools/answer_steps.py --target T [--draft D] --prompt "..." [--threads N] [--rounds R]
    python tools/answer_steps.py --target T [--draft D] --prompts-file F [--threads N] [--rounds R]

Each round answers the prompt (or each of the file's prompts in turn, in one engine, as ``bench``
does) target-only and speculatively, the order swapped every other round (the engine reset and its
history cleared before each, as ``bench`` does), and prints a line per answer (wall, the prompt's pass,
draft and verification seconds, steps) and a line per speculative step:
``i<step> k<asked> acc<kept> rej<thrown away> d<draft ms> v<verify ms> dp<draft-model passes>
ahead<drafted ahead> <the chooser's reason>``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.engine.config import GenerationConfig, LoadOptions
from app.engine.startup import import_engine


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="default")
    parser.add_argument("--draft", default="lookup", help="a model source, or lookup")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--prompt")
    source.add_argument("--prompts-file", help="one prompt a line (as bench's), answered in turn in one engine")
    parser.add_argument("--threads", default="auto")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    args = parser.parse_args(argv)
    import_engine()
    from app.cli.inputs import read_prompts_file
    from app.engine.session import Engine

    engine = Engine.load(args.target, args.draft, LoadOptions(threads=args.threads))
    engine.warm_up()
    if args.prompt is not None:
        prompts = [args.prompt]
    else:
        prompts = read_prompts_file(Path(args.prompts_file))
    for round_, prompt in ((r, p) for r in range(args.rounds) for p in prompts):
        conversation = [{"role": "user", "content": prompt}]
        if len(prompts) > 1:
            print(f"-- {prompt[:60]!r}")
        for speculative in (True, False) if round_ % 2 else (False, True):
            engine.reset()
            engine.history.clear()
            steps: list = []
            started = time.perf_counter()
            config = GenerationConfig(max_new_tokens=args.max_new_tokens, speculative=speculative)
            engine.generate(conversation, config, on_step=steps.append)
            wall = time.perf_counter() - started
            drafting, verifying = sum(s.draft_s for s in steps), sum(s.verify_s for s in steps)
            print(f"round {round_} {'speculative' if speculative else 'target-only'}: wall {wall:.3f} s, "
                  f"prompt's pass {steps[0].verify_s:.3f}, draft {drafting:.3f}, verify {verifying:.3f}, "
                  f"{len(steps)} steps")  # fmt: skip
            for s in steps if speculative else ():
                reason = s.decision.reason if s.decision is not None else ""
                sat_out = f" (draft model sat out: {s.model_sat_out.reason})" if s.model_sat_out else ""
                timing = f"d{s.draft_s * 1e3:.1f} v{s.verify_s * 1e3:.1f} dp{s.draft_passes} ahead{s.drafted_ahead:d}"
                print(f"  i{s.index} k{s.k} acc{len(s.accepted)} rej{len(s.rejected)} {timing} {reason}{sat_out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
