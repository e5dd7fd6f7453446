"""tests/service/windows/test_window_recall.py against the cluster."""

from tests.service.windows.test_window_recall import *  # noqa: F403
