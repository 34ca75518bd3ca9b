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

import itertools
import threading
import time
from collections.abc import Callable, Generator
from concurrent.futures import Future
from dataclasses import dataclass, replace

import torch
from transformers import PreTrainedTokenizerBase

from app.engine.config import GenerationConfig
from app.engine.decoding.acceptance import Rule
from app.engine.decoding.answer_text import AnswerText
from app.engine.decoding.cost import (
    CATCH_UP_IN_TURN,
    FIRST_MODEL_KEY,
    MODEL_KEY,
    AnswerLedger,
    Choice,
    KChooser,
    lookup_key,
)
from app.engine.decoding.drafters import Drafter, MixedDrafter, ModelDrafter, Proposal, model_of
from app.engine.decoding.sampling import greedy_token
from app.engine.events import KDecision, RunStats, StepEvent, StopReason, TargetKind, TokenInfo
from app.engine.runners import native
from app.engine.runners.kv import CachedModel
from app.engine.runners.native import calls

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


@dataclass
class _Verified:
    accepted: list[TokenInfo]
    target: TokenInfo | None
    rejected: list[TokenInfo]
    n_accepted: int
    next_token: int


def _target_rows(target: CachedModel, tokens: list[int], drafts: list[int], new_turn: bool) -> torch.Tensor:
    """The target's logits for ``[last, d1..dm]``.  [m+1, V]

    Inside a turn the cache holds every token but the last, so the step feeds only its own
    tokens; a new turn compares the whole sequence once (reusing an earlier turn's cache)."""
    if not new_turn:
        logits = target.feed_at(len(tokens) - 1, tokens[-1:] + drafts)
        if logits is not None:
            return logits
    return target.continue_from(tokens + drafts, rows=len(drafts) + 1)


@dataclass(frozen=True)
class _Readout:
    """What the events need from a pass, on the host, per row j of ``[m+1, V]``."""

    top1: list[int]  # the target's greedy token (``greedy_token``: lowest id among ties)
    margin: list[float]  # top-1 minus top-2 logit
    p_at_draft: list[float]  # p_target(d_{j+1}) (row m: unused)
    p_at_top1: list[float]  # p_target(top1)
    top_logit: list[float]  # the top-1 logit: what sets the margin's numerical resolution


def _readout(logits: torch.Tensor, p: torch.Tensor | None, drafts: list[int]) -> _Readout:
    """One top-2 and two gathers, moved to the host in ONE transfer (no per-token reads).
    The token is ``greedy_token``'s, never topk's index: topk may order equal values otherwise.
    ``p`` None (greedy: nothing is drawn from it): the rows' own softmax, from ``row_stats`` on the
    CPU with SpecChat's kernels (each row read twice, no [m+1, V] tensor made: a 4-row block's
    readout took ~4 ms with torch on the Xeon, ~0.4 this way), else computed here."""
    if p is None:
        fast = _native_readout(logits, drafts)
        if fast is not None:
            return fast
        p = logits.float().softmax(dim=-1)
    rows = logits.float()  # [m+1, V]: once for both (a no-op on fp32)
    top = torch.topk(rows, 2, dim=-1).values  # [m+1, 2]: the margin only
    top1 = greedy_token(rows)[:, None]  # [m+1, 1]
    draft_ids = torch.tensor(drafts + [0], device=p.device)[:, None]  # [m+1, 1]; last row a dummy
    table = torch.cat(
        [
            top1.to(p.dtype),  # exact: vocabularies are far below 2^24
            top[:, :1] - top[:, 1:],
            p.gather(1, draft_ids),
            p.gather(1, top1),
            top[:, :1],
        ],
        dim=1,
    ).tolist()  # [m+1, 5]
    columns = list(zip(*table))
    return _Readout([int(i) for i in columns[0]], *(list(c) for c in columns[1:]))


