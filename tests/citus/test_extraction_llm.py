"""tests/service/extraction/test_llm_service.py against the cluster."""

from tests.service.extraction.test_llm_service import *  # noqa: F403
