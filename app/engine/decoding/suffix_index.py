"""A suffix index over every conversation the app has seen: drafts from earlier answers.

SuffixDecoding (Oliaro et al., 2024) keeps a suffix tree over past outputs and drafts the
continuation of the longest suffix of the current context found in it. This index does the
same with less machinery: the token ids of every document (a conversation: its prompts and
answers) in one corpus capped in tokens, least recently extended document out first, and for
a few anchor lengths ``n`` a table from the hash of every ``n``-gram to the latest positions
that followed it. A query hashes the context's last ``n`` tokens (longest anchor first), then
extends each candidate backwards token by token (up to ``max_match``): the longest match wins,
and among equally long ones the continuation most of them share (ties: the most recent).

Tables are hints, checked against the tokens: a hash collision, a document evicted or cut
since, only costs a comparison. Appending a token updates one entry per anchor, so nothing is
ever rescanned; stale entries are swept by a rebuild once they outnumber the live ones.

Pure Python, torch-free; owners (a conversation id) let the app forget what it deletes.
"""

from __future__ import annotations

from array import array
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

DEFAULT_CAPACITY = 100_000  # tokens held at most: ~25 MB with the tables, ~1 s to index on one core
ANCHORS = (4, 16)  # n-gram lengths that are hashed; a match shorter than the shortest is not sought
MAX_MATCH = 32  # the longest suffix compared: evidence enough, and a bounded cost per candidate
PER_KEY = 16  # latest positions kept per anchor n-gram
_OFFSET_BITS = 32
_OFFSET_MASK = (1 << _OFFSET_BITS) - 1


@dataclass
class _Document:
    owner: str
    tokens: array[int]  # array("q")


@dataclass(frozen=True)
class SuffixMatch:
    """What followed the longest earlier occurrence of the context's suffix."""

    tokens: list[int]  # the continuation (the draft)
    length: int  # tokens of the context matched: the evidence
    support: int  # occurrences of that suffix that continue with the draft's first token
    owner: str  # the document (conversation) the draft was copied from, the most recent one


