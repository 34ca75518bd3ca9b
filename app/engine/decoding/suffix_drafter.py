"""The suffix drafter: prompt lookup on this conversation, plus the suffix index over every
conversation the app has seen (``suffix_index``). The longer match wins: the index's, at
least its shortest anchor long, over prompt lookup's 1-3 tokens. Its drafts are point masses
like prompt lookup's (no distribution), so the acceptance rules keep the output exact; its
evidence key is its own (``suffix_key``: by match length), so auto k learns how far to trust it.

The index is shared with the engine, which records every prompt and emitted token in it
under the conversation's owner; ``owner`` tells this conversation's drafts from earlier ones.
"""

from __future__ import annotations

from app.engine.decoding.acceptance import Rule
from app.engine.decoding.cost import suffix_key
from app.engine.decoding.drafters import PromptLookupDrafter, Proposal, _until_eos
from app.engine.decoding.suffix_index import SuffixIndex
from app.engine.events import EARLIER, THIS_CONVERSATION

SUFFIX_DRAFTER_NAME = "suffix index"


class SuffixDrafter:
    name = SUFFIX_DRAFTER_NAME
    cheap = True

    def __init__(self, index: SuffixIndex, eos_ids: frozenset[int] = frozenset()) -> None:
        self.index = index
        self.eos_ids = eos_ids
        self.lookup = PromptLookupDrafter(eos_ids)
        self.owner: str | None = None  # the conversation being answered (set per answer)
        self.hidden: str | None = None  # a conversation not drafted from (a rerun of its answer)

    def propose(
        self, tokens: list[int], k: int, rule: Rule, confidence_threshold: float, new_turn: bool = True
    ) -> Proposal:
        local = self.lookup.propose(tokens, k, rule, confidence_threshold, new_turn)
        found = self.index.match(tokens, k, self.hidden)
        if found is None or found.length <= local.ngram:
            return local
        drafts = _until_eos(found.tokens, self.eos_ids)
        origin = THIS_CONVERSATION if found.owner == self.owner else EARLIER
        return Proposal(
            drafts, None, [None] * len(drafts), passes=0, ngram=found.length, key=suffix_key(found.length),
            origin=origin,
        )

    def unseen(self, tokens: list[int]) -> int:
        return 0  # the engine indexes as it goes

    def reset(self) -> None:
        self.lookup.reset()  # the index is the app's memory, not a cache: it stays
