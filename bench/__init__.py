"""Benchmarks for the docs/design.md §6 targets. Each prints its numbers next to a raw baseline measured in the same
run; none of them asserts a speed (timed assertions do not belong in tests). See bench/README.md."""
