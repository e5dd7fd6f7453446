"""tests/service/profiles/test_service.py against the cluster."""

from tests.service.profiles.test_service import *  # noqa: F403
