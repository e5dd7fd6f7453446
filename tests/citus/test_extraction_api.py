"""tests/service/extraction/test_extraction_api.py against the cluster."""

from tests.service.extraction.test_extraction_api import *  # noqa: F403