def _native_readout(logits: torch.Tensor, drafts: list[int]) -> _Readout | None:
    """``_readout`` for greedy rows by ``calls.row_stats`` (None: not here, or a row holds a NaN).
    p(token) = exp(logit − top1) / Σ exp(logit − top1), the row's softmax; the margin and the
    probabilities in fp32, as the readout over p computes them."""
    if not logits.is_cpu or logits.ndim != 2 or logits.dtype not in (torch.bfloat16, torch.float32):
        return None
    if native.kernels() is None:
        return None
    rows = logits.contiguous()
    stats = calls.row_stats(rows)
    if stats is None:
        return None
    top1, sums = torch.tensor(stats.top1), torch.tensor(stats.sums)  # fp32 [m+1]
    m = len(drafts)
    at_draft = rows[torch.arange(m), torch.tensor(drafts, dtype=torch.long)].float()  # [m]
    p_at_draft = (torch.exp(at_draft - top1[:m]) / sums[:m]).tolist()
    return _Readout(
        stats.ids,
        (top1 - torch.tensor(stats.top2)).tolist(),
        [*p_at_draft, 0.0],  # row m: unused (no draft follows it)
        (1.0 / sums).tolist(),
        stats.top1,
    )


def _verify_step(
    target: CachedModel, rule: Rule, tokens: list[int], proposal: Proposal, out: AnswerText, new_turn: bool
) -> _Verified:
    """One target pass over ``[last, d1..dm]`` and what it decides."""
    drafts = proposal.tokens
    raw = _target_rows(target, tokens, drafts, new_turn)  # [m+1, V]
    logits = rule.logits(raw, tokens, drafts)  # each row penalised by its own history
    # [m+1, V]: sampled from, and shown on hover (greedy: nothing is drawn, ``_readout`` reads the rows)
    p = None if rule.config.greedy else rule.probs(logits)
    seen = _readout(logits, p, drafts)
    verdict = rule.verify(logits, p, drafts, proposal.q, first_position=len(tokens), argmax=seen.top1)
    n, next_token = verdict.n_accepted, verdict.next_token
    target.truncate(len(tokens) + n)  # drop the rejected drafts from the cache
    accepted = []
    for j in range(n):
        info = out.push(
            drafts[j],
            source="draft",
            origin=proposal.origin,
            p_target=seen.p_at_draft[j],
            p_draft=proposal.p_draft[j],
            margin=seen.margin[j],
            top_logit=seen.top_logit[j],
        )
        if info is None:
            break
        accepted.append(info)
    # sampling may pick another token than the argmax: one read, once per step
    # (greedy: the next token is the row's greedy one, so p is never read)
    p_next = seen.p_at_top1[n] if next_token == seen.top1[n] or p is None else float(p[n, next_token])
    q_next = float(proposal.q[n, next_token]) if proposal.q is not None and n < len(drafts) else None
    own = out.push(
        next_token, source="target", p_target=p_next, p_draft=q_next, margin=seen.margin[n], top_logit=seen.top_logit[n]
    )
    # the answer ended inside the accepted block: the drafts after the stop (accepted or not)
    # are no part of it, so none of them counts as rejected
    rejected = [] if own is None else [
        TokenInfo(
            id=d,
            text="",
            source="draft",
            p_target=seen.p_at_draft[n] if j == 0 else None,
            p_draft=proposal.p_draft[n + j],
            origin=proposal.origin,
        )
        for j, d in enumerate(drafts[n:])
    ]
    if out.stop_reason is not None:  # the answer's last token takes any undecoded remainder
        emitted = out.finish(accepted + ([own] if own is not None else []))
        accepted, own = (emitted[:-1], emitted[-1]) if own is not None else (emitted, None)
    return _Verified(accepted, own, rejected, n, next_token)


def _with_text(rejected: list[TokenInfo], tokenizer: PreTrainedTokenizerBase) -> tuple[TokenInfo, ...]:
    """The rejected drafts' text, for display: decoded after the step's clock stopped, so a
    pass that rejected drafts is timed like any other pass (a plain step decodes no such text)."""
    return tuple(replace(t, text=str(tokenizer.decode([t.id], skip_special_tokens=True))) for t in rejected)


Shadow = tuple[str, int] | None  # (evidence key, first draft) of lookup drafts not verified


