"""tests/proof/test_route_matrix.py against the cluster."""

from tests.proof.test_route_matrix import *  # noqa: F403
