"""tests/service/windows/test_service.py against the cluster."""

from tests.service.windows.test_service import *  # noqa: F403
