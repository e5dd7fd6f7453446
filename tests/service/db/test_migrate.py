"""service/db/migrate.py: the revision graph the code knows and applying it in code. (Up from empty, down
and concurrent migrators: tests/db/test_migrations.py.)"""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from alembic.script import ScriptDirectory

from service.db import migrate
from service.db.engine import Database


def test_one_head_one_linear_history_of_date_prefixed_files() -> None:
    scripts = ScriptDirectory.from_config(migrate.alembic_config())
    assert scripts.get_heads() == [migrate.head_revision()]
    revisions = list(scripts.walk_revisions())  # head first
    assert {r.revision for r in revisions} == migrate.known_revisions()
    for newer, older in itertools.pairwise(revisions):
        assert newer.down_revision == older.revision  # no branches, no merges
    assert revisions[-1].down_revision is None
    names = [Path(r.path).name for r in revisions]
    assert all(re.fullmatch(r"\d{4}_\d{2}_\d{2}_\d{4}_[a-z0-9_]+\.py", n) for n in names), names
    assert names == sorted(names, reverse=True)  # the file names sort in the order they apply


def test_the_config_points_at_the_packaged_migrations() -> None:
    location = Path(migrate.alembic_config().get_main_option("script_location") or "")
    assert location.is_dir()
    assert (location / "env.py").is_file()


async def test_upgrading_a_database_at_head_changes_nothing(db: Database) -> None:
    assert await migrate.current_revision(db.engine) == migrate.head_revision()
    await migrate.upgrade(db.engine)
    assert await migrate.current_revision(db.engine) == migrate.head_revision()
