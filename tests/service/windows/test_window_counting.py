"""How the window counts its text: the exact BPEs count a window as the sum of its section blocks (so an
unchanged block is counted once and reused), the estimate counts the joined text; the memo is bounded."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.window import TITLES, line_overhead
from service.tokenizer import Tokenizer, build_tokenizer
from service.windows.service import TokenCounter

# Characters that sit on or near a block boundary in the BPE pre-tokenizers' rules: whitespace of every kind,
# newlines, '#', '-', '/', apostrophes of contractions, punctuation, letters of several scripts, marks, digits.
TRICKY = list(" \t\n\r\x0b\x0c\u00a0\u2028\u3000#-/.'sdtmlrve!?:;,[]{}()\"aB1é漢アЖ\u0301😀_\\|~")
pieces = st.text(alphabet=st.sampled_from(TRICKY), max_size=40) | st.text(max_size=40)


@pytest.fixture(scope="module", params=["o200k_base", "cl100k_base"])
def bpe(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Tokenizer:
    tokenizer = build_tokenizer(request.param, cache_dir=Path(tmp_path_factory.mktemp("tiktoken")))
    assert TokenCounter(tokenizer).additive
    return tokenizer


@settings(max_examples=1500, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(sorted(TITLES.values())), st.lists(pieces, max_size=3), st.booleans()),
        min_size=2,
        max_size=4,
    )
)
def test_a_window_text_counts_as_the_sum_of_its_blocks(
    bpe: Tokenizer, blocks: list[tuple[str, list[str], bool]]
) -> None:
    rendered = [
        f"## {title}\n" + "".join(f"{text}\n" if verbatim else f"- {text}\n" for text in lines) + "\n"
        for title, lines, verbatim in blocks
    ]
    assert bpe.count("".join(rendered)) == sum(bpe.count(b) for b in rendered)


def test_the_estimate_counts_the_joined_text() -> None:
    estimate = build_tokenizer("estimate", cache_dir=Path("unused"))
    assert not TokenCounter(estimate).additive  # it rounds per text
    assert estimate.count("## A\n- x\n\n" * 2) != 2 * estimate.count("## A\n- x\n\n")


def test_the_memo_is_bounded_by_entries_and_characters() -> None:
    seen: list[str] = []

    class Counting(Tokenizer):
        def count(self, text: str) -> int:
            seen.append(text)
            return len(text)

    counter = TokenCounter(Counting(name="estimate", exact=False), max_entries=3, max_chars=6_400)
    for text in ("a", "b", "c", "a"):
        assert counter(text) == 1
    assert seen == ["a", "b", "c"]  # "a" came from the memo
    counter("d")  # four entries: the least recently used ("b") goes
    counter("b")
    assert seen[-1] == "b"
    counter("x" * 101)  # over 1/64 of the characters allowed: counted, never kept
    counter("x" * 101)
    assert seen[-2:] == ["x" * 101] * 2


@pytest.mark.parametrize(
    "text",
    [
        "I went to Paris last May.",
        "Is the orders replica still lagging?",
        "alpha beta gamma",
        "the lag reached 45",
        "用户喜欢简短的回答",
        "Never deploy on Fridays!",
        "see docs/window.md",
        "(maybe)",
    ],
)
def test_a_lines_overhead_is_its_dash_and_a_newline_unless_that_joins_closing_punctuation(
    bpe: Tokenizer, text: str
) -> None:
    """The selection's estimate of a line (scoring.window.line_overhead) is exact for lines like these: one
    token for "- ", one for the newline after a word or a digit, none after punctuation. (The first word can
    still count one more or less with the space "- " puts before it: "replication" is two tokens, " replication"
    one.)"""
    assert bpe.count(f"- {text}\n") - bpe.count(text) == line_overhead(text)
    assert bpe.count(f"{text}\n") - bpe.count(text) == line_overhead(text, verbatim=True)
