"""How often a draft model's top-1 token is its target's, per weights form of the draft: the
acceptance a form keeps, measured without the noise of a speculative run.

    python tools/draft_bits.py --target T --draft D                  # the draft's forms: int4, int8
    python tools/draft_bits.py --target T --draft D --simulate       # and simulated bit widths
    python tools/draft_bits.py --target T --draft D --forms int4 --second  # and the second choice

The target answers each prompt (``resources/bench_prompts.txt``, lines 1-8 by default) greedily,
target-only; then each form of the draft reads prompt + answer in one pass (teacher-forced) and
its most likely next token at each answer position is compared with the target's token there.
Greedy speculation keeps a draft exactly when it is that token, so this is the per-token
acceptance a form allows, one number per form over the same positions.

``--simulate``: the draft's float weights (the file dequantized by transformers' GGUF reader) with
each linear rounded in fp32 to a bit width and layout of the k-quant kind: per block of ``sub``
inputs an asymmetric scale and min (the range each end pulled in by 0, 10 or 20 % when
``--search``, the least squared error kept), both rounded to ``sbits`` bits of the super-block's
largest; the MLP (gate, up, down) and the attention each at their own width. It measures what a
form would keep before a kernel for it exists (a draft's MLP at 3 bits was built and measured so,
commit d68f839, and reverted: docs/performance.md, "Draft model on the real pair").
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.engine.config import GenerationConfig, LoadOptions
from app.engine.startup import import_engine

ROOT = Path(__file__).resolve().parents[1]
MLP = ("gate_proj", "up_proj", "down_proj")
# (label, MLP's (bits, sub, sbits) or None for the file's values, attention's, the head's)
SIMULATED = (
    ("file values (fp32)", None, None, None),
    ("4-bit/32, 6-bit scales (Q4_K)", (4, 32, 6), (4, 32, 6), (4, 32, 6)),
    ("MLP 3-bit/32, 8-bit scales", (3, 32, 8), (4, 32, 6), (4, 32, 6)),
    ("MLP and attention 3-bit/32", (3, 32, 8), (3, 32, 8), (4, 32, 6)),
    ("MLP 2-bit/16, 8-bit scales", (2, 16, 8), (4, 32, 6), (4, 32, 6)),
    ("MLP 2-bit/32, 8-bit scales", (2, 32, 8), (4, 32, 6), (4, 32, 6)),
)
SHRINKS = (0.0, 0.1, 0.2)


def rounded(w: torch.Tensor, bits: int, sub: int, sbits: int, search: bool) -> torch.Tensor:
    """``w`` [N, K] rounded as described in the module's docstring (K padded to 256 with zeros)."""
    n, k = w.shape
    padded = torch.nn.functional.pad(w.float(), (0, -(-k // 256) * 256 - k))
    x = padded.view(n, -1, 256 // sub, sub)
    levels = 2**bits - 1
    lo_all, hi_all = x.amin(-1, keepdim=True).clamp(max=0), x.amax(-1, keepdim=True).clamp(min=0)
    best_lo, best_hi, best_err = lo_all, hi_all, None
    for a in SHRINKS if search else (0.0,):
        for b in SHRINKS if search else (0.0,):
            lo, hi = lo_all * (1 - a), hi_all * (1 - b)
            s = ((hi - lo) / levels).clamp(min=1e-10)
            err = (((x - lo) / s).round().clamp(0, levels) * s + lo - x).square().sum(-1, keepdim=True)
            if best_err is None:
                best_err = err
            else:
                better = err < best_err
                best_lo, best_hi = torch.where(better, lo, best_lo), torch.where(better, hi, best_hi)
                best_err = torch.where(better, err, best_err)
    top = 2**sbits - 1
    scale = (best_hi - best_lo) / levels
    d = (scale.amax(-2, keepdim=True) / top).clamp(min=1e-12)
    step = ((scale / d).round().clamp(1, top) * d)
    mn = -best_lo
    dm = (mn.amax(-2, keepdim=True) / top).clamp(min=1e-12)
    low = (mn / dm).round().clamp(0, top) * dm
    return (((x + low) / step).round().clamp(0, levels) * step - low).view(n, -1)[:, :k]


def agreement(logits_of, answers: list[tuple[list[int], list[int]]]) -> float:
    """The share of answer positions where ``logits_of(ids)`` [T, V]'s top token is the target's."""
    hits = total = 0
    for prompt, answer in answers:
        logits = logits_of(prompt + answer)
        predicted = logits[len(prompt) - 1 : len(prompt) + len(answer) - 1].argmax(-1).tolist()
        hits += sum(p == t for p, t in zip(predicted, answer, strict=True))
        total += len(answer)
    return hits / total


def second_choice(logits_of, answers: list[tuple[list[int], list[int]]]) -> tuple[int, int]:
    """(positions where the top token is not the target's, those where the second one is): what a
    verification of two candidates per position (a tree of the draft's top two) would keep beyond
    the one chain of top-1 drafts."""
    missed = rescued = 0
    for prompt, answer in answers:
        logits = logits_of(prompt + answer)
        top = logits[len(prompt) - 1 : len(prompt) + len(answer) - 1].topk(2, dim=-1).indices.tolist()
        for (first, second), token in zip(top, answer, strict=True):
            if first != token:
                missed += 1
                rescued += second == token
    return missed, rescued


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", required=True)
    parser.add_argument("--draft", required=True)
    parser.add_argument("--prompts-file", type=Path, default=ROOT / "resources" / "bench_prompts.txt")
    parser.add_argument("--prompts", type=int, default=8, help="the file's first N prompts")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--threads", default="auto")
    parser.add_argument("--forms", nargs="+", default=["int4", "int8"], help="the draft's weights forms")
    parser.add_argument("--simulate", action="store_true", help="also the simulated widths (module docstring)")
    parser.add_argument("--no-search", action="store_true", help="simulate round-to-nearest ranges only")
    parser.add_argument("--second", action="store_true", help="also where the second choice is right")
    args = parser.parse_args(argv)
    import_engine()
    from app.cli.inputs import read_prompts_file
    from app.engine.models.loading import load_model
    from app.engine.runners.kv import CachedModel
    from app.engine.session import Engine

    prompts = read_prompts_file(args.prompts_file)[: args.prompts]  # as ``bench --prompts-file`` reads it
    engine = Engine.load(args.target, None, LoadOptions(threads=args.threads))
    answers = []
    for prompt in prompts:
        conversation = [{"role": "user", "content": prompt}]
        ids = engine.prompt_ids(conversation)
        result = engine.generate(conversation, GenerationConfig(max_new_tokens=args.max_new_tokens, speculative=False))
        answers.append((ids, list(result.token_ids)))
    del engine
    print(f"{sum(len(a) for _, a in answers)} answer tokens of {len(answers)} prompts")
    for form in args.forms:
        draft = load_model(args.draft, device="cpu", weights=form, draft=True)
        cached = CachedModel(draft.model, draft.vocab_size)

        def logits_of(ids: list[int], cached: CachedModel = cached) -> torch.Tensor:
            cached.reset()
            logits = cached.forward(ids)
            return (logits[0] if logits.dim() == 3 else logits).float()  # [T, V]

        label = draft.form.label() if draft.form is not None else form
        print(f"{form:6s} {agreement(logits_of, answers):.3f}  {label}", flush=True)
        if args.second:
            missed, rescued = second_choice(logits_of, answers)
            print(f"       second choice right where the first is not: {rescued} of {missed}", flush=True)
        del draft, cached
    if args.simulate:
        simulate(args.draft, answers, not args.no_search)
    return 0


def simulate(source: str, answers: list[tuple[list[int], list[int]]], search: bool) -> None:
    from transformers import AutoModelForCausalLM

    path = Path(source)
    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32).eval()
    head = model.get_output_embeddings()
    head.weight = torch.nn.Parameter(head.weight.detach().clone(), requires_grad=False)  # untied: rounded alone
    linears = {n: m for n, m in model.named_modules() if isinstance(m, torch.nn.Linear)}
    kept = {n: m.weight.detach().clone() for n, m in linears.items()}

    def logits_of(ids: list[int]) -> torch.Tensor:
        with torch.inference_mode():
            return model(torch.tensor([ids]), use_cache=False).logits[0]

    for label, mlp, attention, head_form in SIMULATED:
        for name, module in linears.items():
            leaf = name.rpartition(".")[2]
            form = head_form if module is head else mlp if leaf in MLP else attention
            module.weight.data = kept[name].clone() if form is None else rounded(kept[name], *form, search)
        print(f"simulated {label:32s} {agreement(logits_of, answers):.3f}", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
