"""A draft model's LM head over the tokens a draft is likely to be: its most frequent ones.

A draft's numbers never change the answer (the target verifies every token: greedy, a draft is
kept only if it is the target's own choice; sampling, the acceptance rule ``min(1, p/q)`` and
the residual ``norm(max(0, p − q))`` give the target's distribution for *any* draft distribution
q). So the draft may compute logits for a subset of the vocabulary only, as FR-Spec
(frequency-ranked speculative sampling) does: q is 0 elsewhere and the draft never proposes
those tokens; where the target wants one, the draft is rejected there and the target's own
token is kept.

Which tokens: a byte-level BPE or SentencePiece vocabulary is numbered in the order its merges
were learned, most frequent first, so the first ``DRAFT_HEAD_TOKENS`` ids, every added token (the
chat markers, the end of sequence), every token of punctuation and white space alone (code's
structure: Qwen2.5 numbers "```" 73,594), and every token of the conversations the draft has
seen (``SubsetHead.extend``, before each answer: the words a question brings, which its answer
repeats). On Qwen2.5's 151,936-token vocabulary that starts as a head of ~36,000 rows instead
of 151,936, and the head is a quarter of a 0.5B draft's weights. Of 327 answer tokens of the
bench prompts (target-only, 48 each), 7.0 % fell past id 32,768, most of them words of the
question. A vocabulary smaller than twice ``DRAFT_HEAD_TOKENS`` is left whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import nn

from app.engine.runners.prepacked import PrepackedLinear
from app.engine.runners.quant import Int8Linear, SuperBlockLinear

DRAFT_HEAD_TOKENS = 32768
# the logit of a token the head does not compute: its probability is 0 in fp32 (exp(−10⁴) underflows)
# and it stays finite (no inf − inf in a softmax or a penalty), whatever temperature or penalty
LEFT_OUT = -1.0e4


class SubsetHead(nn.Module):
    """The head's rows ``keep`` only, laid out over the whole vocabulary: the kept tokens' logits
    as the full head computes them (the same rows, the same kernel), ``LEFT_OUT`` elsewhere.
    ``rows(keep)`` makes the inner head of those rows (from the whole head's, kept by reference:
    a tied head's are the embedding's). x [..., H] → [..., vocab]"""

    keep: torch.Tensor

    def __init__(self, rows: Callable[[torch.Tensor], nn.Module], keep: torch.Tensor, vocab: int) -> None:
        super().__init__()
        self.rows, self.vocab = rows, vocab
        self.inner = rows(keep)
        self.register_buffer("keep", keep)
        self._kept = set(keep.tolist())  # ``keep`` as a set: an answer's extend is a set difference

    def extend(self, ids: Iterable[int]) -> int:
        """Keep ``ids`` too (those below the vocabulary): how many were new (the inner head is
        made again when any is)."""
        new = {i for i in ids if 0 <= i < self.vocab} - self._kept
        if new:
            self._kept |= new
            keep = torch.tensor(sorted(self._kept), dtype=torch.long, device=self.keep.device)
            self.inner, self.keep = self.rows(keep), keep
        return len(new)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        kept: torch.Tensor = self.inner(x)
        out = kept.new_full((*kept.shape[:-1], self.vocab), LEFT_OUT)
        out.index_copy_(-1, self.keep, kept)
        return out

    def extra_repr(self) -> str:
        return f"{self.keep.numel()} of {self.vocab} tokens"


def kept_tokens(vocab: int, added: Iterable[int], first: int = DRAFT_HEAD_TOKENS) -> torch.Tensor:
    """The ids a draft's head keeps: ``0 .. first − 1`` and every ``added`` one below ``vocab``."""
    ids = set(range(min(first, vocab))) | {i for i in added if 0 <= i < vocab}
    return torch.tensor(sorted(ids), dtype=torch.long)


# a token's own characters that are not letters: the byte-level BPE's space, newline and tab, and
# SentencePiece's space
SPACE_MARKS = frozenset("ĠĊĉ▁")


def structural_tokens(tokenizer: object, start: int, vocab: int) -> list[int]:
    """Ids ``start ..`` of tokens made of punctuation and white space alone ("```", "):\n")."""
    convert = getattr(tokenizer, "convert_ids_to_tokens", None)
    if not callable(convert) or start >= vocab:
        return []
    names = convert(list(range(start, vocab)))
    return [start + i for i, name in enumerate(names)
            if isinstance(name, str) and name and all(not c.isalnum() or c in SPACE_MARKS for c in name)]  # fmt: skip


