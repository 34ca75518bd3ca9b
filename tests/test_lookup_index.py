"""Prompt lookup's incremental n-gram index proposes exactly what the old full scan did."""

from __future__ import annotations

import random

from app.engine import GenerationConfig
from app.engine.decoding.acceptance import Rule
from app.engine.decoding.drafters import PromptLookupDrafter, _until_eos

RULE = Rule(GenerationConfig())


def _latest_continuation(tokens: list[int], n: int, k: int) -> list[int]:
    """The old scan (the oracle): up to ``k`` tokens that followed the latest earlier
    occurrence of the last ``n`` tokens."""
    if len(tokens) <= n:
        return []
    tail = tokens[-n:]
    first = tail[0]
    for start in range(len(tokens) - n - 1, -1, -1):
        if tokens[start] == first and tokens[start : start + n] == tail:
            return tokens[start + n : start + n + k]
    return []


def old_propose(drafter: PromptLookupDrafter, tokens: list[int], k: int) -> list[int]:
    for n in range(drafter.max_ngram, drafter.min_ngram - 1, -1):
        limit = min(k, drafter.single_token_match_drafts) if n == 1 else k
        continuation = _until_eos(_latest_continuation(tokens, n, limit), drafter.eos_ids)
        if continuation:
            return continuation
    return []


def test_the_index_proposes_what_the_full_scan_proposed_on_random_sequences():
    rng = random.Random(1234)
    checked = 0
    for trial in range(60):
        vocab = rng.choice([3, 5, 12, 40])  # small vocabularies: many repeats and ties
        drafter = PromptLookupDrafter(frozenset({0}), max_ngram=rng.choice([2, 3, 4]))
        tokens = [rng.randrange(vocab) for _ in range(rng.randrange(0, 30))]
        new_turn = True
        for _ in range(60):
            k = rng.randrange(1, 8)
            proposal = drafter.propose(tokens, k, RULE, 0.0, new_turn=new_turn)
            assert proposal.tokens == old_propose(drafter, tokens, k), (trial, tokens, k)
            checked += 1
            tokens += [rng.randrange(vocab) for _ in range(rng.randrange(1, 5))]  # append only
            new_turn = False
            if rng.random() < 0.05:  # a new conversation: another sequence altogether
                tokens = [rng.randrange(vocab) for _ in range(rng.randrange(0, 30))]
                new_turn = True
    assert checked == 60 * 60


def test_the_index_reports_the_matched_ngram_length():
    drafter = PromptLookupDrafter()
    assert drafter.propose([1, 2, 3, 9, 1, 2, 3], 4, RULE, 0.0).ngram == 3
    assert drafter.propose([7, 2, 3, 9, 1, 2, 3], 4, RULE, 0.0).ngram == 2
    assert drafter.propose([5, 6], 4, RULE, 0.0).tokens == []


def test_an_ngram_followed_before_by_different_tokens_is_contested_evidence():
    """The chooser weighs a lookup draft by how it was found: the n-gram's length and whether
    that n-gram was followed by different tokens before (its continuation one guess of several)."""
    drafter = PromptLookupDrafter(max_ngram=2)
    agreeing = [7, 1, 2, 3, 9, 1, 2, 3, 5, 1, 2]  # "1 2" was followed by 3 both times
    assert drafter.propose(agreeing, 3, RULE, 0.0).key == "lookup2"
    contested = [7, 1, 2, 3, 9, 1, 2, 4, 5, 1, 2]  # "1 2" was followed by 3, then by 4
    proposal = drafter.propose(contested, 3, RULE, 0.0)
    assert proposal.key == "lookup2x" and proposal.tokens == [4, 5, 1]  # still the latest continuation
    grown = drafter.propose(agreeing[:5], 3, RULE, 0.0)  # a new answer: nothing remembered
    assert grown.tokens == [] and not drafter.index.contested[2]


def test_the_contested_flag_matches_a_scan_of_every_occurrence():
    rng = random.Random(99)
    for _ in range(40):
        tokens = [rng.randrange(4) for _ in range(rng.randrange(3, 60))]
        drafter = PromptLookupDrafter(max_ngram=3)
        drafter.index.update(tokens)
        for n in (1, 2, 3):
            if len(tokens) <= n:
                continue
            tail = tokens[-n:]
            nexts = {tokens[s + n] for s in range(len(tokens) - n) if tokens[s : s + n] == tail}
            assert drafter.index.is_contested(tokens, n) == (len(nexts) > 1)
