"""The decoding loop: propose → verify → accept, one target pass per step.

Without a drafter the same loop verifies zero drafts per pass, which is plain decoding, so
both paths share sampling, stopping and detokenisation and a comparison is fair.

    step:     drafter(tokens) → d1..dm     (m ≤ k; m = 0 without a drafter)
              target([last, d1..dm])      → rows [m+1, V]   (pass 0: [prompt, d1..dm])
              rule.verify(rows, drafts)   → n accepted + the target's own next token
              target cache cropped to tokens + d1..dn

The target's cache always holds every token but the last one emitted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace

import torch
from transformers import PreTrainedTokenizerBase

from .acceptance import Rule
from .config import GenerationConfig
from .detok import IncrementalDetokenizer
from .drafters import Drafter, Proposal
from .events import RunStats, StepEvent, StopReason, TargetKind, TokenInfo
from .kv import CachedModel
from .sampling import top2_margin

NO_PROPOSAL = Proposal([], None, [], passes=0)


def _sync(device: torch.device) -> None:
    """Wait for the device's queued kernels, so the clock read next includes them (CPU: no-op)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elif device.type == "mps":
        torch.mps.synchronize()


def _clock(device: torch.device) -> float:
    _sync(device)
    return time.perf_counter()


class _Output:
    """The answer being built: detokenises each token and decides when to stop."""

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase,
        eos_ids: frozenset[int],
        limit: int,
        stop_strings: tuple[str, ...],
        limit_reason: StopReason = "max_new_tokens",
    ) -> None:
        self.detok = IncrementalDetokenizer(tokenizer)
        self.eos_ids = eos_ids
        self.limit = limit
        self.limit_reason = limit_reason  # what ``limit`` is: max_new_tokens or the context's room
        self.stop_strings = stop_strings
        self._tail = ""  # enough recent text to spot a stop string across tokens
        self._tail_len = max((len(s) for s in stop_strings), default=0)
        self.count = 0
        self.stop_reason: StopReason | None = None

    def push(self, token_id: int, **info: object) -> TokenInfo | None:
        """Add a token unless the answer already stopped; the token that stops it is kept
        (EOS, the last allowed token, the token completing a stop string)."""
        if self.stop_reason is not None:
            return None
        piece = self.detok.add(token_id)
        self.count += 1
        if token_id in self.eos_ids:
            self.stop_reason = "eos"
        elif self._completes_stop_string(piece):
            self.stop_reason = "stop_string"
        elif self.count >= self.limit:
            self.stop_reason = self.limit_reason
        return TokenInfo(id=token_id, text=piece, **info)  # type: ignore[arg-type]

    def _completes_stop_string(self, piece: str) -> bool:
        if not self.stop_strings or not piece:
            return False
        window = self._tail + piece
        self._tail = window[-self._tail_len :]
        return any(s in window for s in self.stop_strings)

    def finish(self, tokens: list[TokenInfo]) -> list[TokenInfo]:
        """On the last step, give any undecoded remainder to the last token."""
        rest = self.detok.flush()
        if rest and tokens:
            tokens[-1] = replace(tokens[-1], text=tokens[-1].text + rest)
        return tokens


@dataclass
class _Verified:
    accepted: list[TokenInfo]
    target: TokenInfo | None
    rejected: list[TokenInfo]
    n_accepted: int
    next_token: int


def _verify_step(
    target: CachedModel, rule: Rule, tokens: list[int], proposal: Proposal, out: _Output
) -> _Verified:
    """One target pass over ``[last, d1..dm]`` and what it decides."""
    drafts = proposal.tokens
    raw = target.continue_from(tokens + drafts, rows=len(drafts) + 1)  # [m+1, V]
    logits = rule.logits(raw, tokens, drafts)  # each row penalised by its own history
    p = rule.probs(logits)  # [m+1, V]: sampled from, and shown on hover
    verdict = rule.verify(logits, p, drafts, proposal.q, first_position=len(tokens))
    n = verdict.n_accepted
    target.truncate(len(tokens) + n)  # drop the rejected drafts from the cache
    margins = top2_margin(logits[: n + 1])
    tops = logits[: n + 1].float().amax(dim=-1).tolist()  # [n+1]: what sets the margin's resolution
    accepted = []
    for j in range(n):
        info = out.push(
            drafts[j], source="draft", p_target=float(p[j, drafts[j]]), p_draft=proposal.p_draft[j], margin=margins[j],
            top_logit=tops[j],
        )
        if info is None:
            break
        accepted.append(info)
    q_next = float(proposal.q[n, verdict.next_token]) if proposal.q is not None and n < len(drafts) else None
    own = out.push(
        verdict.next_token, source="target", p_target=float(p[n, verdict.next_token]), p_draft=q_next, margin=margins[n],
        top_logit=tops[n],
    )
    rejected = [
        TokenInfo(
            id=d,
            text=out.detok.tokenizer.decode([d], skip_special_tokens=True),
            source="draft",
            p_target=float(p[n, d]) if j == 0 else None,
            p_draft=proposal.p_draft[n + j],
        )
        for j, d in enumerate(drafts[n:])
    ]
    return _Verified(accepted, own, rejected, n, verdict.next_token)


