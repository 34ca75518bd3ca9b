"""Which Markdown source character each rendered character shows, and which token each
source character came from. Pure text, no Qt: the rendered view uses it to carry token
provenance onto rendered Markdown.

Rendering drops syntax (``**``, ``#``, fences, list markers, backslashes, link targets),
turns line breaks into spaces or block breaks, decodes entities and adds a little text of its
own (the "Copy code" captions are cut out before aligning). So the rendered text is *almost* a
subsequence of the source. ``align`` walks both strings together: equal characters (whitespace
counts as equal to whitespace) are paired; at a difference it picks a way to get in step again:
skip some source (syntax), scored by how long the two run equal afterwards less what the skip
costs (skipping letters costs, skipping syntax almost nothing), or else leave the rendered
character unpaired (a decoded entity). A rendered character is only ever paired with an identical
source character (or whitespace with whitespace), and pairs never cross; a character that
cannot be placed is left unpaired (-1) rather than guessed.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

from app.ui.common.conversation import TokenRecord

NOT_SHOWN = -1
_ANCHORS = ((16, 4096), (8, 1024), (4, 256), (2, 64), (1, 12))  # (length, how far ahead)
_RUN_MAX_STEP = 3  # letters or digits in a row a run may step over (a list's "12.")
_RUN_CAP = 16  # how far a candidate's equal run is counted: further says little more
# syntax whose letters are never shown: link targets, a fence's info string, entities (their
# "&" may have paired with a decoded "&"), list numbers
_SYNTAX_WITH_WORDS = re.compile(
    r"\]\([^)]*\)|(?:`{3,}|~{3,})[^\n]*|&?(?:#\d+|#[xX][0-9a-fA-F]+|[a-zA-Z][a-zA-Z0-9]{1,31});|\d+[.)]"
)


def _normal(text: str) -> str:
    """Every whitespace character (newline, tab, U+2028, no-break space...) as one space."""
    return "".join(" " if c.isspace() else c for c in text)


def _run(a: str, i: int, b: str, j: int) -> int:
    """How well ``a`` from ``i`` and ``b`` from ``j`` are in step: the characters that pair
    (up to _RUN_CAP), stepping over ``b``'s syntax on the way (``**``, a cell's ``|``, a list's
    ``1.``), less one for each letter or digit stepped over to pair again."""
    paired = penalty = stepped = 0
    while paired < _RUN_CAP and i < len(a) and j < len(b):
        if a[i] == b[j]:
            paired += 1
            penalty += stepped
            stepped = 0
            i += 1
        elif b[j].isalnum():
            stepped += 1
            if stepped > _RUN_MAX_STEP:
                break
        j += 1
    return paired - penalty


def _skip_cost(skipped: str) -> float:
    """What skipping this much source costs: little for syntax, one per letter or digit of
    text (text the rendering shows should be paired, not jumped over)."""
    text = _SYNTAX_WITH_WORDS.sub("", skipped)
    letters = sum(c.isalnum() for c in text)
    return letters + (len(skipped) - letters) / 16


def _resync(r: str, i: int, s: str, j: int) -> int:
    """How much source to skip to be in step again at ``r[i]``: the nearby candidate whose
    equal run after it (up to _RUN_CAP) best outweighs what the skip costs; -1 when none is
    worth it (``r[i]`` then has no source counterpart)."""
    best_score, best_skip = 0.0, -1
    tried = set()
    for length, ahead in _ANCHORS:
        anchor = r[i : i + length]
        if len(anchor) < length and length > 1:
            continue
        pos = s.find(anchor, j, j + ahead + len(anchor))
        if pos < 0 or pos in tried:
            continue
        tried.add(pos)
        score = _run(r, i, s, pos) - _skip_cost(s[j:pos])
        if score > best_score:
            best_score, best_skip = score, pos - j
    return best_skip


def align(rendered: str, source: str) -> list[int]:
    """For each rendered character, the index of the source character it shows, or -1."""
    r, s = _normal(rendered), _normal(source)
    pairs = [NOT_SHOWN] * len(r)
    i = j = 0
    while i < len(r) and j < len(s):
        if r[i] == s[j]:
            pairs[i] = j
            i += 1
            j += 1
            continue
        skip = _resync(r, i, s, j)
        if skip < 0:
            i += 1  # shown but not in the source here (a decoded entity): left unpaired
        else:
            j += skip
    return pairs


@dataclass(frozen=True)
class TokenSpans:
    """Where each token's text lies in an answer's source: ``owner[c]`` is the index (into the
    records) of the token that wrote source character ``c``, or -1; ``ends[n]`` is where the
    text of the non-rejected records before record ``n`` ends — where a rejected draft ``n``
    was proposed."""

    owner: list[int]
    ends: list[int]


def token_spans(records: Sequence[TokenRecord], source: str) -> TokenSpans:
    """Source characters → records. The answer's text is its tokens' texts end to end, so this
    is a running offset; where it is not (an edited or trimmed text), the two are aligned."""
    written: list[int] = []  # for each character of the tokens' texts, its record
    ends: list[int] = []
    for index, record in enumerate(records):
        ends.append(len(written))
        if record.kind != "rejected":
            written.extend([index] * len(record.text))
    text = "".join(r.text for r in records if r.kind != "rejected")
    if text == source:
        return TokenSpans(written, ends)
    pairs = align(text, source)
    owner = [NOT_SHOWN] * len(source)
    for c, s in enumerate(pairs):
        if s != NOT_SHOWN:
            owner[s] = written[c]
    in_source = _mapped_ends(pairs)
    return TokenSpans(owner, [in_source[e] for e in ends])


def _mapped_ends(pairs: list[int]) -> list[int]:
    """For each offset e in the aligned text (0..len), the source offset just after the last
    paired character before e."""
    out = [0] * (len(pairs) + 1)
    last = 0
    for c, s in enumerate(pairs):
        out[c] = last
        if s != NOT_SHOWN:
            last = s + 1
    out[len(pairs)] = last
    return out


class SourceMap:
    """The pairing of a rendered text with its source, both ways."""

    def __init__(self, pairs: list[int]) -> None:
        self.pairs = pairs  # rendered index → source index or -1
        self._shown = [(s, r) for r, s in enumerate(pairs) if s != NOT_SHOWN]  # increasing in both
        self._sources = [s for s, _ in self._shown]

    def insertion_point(self, source_offset: int) -> int:
        """The rendered position just after the last shown character before ``source_offset``:
        where text proposed at that point of the source goes."""
        k = bisect_left(self._sources, source_offset)
        return self._shown[k - 1][1] + 1 if k else 0

    def runs(self, owner: Sequence[int]) -> list[tuple[int, int, int]]:
        """(start, end, record) for each stretch of rendered characters written by one token,
        next to each other on screen."""
        runs: list[tuple[int, int, int]] = []
        for r, s in enumerate(self.pairs):
            token = owner[s] if s != NOT_SHOWN and s < len(owner) else NOT_SHOWN
            if token == NOT_SHOWN:
                continue
            if runs and runs[-1][2] == token and runs[-1][1] == r:
                start, _, _ = runs[-1]
                runs[-1] = (start, r + 1, token)
            else:
                runs.append((r, r + 1, token))
        return runs