def _propose(
    drafter: Drafter | None,
    chooser: KChooser | None,
    tokens: list[int],
    k_cap: int,
    rule: Rule,
    config: GenerationConfig,
    prefill: bool,
    new_turn: bool,
) -> tuple[Proposal, Choice | None, Shadow]:
    """The drafts this step verifies, the chooser's decision when k is automatic, and the
    first lookup draft the chooser set aside (k = 0), to learn from the target's next token.
    ``new_turn``: the drafter has not been asked yet in this answer.

    Prompt lookup costs nothing, so it proposes up to ``k_cap`` and the chooser keeps the first
    ``k`` (its evidence: the n-gram length). A draft model costs a pass per draft, so the
    chooser decides ``k`` before any drafting, and ``k = 0`` skips the drafter entirely.
    """
    if drafter is None or k_cap <= 0:
        return NO_PROPOSAL, None, None
    threshold = config.confidence_threshold
    if chooser is None or not config.auto_k:
        return drafter.propose(tokens, k_cap, rule, threshold, new_turn), None, None
    if drafter.cheap:
        proposal = drafter.propose(tokens, k_cap, rule, threshold, new_turn)
        if not proposal.tokens:
            return proposal, None, None
        key = _evidence_key(drafter, proposal)
        choice = chooser.choose(key, len(proposal.tokens), drafts_ready=True, prefill=prefill)
        shadow = (key, proposal.tokens[0]) if choice.k == 0 else None
        return proposal.first(choice.k), choice, shadow
    choice = chooser.choose(_model_key(prefill), k_cap, drafts_ready=False, prefill=prefill)
    if choice.k == 0:
        return NO_PROPOSAL, choice, None
    return drafter.propose(tokens, choice.k, rule, threshold, new_turn), choice, None


def _propose_mixed(
    drafter: MixedDrafter,
    chooser: KChooser,
    tokens: list[int],
    k_cap: int,
    rule: Rule,
    config: GenerationConfig,
    prefill: bool,
    new_turn: bool,
    branch: Proposal | None,
) -> tuple[Proposal, Choice | None, Shadow]:
    """``_propose`` for the draft model and a free drafter together (auto k): the free drafter's
    block (drafts at hand, judged by its evidence) or the model's (the block drafted ahead,
    ``branch``, already paid for; else drafts it would now pay for), whichever the chooser
    predicts faster; neither when no k > 0 clears its margin. The free block wins a tie: it costs
    no pass. A free block set aside is judged for free by the target's next token (``Shadow``)."""
    threshold = config.confidence_threshold
    free = drafter.propose_free(tokens, k_cap, rule, threshold, new_turn)
    key = _evidence_key(drafter.free, free) if free.tokens else None
    free_choice = chooser.choose(key, len(free.tokens), drafts_ready=True, prefill=prefill) if key else None
    if branch is not None:
        model_choice = chooser.choose(MODEL_KEY, min(k_cap, len(branch.tokens)), drafts_ready=True)
    else:  # behind lookup's kept drafts: feeding them is this step's cost
        behind = drafter.behind(tokens)
        model_choice = chooser.choose(_model_key(prefill), k_cap, drafts_ready=False, prefill=prefill, behind=behind)
    free_wins = free_choice is not None and free_choice.predicted_speedup >= model_choice.predicted_speedup
    if free_choice is not None and free_choice.k > 0 and free_wins:
        return free.first(free_choice.k), free_choice, None
    if model_choice.k > 0:
        if branch is not None:
            return branch.first(model_choice.k), model_choice, None
        return drafter.propose_model(tokens, model_choice.k, rule, threshold, False), model_choice, None
    shadow = (key, free.tokens[0]) if key is not None else None
    # the free part was asked: an empty block, not NO_PROPOSAL (the answer's drafter was asked)
    return free.first(0), free_choice or model_choice, shadow


Ahead = tuple["Future[Proposal]", int]  # a block drafted during a verification, and the length it follows


