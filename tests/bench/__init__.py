"""Benchmarks: `make bench` runs them all, `make bench ONLY=name` one. Each prints `name=value` lines.

A benchmark module is `tests/bench/bench_<name>.py` with a `run()` that returns {figure name: value}.
Benchmarks measure; they never assert timings (tests do not time things)."""
