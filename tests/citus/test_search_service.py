"""tests/service/search/test_service.py against the cluster."""

from tests.service.search.test_service import *  # noqa: F403
