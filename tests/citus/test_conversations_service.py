"""tests/service/conversations/test_service.py against the cluster."""

from tests.service.conversations.test_service import *  # noqa: F403