def _drafting_ahead(drafter: Drafter | None, config: GenerationConfig) -> ModelDrafter | None:
    """The draft model, when it drafts the next block while the target verifies this one: where
    the engine found a core free for it (``ModelDrafter.ahead``), greedy or seed-invariant
    sampling (no random draws shared between the two threads; standard sampling drafts in turn)."""
    model = model_of(drafter)
    if model is None or not model.ahead:
        return None
    return model if config.greedy or config.sampling == "seed-invariant" else None


def _from_ahead(ahead: Ahead, tokens: list[int]) -> tuple[Proposal | None, bool]:
    """The block drafted ahead, when the target's answer went the way it guessed: every draft it
    followed accepted, and the target's own next token the block's first (its guess for it);
    then the rest of the block follows exactly ``tokens``. None otherwise (the branch is dropped:
    the drafter rolls back to what it shares with ``tokens`` on its next ask). And whether the
    guess was the target's token (after a plain step: evidence of acceptance, for free)."""
    future, after = ahead
    branch = future.result()  # waiting here is drafting time of this step
    guessed = len(tokens) == after + 1 and bool(branch.tokens) and branch.tokens[0] == tokens[-1]
    if not guessed or len(branch.tokens) < 2:
        return None, guessed
    q = branch.q[1:] if branch.q is not None else None
    return Proposal(branch.tokens[1:], q, branch.p_draft[1:], branch.passes, stopped=branch.stopped, fed=0), True


@dataclass(frozen=True)
class _AnswerDrafter:
    drafter: Drafter | None  # what drafts this answer (None: nothing)
    unseen: int  # prompt tokens a draft model has not seen (its catch-up)
    set_aside: Choice | None = None  # the plan by which the drafter was set aside (nothing drafts)
    model_sat_out: Choice | None = None  # the plan by which the draft model sat out, its free part drafting


def _drafter_for_answer(
    drafter: Drafter | None, chooser: KChooser | None, prompt: list[int], config: GenerationConfig, limit: int
) -> _AnswerDrafter:
    """The drafter this answer uses, how many prompt tokens it has not seen, and, when it or a
    mixed drafter's model is set aside, the plan that did not repay the catch-up.

    A draft model first feeds the part of the conversation it has not seen (a long prompt:
    its own prefill). With auto k that is worth it only if the drafting it enables saves more
    over the answer than the catch-up costs; decided once, at the start of the answer. A draft
    model that drafts ahead catches up beside the target's first plain steps: always kept.
    The draft model and a free drafter together: a catch-up not repaid leaves the free one.
    """
    if drafter is None or drafter.cheap or chooser is None or not config.auto_k:
        return _AnswerDrafter(drafter, 0)
    if _drafting_ahead(drafter, config) is not None:  # its catch-up runs on its own core, off the clock
        return _AnswerDrafter(drafter, 0)
    unseen = drafter.unseen(prompt)
    plan = chooser.choose(MODEL_KEY, config.k, drafts_ready=False)
    if chooser.worth_catching_up(unseen, limit, plan, config.k):
        return _AnswerDrafter(drafter, unseen)
    reason = "catch_up_not_repaid" if plan.k > 0 else plan.reason
    not_repaid = replace(plan, k=0, predicted_speedup=1.0, reason=reason)
    if isinstance(drafter, MixedDrafter):  # its free part drafts alone
        return _AnswerDrafter(drafter.free, 0, model_sat_out=not_repaid)
    return _AnswerDrafter(None, unseen, set_aside=not_repaid)


def _evidence_key(drafter: Drafter, proposal: Proposal, prefill: bool = False) -> str:
    if proposal.key is not None:
        return proposal.key
    return lookup_key(proposal.ngram) if drafter.cheap else _model_key(prefill)


def _model_key(prefill: bool) -> str:
    """A draft model's evidence: its block before the prompt's pass (the answer's first words) apart."""
    return FIRST_MODEL_KEY if prefill else MODEL_KEY


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


