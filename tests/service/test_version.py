"""service/version.py: the version comes from the package metadata, whose one home is pyproject.toml."""

from __future__ import annotations

import tomllib
from importlib.metadata import version
from pathlib import Path

from service.version import VERSION


def test_version_is_the_installed_package_version() -> None:
    assert version("ctxmem") == VERSION


def test_version_matches_pyproject() -> None:
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert pyproject["project"]["version"] == VERSION
