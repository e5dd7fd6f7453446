"""Per-user advisory locks: an erasure holds its user's exclusively; writes and the vector-outbox worker
hold it shared.

An erasure deletes rows the worker locks too (outbox rows, then ``context_item`` through the lexical
index's foreign key, in the worker's order) and the worker's order is not the erasure's, so the two
deadlocked (issue #12 B: about 1 erasure in 40 right after a write). With this lock taken first, an
erasure waits for the writes and worker batches already touching the user, and they for it: the worker
tries the lock without waiting and skips a user being erased (whose outbox rows the erasure removes).
The two-key form keeps these locks apart from the slot locks (``hashtextextended``, one bigint key); a
hash collision only makes two users wait for each other.
"""

from __future__ import annotations

USER_LOCK_SPACE = 0x63786D75  # "cxmu": first key of every user lock


def user_lock_sql(function: str, tenant_sql: str, user_sql: str) -> str:
    """A call of ``function`` (``pg_advisory_xact_lock``, ``..._shared``, ``pg_try_...``) on the user lock
    of the tenant and user given as SQL expressions (bind parameters or columns)."""
    return f"{function}({USER_LOCK_SPACE}, hashtext(CAST({tenant_sql} AS text) || chr(31) || CAST({user_sql} AS text)))"