def restrict_head(model: nn.Module, keep: torch.Tensor) -> str | None:
    """Swap ``model``'s LM head for a ``SubsetHead`` over ``keep``: a note for the model's label
    ("head: 32,790 of 151,936 tokens"), or None where the head is left whole (a form it cannot
    take rows of, or nothing to leave out)."""
    head = model.get_output_embeddings()  # type: ignore[operator]
    if isinstance(head, SubsetHead) or not isinstance(head, nn.Module) or keep.numel() >= head_rows(head):
        return None
    rows = _rows_of(model, head)
    if rows is None:
        return None
    model.set_output_embeddings(SubsetHead(rows, keep.to(_device(head)), head_rows(head)))  # type: ignore[operator]
    return f"head: {keep.numel():,} of {head_rows(head):,} tokens"


def _device(head: nn.Module) -> torch.device:
    return next(iter([*head.parameters(), *head.buffers()])).device


def _rows_of(model: nn.Module, head: nn.Module) -> Callable[[torch.Tensor], nn.Module] | None:
    """How to make a head of some of ``head``'s rows, as ``head`` computes them (None: a head
    whose rows cannot be had)."""
    if isinstance(head, Int8Linear):
        q, scale, bias = head.q, head.scale.float(), head.bias
        return lambda keep: Int8Linear.from_quantized(q[keep].contiguous(), scale[keep], _rows(bias, keep))
    if isinstance(head, SuperBlockLinear):  # Q4_K / Q6_K: a row's super-blocks are its own bytes
        return head.of_rows
    if type(head) is nn.Linear:
        weight, bias = head.weight.detach(), None if head.bias is None else head.bias.detach()

        def linear(keep: torch.Tensor) -> nn.Module:
            made = nn.Linear(
                weight.shape[1], keep.numel(), bias=bias is not None, device=weight.device, dtype=weight.dtype
            )
            with torch.no_grad():
                made.weight.copy_(weight[keep])
                if bias is not None:
                    made.bias.copy_(bias[keep])
            return made.requires_grad_(False)

        return linear
    if isinstance(head, PrepackedLinear) and (tied := _tied_weight(model, head)) is not None:
        packed_bias, compute = None if head.bias is None else head.bias.detach(), head.compute
        # its rows are the embedding's (oneDNN's packing is opaque)
        return lambda keep: PrepackedLinear(tied[keep].contiguous(), _rows(packed_bias, keep), compute)
    return None


def _rows(t: torch.Tensor | None, keep: torch.Tensor) -> torch.Tensor | None:
    return None if t is None else t[keep]


def _tied_weight(model: nn.Module, head: nn.Module) -> torch.Tensor | None:
    """The input embedding's weight where the head is tied to it (the same rows), else None."""
    config = getattr(model, "config", None)
    embedding = model.get_input_embeddings()  # type: ignore[operator]
    weight = getattr(embedding, "weight", None)
    tied = bool(getattr(config.get_text_config(), "tie_word_embeddings", False)) if config is not None else False
    if not tied or not isinstance(weight, torch.Tensor) or tuple(weight.shape) != (head_rows(head), head_inputs(head)):
        return None
    return weight.detach()


def head_rows(head: nn.Module) -> int:
    return int(getattr(head, "out_features", 0))


def head_inputs(head: nn.Module) -> int:
    return int(getattr(head, "in_features", 0))


def restrict_draft_head(model: nn.Module, tokenizer: object, vocab: int) -> str | None:
    """``restrict_head`` over ``kept_tokens`` and the ``structural_tokens`` for a draft whose
    vocabulary is at least twice ``DRAFT_HEAD_TOKENS`` (None: left whole)."""
    if vocab < 2 * DRAFT_HEAD_TOKENS:
        return None
    added = getattr(tokenizer, "added_tokens_decoder", {}) or {}
    special = getattr(tokenizer, "all_special_ids", []) or []
    structure = structural_tokens(tokenizer, DRAFT_HEAD_TOKENS, vocab)
    return restrict_head(model, kept_tokens(vocab, [*added, *special, *structure]))


def extend_draft_head(model: nn.Module, ids: Iterable[int]) -> int:
    """A restricted draft head keeps the tokens of ``ids`` too (a conversation): how many it
    added (0 for a head left whole)."""
    head = model.get_output_embeddings()  # type: ignore[operator]
    return head.extend(ids) if isinstance(head, SubsetHead) else 0
