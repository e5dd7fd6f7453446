"""tests/service/windows/test_window_cache.py against the cluster."""

from tests.service.windows.test_window_cache import *  # noqa: F403