def _target_kind(index: int, drafted: bool, accepted: int, proposed: int) -> TargetKind:
    if index == 0:
        return "prefill"
    if not drafted or proposed == 0:  # no drafter, or it found nothing to propose
        return "plain"
    return "bonus" if accepted == proposed else "correction"


def _next_k(k: int, proposed: int, accepted: int, config: GenerationConfig) -> int:
    """Adaptive draft length: grow after a fully accepted block, shrink after a rejection."""
    if not config.adaptive_k or proposed == 0:
        return k
    if accepted == proposed == k:
        return min(k + 1, config.k_max)
    if accepted < proposed:
        return max(1, k - 1)
    return k


def decode(
    target: CachedModel,
    drafter: Drafter | None,
    prompt: list[int],
    config: GenerationConfig,
    tokenizer: PreTrainedTokenizerBase,
    eos_ids: frozenset[int],
    context_length: int,
    cancel: threading.Event | None = None,
) -> Iterator[StepEvent]:
    """Generate an answer to ``prompt`` (token ids), yielding one event per target pass.

    ``cancel`` is checked before every target pass; the last event has ``stop_reason`` set.
    """
    rule = Rule(config)
    room = context_length - len(prompt)
    limit = min(config.max_new_tokens, room)
    limit_reason: StopReason = "context_full" if room < config.max_new_tokens else "max_new_tokens"
    out = _Output(tokenizer, eos_ids, limit, config.stop_strings, limit_reason)
    stats = RunStats(prompt_tokens=len(prompt), reused_prompt_tokens=target.common_prefix(prompt[:-1]))
    tokens = list(prompt)
    k = config.k
    index = 0
    while True:
        if cancel is not None and cancel.is_set():
            yield StepEvent(index, (), None, (), "plain", 0, 0.0, 0.0, stats, stop_reason="cancelled")
            return
        started = _clock(target.device)
        k_now = min(k, limit - out.count - 1, context_length - len(tokens))
        # drafting before the prefill folds the first verification into the prompt's pass
        use_drafter = drafter is not None and k_now > 0
        proposal = drafter.propose(tokens, k_now, rule, config.confidence_threshold) if use_drafter else NO_PROPOSAL
        drafted = _clock(target.device)
        step = _verify_step(target, rule, tokens, proposal, out)
        finished = _clock(target.device)

        tokens += proposal.tokens[: step.n_accepted] + [step.next_token]
        m = len(proposal.tokens)
        kind = _target_kind(index, use_drafter, step.n_accepted, m)
        emitted = step.accepted + ([step.target] if step.target else [])
        if out.stop_reason is not None:
            emitted = out.finish(emitted)
        stats = replace(
            stats,
            new_tokens=out.count,
            target_passes=stats.target_passes + 1,
            draft_passes=stats.draft_passes + proposal.passes,
            proposed=stats.proposed + m,
            accepted=stats.accepted + len(step.accepted),
            prefill_s=stats.prefill_s + (finished - started if index == 0 else 0.0),
            decode_s=stats.decode_s + (finished - started if index > 0 else 0.0),
        )
        yield StepEvent(
            index=index,
            accepted=tuple(emitted[: len(step.accepted)]),
            target=emitted[-1] if step.target else None,
            rejected=tuple(step.rejected),
            target_kind=kind,
            k=k_now if use_drafter else 0,
            draft_s=drafted - started,
            verify_s=finished - drafted,
            stats=stats,
            stop_reason=out.stop_reason,
            draft_passes=proposal.passes,
        )
        if out.stop_reason is not None:
            return
        k = _next_k(k, m, step.n_accepted, config)
        index += 1

