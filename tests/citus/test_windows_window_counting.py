"""tests/service/windows/test_window_counting.py against the cluster."""

from tests.service.windows.test_window_counting import *  # noqa: F403
