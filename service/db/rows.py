"""Table rows as the pure values of ``scoring/``: a dataclass there names its fields after the columns it
reads, so a row becomes one by name, with only the fields that are computed spelled out."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

T = TypeVar("T", bound="DataclassInstance")


def from_row(cls: type[T], row: Mapping[str, Any], **computed: Any) -> T:
    """``cls`` with each field taken from ``computed`` when given there, else from the row's column of the
    same name (a missing column is a ``KeyError``, even for a field with a default)."""
    return cls(**{f.name: computed[f.name] if f.name in computed else row[f.name] for f in fields(cls)})
