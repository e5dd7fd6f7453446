"""tests/service/items/test_service.py against the cluster."""

from tests.service.items.test_service import *  # noqa: F403
