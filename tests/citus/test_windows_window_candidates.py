"""tests/service/windows/test_window_candidates.py against the cluster."""

from tests.service.windows.test_window_candidates import *  # noqa: F403

# Not here: it asserts PostgreSQL's generic plans of single-node statements (which index each reads), and sets
# plan_cache_mode on a pooled connection — on Citus the coordinator plans them per call (engine.generic_plans_sql).
del test_a_user_with_100k_items_costs_a_window_a_bounded_set_of_rows  # noqa: F821
