"""Settings (service/settings.py): grouped by concern, set by the flat CTXMEM_* names every deployment uses
(docs/configuration.md), by the nested names, or by keyword; URLs mean servers unless told otherwise
(docs/design.md §5)."""

from __future__ import annotations

import json
import os
import re
import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from scoring.fourc import FourCWeights
from scoring.window_policy import ValueModel
from service.settings import FLAT_NAMES, Settings, group_and_field

ROOT = Path(__file__).resolve().parents[2]
# | `CTXMEM_X` | default | `group.field` | meaning |
ROWS = re.findall(
    r"^\| `(CTXMEM_[A-Z0-9_]+)` \| [^|]* \| `([a-z0-9_.]+)` \|",
    (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8"),
    re.M,
)
# Values that are not the default and that the field accepts, for the types a rule cannot guess.
SAMPLES: dict[str, Any] = {
    "database.url": "postgresql://ctxmem@db.internal:5432/ctxmem",
    "database.replica_urls": ["postgresql://ctxmem@r1.internal/ctxmem", "postgresql://ctxmem@r2.internal/ctxmem"],
    "server.host": "10.0.0.7",
    "server.workers": 3,
    "lifetimes.by_type_seconds": {"tool_result": 60},
    "lifetimes.by_scope_seconds": {"step": 60},
    "jobs.schedules": {"expire": "off", "reindex": "interval:60"},
    "profiles.decay_days_overrides": {"finance": 30, "coding.ability": 365},
    "window.value.section_weights": {"background": 0.5},
    "extraction.extractor": "off",  # "llm" needs its endpoint and model (tested apart)
}


@pytest.fixture(autouse=True)
def _no_ctxmem_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in os.environ if n.upper().startswith("CTXMEM_")]:
        monkeypatch.delenv(name)


def _field(path: str) -> FieldInfo:
    model: type[BaseModel] = Settings
    info: FieldInfo | None = None
    for part in path.split("."):
        info = model.model_fields[part]
        if isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel):
            model = info.annotation
    assert info is not None
    return info


def _is_group(path: str) -> bool:
    return isinstance(_field(path).get_default(call_default_factory=True), BaseModel)


def _read(settings: BaseModel, path: str) -> Any:
    value: Any = settings
    for part in path.split("."):
        value = getattr(value, part)
    return value


def _sample(path: str) -> Any:
    """A valid value for the setting at ``path`` that differs from its default."""
    if path in SAMPLES:
        return SAMPLES[path]
    info = _field(path)
    default = info.get_default(call_default_factory=True)
    kinds = set(typing.get_args(info.annotation)) or {info.annotation}
    if isinstance(default, bool):
        return not default
    if typing.get_origin(info.annotation) is typing.Literal:
        return next(v for v in typing.get_args(info.annotation) if v != default)
    if isinstance(default, int):
        return default + 1
    if isinstance(default, float):
        return default / 2
    if isinstance(default, Path) or Path in kinds:
        return Path("/srv/ctxmem-elsewhere")
    if float in kinds:
        return 0.25
    if int in kinds:
        return 2
    if str in kinds:
        return "sample-value"
    raise AssertionError(f"no sample for {path}: {info.annotation}")


