"""Incremental detokenisation that never emits half a character.

Byte-level tokenizers split accents, CJK and emoji across tokens; decoding one token at a
time would print U+FFFD. We decode a small window of recent ids and emit only the text that
became complete (the approach of TGI and vLLM). Every piece is a suffix of settled text, so
the pieces concatenate to the decoded answer.

An answer cut where it can be continued (stopped, or out of new tokens) may end inside a
character: its ids hold the incomplete bytes, its text only the complete characters, and a
detokenizer started with those ids as ``context`` (``Continue``) emits that character whole
as soon as the continuation completes it. An answer that ends for good flushes the rest
(an incomplete character then shows as U+FFFD).
"""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase

REPLACEMENT = "\ufffd"


class IncrementalDetokenizer:
    def __init__(self, tokenizer: PreTrainedTokenizerBase, context: list[int] | tuple[int, ...] = ()) -> None:
        """``context``: ids whose complete characters were already emitted (a cut answer being
        continued); they are replayed, so an incomplete last character is emitted whole by
        the first ``add`` that completes it, with the spacing it would have had uncut."""
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self._prefix_offset = 0  # window start: context so spaces and merges decode right
        self._read_offset = 0  # ids before this are already emitted
        # the context's complete characters, as emitted before the cut (what a stop string
        # spanning the cut starts with)
        self.context_text = "".join(self.add(token_id) for token_id in context)

    def _decode(self, ids: list[int]) -> str:
        text = self.tokenizer.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)
        return str(text)  # one sequence in, one string out

    def add(self, token_id: int) -> str:
        """Append one id; return the newly completed text (possibly empty)."""
        self.ids.append(token_id)
        settled = self._decode(self.ids[self._prefix_offset : self._read_offset])
        current = self._decode(self.ids[self._prefix_offset :])
        if len(current) <= len(settled) or current.endswith(REPLACEMENT):
            return ""  # nothing new, or a character still incomplete
        self._prefix_offset = self._read_offset
        self._read_offset = len(self.ids)
        return current[len(settled) :]

    @property
    def pending(self) -> bool:
        """Whether ids are held back (an incomplete character at the end)."""
        return self._read_offset < len(self.ids)

    def flush(self) -> str:
        """Whatever is left when the answer ends (an incomplete character shows as U+FFFD)."""
        settled = self._decode(self.ids[self._prefix_offset : self._read_offset])
        current = self._decode(self.ids[self._prefix_offset :])
        self._prefix_offset = self._read_offset = len(self.ids)
        return current[len(settled) :]
