"""tests/service/windows/test_window_fuzz.py against the cluster."""

from tests.service.windows.test_window_fuzz import *  # noqa: F403