@dataclass(frozen=True)
class StepRecord:
    """One step of the loop as plain data. The run's stats (``_stats_after``), the step's event
    (``_event``) and what the chooser learns (``_learn``) are all built from it, in one place.

    ``verified`` is None for a step cancelled before its pass. Drafts the answer never reached
    (after a stop inside an accepted block) are in ``proposal`` (the pass verified them) but in
    neither ``verified.accepted`` nor ``verified.rejected``: they count as not proposed."""

    index: int  # 0 = the prompt's pass
    proposal: Proposal  # the drafts verified: m = len(proposal.tokens)
    verified: _Verified | None
    choice: Choice | None  # auto k's decision (or the catch-up plan that set the drafter aside)
    k: int  # drafts requested (``_requested``)
    drafting: bool  # the drafter ran this step (proposed drafts, or spent a pass)
    draft_s: float
    verify_s: float
    first_ask: bool  # the drafter's first ask of this answer (it caught up on the prompt)
    shadow: Shadow
    stop_reason: StopReason | None
    drafted_ahead: bool = False  # the drafts were made during the previous verification

    @property
    def caught_up(self) -> bool:
        """A draft model's first pass this step fed more than a block's leftovers: the prompt (its
        first ask of the answer: ``first_ask``, or a mixed drafter's model first asked after its
        free part drafted), or the tokens it missed while lookup drafted or plain steps ran (more
        than ``CATCH_UP_IN_TURN``). Its ``draft_s`` is mostly that catch-up, not drafting."""
        return self.proposal.passes > 0 and (self.first_ask or self.proposal.fed > CATCH_UP_IN_TURN)

    @property
    def accepted(self) -> int:
        """Drafts the answer kept."""
        return len(self.verified.accepted) if self.verified is not None else 0

    @property
    def proposed(self) -> int:
        """Drafts the answer reached: the kept ones and, when it went on past them, the
        rejected ones (``RunStats.proposed`` adds these up)."""
        return self.accepted + (len(self.verified.rejected) if self.verified is not None else 0)


def _cancelled(index: int) -> StepRecord:
    return StepRecord(index, NO_PROPOSAL, None, None, 0, False, 0.0, 0.0, False, None, "cancelled")


