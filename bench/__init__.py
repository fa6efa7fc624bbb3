"""Benchmarks run by `make bench`. Each `bench/bench_*.py` module has a `run()` function."""
