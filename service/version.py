"""The installed version of ctxmem (from the package metadata, so pyproject.toml is its one home)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    VERSION = version("ctxmem")
except PackageNotFoundError:  # run from a source tree that was never installed
    VERSION = "0.0.0+source"
