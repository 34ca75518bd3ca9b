"""Incremental detokenisation that never emits half a character.

Byte-level tokenizers split accents, CJK and emoji across tokens; decoding one token at a
time would print U+FFFD. We decode a small window of recent ids and emit only the text that
became complete (the approach of TGI and vLLM). Every piece is a suffix of settled text, so
the pieces concatenate to the decoded answer.
"""

from __future__ import annotations

from transformers import PreTrainedTokenizerBase

REPLACEMENT = "\ufffd"


class IncrementalDetokenizer:
    def __init__(self, tokenizer: PreTrainedTokenizerBase) -> None:
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self._prefix_offset = 0  # window start: context so spaces and merges decode right
        self._read_offset = 0  # ids before this are already emitted

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

    def flush(self) -> str:
        """Whatever is left when the answer ends (an incomplete character shows as U+FFFD)."""
        settled = self._decode(self.ids[self._prefix_offset : self._read_offset])
        current = self._decode(self.ids[self._prefix_offset :])
        self._prefix_offset = self._read_offset = len(self.ids)
        return current[len(settled) :]
