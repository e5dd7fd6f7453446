"""bench.locomo's pure parts: the BM25 baseline, the budget filling it uses, and the LoCoMo loader (no database)."""

from __future__ import annotations

import json
import math
import zipfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from bench.common import fill
from bench.locomo import Sweep, bm25_scores, leave_one_out, load, parse_date_time, words
from service.settings import Settings

DOCS = [
    "The cat sat on the mat.",
    "Dogs chase cats in the park.",
    "A quiet afternoon reading about astronomy and telescopes",
    "Telescope prices: a TELESCOPE for astronomy beginners",
]


def test_words_are_lowercase_word_runs() -> None:
    assert words("Hello, WORLD! it's 2023_ok") == ["hello", "world", "it", "s", "2023_ok"]


def test_bm25_ranks_the_document_with_both_terms_and_the_repeated_one_first() -> None:
    scores = bm25_scores("telescope astronomy?", DOCS)
    assert max(range(4), key=scores.__getitem__) == 3
    # "telescopes" is not "telescope" (no stemming): document 2 matches on "astronomy" alone.
    assert scores[3] > scores[2] > 0
    assert scores[0] == scores[1] == 0


def test_bm25_has_no_stemming_and_no_stop_words() -> None:
    cats = bm25_scores("cats", DOCS)
    assert cats[1] > 0
    assert cats[0] == cats[2] == cats[3] == 0
    # "the" is in two documents and counts like any other term.
    assert bm25_scores("the", DOCS)[0] > 0


def test_bm25_score_by_hand() -> None:
    # "astronomy": df 2 of N 4; in document 3 (7 tokens; average length (6 + 6 + 8 + 7) / 4) once.
    k1, b = 1.2, 0.75
    idf = math.log(1 + (4 - 2 + 0.5) / (2 + 0.5))
    expected = idf * 1 * (k1 + 1) / (1 + k1 * (1 - b + b * 7 / (27 / 4)))
    assert bm25_scores("astronomy", DOCS)[3] == pytest.approx(expected)
    # A repeated query term counts once; an unknown one adds nothing.
    assert bm25_scores("astronomy astronomy zebra", DOCS) == bm25_scores("astronomy", DOCS)
    assert bm25_scores("x", []) == []


def test_fill_by_scores_skips_a_turn_that_does_not_fit_and_goes_on() -> None:
    t = datetime(2023, 1, 1, tzinfo=UTC)
    rows = [
        {"id": "a", "observed_at": t, "token_cost": 50, "content": "ends in a word"},
        {"id": "b", "observed_at": t + timedelta(minutes=1), "token_cost": 500, "content": "Long."},
        {"id": "c", "observed_at": t + timedelta(minutes=2), "token_cost": 30, "content": "Ends in punctuation."},
    ]

    def count(text: str) -> int:
        return 10

    # 100 - 10 for the question and headings - 2 = 88 left; a line costs token_cost + 1 for its "- ", + 1 for
    # its newline unless that joins closing punctuation: a 52, c 31.
    assert fill(rows, "q?", 100, count, {"b": 3.0, "a": 2.0, "c": 1.0}) == {"a", "c"}
    # The sliding window stops at the first turn that does not fit: c (newest), then b is too big.
    assert fill(rows, "q?", 100, count) == {"c"}


def test_parse_date_time() -> None:
    assert parse_date_time("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_date_time("12:09 am on 13 September, 2023") == datetime(2023, 9, 13, 0, 9, tzinfo=UTC)
    assert parse_date_time("12:30 pm on 1 January, 2024") == datetime(2024, 1, 1, 12, 30, tzinfo=UTC)
    with pytest.raises(ValueError, match="not a LoCoMo date"):
        parse_date_time("8 May 2023")


def _sample() -> dict[str, Any]:
    return {
        "speaker_a": "Ann",
        "speaker_b": "Bob",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"dia_id": "D1:1", "speaker": "Ann", "text": "I adopted a dog."},
            {"dia_id": "D1:2", "speaker": "Bob", "text": "Look!", "blip_caption": "a photo of a boat", "img_url": []},
        ],
        "session_2_date_time": "10:04 am on 19 June, 2023",
        "session_2": [{"dia_id": "D2:1", "speaker": "Ann", "text": "The dog is called Rex."}],
        "session_3_date_time": "9:00 am on 1 July, 2023",
        "qa": [
            {"question": "What did Ann adopt?", "answer": "a dog", "category": 4, "evidence": ["D1:1"]},
            {"question": "Dog and boat?", "answer": "x", "category": 1, "evidence": ["D1:1", "D1:2; D2:1", "D2:1"]},
            {"question": "What did Bob adopt?", "adversarial_answer": "a cat", "category": 5, "evidence": ["D1:1"]},
            {"question": "Only malformed?", "answer": "y", "category": 2, "evidence": ["D:1:2"]},
            {"question": "No evidence?", "answer": "z", "category": 3, "evidence": []},
        ],
    }


