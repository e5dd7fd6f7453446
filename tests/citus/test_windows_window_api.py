"""tests/service/windows/test_window_api.py against the cluster."""

from tests.service.windows.test_window_api import *  # noqa: F403