def _steps(
    target: CachedModel,
    drafter: Drafter | None,
    prompt: list[int],
    config: GenerationConfig,
    out: AnswerText,
    context_length: int,
    cancel: threading.Event | None,
    chooser: KChooser | None,
    unseen: int,
    set_aside: Choice | None,
) -> Generator[StepRecord, None, None]:
    """The loop: propose → verify → accept, one ``StepRecord`` per target pass; the chooser
    learns from each record before the next step chooses."""
    rule = Rule(config)
    tokens = list(prompt)
    k = config.k
    drafter_asked = False  # until the drafter is asked, it may hold an earlier turn's state
    ahead_drafter = _drafting_ahead(drafter, config)
    ahead: Ahead | None = None  # the next block, drafted while the target verified this one
    plain_before = False  # the previous step verified no draft
    # this answer's drafting passes on its own clock: once slower than plain steps, it rests on them
    ledger = AnswerLedger() if chooser is not None and config.auto_k and drafter is not None else None
    choice: Choice | None  # each step's: the chooser's decision, or the ledger's
    if chooser is not None:
        chooser.ahead = ahead_drafter is not None  # its step costs (``cost.step_cost``)
        chooser.acceptance.new_answer()  # this answer's own evidence of free drafts weighs apart from here
    try:
        for index in itertools.count():
            if cancel is not None and cancel.is_set():
                yield _cancelled(index)
                return
            started = _clock(target.device)
            if chooser is not None:
                chooser.costs.context = len(tokens)  # this step's passes are measured and predicted at it
            k_cap = min(k, out.limit - out.count - 1, context_length - len(tokens))
            branch, guessed = _from_ahead(ahead, tokens) if ahead is not None else (None, False)
            if ahead is not None and plain_before and chooser is not None:  # the guess beside a plain step
                chooser.acceptance.observe(MODEL_KEY, 1, int(guessed))
            ahead = None
            fallen_back = None
            if ledger is not None and chooser is not None:  # a plain pass's cost, asked only when it is weighed
                fallen_back = ledger.falls_back(chooser.costs.verify_cost(1) if ledger.judging else None)
            if fallen_back is not None:  # drafting measured slower in this answer: a plain step
                proposal, choice, shadow = NO_PROPOSAL, fallen_back, None
            elif isinstance(drafter, MixedDrafter) and chooser is not None and config.auto_k and k_cap > 0:
                proposal, choice, shadow = _propose_mixed(
                    drafter, chooser, tokens, k_cap, rule, config, index == 0, not drafter_asked, branch
                )
            elif branch is not None and k_cap > 0:
                proposal, choice, shadow = _take_ahead(branch, chooser, k_cap, config)
            else:  # drafting before the prefill folds the first verification into the prompt's pass
                proposal, choice, shadow = _propose(
                    drafter, chooser, tokens, k_cap, rule, config, prefill=index == 0, new_turn=not drafter_asked
                )
            # the free drafter's blocks carry their evidence key, the model's none
            from_branch = branch is not None and bool(proposal.tokens) and proposal.key is None
            first_ask = not drafter_asked and proposal is not NO_PROPOSAL
            drafter_asked = drafter_asked or first_ask
            drafted = _clock(target.device)
            # drafted ahead beside a plain step too (on the spare core, off the clock): its guess is
            # free evidence, and a right guess leaves a draft ready for the next step
            if ahead_drafter is not None and fallen_back is None and (proposal.tokens or index > 0):
                first = not drafter_asked
                if isinstance(drafter, MixedDrafter):
                    first = drafter.asks_first("model", first)
                ahead = _draft_next_block(ahead_drafter, tokens, proposal.tokens, k, rule, config, new_turn=first)
                drafter_asked = True
            plain_before = not proposal.tokens
            step = _verify_step(target, rule, tokens, proposal, out, new_turn=index == 0)
            finished = _clock(target.device)
            record = StepRecord(
                index=index,
                proposal=proposal,
                verified=step,
                choice=set_aside if set_aside is not None and config.speculative else choice,
                k=_requested(choice, k_cap, drafter, proposal, config.auto_k and chooser is not None),
                drafting=drafter is not None and (bool(proposal.tokens) or proposal.passes > 0),
                draft_s=drafted - started,
                verify_s=finished - drafted,
                first_ask=first_ask,
                shadow=shadow,
                stop_reason=out.stop_reason,
                drafted_ahead=from_branch,
            )
            if chooser is not None:
                _learn(chooser, drafter, record, unseen)
            # a draft model's catch-up (on the prompt, or on what it missed) is not a drafting pass's
            # cost: the prompt's is decided before the answer (``_drafter_for_answer``), and counted it
            # made the ledger judge drafting that pays as slower and stop it (0.49x on the real pair;
            # a mixed drafter's model, first asked after lookup drafted the prompt's pass, 0.72x)
            if ledger is not None and index > 0 and proposal.tokens and not record.caught_up:
                ledger.observe(record.proposed, record.accepted, record.draft_s + record.verify_s)
            yield record
            if out.stop_reason is not None:
                return
            tokens += proposal.tokens[: step.n_accepted] + [step.next_token]
            k = _next_k(k, len(proposal.tokens), step.n_accepted, config)  # with auto_k: the chooser's cap
    finally:
        if ahead is not None:
            ahead[0].result()  # the drafter's runner is consistent again before anyone uses it


def _draft_next_block(
    drafter: ModelDrafter,
    tokens: list[int],
    drafts: list[int],
    k: int,
    rule: Rule,
    config: GenerationConfig,
    new_turn: bool,
) -> Ahead:
    """Start drafting, on the drafter's thread, the block after ``tokens + drafts``: a guess for
    the target's next token, then one draft more than this step verifies (what auto k may grow to
    after a kept block; adaptive k's next k at most). More would outlast the verification it hides
    behind, for drafts the next step seldom takes."""
    block = 1 + min(len(drafts) + 1, min(k + 1, config.k_max) if config.adaptive_k else k)
    following = tokens + drafts
    threshold = config.confidence_threshold
    future = drafter.propose_ahead(following, block, rule, threshold, verified=len(tokens), new_turn=new_turn)
    return future, len(following)


