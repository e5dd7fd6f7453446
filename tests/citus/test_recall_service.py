"""tests/service/recall/test_service.py against the cluster."""

from tests.service.recall.test_service import *  # noqa: F403
