"""tests/service/windows/test_state.py against the cluster."""

from tests.service.windows.test_state import *  # noqa: F403
