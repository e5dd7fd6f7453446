"""Scheduled jobs (promote, decay, expire, purge, reindex) and the scheduler process."""