def _raw(value: Any) -> str:
    """The value as an operator writes it in the environment."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):  # a list of strings: comma-separated
        return ",".join(value)
    return json.dumps(value) if isinstance(value, dict) else str(value)


def test_every_field_has_one_flat_name() -> None:
    fields = {f"{g}.{f}" for g, info in Settings.model_fields.items() for f in info.annotation.model_fields}  # type: ignore[union-attr]
    assert sorted(FLAT_NAMES.values()) == sorted(fields)  # every field once, no field twice
    assert not set(FLAT_NAMES) & set(Settings.model_fields)  # CTXMEM_<GROUP> is a group's JSON, never a flat name


def test_the_page_documents_every_flat_name_where_it_lives() -> None:
    documented = dict(ROWS)
    assert len(documented) == len(ROWS) >= 90
    flat = {f"CTXMEM_{name.upper()}": path for name, path in FLAT_NAMES.items()}
    assert {var: documented.get(var) for var in flat} == flat


@pytest.mark.parametrize(("var", "path"), ROWS, ids=[var for var, _ in ROWS])
def test_each_documented_variable_sets_its_setting(var: str, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    if _is_group(path):  # a group inside a group, as one JSON object: one of its fields stands for all
        sub = min(_field_names(path))
        value = _sample(f"{path}.{sub}")
        monkeypatch.setenv(var, json.dumps({sub: value}))
        assert _read(Settings(), f"{path}.{sub}") == value
        return
    value = _sample(path)
    assert value != _read(Settings(), path)
    monkeypatch.setenv(var, _raw(value))
    assert _read(Settings(), path) == value


def _field_names(path: str) -> set[str]:
    annotation = _field(path).annotation
    assert isinstance(annotation, type) and issubclass(annotation, BaseModel)
    return set(annotation.model_fields)


@pytest.mark.parametrize("flat", [f for f in FLAT_NAMES if not _is_group(FLAT_NAMES[f])])  # groups in groups: below
def test_the_nested_name_and_the_keyword_set_it_too(flat: str, monkeypatch: pytest.MonkeyPatch) -> None:
    group, field = group_and_field(flat)
    path = FLAT_NAMES[flat]
    value = _sample(path)
    assert _read(Settings(**{flat: value}), path) == value
    assert _read(Settings.model_validate({group: {field: value}}), path) == value
    monkeypatch.setenv(f"CTXMEM_{group}__{field}".upper(), _raw(value))
    assert _read(Settings(), path) == value


def test_groups_inside_groups_by_every_spelling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXMEM_FOURC__COUNT_POINTS", "20")
    monkeypatch.setenv("CTXMEM_PROFILES__FOURC__CONTINUITY_POINTS", "20")
    monkeypatch.setenv("CTXMEM_WINDOW_VALUE__SECTION_WEIGHTS", '{"background": 0.5}')
    monkeypatch.setenv("CTXMEM_WINDOW__VALUE__RELEVANCE_FLOOR", "0.1")
    s = Settings()
    assert (s.profiles.fourc.count_points, s.profiles.fourc.continuity_points) == (20, 20)
    assert s.window.value.section_weights == {"background": 0.5} and s.window.value.relevance_floor == 0.1


def test_which_spelling_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXMEM_WINDOW_WATERMARK", "0.5")
    monkeypatch.setenv("CTXMEM_WINDOW_CACHE_ROWS", "7")
    assert (Settings().window.watermark, Settings().window.cache_rows) == (0.5, 7)
    monkeypatch.setenv("CTXMEM_WINDOW__WATERMARK", "0.4")  # the nested name wins; the group's other fields stay
    assert (Settings().window.watermark, Settings().window.cache_rows) == (0.4, 7)
    monkeypatch.setenv("CTXMEM_WINDOW", '{"recent_items": 9}')
    assert (Settings().window.watermark, Settings().window.recent_items, Settings().window.cache_rows) == (0.4, 9, 7)
    assert Settings(window_watermark=0.3).window.watermark == 0.3  # a keyword wins over the environment
    assert Settings(window={"watermark": 0.2}).window.watermark == 0.2


def test_several_workers_mean_the_pgvector_index_unless_a_backend_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    assert Settings().server.workers is None
    # one per core less one for PostgreSQL by default, at least one
    assert Settings().server.processes == max(1, (os.cpu_count() or 1) - 1)
    assert Settings(workers=1).vectors.backend == "edge"  # one process: the embedded index, as before
    assert Settings(workers=2).vectors.backend == "pgvector"  # every worker reaches PostgreSQL
    assert Settings(workers=2, vector_backend="edge").vectors.backend == "edge"  # named: kept (serve refuses it)
    assert Settings(workers=4, qdrant_url="http://qdrant:6333").vectors.backend == "qdrant"
    monkeypatch.setenv("CTXMEM_WORKERS", "3")
    assert (Settings().server.processes, Settings().vectors.backend) == (3, "pgvector")
    # what the workers of serve are handed keeps the resolved backend
    resolved = Settings()
    assert Settings.model_validate_json(resolved.model_dump_json()).vectors.backend == "pgvector"
    monkeypatch.setenv("CTXMEM_WORKERS", "0")
    with pytest.raises(ValidationError, match="CTXMEM_WORKERS"):
        Settings()


def test_a_qdrant_url_means_the_qdrant_server(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings(workers=1).vectors.backend == "edge"  # embedded by default
    assert Settings(qdrant_url="http://qdrant:6333").vectors.backend == "qdrant"
    monkeypatch.setenv("CTXMEM_QDRANT_URL", "http://qdrant:6333")
    assert Settings().vectors.backend == "qdrant"  # as compose and Kubernetes set it
    monkeypatch.setenv("CTXMEM_VECTOR_BACKEND", "off")
    assert Settings().vectors.backend == "off"  # a named backend wins
    assert Settings(vector_backend="edge").vectors.backend == "edge"


@pytest.mark.parametrize(
    ("field", "value"),
    [("fusion", "sum"), ("fusion_lexical_weight", 1.5), ("recall_limit", -1), ("vector_min_score", 2.0),
     ("outbox_max_attempts", 0), ("recall_mode", "both")],
)  # fmt: skip
def test_recall_settings_are_checked(field: str, value: object) -> None:
    with pytest.raises(ValidationError, match=field):
        Settings(**{field: value})


@pytest.mark.parametrize(
    ("var", "value", "named"),
    [
        ("CTXMEM_WINDOW_WATERMARK", "2", "CTXMEM_WINDOW_WATERMARK"),
        ("CTXMEM_WINDOW__WATERMARK", "2", "CTXMEM_WINDOW__WATERMARK"),
        ("CTXMEM_WINDOW", '{"watermark": 2}', "CTXMEM_WINDOW.watermark"),
        ("CTXMEM_RATE_LIMIT_PER_SECOND", "-1", "CTXMEM_RATE_LIMIT_PER_SECOND"),
        ("CTXMEM_DATABASE_URL", "mysql://x", "CTXMEM_DATABASE_URL"),
        ("CTXMEM_TYPE_TTL_SECONDS", '{"tool_result": "soon"}', "CTXMEM_TYPE_TTL_SECONDS.tool_result"),
        ("CTXMEM_JOB_SCHEDULES", '{"nightly": "off"}', "CTXMEM_JOB_SCHEDULES"),
        ("CTXMEM_FOURC__COUNT_POINTS", "-1", "CTXMEM_FOURC__COUNT_POINTS"),
        ("CTXMEM_FOURC__COUNT_POINTS", "80", "CTXMEM_FOURC"),  # the four maxima add up to more than 100
        ("CTXMEM_PROFILES__FOURC__COUNT_POINTS", "-1", "CTXMEM_PROFILES__FOURC__COUNT_POINTS"),
        ("CTXMEM_WINDOW_VALUE__SECTION_WEIGHTS", '{"nowhere": 1}', "CTXMEM_WINDOW_VALUE__SECTION_WEIGHTS"),
        ("CTXMEM_WINDOW__WATERMAK", "0.5", "CTXMEM_WINDOW__WATERMAK"),  # a group refuses a field it lacks
        ("CTXMEM_WINDOW", '{"watermak": 0.5}', "CTXMEM_WINDOW.watermak"),
    ],
)
def test_an_error_names_the_variable_that_was_set(
    var: str, value: str, named: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(var, value)
    with pytest.raises(ValidationError) as caught:
        Settings()
    assert [".".join(map(str, e["loc"])) for e in caught.value.errors()] == [named]
    assert str(caught.value).splitlines()[1] == named  # what `error: invalid settings:` prints


def test_an_error_names_the_keyword_that_was_given() -> None:
    with pytest.raises(ValidationError) as caught:
        Settings(window_watermark=2)
    assert caught.value.errors()[0]["loc"] == ("window_watermark",)
    with pytest.raises(ValidationError) as caught:
        Settings().replace(rrf_k=0)
    assert caught.value.errors()[0]["loc"] == ("rrf_k",)
    with pytest.raises(ValidationError, match="CTXMEM_DEFAULT_PAGE_SIZE"):
        Settings(max_page_size=10)  # below the default page size


def test_unknown_flat_names_are_ignored_as_before(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXMEM_WINDOW_WATERMAK", "0.5")
    monkeypatch.setenv("CTXMEM_NOT_A_SETTING", "1")
    assert Settings().window.watermark == 0.6
    assert Settings(window_watermak=0.5).window.watermark == 0.6


def test_replace_validates_and_does_not_read_the_environment_again(monkeypatch: pytest.MonkeyPatch) -> None:
    base = Settings(window_cache_entries=5)
    monkeypatch.setenv("CTXMEM_WINDOW_CACHE_ROWS", "3")
    changed = base.replace(window_watermark=0.5, recall={"limit": 2})
    assert (changed.window.watermark, changed.window.cache_entries, changed.window.cache_rows) == (0.5, 5, 10_000)
    assert (changed.recall.limit, changed.recall.candidates) == (2, 100)  # a group's dict changes only its keys
    assert base.window.watermark == 0.6
    with pytest.raises(TypeError, match="replace"):  # model_copy would set a stray attribute nothing reads
        base.model_copy(update={"window_watermark": 0.5})


def test_replica_urls_are_comma_separated_trimmed_and_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CTXMEM_DATABASE_REPLICA_URLS", " postgresql://a/ctxmem , postgres://b:5433/ctxmem,")
    assert Settings().database.replica_urls == ["postgresql://a/ctxmem", "postgres://b:5433/ctxmem"]
    monkeypatch.setenv("CTXMEM_DATABASE_REPLICA_URLS", "")
    assert Settings().database.replica_urls == []
    monkeypatch.setenv("CTXMEM_DATABASE_REPLICA_URLS", "postgresql://a/ctxmem,mysql://b/ctxmem")
    with pytest.raises(ValidationError, match="CTXMEM_DATABASE_REPLICA_URLS") as caught:
        Settings()
    assert "mysql://b/ctxmem" in str(caught.value)


def test_the_scoring_defaults_are_the_settings_defaults() -> None:
    """The 4C weights and the window's value model default to the pure code's own numbers (settings only bound
    them), so a library caller of scoring/ and a server with no CTXMEM_* set score alike."""
    settings = Settings()
    assert settings.profiles.fourc.weights() == FourCWeights()
    assert settings.window.value.model() == ValueModel()
