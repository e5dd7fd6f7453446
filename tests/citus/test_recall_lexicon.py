"""tests/service/recall/test_lexicon.py against the cluster."""

from tests.service.recall.test_lexicon import *  # noqa: F403
