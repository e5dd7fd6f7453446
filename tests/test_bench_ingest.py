"""bench/ingest.py's own arithmetic and probes (the benchmark itself is run by hand: `make bench`)."""

from __future__ import annotations

import os

from bench.ingest import PathResult, RssSampler, rss_parts


def test_cpu_per_1000_items_and_the_load_average_are_reported() -> None:
    result = PathResult("service/http", "t", 20_000, 10.0, 20, [1.0], app_cpu_s=4.0, load_avg=(1.5, 2.25))
    row = result.as_dict()
    assert row["app_cpu_s_per_1000_items"] == 0.2
    assert row["load_avg_1m_start_end"] == (1.5, 2.25)
    assert PathResult("raw", "t", 10, 1.0, 1).as_dict()["app_cpu_s_per_1000_items"] is None


def test_rss_is_split_into_anonymous_and_file_backed_parts() -> None:
    parts = rss_parts(os.getpid())
    assert set(parts) == {"RssAnon", "RssFile"}
    assert all(v > 0 for v in parts.values())
    sampler = RssSampler(os.getpid())
    total = sampler.sample()
    assert sampler.max_parts["RssAnon"] + sampler.max_parts["RssFile"] <= total * 1.1
    assert rss_parts(-1) == {}
