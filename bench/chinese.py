"""Chinese lexical analysis compared: which way of turning Chinese text into terms ranks the answering turn
first and keeps texts that share only characters with the question down. The analyses, each with the
English words (lower-cased runs of letters and digits outside CJK, unstemmed) beside:

* ``chars``: every CJK character a term, plus the whole run (what ``ctxmem_tsv`` did before migration 0018:
  the English parser kept a run of Chinese characters as one word);
* ``pairs``: each CJK run's adjacent character pairs, a lone character as itself (Lucene's CJKAnalyzer);
* ``chars+pairs``: both (``scoring.lexical.cjk_terms``, what ``ctxmem_tsv`` does since migration 0018);
* ``jieba``: the jieba segmenter's search mode (its words, and the dictionary words inside long ones), if
  ``jieba`` is installed (it is not a dependency: ``pip install jieba`` to compare).

Every turn of a conversation is a text ("user: …", as ``bench.recall_eval`` stores it), ranked by the BM25
of ``scoring.lexical`` for each question. Reported per data set and analysis: P@1 (the best text answers
the question), hit@3 (an answering text among the best 3), MRR, the evidence-in-window rate (texts taken
whole in rank order while they fit ``--budget`` tokens, ``scoring.tokens.estimate_tokens``; every answering
turn among them), "unrelated" (the mean, over questions, of the best non-answering text's score as a share
of the best score: how close noise comes) and "scored" (the share of all texts the question scores at all).
This is the lexical ranking alone; ``python -m bench.recall_eval --data bench/data/chinese_eval.json``
measures the service's window (lexical and vector rankings, conversation context) on the same data.

    python -m bench.chinese [--budget 60]

Data: ``bench/data/chinese_eval.json`` (synthetic, written for this eval: 30 questions, each answered by one
turn, among turns written to share the question's characters but not its words; bench/data/README.md) and
the ``chinese`` questions of ``bench/data/recall_eval.json`` (its ``team`` conversation).
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from scoring.lexical import CJK_RANGES, bm25, cjk_terms
from scoring.tokens import estimate_tokens

DATA = Path(__file__).parent / "data"
_CJK_RUN = re.compile(f"[{CJK_RANGES}]+")
_WORD = re.compile(r"[^\W_]+")


def _words(text: str) -> list[str]:
    return _WORD.findall(_CJK_RUN.sub(" ", text).lower())


def chars(text: str) -> list[str]:
    runs = _CJK_RUN.findall(text)
    return _words(text) + runs + [c for run in runs for c in run]


def pairs(text: str) -> list[str]:
    runs = _CJK_RUN.findall(text)
    return _words(text) + [p for r in runs for p in ([r] if len(r) == 1 else [r[i : i + 2] for i in range(len(r) - 1)])]


def chars_and_pairs(text: str) -> list[str]:
    return _words(text) + cjk_terms(text)


def jieba_terms() -> Callable[[str], list[str]] | None:
    try:
        import logging

        import jieba  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        return None
    jieba.setLogLevel(logging.WARNING)

    def analyse(text: str) -> list[str]:
        return _words(text) + [w for run in _CJK_RUN.findall(text) for w in jieba.cut_for_search(run)]

    return analyse


METRICS = ("P@1", "hit@3", "MRR", "window", "unrelated", "scored")


def evaluate(
    conversation: dict[str, Any], questions: list[dict[str, Any]], analyse: Callable[[str], list[str]], budget: int
) -> dict[str, float]:
    """The metrics of the module docstring, each the mean over ``questions``."""
    turns = [t for s in conversation["sessions"] for t in s["turns"]]
    texts = [f"{t['role']}: {t['text']}" for t in turns]
    keys = list(range(len(turns)))
    lexemes = [set(analyse(x)) for x in texts]
    lengths = np.array([len(x) for x in lexemes], dtype=np.int64)
    total = dict.fromkeys(METRICS, 0.0)
    for q in questions:
        answers = {i for i, t in enumerate(turns) if t["id"] in q["answer_turns"]}
        terms = sorted(set(analyse(q["question"])))
        postings = [np.array([i for i, x in enumerate(lexemes) if term in x], dtype=np.int64) for term in terms]
        ranked = bm25(postings, lengths, keys, documents=len(texts), limit=len(texts))
        order = [k for k, _ in ranked]
        total["P@1"] += bool(order) and order[0] in answers
        total["hit@3"] += bool(answers & set(order[:3]))
        rank = next((n for n, k in enumerate(order, 1) if k in answers), None)
        total["MRR"] += 1.0 / rank if rank else 0.0
        used, shown = 0, set()
        for k in order:
            cost = estimate_tokens(texts[k])
            if used + cost <= budget:
                used += cost
                shown.add(k)
        total["window"] += answers <= shown
        best = ranked[0][1] if ranked else 0.0
        other = max((s for k, s in ranked if k not in answers), default=0.0)
        total["unrelated"] += other / best if best else 0.0
        total["scored"] += len(ranked) / len(texts)
    return {m: v / len(questions) for m, v in total.items()}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--budget", type=int, default=60, help="tokens of the lexical window (default 60)")
    args = p.parse_args()
    analyses: dict[str, Callable[[str], list[str]] | None] = {
        "chars": chars,
        "pairs": pairs,
        "chars+pairs": chars_and_pairs,
        "jieba": jieba_terms(),
    }
    zh = json.loads((DATA / "chinese_eval.json").read_text(encoding="utf-8"))
    team = json.loads((DATA / "recall_eval.json").read_text(encoding="utf-8"))
    sets = [
        ("chinese_eval", zh["conversations"][0], zh["questions"]),
        (
            "recall_eval team",
            next(c for c in team["conversations"] if c["id"] == "team"),
            [q for q in team["questions"] if q["kind"] == "chinese"],
        ),
    ]
    print(f"{'data':<18}{'analysis':<13}{'questions':>10}" + "".join(f"{m:>11}" for m in METRICS))
    for name, conversation, questions in sets:
        for label, analyse in analyses.items():
            if analyse is None:
                print(f"{name:<18}{label:<13}  (not installed)")
                continue
            got = evaluate(conversation, questions, analyse, args.budget)
            print(f"{name:<18}{label:<13}{len(questions):>10}" + "".join(f"{got[m]:>11.3f}" for m in METRICS))
    print(f"window = every answering turn among the texts that fit {args.budget} tokens in rank order")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
