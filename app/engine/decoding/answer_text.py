"""The answer as text: each token id detokenised, and the rules that end an answer (EOS, a stop
string, the token limit). A stage after the decoding loop's ids, testable without a model.

A stop string may span tokens, and (Continue) the cut: the window it is looked for in starts
with the cut answer's own text, which the detokenizer replays.
"""

from __future__ import annotations

from dataclasses import replace

from transformers import PreTrainedTokenizerBase

from app.engine.decoding.detok import IncrementalDetokenizer
from app.engine.events import StopReason, TokenInfo

CONTINUABLE: tuple[StopReason, ...] = ("cancelled", "max_new_tokens")  # cuts an answer can go on from


class AnswerText:
    """The answer being built: detokenises each token and decides when to stop."""

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase,
        eos_ids: frozenset[int],
        limit: int,
        stop_strings: tuple[str, ...],
        limit_reason: StopReason = "max_new_tokens",
        context: tuple[int, ...] = (),
    ) -> None:
        self.detok = IncrementalDetokenizer(tokenizer, context)
        self.eos_ids = eos_ids
        self.limit = limit
        self.limit_reason = limit_reason  # what ``limit`` is: max_new_tokens or the context's room
        self.stop_strings = stop_strings
        self._tail_len = max((len(s) for s in stop_strings), default=0)
        # enough recent text to spot a stop string across tokens, and across a Continue cut
        self._tail = self.detok.context_text[-self._tail_len :] if self._tail_len else ""
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
        """Whether ``piece`` completes a stop string (one ending in it: an occurrence wholly
        inside the text before it was there already, e.g. in the cut answer being continued)."""
        if not self.stop_strings or not piece:
            return False
        before, window = len(self._tail), self._tail + piece
        self._tail = window[-self._tail_len :]
        return any(window.find(s, max(0, before - len(s) + 1)) >= 0 for s in self.stop_strings)

    def finish(self, tokens: list[TokenInfo]) -> list[TokenInfo]:
        """On the last step of an answer that ends for good, give any undecoded remainder to
        the last token. A cut that Continue can go on from (``CONTINUABLE``) keeps an
        incomplete last character in its ids only: the continuation emits it whole."""
        if self.stop_reason in CONTINUABLE:
            return tokens
        rest = self.detok.flush()
        if rest and tokens:
            tokens[-1] = replace(tokens[-1], text=tokens[-1].text + rest)
        return tokens
