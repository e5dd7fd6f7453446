"""The checks every extractor's proposals pass (scoring/extraction.py): grounded, attributed, no loop."""

from __future__ import annotations

import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from scoring.extraction import (
    Grounded,
    Message,
    Proposal,
    Rejected,
    check,
    locate,
    message_text,
    normalize,
    said_key,
    service_spans,
)
from scoring.window import EXPAND_NOTE, HEADERS


def test_a_quote_is_found_across_whitespace_and_unicode_forms() -> None:
    text = "Hi!  I live in\n  São   Paulo, and I like tea."
    start, end = locate("I live in São Paulo", text) or (0, 0)
    assert normalize(text[start:end]) == "I live in São Paulo"
    decomposed = unicodedata.normalize("NFD", "I live in São Paulo")
    assert locate(decomposed, text) == (start, end)
    assert locate("I live in Rio", text) is None
    assert locate("   ", text) is None


@given(st.text(max_size=80), st.integers(0, 80), st.integers(0, 80))
def test_every_span_of_a_text_is_found_and_points_at_itself(text: str, a: int, b: int) -> None:
    nfc = unicodedata.normalize("NFC", text)
    a, b = sorted((min(a, len(nfc)), min(b, len(nfc))))
    piece = nfc[a:b]
    span = locate(piece, nfc)
    if not normalize(piece):
        assert span is None
        return
    assert span is not None
    start, end = span
    assert normalize(nfc[start:end]) == normalize(piece)


def _batch(*messages: tuple[str, str]) -> list[Message]:
    return [Message(i, role, text) for i, (role, text) in enumerate(messages)]


def test_only_grounded_quotes_of_user_messages_outside_the_services_text_pass() -> None:
    window_block = HEADERS["constraints"] + "- Don't recommend Redis Cluster.\n- Budget at most 5,000.\n"
    batch = _batch(
        ("user", "I live in Oslo.\n" + window_block + "Thanks!"),
        ("assistant", "I love sushi."),
        ("tool", '{"city": "Oslo"}'),
        ("user", "See [ctx: cache decision, 240 tokens — GET /v1/users/u/items/0192] for details."),
    )
    ok = check(Proposal(0, "fact", "I live in Oslo", key="location", value="oslo"), batch)
    assert isinstance(ok, Grounded) and ok.content == "I live in Oslo" and ok.key == "location"
    assert batch[0].text[ok.start : ok.end] == ok.content
    verdicts = {
        "ungrounded": Proposal(0, "fact", "John Doe lives in Berlin"),
        "not_user_message": Proposal(1, "preference", "I love sushi"),
        "unknown_message": Proposal(9, "fact", "I live in Oslo"),
        "service_text": Proposal(0, "constraint", "Don't recommend Redis Cluster", hard=True),
    }
    for reason, p in verdicts.items():
        got = check(p, batch)
        assert isinstance(got, Rejected) and got.reason == reason, (reason, got)
    assert check(Proposal(2, "fact", "Oslo"), batch).reason == "not_user_message"  # type: ignore[union-attr]
    assert check(Proposal(3, "fact", "cache decision"), batch).reason == "service_text"  # type: ignore[union-attr]
    assert isinstance(check(Proposal(0, "fact", "Thanks!"), batch), Grounded)  # after the block: the user's again


def test_a_window_with_handles_read_back_is_the_services_text() -> None:
    """A window pasted back as it is now: the note on handles, shortened lines starting with their handle and
    an index line without a URL are the service's text; the user's own words around it are not."""
    window = (
        EXPAND_NOTE
        + HEADERS["facts"]
        + "- [4c1b0a2e] The cache is Memcached.\n- [0f3e9d21] [ctx: cache decision, 240 tokens]\n\n"
    )
    batch = _batch(("user", "I live in Oslo.\n" + window + "Thanks!"), ("user", "See [ctx: fact: x, 9 tokens]."))
    for p in (
        Proposal(0, "fact", "expand(id) returns its whole text"),
        Proposal(0, "fact", "The cache is Memcached"),
        Proposal(0, "decision", "cache decision"),
        Proposal(1, "fact", "fact: x, 9 tokens"),
    ):
        assert check(p, batch).reason == "service_text", p  # type: ignore[union-attr]
    assert isinstance(check(Proposal(0, "fact", "I live in Oslo"), batch), Grounded)
    assert isinstance(check(Proposal(0, "fact", "Thanks!"), batch), Grounded)


def test_malformed_proposals_are_refused_before_anything_else() -> None:
    batch = _batch(("user", "I live in Oslo."))
    for p in (
        Proposal(0, "opinion", "I live in Oslo"),  # type: ignore[arg-type]
        Proposal(0, "fact", "   "),
        Proposal(0, "fact", "I live in Oslo", hard=True),
        Proposal(0, "fact", "I live in Oslo", confidence=1.5),
        Proposal(0, "fact", "x" * 1001),
    ):
        got = check(p, batch)
        assert isinstance(got, Rejected) and got.reason == "malformed", p


def test_a_record_without_a_slot_gets_one_from_its_words() -> None:
    a = said_key("constraint", "Don't  recommend Redis Cluster")
    assert a == said_key("constraint", "don't recommend redis cluster")
    assert a != said_key("preference", "Don't recommend Redis Cluster")
    assert a != said_key("constraint", "Don't recommend Kafka")
    assert a.startswith("said.constraint.")


def test_service_spans_cover_window_blocks_and_index_lines_only() -> None:
    text = "before\n" + HEADERS["facts"] + "- one\n  more of one\n\n- two\nafter\n"
    (block,) = service_spans(text)
    assert text[block[0] : block[1]].startswith("## ") and "after" not in text[block[0] : block[1]]
    assert service_spans("## My own heading\n- my list") == []


def test_message_text_reads_strings_and_text_parts() -> None:
    assert message_text({"role": "user", "content": "hi"}) == "hi"
    parts = [
        {"type": "text", "text": "a"},
        {"type": "image_url", "image_url": {"url": "x"}},
        {"type": "text", "text": "b"},
    ]
    assert message_text({"role": "user", "content": parts}) == "a\nb"
    assert message_text({"role": "assistant", "tool_calls": []}) == ""