def _take_ahead(
    branch: Proposal, chooser: KChooser | None, k_cap: int, config: GenerationConfig
) -> tuple[Proposal, Choice | None, Shadow]:
    """The drafts made ahead, as many as this step verifies: with auto k the chooser decides on
    drafts already paid for (their passes overlapped the previous verification)."""
    if chooser is None or not config.auto_k:
        return branch.first(k_cap), None, None
    choice = chooser.choose(MODEL_KEY, min(k_cap, len(branch.tokens)), drafts_ready=True)
    return (branch.first(choice.k) if choice.k else NO_PROPOSAL), choice, None


def _stats_after(stats: RunStats, record: StepRecord, new_tokens: int) -> RunStats:
    """The run's cumulative stats once ``record``'s step is counted."""
    if record.verified is None:
        return stats
    seconds = record.draft_s + record.verify_s
    return replace(
        stats,
        new_tokens=new_tokens,
        target_passes=stats.target_passes + 1,
        draft_passes=stats.draft_passes + record.proposal.passes,
        proposed=stats.proposed + record.proposed,
        accepted=stats.accepted + record.accepted,
        prefill_s=stats.prefill_s + (seconds if record.index == 0 else 0.0),
        decode_s=stats.decode_s + (seconds if record.index > 0 else 0.0),
    )


def _event(record: StepRecord, stats: RunStats, tokenizer: PreTrainedTokenizerBase) -> StepEvent:
    """The step as the fronts see it."""
    step = record.verified
    if step is None:
        return StepEvent(record.index, (), None, (), "plain", 0, 0.0, 0.0, stats, stop_reason=record.stop_reason)
    choice = record.choice
    return StepEvent(
        index=record.index,
        accepted=tuple(step.accepted),
        target=step.target,
        rejected=_with_text(step.rejected, tokenizer),
        target_kind=_target_kind(record.index, record.drafting, record.accepted, record.proposed),
        k=record.k,
        draft_s=record.draft_s,
        verify_s=record.verify_s,
        stats=stats,
        stop_reason=record.stop_reason,
        draft_passes=record.proposal.passes,
        predicted_speedup=choice.predicted_speedup if choice is not None else None,
        decision=_decision(choice),
        drafted_ahead=record.drafted_ahead,
        draft_caught_up=record.caught_up,
    )


@dataclass(frozen=True)
class Target:
    """The model whose answer it is, as the loop sees it: its cached runner, the tokenizer that
    makes text of its ids, the ids that end an answer, the tokens it holds (prompt and answer
    together), and the chooser that learns what its passes cost and how often drafts pass
    (kept across answers; None: nothing is learnt, k is the configured one)."""

    runner: CachedModel
    tokenizer: PreTrainedTokenizerBase
    eos_ids: frozenset[int]
    context_length: int
    chooser: KChooser | None = None


def decode(
    target: Target,
    drafter: Drafter | None,
    prompt: list[int],
    config: GenerationConfig,
    cancel: threading.Event | None = None,
    answer_so_far: int = 0,
    on_drafter: Callable[[Drafter | None], None] | None = None,
) -> Generator[StepEvent, None, None]:
    """Generate an answer to ``prompt`` (token ids), yielding one event per target pass.
    ``answer_so_far``: the prompt's last ids are a cut answer being continued (their text was
    emitted already; an incomplete character among them is emitted whole once completed, and
    a stop string may begin among them).

    ``cancel`` is checked before every target pass; the last event has ``stop_reason`` set.
    ``target.chooser`` learns what passes cost and how often drafts pass, and (``config.auto_k``)
    chooses each step's number of drafts, at most ``config.k``. ``on_drafter`` is told the
    drafter this answer really uses (None when a draft model's catch-up would not be repaid).
    """
    runner, tokenizer, chooser, context_length = target.runner, target.tokenizer, target.chooser, target.context_length
    room = context_length - len(prompt)
    limit = min(config.max_new_tokens, room)
    limit_reason: StopReason = "context_full" if room < config.max_new_tokens else "max_new_tokens"
    context = tuple(prompt[len(prompt) - answer_so_far :]) if answer_so_far > 0 else ()
    out = AnswerText(tokenizer, target.eos_ids, limit, config.stop_strings, limit_reason, context)
    if chooser is not None:
        chooser.costs.context = len(prompt)  # the catch-up plan is made at this answer's context
    answering = _drafter_for_answer(drafter, chooser, prompt, config, limit)
    drafter = answering.drafter
    if on_drafter is not None:
        on_drafter(drafter)
    stats = RunStats(prompt_tokens=len(prompt), reused_prompt_tokens=runner.common_prefix(prompt[:-1]))
    steps = _steps(
        runner, drafter, prompt, config, out, context_length, cancel, chooser, answering.unseen, answering.set_aside
    )
    for record in steps:
        stats = _stats_after(stats, record, out.count)
        event = _event(record, stats, tokenizer)
        if record.index == 0 and answering.model_sat_out is not None and config.speculative:
            event = replace(event, model_sat_out=_decision(answering.model_sat_out))
        yield event


