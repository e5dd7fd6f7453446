"""tests/service/windows/test_window_prompts.py against the cluster."""

from tests.service.windows.test_window_prompts import *  # noqa: F403