class SuffixIndex:
    def __init__(
        self,
        capacity: int = DEFAULT_CAPACITY,
        anchors: Sequence[int] = ANCHORS,
        max_match: int = MAX_MATCH,
        per_key: int = PER_KEY,
    ) -> None:
        self.capacity = capacity
        self.anchors = tuple(sorted(set(anchors)))
        self.max_match = max(max_match, self.anchors[-1])
        self.per_key = per_key
        self._docs: OrderedDict[int, _Document] = OrderedDict()  # least recently extended first
        self._live: dict[str, int] = {}  # owner -> the serial of its growing document
        self._retired: dict[str, set[int]] = {}  # owner -> hashes of the tails it keeps
        self._tables: dict[int, dict[int, int | list[int]]] = {n: {} for n in self.anchors}
        self._serial = 0
        self.size = 0  # tokens held
        self._entries = 0  # positions in the tables, stale ones included

    # ---- documents -------------------------------------------------------------------------
    def record(self, owner: str, tokens: Sequence[int]) -> None:
        """``owner``'s conversation is now ``tokens`` (a prompt about to be answered, or a
        conversation read from disk). What it shares with the owner's growing document is kept;
        a part that differs (an answer regenerated, a question edited) stays in the index as a
        document of its own, with a little context before it."""
        serial = self._live.get(owner)
        doc = self._docs.get(serial) if serial is not None else None
        if doc is None or serial is None:
            self._live[owner] = self._new_document(owner, tokens)
            self._evict()
            return
        common = _common_prefix(doc.tokens, tokens)
        if common < len(doc.tokens):
            tail = doc.tokens[max(0, common - self.max_match) :]
            self.size -= len(doc.tokens) - common
            del doc.tokens[common:]  # table entries past the cut are stale; checks skip them
            kept = self._retired.setdefault(owner, set())
            fingerprint = hash(tail.tobytes())
            if fingerprint not in kept:  # a rerun that differs the same way again adds nothing
                kept.add(fingerprint)
                self._new_document(owner, tail)
        self.extend(owner, tokens[common:])
        self._evict()

    def extend(self, owner: str, tokens: Sequence[int]) -> None:
        """Append ``tokens`` (emitted ones) to the owner's growing document."""
        serial = self._live.get(owner)
        if serial is None or serial not in self._docs:
            self.record(owner, tokens)
            return
        self._docs.move_to_end(serial)
        if not tokens:
            return
        self._append(serial, tokens)
        self._evict()

    def forget(self, owner: str) -> int:
        """Remove every document of ``owner``; returns the tokens removed."""
        gone = [s for s, d in self._docs.items() if d.owner == owner]
        removed = sum(len(self._docs[s].tokens) for s in gone)
        for serial in gone:
            del self._docs[serial]
        self._live.pop(owner, None)
        self._retired.pop(owner, None)
        self.size -= removed
        self._sweep_if_stale()
        return removed

    def clear(self) -> None:
        self._docs.clear()
        self._live.clear()
        self._retired.clear()
        self._tables = {n: {} for n in self.anchors}
        self.size = self._entries = 0

    @property
    def owners(self) -> set[str]:
        return {d.owner for d in self._docs.values()}

    def documents(self, owner: str) -> list[list[int]]:
        """The token ids held for ``owner`` (oldest first), for checks and tests."""
        return [list(d.tokens) for d in self._docs.values() if d.owner == owner]

    # ---- the query -----------------------------------------------------------------------
    def match(self, context: Sequence[int], k: int, hidden: str | None = None) -> SuffixMatch | None:
        """Up to ``k`` tokens that followed the longest earlier occurrence of the end of
        ``context`` (at least the shortest anchor long), or None. ``hidden``: an owner whose
        documents are not looked at (a conversation rerun for a comparison)."""
        if k <= 0:
            return None
        for n in reversed(self.anchors):
            if len(context) < n:
                continue
            entry = self._tables[n].get(hash(tuple(context[-n:])))
            if entry is None:
                continue
            candidates = self._candidates(entry, context, n, hidden)
            if candidates:
                return self._vote(candidates, k)
        return None

    def _candidates(
        self, entry: int | list[int], context: Sequence[int], n: int, hidden: str | None = None
    ) -> list[tuple[int, _Document, int]]:
        """(matched length, document, continuation start) of the longest matches, latest first."""
        positions = [entry] if isinstance(entry, int) else entry
        found: list[tuple[int, _Document, int]] = []
        seen: set[int] = set()
        best = n
        for position in reversed(positions):
            if position in seen:
                continue
            seen.add(position)
            doc = self._docs.get(position >> _OFFSET_BITS)
            end = position & _OFFSET_MASK
            if doc is None or end >= len(doc.tokens):  # evicted, cut, or nothing follows yet
                continue
            if hidden is not None and doc.owner == hidden:
                continue
            length = _match_length(doc.tokens, end, context, self.max_match)
            if length < best:
                continue
            if length > best:
                best, found = length, []
            found.append((length, doc, end))
        return found

    def _vote(self, candidates: list[tuple[int, _Document, int]], k: int) -> SuffixMatch:
        """Walk the continuations together: at each draft position take the token most of the
        remaining candidates continue with (ties: the most recent), drop the others."""
        alive = [(doc, end) for _, doc, end in candidates]
        drafts: list[int] = []
        support = 0
        for i in range(k):
            counts: dict[int, int] = {}
            for doc, end in alive:
                if end + i < len(doc.tokens):
                    token = doc.tokens[end + i]
                    counts[token] = counts.get(token, 0) + 1
            if not counts:
                break
            token = max(counts, key=counts.__getitem__)  # first seen (most recent) wins a tie
            if i == 0:
                support = counts[token]
            alive = [(d, e) for d, e in alive if e + i < len(d.tokens) and d.tokens[e + i] == token]
            drafts.append(token)
        return SuffixMatch(drafts, candidates[0][0], support, alive[0][0].owner)

    # ---- the tables ------------------------------------------------------------------------
    def _new_document(self, owner: str, tokens: Sequence[int]) -> int:
        self._serial += 1
        self._docs[self._serial] = _Document(owner, array("q"))
        self._append(self._serial, tokens)
        return self._serial

    def _append(self, serial: int, tokens: Sequence[int]) -> None:
        doc = self._docs[serial].tokens
        start = len(doc)
        doc.extend(tokens)
        base = serial << _OFFSET_BITS
        for end in range(max(start + 1, self.anchors[0]), len(doc) + 1):
            for n in self.anchors:
                if end >= n:
                    self._add(self._tables[n], hash(tuple(doc[end - n : end])), base | end)
        self.size += len(doc) - start

    def _add(self, table: dict[int, int | list[int]], key: int, position: int) -> None:
        self._entries += 1
        entry = table.get(key)
        if entry is None:
            table[key] = position
        elif isinstance(entry, int):
            table[key] = [entry, position]
        else:
            entry.append(position)
            if len(entry) > 2 * self.per_key:
                self._entries -= len(entry) - self.per_key
                del entry[: -self.per_key]

    def _evict(self) -> None:
        """Least recently extended documents out until the corpus fits; a document too big
        on its own keeps its latest half."""
        while self.size > self.capacity and self._docs:
            serial, doc = next(iter(self._docs.items()))
            if len(self._docs) == 1:
                keep = doc.tokens[len(doc.tokens) - self.capacity // 2 :]
                del self._docs[serial]
                self.size -= len(doc.tokens)
                fresh = self._new_document(doc.owner, keep)
                if self._live.get(doc.owner) == serial:
                    self._live[doc.owner] = fresh
                break
            del self._docs[serial]
            self.size -= len(doc.tokens)
            if self._live.get(doc.owner) == serial:
                del self._live[doc.owner]
        self._sweep_if_stale()

    def _sweep_if_stale(self) -> None:
        """Rebuild the tables once stale entries outnumber the live ones."""
        if self._entries <= 2 * self.size * len(self.anchors) + 4096:
            return
        self._tables = {n: {} for n in self.anchors}
        self._entries = 0
        docs = list(self._docs.items())
        self.size = 0
        for serial, doc in docs:
            tokens = doc.tokens
            doc.tokens = array("q")
            self._append(serial, tokens)


def _common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _match_length(doc: Sequence[int], end: int, context: Sequence[int], limit: int) -> int:
    """How many tokens before ``end`` in ``doc`` equal the end of ``context`` (at most ``limit``)."""
    limit = min(limit, end, len(context))
    j = 0
    while j < limit and doc[end - 1 - j] == context[-1 - j]:
        j += 1
    return j
