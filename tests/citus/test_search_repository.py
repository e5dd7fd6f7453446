"""tests/service/search/test_repository.py against the cluster."""

from tests.service.search.test_repository import *  # noqa: F403
