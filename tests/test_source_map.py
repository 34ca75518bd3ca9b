"""The pairing of rendered Markdown text with its source, and of source characters with the
tokens that wrote them (pure text; the rendered view's own tests: tests/gui/
test_rendered_provenance.py)."""

from __future__ import annotations

import random

from app.ui.chat.source_map import NOT_SHOWN, SourceMap, align, token_spans
from app.ui.common.conversation import TokenRecord


def _shown(rendered: str, source: str) -> str:
    """The source characters the rendered ones were paired with, "·" for unpaired."""
    return "".join(source[p] if p != NOT_SHOWN else "·" for p in align(rendered, source))


def test_syntax_is_stepped_over_and_text_paired():
    assert _shown("Use two ways", "Use **two** ways") == "Use two ways"
    assert _shown("Title\nbody", "# Title\n\nbody") == "Title\nbody"
    assert _shown("first\nsecond", "1. first\n2. second") == "first\nsecond"
    assert _shown("a link to read", "a [link](https://example.com/long/path) to read") == "a link to read"
    assert _shown("\ndef f():", "```python\ndef f():\n```") == "\ndef f():"


def test_a_line_break_shown_as_a_space_or_a_block_break_is_paired_with_it():
    assert _shown("a soft break", "a soft\nbreak") == "a soft\nbreak"
    assert _shown("one\ntwo", "one\n\ntwo") == "one\ntwo"


def test_syntax_inside_a_stretch_does_not_break_it():
    # table cells (Qt puts each on its own line) and a list's number after an item
    source = "| a | **a** | `a` |\n|---|---|---|\n| a | **a** | `a` |\n"
    assert _shown("a\na\na\na\na\na", source).replace("\n", " ") == "a a a a a a"
    assert align("a\na\na\na\na\na", source)[4] == source.index("`a`") + 1
    source = "- bee\n1. bee bee moon"
    assert align("bee\nbee bee moon", source)[:3] == [2, 3, 4]


def test_a_character_the_source_does_not_hold_is_left_unpaired():
    assert _shown("a © b", "a &copy; b") == "a · b"
    assert _shown("\0\0\0\0code", "```\ncode") == "····code"  # a caption cut out (NUL)


def test_repeated_text_is_paired_with_its_own_occurrence_not_a_later_one():
    source = "The moon is **bright** tonight\nThe moon is bright tonight\n" * 2
    rendered = "The moon is bright tonight The moon is bright tonight\n" * 2
    pairs = align(rendered, source)
    assert pairs[12:18] == list(range(14, 20))  # the first "bright" is the one in **bright**
    assert pairs[39:45] == list(range(43, 49))


def test_entities_do_not_pull_the_next_word_into_their_letters():
    source = "fog&amp;moon fog"
    pairs = align("fog&moon fog", source)
    assert [source[p] for p in pairs[4:8]] == list("moon") and pairs[4] == 8


def test_pairs_only_equal_characters_in_order_for_any_input():
    rng = random.Random(7)
    for _ in range(300):
        source = "".join(rng.choice("ab *_`#\n|[]()1.") for _ in range(rng.randint(0, 60)))
        rendered = "".join(rng.choice("ab \n") for _ in range(rng.randint(0, 40)))
        pairs = align(rendered, source)
        shown = [(r, p) for r, p in enumerate(pairs) if p != NOT_SHOWN]
        assert all(rendered[r] == source[p] or (rendered[r].isspace() and source[p].isspace()) for r, p in shown)
        assert all(a[1] < b[1] for a, b in zip(shown, shown[1:]))  # pairs never cross


def _records(*pieces: tuple[str, str]) -> list[TokenRecord]:
    return [TokenRecord(text, kind, step) for step, (text, kind) in enumerate(pieces)]  # type: ignore[arg-type]


def test_source_characters_belong_to_the_token_that_wrote_them():
    records = _records(("# He", "draft"), ("llo", "target"), ("wor", "rejected"), ("\n", "draft"))
    spans = token_spans(records, "# Hello\n")
    assert spans.owner == [0, 0, 0, 0, 1, 1, 1, 3]
    assert spans.ends[2] == 7  # the rejected draft was proposed after "# Hello"


def test_a_text_that_is_not_its_tokens_end_to_end_is_aligned_to_them():
    records = _records(("Hi", "draft"), (" there", "target"), ("STOP", "target"))
    spans = token_spans(records, "Hi there")  # a stop string cut from the text
    assert spans.owner == [0, 0, 1, 1, 1, 1, 1, 1]
    records = _records(("Hello", "draft"), (" wor", "target"), ("ld", "draft"))
    assert token_spans(records, "Hello, world").owner == [0] * 5 + [-1] + [1] * 4 + [2] * 2


def test_runs_group_rendered_characters_by_token_and_rejected_drafts_go_after_the_last_shown_one():
    source = "**ab** c"
    rendered = "ab c"
    source_map = SourceMap(align(rendered, source))
    owner = [0, 0, 0, 1, 1, 1, 2, 2]  # "**a" · "b**" · " c"
    assert source_map.runs(owner) == [(0, 1, 0), (1, 2, 1), (2, 4, 2)]
    assert source_map.insertion_point(6) == 2  # after "b": the "**" after it is not shown
    assert source_map.insertion_point(0) == 0
