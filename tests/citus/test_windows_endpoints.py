"""tests/service/windows/test_endpoints.py against the cluster."""

from tests.service.windows.test_endpoints import *  # noqa: F403
