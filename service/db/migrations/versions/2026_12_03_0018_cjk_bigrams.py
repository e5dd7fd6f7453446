"""Chinese and Japanese analysed by character pairs: ctxmem_tsv's CJK terms become each character and each
pair of adjacent characters of a CJK run (scoring.lexical.cjk_terms), and the English parser no longer sees
CJK runs (it kept each run as one word, which nothing matched); texts holding CJK are re-indexed

Revision ID: 20261203_0018
Revises: 20261203_0017
Create Date: 2026-12-03
"""

from collections.abc import Sequence

from alembic import op

revision: str = "20261203_0018"
down_revision: str | None = "20261203_0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# scoring.lexical.CJK_RANGES, as it was when this migration was written (a parity test holds them together).
CJK = "\\u3040-\\u30ff\\u3400-\\u9fff\\uac00-\\ud7af\\uf900-\\ufaff"

# The terms go in as they are (array_to_tsvector): no parser or dictionary between them and the index.
_CJK_TERMS = f"""
CREATE OR REPLACE FUNCTION ctxmem_cjk(content text) RETURNS text[] LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(array_agg(t.term ORDER BY r.n, i.i, t.k), '{{}}')
    FROM regexp_matches(content, '[{CJK}]+', 'g') WITH ORDINALITY AS r(m, n)
    CROSS JOIN LATERAL generate_series(1, char_length(r.m[1])) AS i(i)
    CROSS JOIN LATERAL (VALUES (1, substr(r.m[1], i.i, 1)), (2, substr(r.m[1], i.i, 2))) AS t(k, term)
    WHERE t.k = 1 OR i.i < char_length(r.m[1])
$$
"""

# A text without CJK (most) costs one regular-expression test more than the English configuration alone.
_TSV_NEW = f"""
CREATE OR REPLACE FUNCTION ctxmem_tsv(content text) RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN content ~ '[{CJK}]'
                THEN to_tsvector('english'::regconfig, regexp_replace(content, '[{CJK}]+', ' ', 'g'))
                     || array_to_tsvector(ctxmem_cjk(content))
                ELSE to_tsvector('english'::regconfig, content) END
$$
"""

# Migration 0006's definition, restored by the downgrade.
_TSV_OLD = f"""
CREATE OR REPLACE FUNCTION ctxmem_tsv(content text) RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT to_tsvector('english'::regconfig, content)
        || to_tsvector('simple'::regconfig,
               regexp_replace(regexp_replace(content, '[^{CJK}]+', ' ', 'g'), '([{CJK}])', ' \\1 ', 'g'))
$$
"""

# Only texts holding a CJK character are analysed differently; each re-indexed row gets a new change number
# so that a process's copy of the user's texts (service/recall/lexicon.py) reads it again.
_REINDEX = f"""
UPDATE item_search s SET tsv = ctxmem_tsv(c.content), seq = nextval('item_search_seq')
FROM context_item c WHERE c.id = s.item_id AND c.content ~ '[{CJK}]'
"""


def upgrade() -> None:
    op.execute(_CJK_TERMS)
    op.execute(_TSV_NEW)
    op.execute(_REINDEX)


def downgrade() -> None:
    op.execute(_TSV_OLD)
    op.execute("DROP FUNCTION IF EXISTS ctxmem_cjk(text)")
    op.execute(_REINDEX)
