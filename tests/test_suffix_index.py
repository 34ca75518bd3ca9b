"""The suffix index over earlier conversations: it finds what a full scan finds, stays within
its cap (oldest out first), keeps a regenerated answer, and forgets a deleted conversation."""

from __future__ import annotations

import random

from app.engine import GenerationConfig
from app.engine.decoding.acceptance import Rule
from app.engine.decoding.cost import lookup_key, suffix_key
from app.engine.decoding.suffix_drafter import SuffixDrafter
from app.engine.decoding.suffix_index import SuffixIndex

RULE = Rule(GenerationConfig())


def scan(documents: list[list[int]], context: list[int], k: int, shortest: int, limit: int):
    """The oracle: every position of every document (the latest first), the longest match of
    the context's end (``shortest``..``limit`` tokens) with something after it; then the draft
    most of those longest matches continue with, token by token (ties: the latest)."""
    found, best = [], 0
    for doc in reversed(documents):
        for end in range(len(doc) - 1, 0, -1):
            length = 0
            while length < min(limit, end, len(context)) and doc[end - 1 - length] == context[-1 - length]:
                length += 1
            if length < max(best, shortest):
                continue
            if length > best:
                best, found = length, []
            found.append((doc, end))
    if not found:
        return None
    drafts = []
    for i in range(k):
        counts = {}
        for doc, end in found:
            if end + i < len(doc):
                counts[doc[end + i]] = counts.get(doc[end + i], 0) + 1
        if not counts:
            break
        token = max(counts, key=counts.__getitem__)
        found = [(d, e) for d, e in found if e + i < len(d) and d[e + i] == token]
        drafts.append(token)
    return best, drafts


def test_the_index_finds_the_longest_match_and_its_most_frequent_continuation_as_a_full_scan_does():
    rng = random.Random(7)
    checked = 0
    for trial in range(40):
        vocab = rng.choice([2, 3, 5, 9])  # tiny vocabularies: many repeats, ties and collisions
        index = SuffixIndex(capacity=10**9, anchors=(2, 5), max_match=8, per_key=10**9)
        documents: list[list[int]] = []
        for _ in range(rng.randrange(1, 5)):  # earlier conversations, each grown in pieces
            doc: list[int] = []
            owner = f"c{len(documents)}"
            documents.append(doc)
            for _ in range(rng.randrange(1, 6)):
                piece = [rng.randrange(vocab) for _ in range(rng.randrange(1, 12))]
                index.extend(owner, piece)
                doc.extend(piece)
        for _ in range(10):
            context = [rng.randrange(vocab) for _ in range(rng.randrange(1, 14))]
            k = rng.randrange(1, 7)
            got = index.match(context, k)
            want = scan(documents, context, k, shortest=2, limit=8)
            assert (None if got is None else (got.length, got.tokens)) == want, (trial, documents, context)
            checked += 1
    assert checked == 400


def test_the_latest_of_equally_supported_continuations_wins():
    index = SuffixIndex(anchors=(2,))
    index.record("old", [1, 2, 3, 10])
    index.record("new", [1, 2, 3, 20])
    match = index.match([2, 3], 1)
    assert match.tokens == [20] and match.owner == "new" and match.support == 1
    index.record("newer", [9, 2, 3, 10])  # now 10 follows [2, 3] twice
    assert index.match([2, 3], 1).tokens == [10]
    assert index.match([1, 2, 3], 1).tokens == [20]  # but a longer match beats frequency


def test_the_cap_holds_and_the_least_recently_extended_conversation_goes_first():
    index = SuffixIndex(capacity=100, anchors=(3,))
    index.record("a", list(range(0, 40)))
    index.record("b", list(range(100, 140)))
    index.extend("a", [40, 41])  # a is used again: b is now the oldest
    index.record("c", list(range(200, 240)))
    assert index.size <= 100
    assert index.owners == {"a", "c"}
    assert index.match([101, 102, 103], 2) is None
    assert index.match([1, 2, 3], 2).tokens == [4, 5]


def test_a_conversation_alone_beyond_the_cap_keeps_its_latest_tokens():
    index = SuffixIndex(capacity=50, anchors=(3,))
    index.record("a", list(range(60)))
    assert index.size <= 50
    assert index.match([50, 51, 52], 2).tokens == [53, 54]
    assert index.match([1, 2, 3], 2) is None


def test_forgetting_a_conversation_removes_every_document_it_left():
    index = SuffixIndex(anchors=(3,))
    index.record("x", [5, 6, 7, 8, 1, 2, 3, 4])
    index.record("x", [5, 6, 7, 8, 9, 9])  # a regenerated answer: the old one stays as its own document
    index.record("y", [50, 51, 52, 53])
    assert len(index.documents("x")) == 2
    assert index.match([6, 7, 8], 3).owner == "x"
    removed = index.forget("x")
    assert removed > 0 and index.owners == {"y"}
    assert index.match([6, 7, 8], 3) is None and index.match([1, 2, 3], 1) is None
    assert index.match([50, 51, 52], 1).tokens == [53]


def test_an_answer_regenerated_in_the_same_conversation_is_still_drafted_from():
    index = SuffixIndex(anchors=(3,))
    prompt = [1, 2, 3, 4, 5]
    index.record("x", prompt)
    index.extend("x", [10, 11, 12, 13, 0])  # the first answer, as emitted
    index.record("x", prompt)  # regenerate: the same prompt again
    assert index.match(prompt, 5).tokens == [10, 11, 12, 13, 0]
    assert index.documents("x")[-1] == prompt  # the growing document is the new turn
    index.record("x", prompt)  # a third time, with nothing emitted: no copy added
    assert len(index.documents("x")) == 2


def test_stale_entries_are_swept_so_the_tables_stay_proportional_to_the_corpus():
    index = SuffixIndex(capacity=200, anchors=(2, 4))
    rng = random.Random(3)
    for i in range(300):
        index.record(f"c{i}", [rng.randrange(50) for _ in range(20)])
        index.forget(f"c{i - 5}")
    assert index.size <= 200
    assert index._entries <= 2 * index.size * 2 + 4096


def test_the_drafter_says_whether_a_draft_comes_from_this_conversation_or_an_earlier_one():
    index = SuffixIndex()
    drafter = SuffixDrafter(index, eos_ids=frozenset({0}))
    earlier = [7, 8, 9, 10, 11, 12, 13, 0, 99]
    index.record("earlier", earlier)
    drafter.owner = "now"
    index.record("now", [3, 8, 9, 10, 11])
    proposal = drafter.propose([3, 8, 9, 10, 11], 5, RULE, 0.0)
    assert proposal.tokens == [12, 13, 0]  # stops at the end of sequence
    assert proposal.origin == "earlier" and proposal.key == suffix_key(4) and proposal.q is None
    index.extend("now", [12, 40, 41, 8, 9, 10, 11, 12])
    proposal = drafter.propose([3, 8, 9, 10, 11, 12, 40, 41, 8, 9, 10, 11, 12], 2, RULE, 0.0, new_turn=True)
    assert proposal.tokens == [40, 41] and proposal.origin == "conversation"  # 5 tokens here beat 4 there


def test_prompt_lookup_still_drafts_when_the_index_has_no_long_enough_match():
    drafter = SuffixDrafter(SuffixIndex(), eos_ids=frozenset())
    proposal = drafter.propose([1, 2, 5, 1, 2], 3, RULE, 0.0)
    assert proposal.tokens == [5, 1, 2] and proposal.origin == "conversation" and proposal.key == lookup_key(2)