def _requested(
    choice: Choice | None, k_cap: int, drafter: Drafter | None, proposal: Proposal, auto: bool
) -> int:
    """Drafts requested this step: the chooser's k; with auto k and nothing to choose from
    (lookup found no match), none; else the fixed (or adaptive) k."""
    if drafter is None or k_cap <= 0:
        return 0
    if choice is not None:
        return choice.k
    return len(proposal.tokens) if auto else k_cap


def _decision(choice: Choice | None) -> KDecision | None:
    if choice is None:
        return None
    return KDecision(
        k=choice.k,
        reason=choice.reason,
        alpha=choice.alpha,
        best_k=choice.best_k,
        best_gain=choice.best_gain,
        draft_cost=choice.draft_cost,
        pass_cost=choice.pass_cost,
        realized=choice.realized,
    )


def _learn(chooser: KChooser, drafter: Drafter | None, record: StepRecord, unseen: int) -> None:
    """Feed the step's measured costs and outcome to the chooser. The prompt's pass is not a
    verification cost (its size is the prompt's), nor is a draft model's first ask of an
    answer a draft step (it catches up on the prompt first: timed as a catch-up), nor an ask
    after several plain steps (it catches up on them), so none is timed as one.

    Evidence of acceptance: the drafts the answer reached (``StepRecord.proposed``, as the
    stats count them), until the first rejection; a confidence stop of a draft model counts
    as a rejection where it stopped (it ended the block there, after paying a draft pass); a
    lookup draft set aside (k = 0) is judged for free by the target's next token (the
    point-mass rule accepts it with probability p(draft), which is the chance the target's
    own token is it, so the evidence is unbiased under sampling too)."""
    proposal, step = record.proposal, record.verified
    if step is None:
        return
    m, proposed, accepted = len(proposal.tokens), record.proposed, record.accepted
    if record.index > 0:
        chooser.costs.observe_verify(m + 1, record.verify_s)
        # drafts made ahead were not on this step's clock (``draft_s`` is the wait for them): not
        # a draft step's cost, which ``cost.step_cost`` weighs against the verification itself
        in_turn = not record.drafted_ahead
        if in_turn and proposal.passes and not record.caught_up:
            chooser.costs.observe_draft(proposal.passes, record.draft_s)
    if record.first_ask and proposal.passes:
        chooser.costs.observe_draft_catch_up(unseen, record.draft_s, proposal.passes)
    elif record.caught_up:  # later in the answer (a mixed drafter's model first asked, or missed tokens)
        chooser.costs.observe_draft_catch_up(proposal.fed, record.draft_s, proposal.passes)
    if drafter is not None and (m or proposal.stopped):
        judged = proposed + 1 if proposal.stopped and accepted == m else proposed
        chooser.observe_step(_evidence_key(drafter, proposal, record.index == 0), judged, accepted)
        return
    chooser.observe_step(MODEL_KEY, 0, 0)  # a plain step: time passes, no evidence
    if record.shadow is not None:
        key, draft = record.shadow
        chooser.acceptance.observe(key, 1, int(draft == step.next_token))