def test_load_a_directory_of_conversations(tmp_path: Path) -> None:
    (tmp_path / "7.json").write_text(json.dumps(_sample()), encoding="utf-8")
    (tmp_path / "README.md").write_text("not data", encoding="utf-8")
    data = load(tmp_path)
    (conv,) = data.conversations
    assert (conv.sample_id, conv.user_id, conv.speakers) == ("7", "locomo-7", ("Ann", "Bob"))
    assert [t.content for t in conv.turns] == [
        "Ann: I adopted a dog.",
        "Bob: Look! [shares a photo: a photo of a boat]",
        "Ann: The dog is called Rex.",
    ]
    assert [t.session for t in conv.turns] == ["session_1", "session_1", "session_2"]
    assert [t.observed_at for t in conv.turns] == [
        datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
        datetime(2023, 5, 8, 13, 57, tzinfo=UTC),
        datetime(2023, 6, 19, 10, 4, tzinfo=UTC),
    ]
    assert [(q.id, q.category, q.evidence, q.dropped) for q in conv.questions] == [
        ("7-q1", 4, ("D1:1",), ()),
        ("7-q2", 1, ("D1:1", "D2:1"), ("D1:2; D2:1",)),
    ]
    assert [(x["id"], x["reason"]) for x in data.left_out] == [
        ("7-q3", "category 5 (adversarial)"),
        ("7-q4", "no evidence id names a turn"),
        ("7-q5", "no evidence listed"),
    ]
    assert data.dropped_evidence == [
        {"question": "7-q2", "evidence": "D1:2; D2:1"},
        {"question": "7-q4", "evidence": "D:1:2"},
    ]
    assert data.notes == ["7: 1 sessions have a date and no turns (session_3..session_3)"]


def test_load_locomo10_json_and_zip(tmp_path: Path) -> None:
    other = _sample() | {"speaker_a": "Cy"}
    samples = [
        {
            "sample_id": "conv-1",
            "conversation": {k: v for k, v in _sample().items() if k != "qa"},
            "qa": _sample()["qa"],
        },
        {"sample_id": "conv-2", "conversation": {k: v for k, v in other.items() if k != "qa"}, "qa": other["qa"]},
    ]
    plain = tmp_path / "locomo10.json"
    plain.write_text(json.dumps(samples), encoding="utf-8")
    packed = tmp_path / "locomo10.zip"
    with zipfile.ZipFile(packed, "w") as z:
        z.write(plain, "data/locomo10.json")
    for path in (plain, packed):
        data = load(path)
        assert [(c.sample_id, c.user_id, c.speakers[0]) for c in data.conversations] == [
            ("conv-1", "locomo-conv-1", "Ann"),
            ("conv-2", "locomo-conv-2", "Cy"),
        ]
        assert [len(c.questions) for c in data.conversations] == [2, 2]
        assert len(data.left_out) == 6
        assert [c.sample_id for c in load(path, limit=1).conversations] == ["conv-1"]


def test_leave_one_out_chooses_each_conversations_value_on_the_others() -> None:
    """The value for a conversation is the best on the other ones (ties: the default, then the first listed)
    and is judged on the one left out."""
    answered = {
        0.0: {"a": 10, "b": 5, "c": 5},
        0.25: {"a": 4, "b": 8, "c": 8},
        0.5: {"a": 9, "b": 6, "c": 6},
    }
    loo = leave_one_out(answered, 0.25)
    # a left out: b + c best at 0.25 (16) → 4; b left out: a + c: 0.0 15, 0.25 12, 0.5 15 → tie, first listed 0.0
    # → 5; c left out: the same as b → 5.
    assert loo["per_conversation"] == {
        "a": {"chosen": 0.25, "answered": 4},
        "b": {"chosen": 0.0, "answered": 5},
        "c": {"chosen": 0.0, "answered": 5},
    }
    assert loo["total"] == 14 and loo["default_total"] == 20
    tie = leave_one_out({1: {"a": 3, "b": 3}, 2: {"a": 3, "b": 3}}, 2)
    assert {c: v["chosen"] for c, v in tie["per_conversation"].items()} == {"a": 2, "b": 2}


def test_sweep_parses_a_setting_and_its_values_and_refuses_an_unknown_one() -> None:
    sweep = Sweep.parse("recall.session_share=0,0.1,0.25")
    assert (sweep.group, sweep.name, sweep.values) == ("recall", "session_share", [0, 0.1, 0.25])
    settings = Settings()
    changed = sweep.settings(settings, 0.1)
    assert changed.recall.session_share == 0.1 and settings.recall.session_share == 0.25
    assert changed.recall.question_share == settings.recall.question_share
    for bad in ("recall.session_share", "session_share=0", "recall.nope=1"):
        with pytest.raises(SystemExit):
            Sweep.parse(bad).settings(settings, 1)
    with pytest.raises(ValidationError):  # a value the setting refuses
        sweep.settings(settings, 2)
